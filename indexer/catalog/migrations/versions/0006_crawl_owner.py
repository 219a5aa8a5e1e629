"""crawl owner (issue 18): which process runs a crawl, so concurrent crawls split the queue and only a
dead crawl's run is marked interrupted

Revision ID: 0006
Revises: 0005
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('crawl_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('owner', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('crawl_runs', schema=None) as batch_op:
        batch_op.drop_column('owner')
