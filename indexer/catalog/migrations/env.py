"""Alembic environment: the URL comes from the Config set by ``indexer.catalog.db.alembic_config``.

Every migration commits whole or not at all: ``transaction_per_migration`` runs each revision
and its ``alembic_version`` update in one transaction, and ``transactional_ddl=True`` tells Alembic that
SQLite has transactional DDL too (Alembic's SQLite impl assumes it has not, ``alembic/ddl/sqlite.py:41``).
pysqlite itself would still run DDL outside any transaction, "autocommitted" at once (SQLAlchemy 2.1.9
``dialects/sqlite/base.py:177-180``, "Incorrect support for transactional DDL", in the section
"Transactions with SQLite and the sqlite3 driver", which ``dialects/sqlite/pysqlite.py:496-503``
"Serializable isolation / Savepoints / Transactional DDL" points to); that section gives the recipe the
SQLite engine gets here (``indexer.catalog.db.immediate_transactions``: no driver BEGIN, ours from the ``begin``
event). PostgreSQL concurrent upgrades wait on an advisory lock (``indexer.catalog.db.migration_lock``).
"""

from alembic import context
from sqlalchemy import create_engine

from indexer.catalog.db import immediate_transactions, migration_lock
from indexer.catalog.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_offline() -> None:
    """``alembic upgrade --sql``: the migration SQL printed, no database touched."""
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Apply migrations, each in its own transaction; concurrent upgrades wait on ``migration_lock``."""
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None  # migrate.py sets it
    engine = create_engine(url)
    immediate_transactions(engine)
    try:
        with engine.connect() as connection, migration_lock(connection):
            context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True,
                              transactional_ddl=True, transaction_per_migration=True)
            with context.begin_transaction():
                context.run_migrations()
            if connection.in_transaction():  # e.g. the version table of a no-op run
                connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
