"""A collection (langchain-postgres' ``langchain_pg_collection`` row): its id, and how many chunks it holds.

Every other query takes the collection's UUID; these turn the configured name into it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.errors import DatabaseUnavailableError
from app.storage.tables import sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

SQL_COLLECTION_ID = sql("SELECT uuid FROM {collections} WHERE name = :name")
SQL_COUNT_CHUNKS = sql("SELECT count(*) FROM {chunks} WHERE collection_id = :collection")


def collection_id(engine: Engine, name: str):
    """UUID of the collection called ``name`` (None if it does not exist)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        return conn.execute(text(SQL_COLLECTION_ID), {"name": name}).scalar()


def require_collection(engine: Engine, collection_name: str):
    """UUID of the collection; DatabaseUnavailableError when it does not exist (write paths)."""
    collection = collection_id(engine, collection_name)
    if collection is None:
        raise DatabaseUnavailableError(f"collection '{collection_name}' does not exist; run init_db first")
    return collection


def count_chunks(engine: Engine, collection_name: str) -> int:
    """Number of chunks in the collection (0 when it does not exist)."""
    from sqlalchemy import text

    from app.storage.readers import ALL_ROWS, reading

    collection = collection_id(engine, collection_name)
    if collection is None:
        return 0
    with reading(engine, ALL_ROWS) as conn:  # a count, whoever asks (a login bound by row-level security too)
        return int(conn.execute(text(SQL_COUNT_CHUNKS), {"collection": collection}).scalar())
