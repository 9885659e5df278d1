"""Storage: every SQL statement of the app and the code that runs it (PostgreSQL + pgvector).

One module per job, each importing only what it needs; this package's ``__init__`` re-exports their
public functions, so callers write ``from app import storage`` and ``storage.list_documents(…)``:

* :mod:`app.storage.tables` — every table, index and function name, and :func:`~app.storage.tables.sql`,
  the one way a statement names them (quoted identifiers; values are always bound parameters);
* :mod:`app.storage.engine` — the SQLAlchemy engine (one per target, the embedded server started
  first), per-connection settings, connection errors as ``DatabaseUnavailableError``, the server check;
* :mod:`app.storage.provision` — the embedded server's app role, database and extension;
* :mod:`app.storage.schema` — schema creation as numbered, re-runnable migrations, the version check;
* :mod:`app.storage.lock` — the database-wide writer lock;
* :mod:`app.storage.collection` — a collection's id and size;
* :mod:`app.storage.chunks` — documents and their chunk rows, written in one transaction;
* :mod:`app.storage.staging` — batches of an unfinished ingest and the switch that moves them in;
* :mod:`app.storage.keywords` — the keyword index, its BM25 statistics and the BM25 query;
* :mod:`app.storage.graphrag_tables` — the graph's tables and the links written with the chunks;
* :mod:`app.storage.graphrag_rows` — the graph's reads and its build's writes (entities, relationships,
  communities, reports);
* :mod:`app.storage.page_words` — the words of OCR'd pages with their boxes, kept with their document;
* :mod:`app.storage.readers` — who may read each row: the readers columns, row-level security, the query role;
* :mod:`app.storage.scope` — a question's scope (folders, formats, a date), tested in SQL beside the readers;
* :mod:`app.storage.users` — users, groups, personal tokens (hashes) and the audit log;
* :mod:`app.storage.vectors` — the vector column's size, its HNSW index and nearest-neighbour queries;
* :mod:`app.storage.bulk` — bulk loading, index rebuilds and sizes (used by ``make bench``);
* :mod:`app.storage.embedded` / :mod:`app.storage.pg_process` — the private PostgreSQL server (started
  when no ``DB_HOST`` is set) and the programs that run it.

The spec's face, :mod:`app.db`, holds :func:`~app.db.get_vectorstore` and :func:`~app.db.init_db` on top of it.
* :mod:`app.storage.graphrag_types` — the graph's dataclasses (entities, reports, results) that the store
  and :mod:`app.graphrag` pass.

May import :mod:`app.config`, :mod:`app.errors`, :mod:`app.text` and :mod:`app.models.resources`; never
the graph's search, ingestion, the workflow, serving or the CLI.
"""

from __future__ import annotations

from app.storage.chunks import (
    SQL_CREATE_HNSW,
    SQL_UPSERT_DOCUMENT,
    SQL_UPSERT_EMBEDDING,
    apply_readers,
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
from app.storage.queue import forget_stale
from app.storage.readers import reading
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
    "apply_readers",
    "reading",
    "check_schema",
    "check_server",
    "claim_staged",
    "clean_staging",
    "forget_stale",
    "collection_id",
    "count_chunks",
    "create_schema",
    "database_error",
    "delete_document",
    "delete_legacy_chunks",
    "describe_target",
    "get_engine",
    "fit_size",
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
