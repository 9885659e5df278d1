"""Users, their groups, their personal tokens (SHA-256 hashes only) and the audit log.

A token is a random 256-bit secret (app.users.tokens), so a fast hash is as safe as a slow one: the
table holds ``sha256(token)``, and a lookup is one indexed equality. Removing a user removes their
tokens (``ON DELETE CASCADE``); revoking deletes every token of the user at once. A user's groups are
read on every request, so a changed membership holds from the next request on.

The page's sign-in sessions (migration 12) are random IDs kept as ``sha256(id)`` with the token (or
the shared secret's hash) they were opened with and an expiry: revoking the token or removing the user
deletes them (``ON DELETE CASCADE``), signing out deletes one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app.storage.tables import sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# --- schema (migration 6, app.storage.schema) ------------------------------------------------
MIGRATION_STATEMENTS = (
    sql(
        "CREATE TABLE IF NOT EXISTS {users} (name text PRIMARY KEY, groups text[] NOT NULL DEFAULT '{{}}', "
        "created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now())"
    ),
    sql(
        "CREATE TABLE IF NOT EXISTS {tokens} (hash text PRIMARY KEY, "
        "user_name text NOT NULL REFERENCES {users}(name) ON DELETE CASCADE ON UPDATE CASCADE, "
        "created_at timestamptz NOT NULL DEFAULT now())"
    ),
    sql("CREATE INDEX IF NOT EXISTS {token_user_index} ON {tokens} (user_name)"),
    sql(
        "CREATE TABLE IF NOT EXISTS {audit} (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), "
        "user_name text NOT NULL, surface text NOT NULL, action text NOT NULL, sources text[] NOT NULL, "
        "question text)"
    ),
    sql("CREATE INDEX IF NOT EXISTS {audit_at_index} ON {audit} (at)"),
)

# --- the page's sessions (migration 12) --------------------------------------------------------
# A session holds a personal token's hash (and its user) or the shared secret's hash, never both.
SESSION_STATEMENTS = (
    sql(
        "CREATE TABLE IF NOT EXISTS {sessions} (hash text PRIMARY KEY, "
        "user_name text REFERENCES {users}(name) ON DELETE CASCADE ON UPDATE CASCADE, "
        "token_hash text REFERENCES {tokens}(hash) ON DELETE CASCADE, shared_hash text, "
        "created_at timestamptz NOT NULL DEFAULT now(), expires_at timestamptz NOT NULL, "
        "CHECK ((token_hash IS NOT NULL AND user_name IS NOT NULL AND shared_hash IS NULL) "
        "OR (token_hash IS NULL AND user_name IS NULL AND shared_hash IS NOT NULL)))"
    ),
    sql("CREATE INDEX IF NOT EXISTS {session_user_index} ON {sessions} (user_name)"),
    sql("CREATE INDEX IF NOT EXISTS {session_token_index} ON {sessions} (token_hash)"),
    sql("CREATE INDEX IF NOT EXISTS {session_expiry_index} ON {sessions} (expires_at)"),
)
SQL_OPEN_TOKEN_SESSION = sql(
    "INSERT INTO {sessions} (hash, user_name, token_hash, expires_at) "
    "SELECT :hash, t.user_name, t.hash, now() + make_interval(hours => :hours) FROM {tokens} t WHERE t.hash = :token"
)
SQL_OPEN_SHARED_SESSION = sql(
    "INSERT INTO {sessions} (hash, shared_hash, expires_at) VALUES (:hash, :shared, now() + make_interval(hours => :hours))"
)
SQL_PRUNE_SESSIONS = sql("DELETE FROM {sessions} WHERE expires_at <= now()")
SQL_SESSION = sql(
    "SELECT s.shared_hash, u.name, u.groups FROM {sessions} s LEFT JOIN {users} u ON u.name = s.user_name "
    "WHERE s.hash = :hash AND s.expires_at > now()"
)
SQL_CLOSE_SESSION = sql("DELETE FROM {sessions} WHERE hash = :hash")
SQL_COUNT_SESSIONS = sql("SELECT count(*) FROM {sessions} WHERE user_name = :name AND expires_at > now()")

SQL_UPSERT_USER = sql(
    "INSERT INTO {users} (name, groups) VALUES (:name, CAST(:groups AS text[])) "
    "ON CONFLICT (name) DO UPDATE SET groups = EXCLUDED.groups, updated_at = now()"
)
SQL_DELETE_USER = sql("DELETE FROM {users} WHERE name = :name")
SQL_LIST_USERS = sql(
    "SELECT u.name, u.groups, u.created_at, (SELECT count(*) FROM {tokens} t WHERE t.user_name = u.name) AS tokens "
    "FROM {users} u ORDER BY u.name"
)
SQL_USER_GROUPS = sql("SELECT groups FROM {users} WHERE name = :name")
SQL_ADD_TOKEN = sql("INSERT INTO {tokens} (hash, user_name) VALUES (:hash, :name)")
SQL_REVOKE = sql("DELETE FROM {tokens} WHERE user_name = :name")
SQL_TOKEN_USER = sql(
    "SELECT u.name, u.groups FROM {tokens} t JOIN {users} u ON u.name = t.user_name WHERE t.hash = :hash"
)
SQL_AUDIT = sql(
    "INSERT INTO {audit} (user_name, surface, action, sources, question, answer_id, abstained, cached, cited, "
    "passages_ms, first_token_ms, total_ms) VALUES (:user, :surface, :action, CAST(:sources AS text[]), :question, "
    ":answer_id, :abstained, :cached, CAST(:cited AS text[]), :passages_ms, :first_token_ms, :total_ms)"
)
# an answer's own columns (migration 14, app.storage.usage); a search's row leaves them empty
AUDIT_ANSWER_FIELDS = ("answer_id", "abstained", "cached", "cited", "passages_ms", "first_token_ms", "total_ms")
SQL_AUDIT_PRUNE = sql("DELETE FROM {audit} WHERE at < now() - make_interval(days => :days)")
SQL_AUDIT_ROWS = sql(
    "SELECT at, user_name, surface, action, sources, question FROM {audit} "
    "WHERE at >= now() - make_interval(days => :days) ORDER BY at DESC, id DESC LIMIT :limit"
)


def _run(engine: Engine, statement: str, params: dict, write: bool = False):
    """Execute one statement; a write commits."""
    from sqlalchemy import text

    if write:
        with engine.begin() as conn:
            return conn.execute(text(statement), params).rowcount
    with engine.connect() as conn:
        return conn.execute(text(statement), params).all()


def upsert_user(engine: Engine, name: str, groups: Sequence[str]) -> None:
    """Create the user, or set an existing user's groups (idempotent)."""
    _run(engine, SQL_UPSERT_USER, {"name": name, "groups": list(groups)}, write=True)


def delete_user(engine: Engine, name: str) -> bool:
    """Remove the user and their tokens; False when there was no such user."""
    return bool(_run(engine, SQL_DELETE_USER, {"name": name}, write=True))


def list_users(engine: Engine) -> list[dict]:
    """Every user: name, groups, created_at, tokens (how many)."""
    return [dict(r._mapping) for r in _run(engine, SQL_LIST_USERS, {})]


def user_groups(engine: Engine, name: str) -> list[str] | None:
    """The user's groups; None when there is no such user."""
    rows = _run(engine, SQL_USER_GROUPS, {"name": name})
    return list(rows[0][0]) if rows else None


def add_token(engine: Engine, name: str, token_hash: str) -> None:
    """Store a token's hash for the user."""
    _run(engine, SQL_ADD_TOKEN, {"name": name, "hash": token_hash}, write=True)


def revoke_tokens(engine: Engine, name: str) -> int:
    """End every token of the user; returns how many there were."""
    return int(_run(engine, SQL_REVOKE, {"name": name}, write=True) or 0)


def token_user(engine: Engine, token_hash: str) -> tuple[str, list[str]] | None:
    """``(name, groups)`` of the user holding the token with this hash; None for an unknown one."""
    rows = _run(engine, SQL_TOKEN_USER, {"hash": token_hash})
    return (rows[0][0], list(rows[0][1])) if rows else None


def open_token_session(engine: Engine, session_hash: str, token_hash: str, hours: int) -> bool:
    """Store a session for the holder of the token with this hash, ending in ``hours``, and delete
    expired sessions, in one transaction; False (nothing stored) for an unknown token."""
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text(SQL_PRUNE_SESSIONS))
        params = {"hash": session_hash, "token": token_hash, "hours": hours}
        return conn.execute(text(SQL_OPEN_TOKEN_SESSION), params).rowcount == 1


def open_shared_session(engine: Engine, session_hash: str, shared_hash: str, hours: int) -> None:
    """Store a session opened with the shared secret whose hash is ``shared_hash``, ending in ``hours``,
    and delete expired sessions, in one transaction."""
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text(SQL_PRUNE_SESSIONS))
        conn.execute(text(SQL_OPEN_SHARED_SESSION), {"hash": session_hash, "shared": shared_hash, "hours": hours})


def session_row(engine: Engine, session_hash: str) -> tuple[str | None, str | None, list[str]] | None:
    """``(shared_hash, user name, groups)`` of the unexpired session with this hash (the user's or the
    shared secret's side is None); None when there is no such session."""
    rows = _run(engine, SQL_SESSION, {"hash": session_hash})
    if not rows:
        return None
    shared, name, groups = rows[0]
    return shared, name, list(groups or [])


def close_session(engine: Engine, session_hash: str) -> bool:
    """End the session with this hash; False when there was none."""
    return bool(_run(engine, SQL_CLOSE_SESSION, {"hash": session_hash}, write=True))


def count_sessions(engine: Engine, name: str) -> int:
    """How many unexpired sessions the user has."""
    return int(_run(engine, SQL_COUNT_SESSIONS, {"name": name})[0][0])


def record_audit(
    engine: Engine,
    user: str,
    surface: str,
    action: str,
    sources: Sequence[str],
    question: str | None,
    days: int,
    answer: Mapping[str, Any] | None = None,
) -> None:
    """One audit row, and rows older than ``days`` deleted, in one transaction. ``answer``: an answer's
    outcome and timings (:data:`AUDIT_ANSWER_FIELDS`; app.serving.usage.answer_usage)."""
    from sqlalchemy import text

    params = {"user": user, "surface": surface, "action": action, "sources": list(sources), "question": question}
    params.update({name: (answer or {}).get(name) for name in AUDIT_ANSWER_FIELDS})
    with engine.begin() as conn:
        conn.execute(text(SQL_AUDIT), params)
        conn.execute(text(SQL_AUDIT_PRUNE), {"days": days})


def audit_rows(engine: Engine, days: int, limit: int = 1000) -> list[dict]:
    """The audit rows of the last ``days`` days, newest first."""
    return [dict(r._mapping) for r in _run(engine, SQL_AUDIT_ROWS, {"days": days, "limit": limit})]
