"""The SQLAlchemy engine: one per database target, made on first use and checked with one query.

Two targets: the **embedded** server (no ``DB_HOST``: app.storage.embedded starts it, app.storage.provision
sets up its role and database) or a **server** (``DB_HOST`` … or ``DATABASE_URL``). Every connection
gets the per-session settings below; a failure of the database itself becomes one
``DatabaseUnavailableError`` line (:func:`database_error`), never showing bound values.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from app.config import Settings, get_connection_string, get_db_config, get_settings
from app.errors import DatabaseUnavailableError
from app.models.resources import cached
from app.storage import embedded as embedded_pg
from app.storage import provision

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = provision.CONNECT_TIMEOUT_S
SQL_PING = "SELECT 1"
# Per-connection settings, each applied on its own (a server that refuses one keeps the others):
# * psycopg prepares a statement run 5 times on a connection, and PostgreSQL then may switch it to
#   a generic plan, which cannot see the keyword query's tsquery: measured at 100k chunks, 17.8 ms
#   p50 with generic plans against 8.5 ms with custom ones (and 100+ ms runs in make bench);
# * pgvector >= 0.8: when a filter (here: the collection) rejects rows the HNSW scan returned,
#   keep scanning instead of returning fewer than k rows (a reader's filter: docs/benchmarks.md);
# * ef_search 200: with the index's ef_construction 200, recall@10 0.96 at 100k chunks for every
#   visible share (0.75 with pgvector's defaults); 400 made the planner leave the index for an exact
#   sort at 5 % (2.5x slower) (docs/benchmarks.md, "Filtered vector search").
SQL_SESSION_SETTINGS = (
    "SET plan_cache_mode = force_custom_plan",
    "SET hnsw.iterative_scan = strict_order; SET hnsw.ef_search = 200",
)
# Schema creation, a document's switch and a graph build may rewrite every row: no DB_STATEMENT_TIMEOUT_MS there.
SQL_NO_TIMEOUT = "SET LOCAL statement_timeout = 0"
# `python -m app.db check`: what the server offers (read-only queries, then one rolled-back CREATE EXTENSION).
PGVECTOR_MIN_VERSION = (0, 7)
SQL_SERVER_FACTS = (
    "SELECT current_setting('server_version') AS server, current_user AS db_user, "
    "pg_is_in_recovery() AS replica, "
    "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available, "
    "(SELECT extversion FROM pg_extension WHERE extname = 'vector') AS installed"
)
SQL_TRY_CREATE_VECTOR = provision.SQL_CREATE_VECTOR


def resolve_connection_string(settings: Settings) -> str:
    """Return the SQLAlchemy URL: the embedded server's (starting it if needed) or DB_HOST's."""
    if not settings.db.embedded:
        return get_connection_string(settings)

    embedded_pg.ensure_running(settings.db.pgdata_dir)
    pgdata = settings.db.pgdata_dir
    provision.provision(
        embedded_pg.connection_url(pgdata, "postgres", admin=True),
        embedded_pg.connection_url(pgdata, settings.db.name, admin=True),
        settings.db.name,
        embedded_pg.APP_ROLE,
        embedded_pg.app_password(pgdata),
    )
    return embedded_pg.connection_url(settings.db.pgdata_dir, settings.db.name)


def describe_target(settings: Settings) -> str:
    """Where the app looks for PostgreSQL, for error messages."""
    if settings.db.embedded:
        return f"embedded PostgreSQL in {settings.db.pgdata_dir}"
    if settings.db.url:
        cfg = get_db_config(settings)
        return f"PostgreSQL at {cfg['host']}:{cfg['port']} (DATABASE_URL)"
    return f"PostgreSQL at {settings.db.host}:{settings.db.port}"


def configure_session(dbapi_connection, _record) -> None:
    """Per-connection settings (an engine ``connect`` listener); one the server does not know (an old
    pgvector) is skipped."""
    import psycopg

    for statement in SQL_SESSION_SETTINGS:
        try:
            with dbapi_connection.cursor() as cursor:
                cursor.execute(statement)
            dbapi_connection.commit()
        except psycopg.Error as exc:
            log.info("could not apply %r: %s", statement, exc)
            dbapi_connection.rollback()


def lift_statement_timeout(conn) -> None:
    """No statement timeout for the rest of this transaction (a long rebuild or switch)."""
    from sqlalchemy import text

    conn.execute(text(SQL_NO_TIMEOUT))


def first_line(exc: BaseException) -> str:
    """The first non-empty line of the driver's message (no SQL, no parameters)."""
    orig = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(orig).strip().splitlines() if line.strip()]
    return lines[0] if lines else exc.__class__.__name__


def database_error(exc: BaseException) -> DatabaseUnavailableError | None:
    """The one-line error for a failure of the database itself (lost, full, out of resources),
    or None for an error of one statement's data. Never includes SQL parameters."""
    import psycopg
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

    if isinstance(exc, DatabaseUnavailableError):
        return exc
    if not isinstance(exc, DBAPIError) and isinstance(exc.__cause__, DBAPIError):
        return database_error(exc.__cause__)  # langchain-postgres wraps some ("Failed to create vector extension")
    orig = getattr(exc, "orig", None)
    if isinstance(exc, DBAPIError) and isinstance(orig, psycopg.errors.InsufficientPrivilege):
        return DatabaseUnavailableError(
            f"the database user may not do this ({first_line(exc)}); ingest, remove and `db init` need a user "
            "that may create and write the tables, reads only need SELECT"
        )
    if isinstance(exc, DBAPIError) and isinstance(orig, psycopg.errors.ReadOnlySqlTransaction):
        return DatabaseUnavailableError(
            f"the database is read-only ({first_line(exc)}); a read replica answers questions, but ingest, "
            "remove and `db init` must go to the primary"
        )
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return None
    if isinstance(orig, psycopg.errors.DiskFull):
        return DatabaseUnavailableError(
            f"the database disk is full ({first_line(exc)}); free some space and run the command again "
            "(every document is stored in its old or its new version, none half-written)"
        )
    return DatabaseUnavailableError(f"the database failed: {first_line(exc)}")


def get_engine(settings: Settings | None = None) -> Engine:
    """Return the SQLAlchemy engine for these settings (one per database target, created on first use);
    DatabaseUnavailableError if unreachable."""
    s = settings or get_settings()
    key = (
        s.db.host,
        s.db.port,
        s.db.user,
        s.db.password,
        s.db.name,
        str(s.db.pgdata_dir.expanduser().absolute()),
        s.db.url,
        s.db.pool_size,
        s.db.statement_timeout_ms,
    )
    return cached("engine", key, lambda: connect(s))


def connect_args(s: Settings, url: str) -> dict:
    """psycopg connect arguments: the connect timeout and, unless the URL sets its own ``options``,
    DB_STATEMENT_TIMEOUT_MS as the session's statement_timeout (long rebuilds lift it, see SQL_NO_TIMEOUT)."""
    args: dict = {"connect_timeout": CONNECT_TIMEOUT_S, "application_name": application_name()}
    if "options=" not in url:
        args["options"] = f"-c statement_timeout={s.db.statement_timeout_ms}"
    return args


def application_name() -> str:
    """How this process names itself to the server (``rag ingest on host pid 123``): what a second
    writer is told about the one holding the writer lock (app.storage.lock)."""
    import os
    import socket
    import sys

    program = os.path.splitext(os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "python"))[0]
    return f"rag {program} on {socket.gethostname()} pid {os.getpid()}"[:63]


def connect(s: Settings) -> Engine:
    """A new engine on the configured database, checked with one query."""
    from sqlalchemy import create_engine, event, text
    from sqlalchemy.exc import OperationalError

    url = resolve_connection_string(s)
    # hide_parameters: error messages and logs never show bound values (they hold document text).
    engine = create_engine(
        url,
        pool_pre_ping=True,
        hide_parameters=True,
        pool_size=s.db.pool_size,
        max_overflow=s.db.pool_size,
        connect_args=connect_args(s, url),
    )
    event.listen(engine, "connect", configure_session)
    try:
        with engine.connect() as conn:
            conn.execute(text(SQL_PING))
    except OperationalError as exc:
        raise DatabaseUnavailableError(f"cannot connect to {describe_target(s)}: {first_line(exc)}") from None
    return engine


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.8.1"`` → ``(0, 8, 1)`` (non-numeric parts stop the tuple)."""
    out = []
    for part in version.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def check_server(engine: Engine) -> dict:
    """Check that the server can hold the store: pgvector >= 0.7 installed, or available and creatable
    by this user. Returns the facts (server and pgvector versions, replica or not); raises
    DatabaseUnavailableError with what to do when it cannot. A read replica passes when the
    extension is installed (reads need no DDL)."""
    import psycopg
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    with engine.connect() as conn:
        facts = dict(conn.execute(text(SQL_SERVER_FACTS)).mappings().one())
    need = ".".join(map(str, PGVECTOR_MIN_VERSION))
    version = facts["installed"] or facts["available"]
    if version is None:
        raise DatabaseUnavailableError(
            f"pgvector is not installed on this PostgreSQL {facts['server']} server; install pgvector >= {need} "
            "(e.g. the pgvector/pgvector image, or the postgresql-NN-pgvector package)"
        )
    if version_tuple(version) < PGVECTOR_MIN_VERSION:
        raise DatabaseUnavailableError(f"pgvector {version} is too old; this app needs pgvector >= {need}")
    facts["can_create"] = bool(facts["installed"])
    if not facts["installed"] and not facts["replica"]:
        try:
            with engine.connect() as conn:
                conn.execute(text(SQL_TRY_CREATE_VECTOR))
                conn.rollback()  # only finding out whether we may
            facts["can_create"] = True
        except DBAPIError as exc:
            if not isinstance(exc.orig, psycopg.errors.InsufficientPrivilege):
                raise
            raise DatabaseUnavailableError(
                f"the database user '{facts['db_user']}' may not create the vector extension; ask an "
                "administrator to run `CREATE EXTENSION vector;` once in this database"
            ) from None
    return facts
