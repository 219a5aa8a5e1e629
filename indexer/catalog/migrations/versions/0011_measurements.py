"""measurements: what `indexer measure` read from a running engine, kept beside the estimate

One row per measurement of a pair on an engine: the engine's release as its server reported it, the device, the
quantizations, the task, the draft length, the acceptance and the decode speeds with and without the draft, and
our estimate at the time. ``calibration`` is false when the device or the release was not identified: the row is
kept and published, never used to calibrate.

Revision ID: 0011
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'measurements',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('target', sa.String(length=200), nullable=False),
        sa.Column('draft', sa.String(length=200), nullable=False),
        sa.Column('engine', sa.String(length=20), nullable=False),
        sa.Column('engine_version', sa.String(length=120), nullable=True),
        sa.Column('hardware', sa.String(length=60), nullable=True),
        sa.Column('target_quant', sa.String(length=30), nullable=True),
        sa.Column('draft_quant', sa.String(length=30), nullable=True),
        sa.Column('task', sa.String(length=20), nullable=False),
        sa.Column('draft_tokens', sa.Integer(), nullable=True),
        sa.Column('acceptance', sa.Float(), nullable=True),
        sa.Column('drafted', sa.BigInteger(), nullable=True),
        sa.Column('accepted', sa.BigInteger(), nullable=True),
        sa.Column('rounds', sa.BigInteger(), nullable=True),
        sa.Column('tokens', sa.BigInteger(), nullable=True),
        sa.Column('tok_s', sa.Float(), nullable=True),
        sa.Column('tok_s_baseline', sa.Float(), nullable=True),
        sa.Column('speedup', sa.Float(), nullable=True),
        sa.Column('estimate', sa.Float(), nullable=True),
        sa.Column('runs', sa.Integer(), nullable=False),
        sa.Column('prompts', sa.Integer(), nullable=True),
        sa.Column('max_tokens', sa.Integer(), nullable=True),
        sa.Column('same_text', sa.Boolean(), nullable=True),
        sa.Column('calibration', sa.Boolean(), nullable=False),
        sa.Column('measured_at', sa.DateTime(), nullable=False),
        sa.Column('tool_version', sa.String(length=30), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_measurements_pair', 'measurements', ['target', 'draft', 'engine'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_measurements_pair', table_name='measurements')
    op.drop_table('measurements')
