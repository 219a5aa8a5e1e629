"""The catalog layer: the schema (models, Alembic migrations), opening a catalog (db), the one read-only reader
the answers read through (reader), the content-addressed blob and token-list stores beside it, and compute,
which derives the engine facts and classes after a crawl."""
