"""Document versions in the store (migration 8): what the version rules read of each document, and
what they decided, as columns of ``rag_document``.

Read by the rules (a sync, app.ingestion.versions): ``version_signature`` (the MinHash signature of
the document's text), ``version_text_date`` (the date its text states), ``version_title`` and
``version_of`` (the content hash they were read from: a changed file is read again). Decided:
``version_family`` (the current version's ID), ``version_effective`` and ``version_effective_from``,
``version_status`` (current, past, draft, archived) and ``superseded_by``.

Every read path takes ``principals``: a document's row is read only by its readers, and a current
version its reader may not read is never named (``superseded_by`` and the family are then NULL).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from app.storage.collection import collection_id
from app.storage.readers import principals_param, readers_predicate, reading
from app.storage.tables import sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# --- schema (migration 8) ------------------------------------------------------------------------
_COLUMNS = (
    ("version_signature", "bigint[]"),
    ("version_text_date", "date"),
    ("version_title", "text"),
    ("version_of", "text"),
    ("version_family", "text"),
    ("version_effective", "date"),
    ("version_effective_from", "text"),
    ("version_status", "text"),
    ("superseded_by", "text"),
)
MIGRATION_STATEMENTS = tuple(
    sql("ALTER TABLE {documents} ADD COLUMN IF NOT EXISTS " + name + " " + kind) for name, kind in _COLUMNS
)

# --- the rules' inputs (the writer's view) ---------------------------------------------------------
SQL_VERSION_INPUTS = sql(
    "SELECT doc_id, content_hash, origin, version_of, version_signature, version_text_date, version_title, "
    "version_family AS family, version_effective AS effective, version_effective_from AS effective_from, "
    "version_status AS status, superseded_by "
    "FROM {documents} WHERE collection_id = :collection ORDER BY doc_id"
)
SQL_DOCUMENT_TEXT = sql(
    "SELECT cmetadata->>'source' AS source, coalesce((cmetadata->>'chunk_index')::int, 0) AS chunk_index, "
    "document, coalesce(cmetadata->>'context', '') AS context FROM {chunks} "
    "WHERE collection_id = :collection AND cmetadata->>'doc_id' = :doc"
)
SQL_SET_READING = sql(
    "UPDATE {documents} SET version_signature = CAST(:signature AS bigint[]), version_text_date = :text_date, "
    "version_title = :title, version_of = :content_hash WHERE collection_id = :collection AND doc_id = :doc"
)
SQL_IN_FAMILIES = sql(
    "SELECT doc_id FROM {documents} WHERE collection_id = :collection "
    "AND (version_family IS NOT NULL OR version_status IS NOT NULL)"
)
SQL_SET_VERSION = sql(
    "UPDATE {documents} SET version_family = :family, version_effective = :effective, "
    "version_effective_from = :effective_from, version_status = :status, superseded_by = :superseded_by "
    "WHERE collection_id = :collection AND doc_id = :doc AND (version_family, version_effective, "
    "version_effective_from, version_status, superseded_by) IS DISTINCT FROM "
    "(CAST(:family AS text), CAST(:effective AS date), CAST(:effective_from AS text), CAST(:status AS text), "
    "CAST(:superseded_by AS text))"
)

# --- reads (as principals) -------------------------------------------------------------------------
# The current version is named only to a reader of it.
_VISIBLE = (
    "FROM {documents} d LEFT JOIN {documents} c ON c.collection_id = d.collection_id "
    "AND c.doc_id = d.version_family AND " + readers_predicate("c") + " "
    "WHERE d.collection_id = :collection AND " + readers_predicate("d")
)
SQL_VERSIONS_OF = sql(
    "SELECT d.doc_id, d.version_effective, CASE WHEN c.doc_id IS NULL THEN NULL ELSE d.superseded_by END, "
    "d.version_status " + _VISIBLE + " AND d.doc_id = ANY(CAST(:docs AS text[]))"
)
SQL_LIST_VERSIONS = sql(
    "SELECT d.doc_id, CASE WHEN c.doc_id IS NULL THEN NULL ELSE d.version_family END, d.version_effective, "
    "d.version_effective_from, d.version_status, CASE WHEN c.doc_id IS NULL THEN NULL ELSE d.superseded_by END "
    + _VISIBLE
    + " ORDER BY d.doc_id"
)


def version_inputs(engine: Engine, collection_name: str) -> list[dict]:
    """Write path: every stored document's ID, content hash, origin, what the rules read of it
    last (``version_of``: the content hash it was read from; ``version_signature``, ``version_text_date``,
    ``version_title``) and its stored version (``family``, ``effective``, ``effective_from``, ``status``,
    ``superseded_by``)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with engine.connect() as conn:
        rows = conn.execute(text(SQL_VERSION_INPUTS), {"collection": collection})
        return [dict(r._mapping) for r in rows]


def document_text(engine: Engine, collection_name: str, doc_id: str) -> list[dict]:
    """Write path: one document's chunks as ``{"source", "chunk_index", "document", "context"}`` (unordered)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with engine.connect() as conn:
        rows = conn.execute(text(SQL_DOCUMENT_TEXT), {"collection": collection, "doc": doc_id})
        return [dict(r._mapping) for r in rows]


def save_versions(
    engine: Engine, collection_name: str, readings: Sequence[Mapping], versions: Sequence[Mapping]
) -> int:
    """Write path, one transaction: the ``readings`` of documents read again (doc, signature, text_date,
    title, content_hash) and every document's version (doc, family, effective, effective_from, status,
    superseded_by). Returns how many documents in a family (or archived, or drafts) changed version."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return 0
    changed = 0
    with engine.begin() as conn:
        for reading_ in readings:
            conn.execute(
                text(SQL_SET_READING), {**reading_, "signature": list(reading_["signature"]), "collection": collection}
            )
        in_family = {r[0] for r in conn.execute(text(SQL_IN_FAMILIES), {"collection": collection})}
        for version in versions:
            written = conn.execute(text(SQL_SET_VERSION), {**version, "collection": collection}).rowcount or 0
            # a document alone before and after (its date read, nothing else) is no news to the person syncing
            if written and (version.get("family") or version.get("status") or version["doc"] in in_family):
                changed += 1
    return changed


def versions_of(
    engine: Engine, collection_name: str, doc_ids: Sequence[str], principals: Sequence[str]
) -> dict[str, dict]:
    """The version of each of ``doc_ids`` that ``principals`` may read: ``{doc_id: {"effective": date | None,
    "superseded_by": doc_id | None, "status": str | None}}``; ``superseded_by`` is None also when they
    may not read the current version."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None or not doc_ids:
        return {}
    params = {"collection": collection, "docs": sorted(set(doc_ids)), "principals": principals_param(principals)}
    with reading(engine, principals) as conn:
        rows = conn.execute(text(SQL_VERSIONS_OF), params).all()
    return {
        doc_id: {"effective": effective, "superseded_by": sup, "status": status}
        for doc_id, effective, sup, status in rows
    }


def list_versions(engine: Engine, collection_name: str, principals: Sequence[str]) -> list[dict]:
    """Every document ``principals`` may read with its version: doc_id, family, effective, effective_from,
    status, superseded_by (family and superseded_by None when they may not read the current version)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    keys = ("doc_id", "family", "effective", "effective_from", "status", "superseded_by")
    with reading(engine, principals) as conn:
        rows = conn.execute(
            text(SQL_LIST_VERSIONS), {"collection": collection, "principals": principals_param(principals)}
        ).all()
    return [dict(zip(keys, row)) for row in rows]
