"""what the real Hub holds (issue 16): gated repos waiting for public copies of their blobs, and
per-scope listing cursors (high-water mark, resumable failed passes, last full listing)

Revision ID: 0007
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'blob_waits',
        sa.Column('repo_id', sa.String(length=200), nullable=False),
        sa.Column('sha', sa.String(length=64), nullable=False),
        sa.Column('item', sa.JSON(), nullable=False),
        sa.Column('entries', sa.JSON(), nullable=False),
        sa.Column('since', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('repo_id'),
    )
    op.create_table(
        'scope_cursors',
        sa.Column('scope', sa.String(length=300), nullable=False),
        sa.Column('high_water', sa.DateTime(), nullable=True),
        sa.Column('resumes', sa.JSON(), nullable=True),
        sa.Column('full_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('scope'),
    )


def downgrade() -> None:
    op.drop_table('scope_cursors')
    op.drop_table('blob_waits')
