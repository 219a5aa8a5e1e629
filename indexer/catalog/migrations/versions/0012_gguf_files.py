"""gguf_files: every GGUF model file of a GGUF repo, with the quantization its name says

The crawl lists a GGUF repo's tree and reads one header; until now the catalog kept only the name of the file it
read, so ``--quant`` of another file the repo has was answered as missing. One row per model file (a split model
is one row: its first shard, ``parts`` shards), with its size and the type its name says (llama-server's tag).

GGUF-only repos crawled before this revision have no rows: their commit sha is cleared, so the next crawl lists
their trees again (one API call each; the header it read is known by its sha256 and not read again). Until then
the answers use the file the crawl read, as before.

Revision ID: 0012
Revises: 0011
"""
from alembic import op
import sqlalchemy as sa


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'gguf_files',
        sa.Column('repo_pk', sa.Integer(), nullable=False),
        sa.Column('path', sa.String(length=255), nullable=False),
        sa.Column('quant', sa.String(length=30), nullable=True),
        sa.Column('parts', sa.Integer(), nullable=False),
        sa.Column('size', sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(['repo_pk'], ['repos.id']),
        sa.PrimaryKeyConstraint('repo_pk', 'path'),
    )
    op.execute("UPDATE repos SET sha = NULL WHERE status = 'ok' AND reason LIKE 'GGUF repo: %'")


def downgrade() -> None:
    op.drop_table('gguf_files')
