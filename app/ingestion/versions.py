"""The end of a sync: read what the version rules need of new and changed documents, decide every
document's family, effective date and current version (app.versions.families) and store them
(app.storage.versions). Only documents of the data dir take part; those added through the API keep none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.config import Settings
from app.storage import versions as version_store
from app.storage.doc_ids import document_path
from app.versions.dates import stated_date
from app.versions.families import Version, VersionDoc, assign_versions, signature
from app.versions.overrides import Overrides, load_overrides

__all__ = ["load_version_overrides", "read_document", "update_versions"]

ORIGIN_DATA_DIR = "data_dir"


def load_version_overrides(settings: Settings, data_dir: Path) -> Overrides:
    """The versions file of ``data_dir`` (VERSIONS_FILE, default ``<data_dir>/versions.toml``);
    DataSourceError when it is invalid, none when families are off or there is no file."""
    if not settings.memory.version_families:
        return Overrides()
    return load_overrides(settings.memory.versions_file_in(data_dir))


def _natural(source: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", source or ""))


def read_document(chunks: Sequence[Mapping[str, Any]]) -> tuple[tuple[int, ...], Any, str]:
    """What the rules read of one document's stored chunks: its signature, the date its text states and
    its title (the first heading of its first chunk), the chunks taken in source and chunk order."""
    ordered = sorted(chunks, key=lambda c: (_natural(c["source"]), c["chunk_index"]))
    text = "\n".join(c["document"] for c in ordered)
    title = ordered[0]["context"].split(" — ")[0].strip() if ordered else ""
    return signature(text), stated_date(text), title


def _mtime(data_dir: Path, doc_id: str) -> float | None:
    path = document_path(Path(data_dir), doc_id)  # the ID is NFC; the name on disk may be NFD
    try:
        return path.stat().st_mtime if path is not None else None
    except OSError:
        return None


def update_versions(engine: Any, settings: Settings, data_dir: Path, overrides: Overrides) -> int:
    """Write path (the caller holds the writer lock): read the documents whose text changed since the
    rules last read them, decide every data-dir document's version and store it; with
    VERSION_FAMILIES=0 every document stands alone. Returns how many documents' versions changed."""
    collection = settings.retrieval.collection_name
    rows = [r for r in version_store.version_inputs(engine, collection) if r["origin"] == ORIGIN_DATA_DIR]
    readings = []
    docs = []
    for row in rows:
        if row["version_of"] == row["content_hash"] and row["version_signature"] is not None:
            sig, text_date, title = tuple(row["version_signature"]), row["version_text_date"], row["version_title"]
        else:
            sig, text_date, title = read_document(version_store.document_text(engine, collection, row["doc_id"]))
            readings.append(
                {
                    "doc": row["doc_id"],
                    "signature": sig,
                    "text_date": text_date,
                    "title": title,
                    "content_hash": row["content_hash"],
                }
            )
        docs.append(VersionDoc(row["doc_id"], text_date, title or "", sig, _mtime(data_dir, row["doc_id"])))
    if settings.memory.version_families:
        decided = assign_versions(docs, overrides)
    else:
        decided = {d.doc_id: _alone(d) for d in docs}
    stored = {row["doc_id"]: row for row in rows}
    versions = [_params(v) for v in decided.values()]
    changed = [v for v in versions if _differs(v, stored.get(v["doc"]))]
    if not readings and not changed:
        return 0
    return version_store.save_versions(engine, collection, readings, changed)


def _differs(version: Mapping[str, Any], row: Mapping[str, Any] | None) -> bool:
    """Whether ``version`` (:func:`_params`) differs from what ``row`` stores: only those are written, so
    that a one-file sync over many documents issues one statement per changed document, not per document."""
    return row is None or any(row.get(key) != value for key, value in version.items() if key != "doc")


def _alone(doc: VersionDoc) -> Version:
    """A document outside any family (families off): its effective date only."""
    from app.versions.dates import effective_date

    if doc.text_date is not None:
        return Version(doc.doc_id, None, doc.text_date, "text", "", None)
    when, source = effective_date(None, doc.doc_id, doc.mtime)
    return Version(doc.doc_id, None, when, source, "", None)


def _params(version: Version) -> dict:
    return {
        "doc": version.doc_id,
        "family": version.family,
        "effective": version.effective,
        "effective_from": version.effective_from or None,
        "status": version.status or None,
        "superseded_by": version.superseded_by,
    }
