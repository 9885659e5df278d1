"""The identity of a request: a personal token, a signing-in proxy's headers, a shared secret, or full access.

A personal token is ``rag_`` + 43 URL-safe characters (256 random bits); only its SHA-256 is stored.
Each lookup reads the user's groups afresh, so a removed user, a revoked token or a changed
membership holds from the next request on.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.errors import RagError
from app.permissions.principals import EVERYONE, FULL_ACCESS, SHARED_SECRET, check_name, is_admin, user_principals
from app.storage import users as user_rows

TOKEN_PREFIX = "rag_"
TOKEN_BYTES = 32


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
    if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    found = user_rows.token_user(engine, token_hash(token))
    return None if found is None else user_identity(found[0], found[1])


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
) -> None:
    """One audit row when AUDIT_LOG is on (the question only with AUDIT_LOG_QUESTIONS)."""
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
    )
