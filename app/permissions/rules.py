"""The access file (``data/access.toml``, ACCESS_FILE): which folders each group may read, and which
of the file share's users and groups are which of ours.

    [folders]
    "pdf"           = ["everyone"]
    "docs"          = ["everyone"]
    "docs/経理"      = ["経理"]
    "docs/*/議事録"  = ["管理職", "user:sato"]
    "docs/公開"      = { readers = ["everyone"], from_fs = false }

    [os]                                  # with ACCESS_FROM_FS=1 (app.permissions.filesystem)
    "os-group:keiri" = "経理"
    "os-user:sato"   = "user:sato"

**Keys** are paths relative to the data folder, read segment by segment (``/`` separates them). A key
covers the file it names, or everything below the folder it names; ``""`` covers everything. A
segment may be a glob (``*``, ``?``, ``[…]``) that matches one whole segment and never crosses
``/``: ``"docs/*.md"`` covers ``docs/a.md``, not ``docs/経理/b.md``; ``**`` is refused. Keys and
document IDs are compared in Unicode NFC, so a folder copied from a Mac (its name in NFD) is the
folder the key names.

**The most specific key wins**, by segments: the deeper key first, then, at the same depth, the key
whose segments are literal rather than globs, read from the left. For ``docs/経理/議事録/a.md``:

    "docs/経理/議事録" (3 literal)  beats  "docs/*/議事録" (3: literal, glob, literal)
    "docs/*/議事録"                 beats  "*/経理/議事録" (3: glob first)
    "*/経理/議事録"                 beats  "docs/経理" (2 segments)
    "docs/経理"                     beats  "docs/*"  and  "docs"  and  ""

Two keys that cover a document and tie (``docs/*.md`` and ``docs/a*`` for ``docs/a.md``) give it only
the readers both name; the sync and ``python -m app.users check`` report them, and keys that cover no
document. **Values** are group names, or users as ``user:NAME`` (NFKC: full-width letters are the
ASCII ones). With the file, a document no key covers is ``admin``-only (deny by default); without
it, everyone reads everything.

**With ACCESS_FROM_FS=1** a document's readers are those of the key **and** those the file share lets
read it (the stricter wins: the intersection, ``everyone`` standing for anyone); a key written as
``{ readers = […], from_fs = false }`` says its readers stand alone. An access file with only an
``[os]`` table leaves the file share alone to decide. The file share's principals (``os-user:NAME``,
``os-group:NAME``, ``os-uid:N``, ``os-gid:N``) are ours only through ``[os]``; an unmapped one is kept
as it is, and no user holds it.
"""

from __future__ import annotations

import tomllib
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from app.errors import RagError
from app.permissions.principals import ADMIN, EVERYONE, NO_ACCESS_FILE_READERS, USER_PREFIX, check_name, nfc, with_admin

OS_PREFIXES = ("os-user:", "os-group:", "os-uid:", "os-gid:")
_GLOB = frozenset("*?[")
_TABLES = frozenset({"folders", "os"})
_OPTIONS = frozenset({"readers", "from_fs"})


class AccessFileError(RagError):
    """The access file cannot be used (unreadable, not TOML, a key or value that is not allowed)."""


@dataclass(frozen=True)
class Rule:
    """One ``[folders]`` line: its key (NFC, ``/``-separated), readers, and whether the file share's
    permissions narrow them (ACCESS_FROM_FS)."""

    key: str
    readers: tuple[str, ...]
    from_fs: bool = True

    @property
    def parts(self) -> tuple[str, ...]:
        """The key's segments (``()`` for ``""``)."""
        return tuple(self.key.split("/")) if self.key else ()

    @property
    def specificity(self) -> tuple[int, tuple[bool, ...]]:
        """What orders keys: the depth, then which segments are literal, from the left (higher wins)."""
        return len(self.parts), tuple(is_literal(part) for part in self.parts)


@dataclass(frozen=True)
class Decision:
    """What the access file says of one document: the winning keys (several when they tie), the
    readers they all name, and whether the file share's permissions narrow them."""

    keys: tuple[str, ...]
    readers: tuple[str, ...]
    from_fs: bool


@dataclass(frozen=True)
class AccessRules:
    """The access file: its ``[folders]`` rules (most specific first), its ``[os]`` names, and whether it
    has a ``[folders]`` table at all (without one, the file share alone decides)."""

    rules: tuple[Rule, ...] = ()
    os_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    folders: bool = True

    def decide(self, doc_id: str) -> Decision | None:
        """The most specific keys covering ``doc_id`` and what they give; None when no key does."""
        parts = tuple(nfc(doc_id).split("/"))
        best = [rule for rule in self.rules if covers(rule.parts, parts)]
        if not best:
            return None
        top = [rule for rule in best if rule.specificity == best[0].specificity]
        readers = top[0].readers
        for rule in top[1:]:
            readers = intersect(readers, rule.readers)
        return Decision(tuple(r.key for r in top), tuple(sorted(readers)), any(r.from_fs for r in top))

    def readers(self, doc_id: str) -> tuple[str, ...] | None:
        """The readers the most specific keys covering ``doc_id`` give (with ``admin``); None when no key does."""
        decision = self.decide(doc_id)
        return None if decision is None else with_admin(decision.readers)

    def os_readers(self, principals: Iterable[str]) -> frozenset[str]:
        """The file share's principals as ours: each one ``[os]`` names becomes what it maps to; the
        others (``everyone`` and unmapped ``os-…`` names) stay as they are."""
        out: set[str] = set()
        for principal in principals:
            out.update(self.os_names.get(principal, (principal,)))
        return frozenset(out)


def is_literal(part: str) -> bool:
    """Whether a key segment is a plain name rather than a glob."""
    return not _GLOB & set(part)


def covers(key_parts: tuple[str, ...], doc_parts: tuple[str, ...]) -> bool:
    """Whether a key (its segments) covers a document (its path's segments): the file itself or a
    folder above it, each segment matched whole, a glob never crossing ``/``."""
    if len(key_parts) > len(doc_parts):
        return False
    return all(fnmatchcase(name, pattern) for pattern, name in zip(key_parts, doc_parts, strict=False))


def intersect(a: Iterable[str], b: Iterable[str]) -> frozenset[str]:
    """Who both reader sets let read: ``everyone`` in one stands for anyone, so the other set; else the
    names in both (``user:sato`` and ``経理`` have nothing in common, even when sato is in 経理: narrower)."""
    a, b = frozenset(a), frozenset(b)
    if EVERYONE in a:
        return b
    if EVERYONE in b:
        return a
    return a & b


def normal_key(key: str) -> str:
    """A key as matched: NFC, ``/`` separators, no empty or ``.`` segments; ``""`` is the whole folder.
    AccessFileError for ``..`` (it leaves the data folder) or ``**`` (a glob never crosses ``/``)."""
    parts = [p for p in nfc(key.strip()).replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise AccessFileError(f"access file: the key {key!r} leaves the data folder")
    if any("**" in p for p in parts):
        raise AccessFileError(
            f"access file: the key {key!r} uses **: a glob matches one folder or file name, never a /; "
            "a folder's key already covers everything below it"
        )
    return "/".join(parts)


def check_reader(value: object, key: str) -> str:
    """One reader of ``key``: a group name or ``user:NAME`` (AccessFileError otherwise)."""
    if not isinstance(value, str):
        raise AccessFileError(f"access file: the readers of {key!r} must be names in quotes, got {value!r}")
    typed = unicodedata.normalize("NFKC", value.strip())  # ｕｓｅｒ：ｓａｔｏ, typed in full width, is user:sato
    try:
        if typed.startswith(USER_PREFIX):
            return USER_PREFIX + check_name(typed[len(USER_PREFIX) :], "user")
        return check_name(value, "group")
    except ValueError as exc:
        raise AccessFileError(f"access file, key {key!r}: {exc}") from None


def parse_rule(raw_key: str, value: object) -> Rule:
    """One ``[folders]`` line: ``"key" = ["group", …]`` or ``"key" = { readers = […], from_fs = false }``."""
    from_fs: object = True
    if isinstance(value, dict):
        unknown = sorted(set(value) - _OPTIONS)
        if unknown or "readers" not in value:
            raise AccessFileError(
                f"access file: {raw_key!r} = {{ … }} takes readers = [...] and from_fs = true/false"
                + (f", not {unknown[0]!r}" if unknown else "")
            )
        value, from_fs = value["readers"], value.get("from_fs", True)
    if not isinstance(from_fs, bool):
        raise AccessFileError(f"access file: from_fs of {raw_key!r} must be true or false, got {from_fs!r}")
    if isinstance(value, str) or not isinstance(value, list):
        raise AccessFileError(f'access file: the readers of {raw_key!r} must be a list, e.g. ["everyone"]')
    readers = tuple(sorted({check_reader(v, raw_key) for v in value}))
    return Rule(normal_key(raw_key), readers, from_fs)


def parse_os_names(table: object) -> dict[str, tuple[str, ...]]:
    """The ``[os]`` table: ``"os-group:keiri" = "経理"`` (or a list of readers) for each OS principal."""
    if not isinstance(table, dict):
        raise AccessFileError('access file: expected an [os] table of "os-group:NAME" = "group" lines')
    names: dict[str, tuple[str, ...]] = {}
    for raw_key, value in table.items():
        key = nfc(raw_key.strip())
        if not key.startswith(OS_PREFIXES) or key in OS_PREFIXES:
            raise AccessFileError(
                f"access file: [os] key {raw_key!r} must name the file share's user or group: "
                "os-user:NAME, os-group:NAME, os-uid:N or os-gid:N"
            )
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not values:
            raise AccessFileError(f'access file: [os] {raw_key!r} must be a group, "user:NAME" or a list of them')
        names[key] = tuple(sorted({check_reader(v, raw_key) for v in values}))
    return names


def parse_rules(table: object) -> AccessRules:
    """The rules of a parsed access file (its ``folders`` and ``os`` tables); AccessFileError for a bad one."""
    if not isinstance(table, dict) or not isinstance(table.get("folders", {}), dict):
        raise AccessFileError('access file: expected a [folders] table of "path" = ["group", ...] lines')
    unknown = sorted(set(table) - _TABLES)
    if unknown:
        raise AccessFileError(f"access file: unknown table or key {unknown[0]!r} (only [folders] and [os] are read)")
    rules: dict[str, Rule] = {}
    written: dict[str, str] = {}
    for raw_key, values in table.get("folders", {}).items():
        rule = parse_rule(raw_key, values)
        if rule.key in rules:
            raise AccessFileError(
                f"access file: the keys {written[rule.key]!r} and {raw_key!r} name the same path; keep one"
            )
        rules[rule.key], written[rule.key] = rule, raw_key
    ordered = sorted(rules.values(), key=lambda r: (_descending(r.specificity), r.key))
    os_names = parse_os_names(table.get("os", {}))
    return AccessRules(tuple(ordered), os_names, folders="folders" in table or not os_names)


def _descending(specificity: tuple[int, tuple[bool, ...]]) -> tuple[int, tuple[bool, ...]]:
    """A sort key putting the most specific first."""
    depth, literal = specificity
    return -depth, tuple(not flag for flag in literal)


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
    """Who may read ``doc_id`` (always with ``admin``).

    Without an access file and file-share permissions: everyone. With the file alone: the most
    specific key's readers, ``admin`` alone when no key covers it. With the file share's principals
    ``from_fs`` alone (or a file with only ``[os]``): those, mapped through ``[os]``. With both: the
    intersection, unless the key says ``from_fs = false``.
    """
    if rules is None and from_fs is None:
        return NO_ACCESS_FILE_READERS
    fs = None if from_fs is None else (rules or AccessRules()).os_readers(from_fs)
    if rules is None or not rules.folders:
        return with_admin(fs or ())
    decision = rules.decide(doc_id)
    if decision is None:
        return (ADMIN,)
    if fs is None or not decision.from_fs:
        return with_admin(decision.readers)
    return with_admin(intersect(decision.readers, fs))


def rule_problems(
    rules: AccessRules,
    doc_ids: Iterable[str],
    complete: bool = True,
    groups: Iterable[str] | None = None,
    users: Iterable[str] | None = None,
) -> list[str]:
    """One line per thing in the access file that does not mean what it seems to: a key no document
    falls under (only when ``doc_ids`` are all the documents, ``complete``), keys that tie for a
    document and name different readers, and, when ``groups`` / ``users`` are given (the users table),
    a group no user is in or a user that does not exist."""
    doc_ids = list(doc_ids)
    lines: list[str] = []
    if complete:
        used = {rule.key for rule in rules.rules for d in doc_ids if covers(rule.parts, tuple(nfc(d).split("/")))}
        lines += [f"access file: the key {r.key!r} covers no document" for r in rules.rules if r.key not in used]
    lines += tie_problems(rules, doc_ids)
    if groups is not None or users is not None:
        lines += unknown_readers(rules, groups, users)
    return lines


def tie_problems(rules: AccessRules, doc_ids: Iterable[str]) -> list[str]:
    """One line per set of keys that tie for some documents and name different readers."""
    ties: dict[tuple[str, ...], list[str]] = {}
    by_key = {rule.key: rule for rule in rules.rules}
    for doc_id in doc_ids:
        decision = rules.decide(doc_id)
        if decision and len({by_key[k].readers for k in decision.keys}) > 1:
            ties.setdefault(decision.keys, []).append(doc_id)
    return [
        f"access file: the keys {', '.join(repr(k) for k in keys)} are equally specific for {len(docs)} "
        f"document(s) ({docs[0]}{', …' if len(docs) > 1 else ''}): they get only the readers all name "
        f"({', '.join(rules.decide(docs[0]).readers) or 'admin only'})"
        for keys, docs in ties.items()
    ]


def unknown_readers(rules: AccessRules, groups: Iterable[str] | None, users: Iterable[str] | None) -> list[str]:
    """One line per reader no user can hold: a group no user is in, a ``user:NAME`` that does not exist."""
    known_groups = None if groups is None else {*groups, EVERYONE, ADMIN}
    known_users = None if users is None else set(users)
    named = [(f"the key {r.key!r}", reader) for r in rules.rules for reader in r.readers]
    named += [(f"[os] {key!r}", reader) for key, readers in rules.os_names.items() for reader in readers]
    lines = []
    for where, reader in named:
        if reader.startswith(USER_PREFIX):
            if known_users is not None and reader[len(USER_PREFIX) :] not in known_users:
                lines.append(f"access file: {where} names {reader}, who is not a user")
        elif known_groups is not None and reader not in known_groups:
            lines.append(f"access file: {where} names the group {reader!r}, which no user is in")
    return lines
