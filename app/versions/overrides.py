"""``versions.toml``: what the version rules got wrong, fixed by hand (DataSourceError when it is invalid).

    # these two are one document's versions, and the 2024 one is in force
    [[family]]
    documents = ["規程/就業規則_2023.docx", "規程/就業規則_2024.docx"]
    current = "規程/就業規則_2024.docx"      # optional; a list names several

    # the date the rules could not read
    [document."規程/旅費規程.pdf"]
    effective = 2024-10-01

    # never a version of anything
    [document."営業/提案書_A社.pptx"]
    separate = true

Document IDs are paths under the data dir, with ``/``. An ID no stored document has is ignored (the
file may come later).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from app.errors import DataSourceError

__all__ = ["FamilyOverride", "Overrides", "load_overrides", "parse_overrides"]


@dataclass(frozen=True)
class FamilyOverride:
    """One ``[[family]]``: documents that are versions of one another, and the current one(s)."""

    documents: tuple[str, ...]
    current: tuple[str, ...] = ()

    def current_ids(self) -> tuple[str, ...]:
        """The documents named current."""
        return self.current


@dataclass(frozen=True)
class Overrides:
    """The fixes of a versions file: families, effective dates by document, documents kept apart."""

    families: tuple[FamilyOverride, ...] = ()
    effective: Mapping[str, date] = field(default_factory=dict)
    separate: frozenset[str] = frozenset()


def _strings(value: Any, where: str) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(v, str) and v.strip() for v in values):
        raise DataSourceError(f"{where} must be a document ID or a list of them, got {value!r}")
    return tuple(v.strip().lstrip("./") for v in values)


def parse_overrides(data: Mapping[str, Any], source: str = "versions.toml") -> Overrides:
    """The :class:`Overrides` of a parsed versions file (DataSourceError naming the bad entry)."""
    unknown = set(data) - {"family", "document"}
    if unknown:
        raise DataSourceError(
            f'{source}: unknown table {sorted(unknown)[0]!r} (expected [[family]] or [document."ID"])'
        )
    families = []
    raw_families = data.get("family", [])
    if not isinstance(raw_families, list):
        raise DataSourceError(f"{source}: family must be an array of tables ([[family]])")
    for i, entry in enumerate(raw_families, start=1):
        where = f"{source}: family {i}"
        if not isinstance(entry, dict) or set(entry) - {"documents", "current"}:
            raise DataSourceError(f"{where} takes documents and current, got {entry!r}")
        documents = _strings(entry.get("documents"), f"{where} documents")
        current = _strings(entry["current"], f"{where} current") if "current" in entry else ()
        if not set(current) <= set(documents):
            raise DataSourceError(f"{where}: current {current[0]!r} is not among its documents")
        families.append(FamilyOverride(documents, current))
    effective: dict[str, date] = {}
    separate: set[str] = set()
    raw_documents = data.get("document", {})
    if not isinstance(raw_documents, dict):
        raise DataSourceError(f'{source}: document must be tables ([document."ID"])')
    for doc_id, entry in raw_documents.items():
        where = f"{source}: document {doc_id!r}"
        if not isinstance(entry, dict) or set(entry) - {"effective", "separate"}:
            raise DataSourceError(f"{where} takes effective and separate, got {entry!r}")
        key = doc_id.strip().lstrip("./")
        if "effective" in entry:
            value = entry["effective"]
            if isinstance(value, datetime):
                value = value.date()
            if not isinstance(value, date):
                raise DataSourceError(f"{where}: effective must be a date (effective = 2024-04-01), got {value!r}")
            effective[key] = value
        if entry.get("separate") is True:
            separate.add(key)
        elif "separate" in entry and entry["separate"] is not False:
            raise DataSourceError(f"{where}: separate must be true or false, got {entry['separate']!r}")
    return Overrides(tuple(families), effective, frozenset(separate))


def load_overrides(path: Path) -> Overrides:
    """The overrides of the file at ``path``; none when it does not exist (DataSourceError when it is invalid)."""
    if not path.is_file():
        return Overrides()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DataSourceError(f"{path}: not a valid TOML file ({exc})") from exc
    return parse_overrides(data, str(path))
