"""A question's scope: the folders, formats and dates its passages may come from, enforced in SQL.

A :class:`Scope` narrows what a search reads, beside the readers' predicate (app.storage.readers) and
in the same statement: never instead of it, so a scope can only take rows away. Its parts:

* ``folders``: path prefixes of the document ID (the file's path under the data folder, NFC, ``/``),
  each ending in ``/`` (``docs/規程/`` holds ``docs/規程/a.pdf``, not ``docs/規程集/b.pdf``);
* ``formats``: the documents' file extensions, lower case without the dot (``pdf``, ``docx``);
* ``since``: the document's date is that day or later: its effective date when its version has one
  (app.storage.versions), else the day it was ingested.

An empty part lets every row through. :func:`scope_predicate` writes the same statement text whatever
the scope (the planner's cached plan serves every question); :func:`scope_params` binds the values.
Input that could mean more than one thing (``..``, an absolute path, a glob) is a ValueError: ambiguous
input narrows or fails, it never widens.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from app.permissions.principals import nfc
from app.storage.collection import collection_id
from app.storage.readers import principals_param, readers_predicate, reading
from app.storage.tables import sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

GLOB = frozenset("*?[")
_FORMAT = re.compile(r"[a-z0-9]+")
_ALIAS = re.compile(r"[a-z_][a-z0-9_]*")
CHUNK_DOC_ID = "cmetadata->>'doc_id'"  # a chunk's document ID
TABLE_DOC_ID = "doc_id"  # the document ID column of the documents' and the tables' rows
DOC_ID_COLUMNS = (CHUNK_DOC_ID, TABLE_DOC_ID)

# The three tests, each passing when its part is empty. @doc is the row's document ID, @alias the row's
# table; the date of a document is read from its row in the documents table (its effective date, else
# the ingest day).
_PREDICATE = sql(
    "(cardinality(CAST(:scope_folders AS text[])) = 0 OR EXISTS (SELECT 1 FROM "
    "unnest(CAST(:scope_folders AS text[])) AS scope_folder(prefix) WHERE starts_with(@doc, scope_folder.prefix))) "
    "AND (cardinality(CAST(:scope_formats AS text[])) = 0 OR "
    "lower(substring(@doc from '[.]([^./]+)$')) = ANY(CAST(:scope_formats AS text[]))) "
    "AND (CAST(:scope_since AS date) IS NULL OR EXISTS (SELECT 1 FROM {documents} scope_doc "
    "WHERE scope_doc.collection_id = @alias.collection_id AND scope_doc.doc_id = @doc "
    "AND coalesce(scope_doc.version_effective, CAST(scope_doc.ingested_at AS date)) >= CAST(:scope_since AS date)))"
)
PARAM_NAMES = ("scope_folders", "scope_formats", "scope_since")
# How many documents the caller may read in each folder asked for (the documents' rows, as the caller).
SQL_FOLDER_COUNTS = sql(
    "SELECT f.prefix, (SELECT count(*) FROM {documents} d WHERE d.collection_id = :collection "
    "AND starts_with(d.doc_id, f.prefix) AND " + readers_predicate("d") + ") "
    "FROM unnest(CAST(:scope_folders AS text[])) WITH ORDINALITY AS f(prefix, n) ORDER BY f.n"
)
_EMPTY = (
    "(cardinality(CAST(:scope_folders AS text[])) = 0 AND cardinality(CAST(:scope_formats AS text[])) = 0 "
    "AND CAST(:scope_since AS date) IS NULL)"
)


def parse_folder(text: str) -> str:
    """A folder as a document-ID prefix: NFC, ``/`` between parts, ending in ``/`` (``docs/規程`` →
    ``docs/規程/``); a leading ``./``, a trailing ``/`` and doubled ``/`` are tolerated, ``\\`` is ``/``.
    ValueError (one line) for an empty folder, ``..``, an absolute path or a glob character."""
    if not isinstance(text, str):
        raise ValueError(f"a folder is text, got {text!r}")
    raw = nfc(text.strip())
    if any(c in GLOB for c in raw):
        raise ValueError(f"a folder is a plain path without * ? or [ (no patterns), got {text!r}")
    path = raw.replace("\\", "/")
    if path.startswith("/") or re.match(r"[A-Za-z]:", path) or path.startswith("~"):
        raise ValueError(f"a folder is a path inside the data folder, not an absolute one, got {text!r}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"a folder may not contain '..', got {text!r}")
    if not parts:
        raise ValueError(f"a folder names a folder inside the data folder, got {text!r}")
    return "/".join(parts) + "/"


def parse_formats(values: str | Iterable[str]) -> tuple[str, ...]:
    """File formats as extensions: ``pdf,docx`` (or several values) → ``("pdf", "docx")``: NFKC, lower case,
    a leading dot stripped, repeats dropped. ValueError (one line) for none, or one that is not letters
    and digits."""
    items = [values] if isinstance(values, str) else list(values)
    found: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"a format is text such as pdf or docx, got {item!r}")
        for part in item.split(","):
            name = unicodedata.normalize("NFKC", part).strip().lower().removeprefix(".")
            if not name:
                continue
            if not _FORMAT.fullmatch(name):
                raise ValueError(f"a format is a file extension such as pdf or docx, got {part.strip()!r}")
            found.append(name)
    if not found:
        raise ValueError(f"no format given (a list such as pdf,docx), got {values!r}")
    return tuple(dict.fromkeys(found))


def parse_since(value: str | date) -> date:
    """A day as a date: ``2025-04-01`` (ISO); a date passes. ValueError (one line) for anything else."""
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ValueError(f"since takes a day as YYYY-MM-DD (2025-04-01), got {value!r}")


@dataclass(frozen=True)
class Scope:
    """The folders, formats and earliest date of the documents a question reads; empty parts narrow
    nothing, and an empty scope is falsy. Values are normalised on construction (:func:`parse_folder`,
    :func:`parse_formats`, :func:`parse_since`), so ``Scope(folders=("docs/規程",))`` is
    ``Scope(folders=("docs/規程/",))``; ValueError for input that could widen it."""

    folders: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()
    since: date | None = field(default=None)

    def __post_init__(self) -> None:
        """Normalise each part (a single string counts as one value)."""
        folders = (self.folders,) if isinstance(self.folders, str) else tuple(self.folders)
        object.__setattr__(self, "folders", tuple(dict.fromkeys(parse_folder(f) for f in folders)))
        formats = (self.formats,) if isinstance(self.formats, str) else tuple(self.formats)
        object.__setattr__(self, "formats", parse_formats(formats) if formats else ())
        object.__setattr__(self, "since", None if self.since is None else parse_since(self.since))

    @property
    def is_empty(self) -> bool:
        """True when no part narrows anything."""
        return not (self.folders or self.formats or self.since)

    def __bool__(self) -> bool:
        """A scope is true when it narrows something."""
        return not self.is_empty

    def as_dict(self) -> dict:
        """The scope for JSON: ``{"folders": [...], "formats": [...], "since": "YYYY-MM-DD" | None}``."""
        return {
            "folders": list(self.folders),
            "formats": list(self.formats),
            "since": self.since.isoformat() if self.since else None,
        }


def parse_scope(
    folders: Iterable[str] | None = None, formats: Iterable[str] | str | None = None, since: str | date | None = None
) -> Scope:
    """A :class:`Scope` from what a person typed (``--in``, ``--format``, ``--since``); ValueError (one line)."""
    format_values = [formats] if isinstance(formats, str) else list(formats or ())
    return Scope(
        folders=tuple(folders or ()),
        formats=parse_formats(format_values) if format_values else (),
        since=None if since in (None, "") else parse_since(since),
    )


def scope_predicate(alias: str, doc_id: str = CHUNK_DOC_ID) -> str:
    """The scope's SQL test on the rows of the table aliased ``alias`` whose document ID is
    ``<alias>.<doc_id>`` (:data:`CHUNK_DOC_ID` for chunks, :data:`TABLE_DOC_ID` for the documents' and the
    tables' rows), with the bound names of :func:`scope_params`; the same text for every scope (an empty
    one passes every row). ValueError for an alias that is not a plain lower-case name or another column."""
    if not _ALIAS.fullmatch(alias or ""):
        raise ValueError(f"a table alias is a lower-case SQL name, got {alias!r}")
    if doc_id not in DOC_ID_COLUMNS:
        raise ValueError(f"the document ID is one of {DOC_ID_COLUMNS}, got {doc_id!r}")
    return "(" + _PREDICATE.replace("@doc", alias + "." + doc_id).replace("@alias", alias) + ")"


def scope_is_empty() -> str:
    """SQL true when the bound scope (:func:`scope_params`) is empty: where the values are known when the
    statement is planned (a function's EXECUTE), ``<this> OR <a join testing the scope>`` joins nothing."""
    return _EMPTY


def scope_params(scope: Scope | None) -> dict:
    """The bound values of :func:`scope_predicate` for ``scope`` (None: the empty scope)."""
    scope = scope or Scope()
    return {"scope_folders": list(scope.folders), "scope_formats": list(scope.formats), "scope_since": scope.since}


def folder_counts(engine: Engine, collection_name: str, scope: Scope, principals: Sequence[str]) -> dict[str, int]:
    """How many documents ``principals`` may read in each of ``scope``'s folders, as they read (a folder
    that holds only documents they may not read counts 0, like one that does not exist: the count says
    nothing about what others may read). All 0 when the collection does not exist."""
    from sqlalchemy import text

    if not scope.folders:
        return {}
    collection = collection_id(engine, collection_name)
    if collection is None:
        return dict.fromkeys(scope.folders, 0)
    params = {"collection": collection, "principals": principals_param(principals), **scope_params(scope)}
    with reading(engine, principals) as conn:
        return {prefix: int(n) for prefix, n in conn.execute(text(SQL_FOLDER_COUNTS), params)}


def missing_folders(engine: Engine, collection_name: str, scope: Scope, principals: Sequence[str]) -> list[str]:
    """``scope``'s folders in which ``principals`` may read no document (absent, or all unreadable to them:
    the same answer), in the scope's order."""
    return [prefix for prefix, n in folder_counts(engine, collection_name, scope, principals).items() if n == 0]


def missing_folder_message(folders: Sequence[str]) -> str:
    """One line for folders without a document the asker may read (``--in``, the page's and the MCP tools'
    ``folders``): the same whether a folder does not exist or holds only documents the asker may not read
    (it never says which)."""
    names = ", ".join(repr(f) for f in folders)
    return (
        f"no document you may read is in {names} (--in): check the folder's name, "
        "relative to the data folder (`make docs` lists the documents)"
    )
