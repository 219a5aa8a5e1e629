"""speculator heads (issue 11): a heads table and the target facts a head rule needs

Revision ID: 0005
Revises: 0004
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('repos', schema=None) as batch_op:
        batch_op.add_column(sa.Column('hidden_size', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('num_hidden_layers', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('mtp_layers', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('mtp_key', sa.String(length=60), nullable=True))
        batch_op.add_column(sa.Column('text_model_type', sa.String(length=60), nullable=True))
    op.create_table(
        'heads',
        sa.Column('repo_pk', sa.Integer(), nullable=False),
        sa.Column('algorithm', sa.String(length=20), nullable=False),
        sa.Column('format', sa.String(length=20), nullable=False),
        sa.Column('layer_model_type', sa.String(length=60), nullable=True),
        sa.Column('verifier', sa.String(length=200), nullable=True),
        sa.Column('hidden_size', sa.Integer(), nullable=True),
        sa.Column('target_hidden_size', sa.Integer(), nullable=True),
        sa.Column('vocab_size', sa.Integer(), nullable=True),
        sa.Column('draft_vocab_size', sa.Integer(), nullable=True),
        sa.Column('aux_layer_ids', sa.JSON(), nullable=True),
        sa.Column('aux_key', sa.String(length=60), nullable=True),
        sa.Column('num_target_layers', sa.Integer(), nullable=True),
        sa.Column('mask_token_id', sa.Integer(), nullable=True),
        sa.Column('speculative_tokens', sa.Integer(), nullable=True),
        sa.Column('params', sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(['repo_pk'], ['repos.id'], ),
        sa.PrimaryKeyConstraint('repo_pk'),
    )
    with op.batch_alter_table('heads', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_heads_algorithm'), ['algorithm'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('heads', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_heads_algorithm'))
    op.drop_table('heads')
    with op.batch_alter_table('repos', schema=None) as batch_op:
        batch_op.drop_column('text_model_type')
        batch_op.drop_column('mtp_key')
        batch_op.drop_column('mtp_layers')
        batch_op.drop_column('num_hidden_layers')
        batch_op.drop_column('hidden_size')
