"""Whether a collection holds documents that not everyone may read: what the servers check before
they serve without an access file (app.serving.gate), so a lost access file never opens them to all.

An indexed lookup, read as principals every row's readers hold (:data:`app.storage.readers.ALL_ROWS`),
so row-level security, forced or not, never hides a restricted document from the check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.storage.collection import collection_id
from app.storage.readers import ALL_ROWS, reading
from app.storage.tables import DOCUMENT_TABLE, sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

SQL_DOCUMENT_TABLE_EXISTS = "SELECT to_regclass(CAST(:table AS text)) IS NOT NULL"
SQL_RESTRICTED_DOCUMENT = sql(
    "SELECT EXISTS (SELECT 1 FROM {documents} WHERE collection_id = :collection "
    "AND NOT (CAST(:everyone AS text) = ANY(readers)))"
)


def restricted_documents_stored(engine: Engine, collection_name: str, everyone: str) -> bool:
    """Whether any document of ``collection_name`` has readers without the principal ``everyone``;
    False when nothing was ever stored there (no collection, no documents table yet)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        if not conn.execute(text(SQL_DOCUMENT_TABLE_EXISTS), {"table": DOCUMENT_TABLE}).scalar():
            return False
    collection = collection_id(engine, collection_name)
    if collection is None:
        return False
    with reading(engine, ALL_ROWS) as conn:
        params = {"collection": collection, "everyone": everyone}
        return bool(conn.execute(text(SQL_RESTRICTED_DOCUMENT), params).scalar())
