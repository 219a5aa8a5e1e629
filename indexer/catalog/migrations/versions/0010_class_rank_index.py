"""the ranking's download order inside a class (issue 31): ix_repo_classes_class_rank

``indexer query`` ranks a class by (size window, lineage, kind) first, then by gated, downloads and repo; the
(class_id, params) index held the window but not that order, so a big class was sorted whole at every query
(a third of 103,200 rows, 12-17 ms at 1,000,000 repos). This index holds a class in that order
(catalog/classes.py ``DOWNLOAD_ORDER``), so the query reads the head of the class instead. It is narrow (no
covering columns: the head is a few hundred rows) to keep the catalog small.

Revision ID: 0010
Revises: 0009
"""
from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_repo_classes_class_rank', 'repo_classes',
                    ['class_id', 'gated', sa.text('COALESCE(downloads, 0) DESC'), 'repo_pk'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_repo_classes_class_rank', table_name='repo_classes')
