"""vocabulary agreement (issue 14): which same-size tokenizers a target's drafts may use, and how well

Revision ID: 0008
Revises: 0007
"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL until `indexer compute` measures it: old catalogs answer as before (identical mappings only).
    with op.batch_alter_table('tokenizers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('agrees_by_base', sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column('agreement_basis', sa.String(length=10), nullable=True))
        batch_op.add_column(sa.Column('text_tokens', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('added_text_counts', sa.JSON(), nullable=True))
    op.create_table(
        'tokenizer_agreement',
        sa.Column('target_tokenizer_id', sa.Integer(), nullable=False),
        sa.Column('draft_tokenizer_id', sa.Integer(), nullable=False),
        sa.Column('grade', sa.String(length=10), nullable=False),
        sa.Column('basis', sa.String(length=10), nullable=False),
        sa.Column('text_agreement', sa.Float(), nullable=True),
        sa.Column('ids_agreement', sa.Float(), nullable=True),
        sa.Column('differing_ids', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['target_tokenizer_id'], ['tokenizers.id']),
        sa.ForeignKeyConstraint(['draft_tokenizer_id'], ['tokenizers.id']),
        sa.PrimaryKeyConstraint('target_tokenizer_id', 'draft_tokenizer_id'),
    )


def downgrade() -> None:
    op.drop_table('tokenizer_agreement')
    with op.batch_alter_table('tokenizers', schema=None) as batch_op:
        batch_op.drop_column('added_text_counts')
        batch_op.drop_column('text_tokens')
        batch_op.drop_column('agreement_basis')
        batch_op.drop_column('agrees_by_base')
