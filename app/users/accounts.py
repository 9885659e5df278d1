"""Adding users without mistaking one for another.

A user name is stored NFKC-normalized (:func:`~app.permissions.principals.check_name`: full-width
ａｌｉｃｅ is stored as alice). Two names people would read as one (equal :func:`name_key`: NFKC and
case-folded) are one user, so ``add`` never makes a second such user and never lets a differently typed
name stand for an existing one:

* a name no user has, and that looks like none: the user is created;
* the stored name, typed as it is stored (Unicode NFC, the only difference people cannot see):
  that user's groups are set (and the change is reported);
* ``ａｌｉｃｅ`` while ``alice`` exists, or ``Alice`` while ``alice`` exists: refused
  (:class:`NameClashError`), the stored name named in the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.errors import RagError
from app.permissions.principals import check_name, name_key, nfc
from app.storage import users as user_rows


class NameClashError(RagError):
    """The name given is, as people read it, an existing user's name written differently."""


def clash(typed: str, existing: Sequence[str]) -> str | None:
    """The existing user ``typed`` would be mistaken for, when it is not that user as stored; None
    when ``typed`` is a new name or names a stored user exactly (up to NFC)."""
    name = check_name(typed)
    if name in existing:
        return None if nfc(typed.strip()) == name else name
    return next((other for other in existing if name_key(other) == name_key(name)), None)


def add_user(engine: Any, typed: str, groups: Sequence[str]) -> tuple[str, list[str] | None]:
    """Create user ``typed`` in ``groups``, or set the groups of the user stored under exactly that
    name; returns ``(name as stored, previous groups or None when created)``. NameClashError when
    ``typed`` is another way of writing an existing user's name (module docstring); ValueError for a
    name that is not allowed."""
    name = check_name(typed)
    existing = [row["name"] for row in user_rows.list_users(engine)]
    other = clash(typed, existing)
    if other is not None:
        raise NameClashError(
            f"{typed.strip()!r} would be read as the existing user {other!r}; "
            f"to change that user's groups, type the name as stored: python -m app.users add {other} --groups …"
        )
    previous = user_rows.user_groups(engine, name) if name in existing else None
    user_rows.upsert_user(engine, name, groups)
    return name, previous
