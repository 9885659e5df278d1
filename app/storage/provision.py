"""The embedded server's accounts and database, set up as its superuser (DB_HOST servers are the
administrator's): the app's login role, its database with the vector extension, and what an older
version made as the superuser handed over to that role. Also the two statements app.storage.embedded runs
when it secures a cluster made by an older version.

DDL cannot take bound parameters: names are composed with psycopg's ``sql.Identifier`` and the
password as a ``sql.Literal`` — never the password itself, but its SCRAM-SHA-256 verifier, computed by
libpq on this side (:func:`scram_verifier`), so a statement the server logs (an error, ``log_statement``) holds no secret.
The role is created only when it is missing, and the session logs no statement on error.
"""

from __future__ import annotations

CONNECT_TIMEOUT_S = 5
QUERY_ROLE = "rag_query"  # app.storage.readers.QUERY_ROLE

SQL_PROVISION_LOCK = "SELECT pg_advisory_lock(7046512)"  # serializes provision() across processes
SQL_DATABASE_EXISTS = "SELECT 1 FROM pg_database WHERE datname = %s"
SQL_CREATE_APP_ROLE = "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}"
SQL_SET_APP_ROLE = "ALTER ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}"
SQL_ROLE_EXISTS = "SELECT 1 FROM pg_roles WHERE rolname = %s"
SQL_QUIET_ERRORS = "SET log_min_error_statement = panic"  # a failed statement is logged without its text
SQL_CREATE_DATABASE = "CREATE DATABASE {} OWNER {}"
SQL_SET_DATABASE_OWNER = "ALTER DATABASE {} OWNER TO {}"
SQL_CREATE_VECTOR = "CREATE EXTENSION IF NOT EXISTS vector"
# the role reads run as, bound by row-level security (app.storage.readers); the app's role may take it
SQL_CREATE_QUERY_ROLE = "CREATE ROLE {} NOLOGIN NOINHERIT"
SQL_GRANT_QUERY_ROLE = "GRANT {} TO {}"
SQL_SET_OWNER = "ALTER {} {} OWNER TO {}"  # kind and name as SQL_NOT_OWNED returns them (already quoted)
# What an older version made as the superuser in the public schema: handed to the app role.
SQL_NOT_OWNED = (
    "SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END, "
    "quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S', 'v') "
    "AND pg_get_userbyid(c.relowner) <> %(role)s "
    "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')) "  # a serial's
    "UNION ALL SELECT 'FUNCTION', quote_ident(n.nspname) || '.' || quote_ident(p.proname) || "
    "'(' || pg_get_function_identity_arguments(p.oid) || ')' FROM pg_proc p JOIN pg_namespace n ON n.oid = "
    "p.pronamespace WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> %(role)s "
    "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"
)
# app.storage.embedded: a cluster made with trust logins gets a superuser password, then its new pg_hba.conf.
SQL_SET_PASSWORD = "ALTER ROLE {} PASSWORD {}"
SQL_RELOAD_CONF = "SELECT pg_reload_conf()"


def provision(admin_url: str, db_admin_url: str, dbname: str, role: str, password: str) -> None:
    """On the embedded server, as its superuser: the app's role (login, no superuser, no CREATEDB;
    its password set), ``dbname`` owned by it (created if missing), the vector extension in it, and
    every table, sequence and function of an older version's database handed to the role
    (``admin_url``: the superuser on the ``postgres`` database, ``db_admin_url``: on ``dbname``). Safe
    when two processes race."""
    import psycopg
    from psycopg import errors, sql

    url = admin_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        # One process at a time (ALTER ROLE / ALTER DATABASE at once fail with "tuple concurrently
        # updated"); the lock is the session's, released when this connection closes.
        conn.execute(SQL_PROVISION_LOCK)
        conn.execute(SQL_QUIET_ERRORS)
        verifier = sql.Literal(scram_verifier(conn, role, password))
        if conn.execute(SQL_ROLE_EXISTS, (role,)).fetchone() is None:
            _ignore_races(
                conn,
                sql.SQL(SQL_CREATE_APP_ROLE).format(sql.Identifier(role), verifier),
                errors.DuplicateObject,
                errors.UniqueViolation,
            )
        conn.execute(sql.SQL(SQL_SET_APP_ROLE).format(sql.Identifier(role), verifier))
        if conn.execute(SQL_ROLE_EXISTS, (QUERY_ROLE,)).fetchone() is None:
            _ignore_races(
                conn,
                sql.SQL(SQL_CREATE_QUERY_ROLE).format(sql.Identifier(QUERY_ROLE)),
                errors.DuplicateObject,
                errors.UniqueViolation,
            )
        conn.execute(sql.SQL(SQL_GRANT_QUERY_ROLE).format(sql.Identifier(QUERY_ROLE), sql.Identifier(role)))
        if conn.execute(SQL_DATABASE_EXISTS, (dbname,)).fetchone() is None:
            _ignore_races(
                conn,
                sql.SQL(SQL_CREATE_DATABASE).format(sql.Identifier(dbname), sql.Identifier(role)),
                errors.DuplicateDatabase,
                errors.UniqueViolation,
            )
        conn.execute(sql.SQL(SQL_SET_DATABASE_OWNER).format(sql.Identifier(dbname), sql.Identifier(role)))
        with psycopg.connect(
            db_admin_url.replace("postgresql+psycopg://", "postgresql://", 1),
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
        ) as db_conn:
            _ignore_races(db_conn, SQL_CREATE_VECTOR, errors.UniqueViolation, errors.DuplicateObject)
            for kind, name in db_conn.execute(SQL_NOT_OWNED, {"role": role}).fetchall():
                db_conn.execute(sql.SQL(SQL_SET_OWNER).format(sql.SQL(kind), sql.SQL(name), sql.Identifier(role)))


def _ignore_races(conn, statement, *races: type[Exception]) -> None:
    """Run ``statement``; an error of ``races`` (another process did it a moment ago) is no error."""
    try:
        conn.execute(statement)
    except races:
        pass


def set_password(conn, role: str, password: str) -> None:
    """Give ``role`` this password (a psycopg connection as the superuser), sent as its verifier."""
    from psycopg import sql

    conn.execute(SQL_QUIET_ERRORS)
    conn.execute(
        sql.SQL(SQL_SET_PASSWORD).format(sql.Identifier(role), sql.Literal(scram_verifier(conn, role, password)))
    )


def scram_verifier(conn, role: str, password: str) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for ``role``'s ``password``, computed by libpq on
    this side (``PQencryptPasswordConn``): given to ``PASSWORD``, the server stores it as it is, and the
    password itself never reaches the server, its logs or ``pg_stat_activity``."""
    return conn.pgconn.encrypt_password(password.encode("utf-8"), role.encode("utf-8"), b"scram-sha-256").decode()
