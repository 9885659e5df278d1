"""Answers given on the page and over MCP, kept so that the same question is answered again at once
and so that feedback can name the answer it is about.

An answer is found again only by its key (the normalized question, the mode, the asker's principals
and the answering settings: app.serving.answers.cache_key), with the same principals in the statement
itself, and only while the documents are as they were: the fingerprint of every stored document's ID,
content, settings, readers and ingest time (any change anywhere makes every earlier answer stale).
Rows older than the time-to-live are deleted when an answer is recorded.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app.storage.collection import collection_id
from app.storage.readers import principals_param
from app.storage.tables import sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

MIN_KEPT_S = 7 * 86400  # an answer stays this long at least, so feedback can still name it

# --- schema (migration 7, app.storage.schema) ------------------------------------------------
MIGRATION_STATEMENTS = (
    sql(
        "CREATE TABLE IF NOT EXISTS {answers} (id text PRIMARY KEY, "
        "collection_id uuid NOT NULL REFERENCES {collections}(uuid) ON DELETE CASCADE, "
        "cache_key text NOT NULL, fingerprint text NOT NULL, question text NOT NULL, mode text NOT NULL, "
        "principals text[] NOT NULL, sources text[] NOT NULL, result jsonb NOT NULL, "
        "created_at timestamptz NOT NULL DEFAULT now())"
    ),
    sql("CREATE INDEX IF NOT EXISTS {answer_key_index} ON {answers} (collection_id, cache_key, created_at DESC)"),
    sql("CREATE INDEX IF NOT EXISTS {answer_created_index} ON {answers} (created_at)"),
)

SQL_FINGERPRINT = sql(
    "SELECT count(*) AS n, coalesce(md5(string_agg(doc_id || chr(31) || content_hash || chr(31) || settings_hash "
    "|| chr(31) || array_to_string(readers, ',') || chr(31) || ingested_at::text, chr(30) ORDER BY doc_id)), '') "
    "AS digest FROM {documents} WHERE collection_id = :collection"
)
SQL_RECORD = sql(
    "INSERT INTO {answers} (id, collection_id, cache_key, fingerprint, question, mode, principals, sources, result) "
    "VALUES (:id, :collection, :key, :fingerprint, :question, :mode, CAST(:principals AS text[]), "
    "CAST(:sources AS text[]), CAST(:result AS jsonb))"
)
SQL_PRUNE = sql("DELETE FROM {answers} WHERE created_at < now() - make_interval(secs => :seconds)")
SQL_CACHED = sql(
    "SELECT id, result, created_at FROM {answers} WHERE collection_id = :collection AND cache_key = :key "
    "AND fingerprint = :fingerprint AND principals = CAST(:principals AS text[]) "
    "AND created_at >= now() - make_interval(secs => :ttl) ORDER BY created_at DESC LIMIT 1"
)
SQL_BY_ID = sql(
    "SELECT id, question, mode, sources, principals, created_at FROM {answers} "
    "WHERE collection_id = :collection AND id = :id"
)


def documents_fingerprint(engine: Engine, collection_name: str) -> str:
    """What the stored documents are now, as one string: their count and a digest of every document's
    ID, content hash, settings hash, readers and ingest time ('' when the collection does not exist)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return ""
    with engine.connect() as conn:
        row = conn.execute(text(SQL_FINGERPRINT), {"collection": collection}).one()
    return f"{row.n}:{row.digest}"


def record_answer(
    engine: Engine,
    collection_name: str,
    key: str,
    fingerprint: str,
    question: str,
    mode: str,
    principals: Sequence[str],
    result: Mapping[str, Any],
    ttl_s: int,
) -> str | None:
    """Keep one answer (``result``: JSON-friendly, with its ``sources``); returns its new ID (None when the
    collection does not exist). Answers older than ``ttl_s`` (at least a week) are deleted first."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return None
    answer_id = uuid.uuid4().hex
    with engine.begin() as conn:
        conn.execute(text(SQL_PRUNE), {"seconds": max(ttl_s, MIN_KEPT_S)})
        conn.execute(
            text(SQL_RECORD),
            {
                "id": answer_id,
                "collection": collection,
                "key": key,
                "fingerprint": fingerprint,
                "question": question,
                "mode": mode,
                "principals": principals_param(sorted(set(principals))),
                "sources": [str(s) for s in result.get("sources") or []],
                "result": json.dumps(dict(result), ensure_ascii=False),
            },
        )
    return answer_id


def cached_answer(
    engine: Engine, collection_name: str, key: str, fingerprint: str, principals: Sequence[str], ttl_s: int
) -> tuple[str, dict, Any] | None:
    """``(id, result, created_at)`` of the newest answer kept under ``key`` for exactly these ``principals``
    over documents with this ``fingerprint``, at most ``ttl_s`` seconds old; None when there is none."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return None
    params = {
        "collection": collection,
        "key": key,
        "fingerprint": fingerprint,
        "principals": principals_param(sorted(set(principals))),
        "ttl": ttl_s,
    }
    with engine.connect() as conn:
        row = conn.execute(text(SQL_CACHED), params).first()
    return None if row is None else (row.id, dict(row.result), row.created_at)


def answer_by_id(engine: Engine, collection_name: str, answer_id: str) -> dict | None:
    """One kept answer: ``{id, question, mode, sources, principals, created_at}``; None when unknown or gone."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None or not isinstance(answer_id, str) or not answer_id:
        return None
    with engine.connect() as conn:
        row = conn.execute(text(SQL_BY_ID), {"collection": collection, "id": answer_id}).first()
    if row is None:
        return None
    return {**row._mapping, "sources": list(row.sources), "principals": list(row.principals)}
