"""a repo's copies inside its class: ix_repo_classes_lineage

An answer's launch setups look for the copies of a target and of its ranked drafts (GGUF, MLX, quantized
checkpoints): the members of each one's class that share its lineage (catalog/classes.py ``lineage_of``,
``lineages_in``). Lineages are nearly one per repo, but no index led with them, so each lookup read its whole class
through the class index: 103,200 rows of the biggest class at 1,000,000 repos, 12-37 ms a lookup, up to seven
lookups an answer. This index finds a lineage's members directly.

Revision ID: 0013
Revises: 0012
"""
from alembic import op


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_repo_classes_lineage', 'repo_classes', ['lineage_id', 'class_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_repo_classes_lineage', table_name='repo_classes')
