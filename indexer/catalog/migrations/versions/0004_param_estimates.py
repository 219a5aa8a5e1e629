"""parameter estimates from config.json, and case-insensitive repo id lookup

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('repos', schema=None) as batch_op:
        batch_op.add_column(sa.Column('params_estimate', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('params_active_estimate', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('params_estimate_source', sa.String(length=20), nullable=True))
    # Expression indexes for case-insensitive and bare-name lookup (indexer/lookup.py).
    find = 'strpos' if op.get_bind().dialect.name == 'postgresql' else 'instr'
    op.create_index('ix_repos_repo_id_lower', 'repos', [sa.text('lower(repo_id)')])
    op.create_index('ix_repos_name_lower', 'repos', [sa.text(f"lower(substr(repo_id, {find}(repo_id, '/') + 1))")])


def downgrade() -> None:
    op.drop_index('ix_repos_name_lower', 'repos')
    op.drop_index('ix_repos_repo_id_lower', 'repos')
    with op.batch_alter_table('repos', schema=None) as batch_op:
        batch_op.drop_column('params_estimate_source')
        batch_op.drop_column('params_active_estimate')
        batch_op.drop_column('params_estimate')
