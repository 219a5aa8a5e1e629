"""architecture facts (issue 23): layer kinds, recurrent state, sliding window, context lengths, vision

One JSON column on engine_facts (indexer.vocab.archconfig.ArchFacts.to_dict()): NULL until `indexer compute`
derives it from the stored config blob (or the crawl reads it from a GGUF header), so an existing catalog gets
the facts on its next compute without a re-crawl.

Revision ID: 0009
Revises: 0008
"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('engine_facts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('arch', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('engine_facts', schema=None) as batch_op:
        batch_op.drop_column('arch')
