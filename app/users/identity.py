"""The identity of a request: a personal token, a signing-in proxy's headers, a shared secret, or full access.

A personal token is ``rag_`` + 43 URL-safe characters (256 random bits); only its SHA-256 is stored.
Each lookup reads the user's groups afresh, so a removed user, a revoked token or a changed
membership holds from the next request on.

The page's session cookie holds a session ID (``rs_`` + 43 URL-safe characters), never the token:
:class:`Sessions` keeps its SHA-256 with the token it was opened with (or the shared secret's hash) and
an expiry; revoking the token, removing the user, changing the shared secret or signing out ends it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.errors import RagError
from app.permissions.principals import EVERYONE, FULL_ACCESS, SHARED_SECRET, check_name, is_admin, user_principals
from app.storage import users as user_rows

TOKEN_PREFIX = "rag_"
TOKEN_BYTES = 32
SESSION_PREFIX = "rs_"
SESSION_HOURS = 7 * 24  # a sign-in lasts a week at most (the cookie itself ends with the browser session)
MAX_SECRET_CHARS = 200  # a longer token or session ID is nobody's: refused before any hashing or lookup


class UnknownUserError(RagError):
    """No such user (``--as``, MCP_AS_USER, ``token``, ``revoke``)."""


@dataclass(frozen=True)
class Identity:
    """Who asks: a name for logs and the audit, and the principals every read carries."""

    name: str
    principals: tuple[str, ...]
    kind: str = "user"  # user | proxy | shared | full

    @property
    def admin(self) -> bool:
        """Whether this identity reads everything (group ``admin``)."""
        return is_admin(self.principals)


FULL = Identity("(full access)", FULL_ACCESS, "full")
SHARED = Identity("(shared secret)", SHARED_SECRET, "shared")


def new_token() -> str:
    """A new personal token."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_groups(value: str | Sequence[str]) -> list[str]:
    """Group names from ``"経理,営業"`` or a list: checked, without repeats, sorted; ``everyone`` is implied."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return sorted({check_name(g, "group") for g in items if g and g.strip()} - {EVERYONE})


def user_identity(name: str, groups: Sequence[str], kind: str = "user") -> Identity:
    """The identity of user ``name`` in ``groups``."""
    return Identity(name, user_principals(name, groups), kind)


def principals_for_user(engine: Any, name: str) -> tuple[str, ...]:
    """The principals of a stored user (``--as NAME``, MCP_AS_USER); UnknownUserError when there is none."""
    name = check_name(name)
    groups = user_rows.user_groups(engine, name)
    if groups is None:
        raise UnknownUserError(f"no user {name!r} (see `python -m app.users list`)")
    return user_principals(name, groups)


def identity_for_token(engine: Any, token: str | None) -> Identity | None:
    """The user holding this personal token, with their groups now; None for an unknown or revoked one."""
    if not token or not token.startswith(TOKEN_PREFIX) or len(token) > MAX_SECRET_CHARS:
        return None
    found = user_rows.token_user(engine, token_hash(token))
    return None if found is None else user_identity(found[0], found[1])


def new_session_id() -> str:
    """A new session ID for the page's cookie (256 random bits)."""
    return SESSION_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


@dataclass(frozen=True)
class Sessions:
    """The page's sign-in sessions, kept in PostgreSQL (app.storage.users): ``engine()`` gives the
    engine when a session is first used; ``shared_secret`` is WEB_TOKEN (None: none is set)."""

    engine: Callable[[], Any] = field(repr=False)
    shared_secret: str | None = field(default=None, repr=False)
    hours: int = SESSION_HOURS

    def open(self, token: str | None) -> str | None:
        """A new session ID for whoever holds ``token`` (a personal token, or the shared secret);
        None, and nothing stored, when the token names nobody."""
        if not token or len(token) > MAX_SECRET_CHARS:
            return None
        session = new_session_id()
        if token.startswith(TOKEN_PREFIX):
            opened = user_rows.open_token_session(self.engine(), token_hash(session), token_hash(token), self.hours)
            return session if opened else None
        if self.shared_secret and hmac.compare_digest(token.encode("utf-8"), self.shared_secret.encode("utf-8")):
            user_rows.open_shared_session(
                self.engine(), token_hash(session), token_hash(self.shared_secret), self.hours
            )
            return session
        return None

    def identity(self, session: str | None) -> Identity | None:
        """Who the unexpired session ``session`` belongs to, with their groups now; None for an unknown,
        expired or ended one, and for one opened with a shared secret that has changed since."""
        if not session or not session.startswith(SESSION_PREFIX) or len(session) > MAX_SECRET_CHARS:
            return None
        found = user_rows.session_row(self.engine(), token_hash(session))
        if found is None:
            return None
        shared, name, groups = found
        if name is not None:
            return user_identity(name, groups)
        current = token_hash(self.shared_secret) if self.shared_secret else ""
        return SHARED if shared and current and hmac.compare_digest(shared, current) else None

    def close(self, session: str | None) -> None:
        """End the session ``session`` (signing out); nothing for an unknown one."""
        if session and session.startswith(SESSION_PREFIX) and len(session) <= MAX_SECRET_CHARS:
            user_rows.close_session(self.engine(), token_hash(session))


def identity_for_proxy(user: str | None, groups: str | None, secret_given: str | None, secret: str) -> Identity | None:
    """The identity a signing-in reverse proxy vouches for: its user header (and groups header), counted
    only when the request carries the proxy's shared secret; None otherwise (or for a bad name)."""
    if not secret or not secret_given or not user:
        return None
    if not hmac.compare_digest(secret_given.encode("utf-8"), secret.encode("utf-8")):
        return None
    try:
        return user_identity(check_name(user), parse_groups(groups or ""), "proxy")
    except ValueError:
        return None


def record(
    engine: Any,
    settings: Any,
    identity: Identity,
    surface: str,
    action: str,
    sources: Sequence[str],
    question: str | None = None,
    answer: dict[str, Any] | None = None,
) -> None:
    """One audit row when AUDIT_LOG is on (the question only with AUDIT_LOG_QUESTIONS); ``answer``: an
    answer's outcome and timings (app.serving.usage.answer_usage)."""
    access = settings.access
    if not access.audit:
        return
    user_rows.record_audit(
        engine,
        identity.name,
        surface,
        action,
        list(sources),
        question if access.audit_questions else None,
        access.audit_retention_days,
        answer,
    )
