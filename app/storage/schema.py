"""The schema: created and upgraded by numbered migrations on write paths, checked on read paths.

Each :class:`Migration` is a version number and re-runnable statements (``IF NOT EXISTS``, ``OR
REPLACE``, recomputations): a writer applies, in order and in one transaction, those above the version
recorded in ``rag_meta`` (key ``schema_version``, text), then records the newest. Applying a migration
twice changes nothing, so a store whose version was recorded by an older release needs no rebuild.
Readers never create or migrate anything: they work for a read-only user and never wait behind a
writer's locks; they only check the recorded version.

Version history (the number is what ``rag_meta`` holds; stores made before 2 hold none, read as 0):
2 documents and the keyword index · 3 BM25 statistics · 4 the graph's tables · 5 the ingest staging table ·
6 readers on every row, row-level security, users, tokens and the audit log · 7 answers kept ·
8 document versions · 9 the askers' feedback · 10 readers on the keyword rows ·
11 the query role reads only rows its principals may (mentions, keyword rows, statistics) · 12 the page's sign-in sessions ·
13 tables stored as tables (app.storage.table_rows) · 14 answers' outcome and timings in the audit log (app.storage.usage) ·
15 tables in Word, PowerPoint and HTML documents (their citing section) ·
16 the keyword candidates' function takes a question's scope (app.storage.scope) ·
17 the words of OCR'd pages with their boxes (app.storage.page_words).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.config import EMBED_DIM
from app.errors import StoreNotReadyError
from app.storage import (
    answers,
    chunks,
    feedback,
    graphrag_tables,
    keywords,
    page_words,
    queue,
    readers,
    staging,
    table_rows,
    usage,
    users,
    versions,
)
from app.storage.collection import collection_id
from app.storage.engine import lift_statement_timeout
from app.storage.tables import META_TABLE, sql
from app.storage.vectors import check_size, fit_size, nearest_chunks

if TYPE_CHECKING:
    from langchain_postgres import PGVector
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

SQL_CREATE_META_TABLE = sql("CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY, value text NOT NULL)")
SQL_META_EXISTS = "SELECT to_regclass(CAST(:table AS text))"
SQL_SCHEMA_VERSION = sql("SELECT value FROM {meta} WHERE key = 'schema_version'")
SQL_SET_SCHEMA_VERSION = sql(
    "INSERT INTO {meta} (key, value) VALUES ('schema_version', :version) "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
)


@dataclass(frozen=True)
class Migration:
    """One schema version: ``statements`` bring any older store (or a new one) to it; ``upgrade``
    statements fix the data of a store that already had a schema (a new store has none to fix)."""

    version: int
    change: str
    statements: tuple[str, ...]
    upgrade: tuple[str, ...] = ()


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        2,
        "documents, the keyword index, the chunks' indexes, the schema version",
        (
            chunks.SQL_CREATE_HNSW,
            chunks.SQL_CREATE_COLLECTION_INDEX,
            keywords.SQL_CREATE_KEYWORD_TABLE,
            keywords.SQL_CREATE_KEYWORD_GIN,
            keywords.SQL_CREATE_KEYWORD_COLLECTION,
            chunks.SQL_CREATE_DOCUMENT_TABLE,
            chunks.SQL_ADD_ORIGIN,
            chunks.SQL_MARK_API_ORIGIN,
            chunks.SQL_CREATE_DOC_ID_INDEX,
            chunks.SQL_CREATE_CONTENT_HASH_INDEX,
            SQL_CREATE_META_TABLE,
        ),
    ),
    Migration(
        3,
        "BM25: token counts, statistics tables kept by triggers, rebuilt from the stored rows",
        (
            keywords.SQL_ADD_KEYWORD_DL,
            keywords.SQL_CREATE_TERM_STATS,
            keywords.SQL_CREATE_COLLECTION_STATS,
            keywords.SQL_CREATE_STATS_FUNCTION,
            *keywords.SQL_STATS_TRIGGERS,
            *keywords.SQL_REBUILD_STATS,
        ),
    ),
    # chunks stored before the graph existed have no entity links yet: every collection extracts once
    Migration(4, "the graph's tables", graphrag_tables.GRAPH_DDL, upgrade=(graphrag_tables.SQL_MARK_UNEXTRACTED,)),
    Migration(
        5,
        "the ingest staging table; the statistics trigger's set-based delete",
        (staging.SQL_CREATE_STAGING_TABLE, staging.SQL_CREATE_STAGING_HASH_INDEX, keywords.SQL_CREATE_STATS_FUNCTION),
    ),
    # rows stored before are the admin's (the column's default) until the sync that migrates gives them theirs
    Migration(
        6,
        "readers on every row, row-level security, users, tokens, the audit log",
        readers.MIGRATION_STATEMENTS + users.MIGRATION_STATEMENTS,
    ),
    Migration(
        7, "answers kept (the same question answered again at once; feedback names them)", answers.MIGRATION_STATEMENTS
    ),
    # families are computed at the end of the next sync (app.ingestion.versions)
    Migration(8, "document versions: families, effective dates, the current version", versions.MIGRATION_STATEMENTS),
    Migration(9, "the askers' feedback on answers", feedback.MIGRATION_STATEMENTS),
    Migration(
        10,
        "the keyword rows carry their chunk's readers (BM25 filters them without the chunk table)",
        readers.KEYWORD_READERS_STATEMENTS,
        upgrade=readers.KEYWORD_READERS_UPGRADE,
    ),
    Migration(
        11,
        "the query role reads no row its principals may not: mentions and the graph's state under policies, "
        "keyword rows and statistics through functions that test the readers, no other table",
        readers.QUERY_ROLE_STATEMENTS + keywords.DEFINER_FUNCTIONS,
    ),
    # cookies set before held the raw token and are no longer accepted: people open their link once more
    Migration(12, "the page's sign-in sessions (hashed IDs, ended with their token)", users.SESSION_STATEMENTS),
    # CSV and Excel documents stored before are read again by the next sync, for their tables
    Migration(
        13,
        "tables stored as tables: each CSV's and sheet's columns and rows, with their document's readers",
        table_rows.MIGRATION_STATEMENTS,
        upgrade=table_rows.UPGRADE_STATEMENTS,
    ),
    Migration(
        14,
        "the audit log's answers: outcome, cited sources, timings (the administrator's view)",
        usage.MIGRATION_STATEMENTS,
    ),
    # Word, PowerPoint and HTML documents stored before are read again by the next sync, for their tables
    Migration(
        15,
        "tables in Word, PowerPoint and HTML documents, cited by the section or slide that holds them",
        table_rows.ANCHOR_STATEMENTS,
        upgrade=table_rows.ANCHOR_UPGRADE,
    ),
    # the keyword candidates' function takes the question's scope (app.storage.scope): its old signature goes
    Migration(
        16,
        "questions narrowed to folders, formats and dates: the keyword candidates are tested against the scope",
        (keywords.SQL_DROP_OLD_CANDIDATES, *keywords.DEFINER_FUNCTIONS),
    ),
    # procrastinate's own tables are created by the first queued ingest (app.storage.queue.ensure_queue_schema)
    Migration(
        17, "the ingest queue: each queued file's outcome (state, worker, tries, reason)", queue.MIGRATION_STATEMENTS
    ),
    # scans stored before keep no words: their page view runs Tesseract on demand until the file changes
    Migration(
        18,
        "the words Tesseract read on each OCR'd page, with their boxes, readable where their document is",
        page_words.MIGRATION_STATEMENTS,
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def pending(previous: int) -> list[Migration]:
    """The migrations a store at version ``previous`` needs, oldest first."""
    return [m for m in MIGRATIONS if m.version > previous]


def apply_migrations(conn, previous: int) -> list[int]:
    """Apply the migrations above ``previous`` in order, in the caller's transaction (which records the
    version); the ``upgrade`` statements only when the store had a schema (``previous`` > 0). Returns the
    versions applied."""
    from sqlalchemy import text

    applied = []
    for migration in pending(previous):
        statements: Sequence[str] = migration.statements + (migration.upgrade if previous > 0 else ())
        for statement in statements:
            conn.execute(text(statement))
        applied.append(migration.version)
    return applied


def schema_version(engine: Engine) -> int:
    """The stored schema version (0: no schema yet)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        if conn.execute(text(SQL_META_EXISTS), {"table": META_TABLE}).scalar() is None:
            return 0
        return int(conn.execute(text(SQL_SCHEMA_VERSION)).scalar() or 0)


def check_schema(engine: Engine, collection_name: str) -> None:
    """Read paths: StoreNotReadyError unless the schema is current and the collection exists."""
    version = schema_version(engine)
    if version == 0:
        raise StoreNotReadyError("nothing has been ingested yet; run `make ingest` first")
    if version != SCHEMA_VERSION:
        raise StoreNotReadyError(
            f"the store has schema version {version}, this version needs {SCHEMA_VERSION}; "
            "run `make ingest` (or `python -m app.db init`) once to upgrade it"
        )
    if collection_id(engine, collection_name) is None:
        raise StoreNotReadyError(f"the collection '{collection_name}' does not exist; run `make ingest` first")


@functools.cache
def sized_vectorstore_class() -> type:
    """PGVector whose nearest-neighbour search is :func:`app.storage.vectors.nearest_chunks` (the HNSW
    index of the vectors' size, the readers' predicate): the ``principals`` of the call, else the
    store's (:func:`make_vectorstore`), say who asks; with neither, the search raises TypeError rather
    than read everything. A ``filter`` of ``{field: value}`` pairs is matched in the same SQL. The
    reads PGVector would run without the readers' predicate (MMR, ``get_by_ids``) raise."""
    from langchain_core.documents import Document
    from langchain_postgres import PGVector

    class SizedPGVector(PGVector):
        """PGVector over vectors of any size (app.storage.vectors), read as given principals."""

        principals: tuple[str, ...] | None = None  # who reads when a call names nobody (None: refuse)

        def similarity_search_with_score(self, query: str, k: int = 4, filter: dict | None = None, **kwargs):
            """``(Document, cosine distance)`` pairs for ``query``, nearest first."""
            return self.similarity_search_with_score_by_vector(self.embeddings.embed_query(query), k, filter, **kwargs)

        def similarity_search_with_score_by_vector(
            self, embedding, k: int = 4, filter: dict | None = None, principals=None, scope=None, **kwargs
        ):
            """``(Document, cosine distance)`` pairs, nearest first, that ``principals`` (else the store's) may
            read, within ``scope`` (app.storage.scope.Scope; None: everything they may read)."""
            who = self.principals if principals is None else tuple(principals)
            if who is None:  # a forgotten argument must not read everything
                raise TypeError(
                    "vector search needs principals: pass principals= or make the store with them "
                    "(app.permissions.principals.FULL_ACCESS for full access, on purpose)"
                )
            rows = nearest_chunks(
                self._engine, self.collection_name, list(embedding), k, who, metadata_filter(filter), scope=scope
            )
            return [
                (Document(id=str(id_), page_content=text, metadata=metadata or {}), float(distance))
                for id_, text, metadata, distance in rows
            ]

        def max_marginal_relevance_search_with_score_by_vector(self, *args, **kwargs):
            """Refused: PGVector's MMR reads the table without the readers' predicate."""
            raise NotImplementedError("MMR search is not supported: it would skip who may read each chunk")

        def get_by_ids(self, ids, /):
            """Refused: PGVector reads the rows by ID without the readers' predicate."""
            raise NotImplementedError("get_by_ids is not supported: it would skip who may read each chunk")

    return SizedPGVector


def metadata_filter(filter: dict | None) -> dict | None:
    """A search filter as the metadata pairs it requires: ``{field: value}`` or ``{field: {"$eq": value}}``
    with text, number or boolean values; ValueError for anything else (operators such as ``$in``)."""
    if not filter:
        return None
    pairs = {}
    for field, value in filter.items():
        if isinstance(value, dict) and set(value) == {"$eq"}:
            value = value["$eq"]
        if not isinstance(field, str) or field.startswith("$") or not isinstance(value, (str, int, float, bool)):
            raise ValueError(f"vector_filter takes {{field: value}} pairs (text, number or boolean), got {filter!r}")
        pairs[field] = value
    return pairs


def make_vectorstore(
    engine: Engine,
    embeddings,
    collection_name: str,
    create: bool = False,
    size: int | None = None,
    principals: Sequence[str] | None = None,
) -> PGVector:
    """A PGVector on ``engine`` (JSONB metadata; a new store's column is ``vector(size)``), searching as
    ``principals`` when a call names none (None: such a search raises TypeError).

    With ``create`` (write paths only, under the writer lock) it creates the extension,
    its tables and the collection; without, it only finds them (no DDL, no writes) and takes
    vectors of any size (app.storage.vectors).
    """
    store = sized_vectorstore_class()(
        embeddings=embeddings,
        connection=engine,
        embedding_length=size,
        collection_name=collection_name,
        use_jsonb=True,
        create_extension=create,
    )
    store.principals = None if principals is None else tuple(principals)
    return store


def open_store(engine: Engine, embeddings, collection_name: str, principals=None) -> PGVector:
    """Open the store for reading, the one way every reader does (``db.get_vectorstore``, the read side
    ``app.retrieval.reader.StoreReader``): the existing, current schema is checked first (StoreNotReadyError
    otherwise) and nothing is created; searches read as ``principals`` (see :func:`make_vectorstore`)."""
    check_schema(engine, collection_name)
    return make_vectorstore(engine, embeddings, collection_name, create=False, principals=principals)


def create_schema(engine: Engine, embeddings, collection_name: str, size: int = EMBED_DIM) -> PGVector:
    """Write path (the caller holds the writer lock): the extension, PGVector's tables and the
    collection, then the pending migrations, the embedding columns fitted to the model's ``size``
    (app.storage.vectors), keyword rows for chunks stored without one, and the schema version, in
    one transaction; returns the store."""
    from sqlalchemy import text

    check_size(size)
    store = make_vectorstore(engine, embeddings, collection_name, create=True, size=size)
    previous = schema_version(engine)
    with engine.begin() as conn:
        lift_statement_timeout(conn)  # migrations may rebuild indexes over every chunk
        apply_migrations(conn, previous)
        fit_size(conn, size)
        keywords.backfill_keywords(conn)
        missing = readers.ensure_query_role(conn)
        conn.execute(text(SQL_SET_SCHEMA_VERSION), {"version": str(SCHEMA_VERSION)})
    if missing:
        log.warning("%s", missing)
    return store
