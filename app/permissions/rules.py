"""The access file (``data/access.toml``, ACCESS_FILE): which folders each group may read.

    [folders]
    "pdf"       = ["everyone"]
    "docs"      = ["everyone"]
    "docs/経理"  = ["経理"]
    "docs/*/議事録" = ["管理職", "user:sato"]

Keys are paths relative to the data folder; a key covers that file or everything below that folder,
and may hold globs (``*``, ``?``, ``[…]``, matched against the path and each folder above it). The
**longest** matching key wins. Values are group names, or users as ``user:NAME``. With the file, a
document no key covers is ``admin``-only (deny by default); without it, everyone reads everything.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from app.errors import RagError
from app.permissions.principals import ADMIN, NO_ACCESS_FILE_READERS, USER_PREFIX, check_name, with_admin


class AccessFileError(RagError):
    """The access file cannot be used (unreadable, not TOML, a key or value that is not allowed)."""


@dataclass(frozen=True)
class AccessRules:
    """The access file's ``[folders]`` table: (key, readers) pairs, longest key first."""

    rules: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def readers(self, doc_id: str) -> tuple[str, ...] | None:
        """The readers the longest key matching ``doc_id`` gives (with ``admin``); None when no key does."""
        for key, readers in self.rules:
            if covers(key, doc_id):
                return with_admin(readers)
        return None


def normal_key(key: str) -> str:
    """A key as matched: ``/`` separators, no leading ``./`` or ``/``, no trailing ``/``; ``""`` is the whole folder."""
    value = key.strip().replace("\\", "/")
    while value.startswith("./"):
        value = value[2:]
    value = value.strip("/")
    return "" if value == "." else value


def covers(key: str, doc_id: str) -> bool:
    """Whether ``key`` covers the document ``doc_id``: the file itself, a folder above it, or a glob
    matching either (``""`` covers everything)."""
    if key == "":
        return True
    path = PurePosixPath(doc_id)
    candidates = [doc_id, *(p.as_posix() for p in path.parents if p.as_posix() != ".")]
    return any(c == key or fnmatchcase(c, key) for c in candidates)


def check_reader(value: object, key: str) -> str:
    """One reader of ``key``: a group name or ``user:NAME`` (AccessFileError otherwise)."""
    if not isinstance(value, str):
        raise AccessFileError(f"access file: the readers of {key!r} must be names in quotes, got {value!r}")
    try:
        if value.startswith(USER_PREFIX):
            return USER_PREFIX + check_name(value[len(USER_PREFIX) :], "user")
        return check_name(value, "group")
    except ValueError as exc:
        raise AccessFileError(f"access file, key {key!r}: {exc}") from None


def parse_rules(table: object) -> AccessRules:
    """The rules of a parsed access file (its ``folders`` table); AccessFileError for a bad one."""
    if not isinstance(table, dict) or not isinstance(table.get("folders", {}), dict):
        raise AccessFileError('access file: expected a [folders] table of "path" = ["group", ...] lines')
    unknown = sorted(set(table) - {"folders"})
    if unknown:
        raise AccessFileError(f"access file: unknown table or key {unknown[0]!r} (only [folders] is read)")
    rules: dict[str, tuple[str, ...]] = {}
    for raw_key, values in table.get("folders", {}).items():
        key = normal_key(raw_key)
        if ".." in PurePosixPath(key).parts:
            raise AccessFileError(f"access file: the key {raw_key!r} leaves the data folder")
        if isinstance(values, str) or not isinstance(values, list):
            raise AccessFileError(f'access file: the readers of {raw_key!r} must be a list, e.g. ["everyone"]')
        rules[key] = tuple(sorted({check_reader(v, raw_key) for v in values}))
    ordered = sorted(rules.items(), key=lambda item: (-len(item[0]), item[0]))
    return AccessRules(tuple(ordered))


def load_rules(path: Path) -> AccessRules | None:
    """The access file's rules; None when there is no such file (single-team mode). AccessFileError
    with one line for a file that cannot be read or used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AccessFileError(f"cannot read the access file {path} ({exc.strerror})") from None
    try:
        table = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AccessFileError(f"the access file {path} is not valid TOML: {exc}") from None
    return parse_rules(table)


def document_readers(rules: AccessRules | None, doc_id: str, from_fs: Iterable[str] | None = None) -> tuple[str, ...]:
    """Who may read ``doc_id``: without an access file and file-share permissions, everyone
    (``admin``, ``everyone``); else the longest matching key's readers, together with the file
    share's readers ``from_fs`` when given, and ``admin`` alone when neither names anyone."""
    if rules is None and from_fs is None:
        return NO_ACCESS_FILE_READERS
    named = set((rules.readers(doc_id) if rules is not None else None) or ())
    return with_admin(named | set(from_fs or ()) | {ADMIN})
