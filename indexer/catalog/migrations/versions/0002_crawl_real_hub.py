"""crawl against the real Hub: base model relations, gone rows, time-boxed runs

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('repos', schema=None) as batch_op:
        batch_op.add_column(sa.Column('base_model_relations', sa.JSON(), nullable=True))
    with op.batch_alter_table('crawl_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('unresolved', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('rate_limited', sa.Integer(), server_default='0', nullable=False))
    op.create_table('crawl_queue',
    sa.Column('repo_id', sa.String(length=200), nullable=False),
    sa.Column('item', sa.JSON(), nullable=False),
    sa.Column('queued_at', sa.DateTime(), nullable=True),
    sa.Column('crawl_run_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['crawl_run_id'], ['crawl_runs.id'], ),
    sa.PrimaryKeyConstraint('repo_id')
    )


def downgrade() -> None:
    op.drop_table('crawl_queue')
    with op.batch_alter_table('crawl_runs', schema=None) as batch_op:
        batch_op.drop_column('rate_limited')
        batch_op.drop_column('unresolved')
    with op.batch_alter_table('repos', schema=None) as batch_op:
        batch_op.drop_column('base_model_relations')
