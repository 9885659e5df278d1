"""Principals: the names a caller reads as, and the readers a document is given.

>>> user_principals("alice", ["経理"])
('everyone', 'user:alice', '経理')
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from app.text.storable import unstorable_reason

ADMIN = "admin"  # reads everything; alone may sync from the page and see skipped files
EVERYONE = "everyone"  # every user is in it; a shared secret (WEB_TOKEN, MCP_TOKEN) is this only
USER_PREFIX = "user:"
FULL_ACCESS: tuple[str, ...] = (ADMIN,)  # the owner's reads: passed on purpose (the command line), never a default
SHARED_SECRET: tuple[str, ...] = (EVERYONE,)
NO_ACCESS_FILE_READERS: tuple[str, ...] = (ADMIN, EVERYONE)  # single-team mode: everyone reads everything
_NAME = re.compile(r"[^\s,:/\\\"'`<>{}\x00-\x1f\x7f]{1,64}")


def check_name(name: object, what: str = "user") -> str:
    """A user or group name: 1-64 characters, NFKC-normalized, no space, comma, colon, slash, quote,
    brace or control character (Japanese names such as 経理 are fine); ValueError otherwise."""
    if not isinstance(name, str):
        raise ValueError(f"a {what} name must be text, got {name!r}")
    reason = unstorable_reason(name, f"{what} name")  # a surrogate or non-character: never a name
    if reason is not None:
        raise ValueError(reason)
    value = unicodedata.normalize("NFKC", name.strip())
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{what} name {name!r} is not allowed: 1-64 characters without spaces, commas, colons, slashes, "
            "quotes or braces"
        )
    return value


def nfc(text: str) -> str:
    """``text`` in Unicode NFC: a path or name as people see it, whichever form the keyboard or the
    file system (macOS writes NFD: ボ as ホ + ゛) produced."""
    return unicodedata.normalize("NFC", text)


def name_key(name: str) -> str:
    """What two typed names are compared by: NFKC (full-width ａｌｉｃｅ is alice) and case-folded
    (Alice is alice). Two users whose keys are equal look the same to people.

    >>> name_key("ＡＬＩＣＥ") == name_key("alice")
    True
    """
    return unicodedata.normalize("NFKC", name.strip()).casefold()


def user_principals(name: str, groups: Iterable[str]) -> tuple[str, ...]:
    """What user ``name`` in ``groups`` reads as: ``everyone``, ``user:NAME`` and the groups, sorted."""
    return tuple(sorted({EVERYONE, USER_PREFIX + name, *groups}))


def is_admin(principals: Iterable[str]) -> bool:
    """Whether these principals read everything (the ``admin`` group)."""
    return ADMIN in set(principals)


def may_read(principals: Iterable[str], readers: Iterable[str]) -> bool:
    """Whether a caller with ``principals`` may read a document with ``readers`` (the test every read
    path's SQL makes): ``admin`` reads everything, anyone else needs one name in common."""
    principals = set(principals)
    return ADMIN in principals or bool(principals & set(readers))


def with_admin(readers: Iterable[str]) -> tuple[str, ...]:
    """A document's readers: ``readers`` and ``admin``, sorted, without repeats."""
    return tuple(sorted({ADMIN, *readers}))
