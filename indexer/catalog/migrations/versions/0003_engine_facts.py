"""engine facts (vLLM text config, vision_config, GGUF vocabulary) and llama.cpp pair verdicts

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'engine_facts',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('file_set_id', sa.Integer(), nullable=False),
        sa.Column('config_blob', sa.String(length=64), nullable=False),
        sa.Column('vllm_vocab_size', sa.Integer(), nullable=True),
        sa.Column('text_config_error', sa.Text(), nullable=True),
        sa.Column('has_vision_config', sa.Boolean(), nullable=False),
        sa.Column('gguf_converted', sa.Boolean(), nullable=False),
        sa.Column('gguf_error', sa.Text(), nullable=True),
        sa.Column('gguf_n_vocab', sa.Integer(), nullable=True),
        sa.Column('gguf_tokens_sha256', sa.String(length=64), nullable=True),
        sa.Column('gguf', sa.JSON(), nullable=True),
        sa.Column('gguf_signature', sa.String(length=64), nullable=True),
        sa.Column('gguf_bucket_hi', sa.String(length=64), nullable=True),
        sa.Column('gguf_bucket_lo', sa.String(length=64), nullable=True),
        sa.Column('llamacpp_commit', sa.String(length=20), nullable=True),
        sa.Column('derived_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['file_set_id'], ['file_sets.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('file_set_id', 'config_blob'),
    )
    with op.batch_alter_table('engine_facts') as batch:
        batch.create_index('ix_engine_facts_gguf_signature', ['gguf_signature'], unique=False)
        batch.create_index('ix_engine_facts_gguf_bucket_hi', ['gguf_bucket_hi'], unique=False)
        batch.create_index('ix_engine_facts_gguf_bucket_lo', ['gguf_bucket_lo'], unique=False)
    op.create_table(
        'llamacpp_pairs',
        sa.Column('target_signature', sa.String(length=64), nullable=False),
        sa.Column('draft_signature', sa.String(length=64), nullable=False),
        sa.Column('compatible', sa.Boolean(), nullable=False),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('failed_checks', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('target_signature', 'draft_signature'),
    )


def downgrade() -> None:
    op.drop_table('llamacpp_pairs')
    with op.batch_alter_table('engine_facts') as batch:
        batch.drop_index('ix_engine_facts_gguf_bucket_lo')
        batch.drop_index('ix_engine_facts_gguf_bucket_hi')
        batch.drop_index('ix_engine_facts_gguf_signature')
    op.drop_table('engine_facts')
