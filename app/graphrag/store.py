"""The graph's tables and every SQL statement that reads or writes them (all values bound).

Two kinds of tables:

* **per chunk**, written in the same transaction as the chunk rows (app.db.replace_document) and
  deleted with them (``ON DELETE CASCADE`` on the chunk ID): ``rag_graph_mention`` (entity ↔
  chunk, the text-unit links, with the first sentence naming the entity) and ``rag_graph_pair``
  (two entities named in one sentence of the chunk, and how often). A changed or deleted
  document's links are therefore replaced or purged atomically with its chunks.
* **derived**, rebuilt from the per-chunk tables after a sync that changed anything and by
  ``make graph`` (app.graphrag.index), in one transaction, so readers see the old graph or the
  new one: entities (with an embedding of title + description, HNSW), relationships,
  communities and their reports, and ``rag_graph_state`` (which extractor built it, when, and
  whether chunks changed since: ``dirty``, set by every chunk write).

Functions take an open SQLAlchemy connection (or engine) and the collection's UUID; this module
imports nothing else of the app, so app.db can call it inside its own transactions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.graphrag.models import ChunkGraph, CommunityReport

EMBED_DIM = 384  # app.config.EMBED_DIM (kept literal: this module imports nothing of the app)
MENTION = "rag_graph_mention"
PAIR = "rag_graph_pair"
ENTITY = "rag_graph_entity"
RELATIONSHIP = "rag_graph_relationship"
COMMUNITY = "rag_graph_community"
REPORT = "rag_graph_report"
STATE = "rag_graph_state"
CHUNKS = "langchain_pg_embedding"
COLLECTIONS = "langchain_pg_collection"
_FK_CHUNK = f"REFERENCES {CHUNKS}(id) ON DELETE CASCADE"
_FK_COLLECTION = f"REFERENCES {COLLECTIONS}(uuid) ON DELETE CASCADE"

GRAPH_DDL = (
    f"CREATE TABLE IF NOT EXISTS {MENTION} (chunk_id varchar NOT NULL {_FK_CHUNK}, collection_id uuid NOT NULL, "
    "entity text NOT NULL, title text NOT NULL, kind text NOT NULL, n integer NOT NULL, sentence text NOT NULL, "
    "PRIMARY KEY (chunk_id, entity))",
    f"CREATE INDEX IF NOT EXISTS {MENTION}_entity ON {MENTION} (collection_id, entity)",
    f"CREATE TABLE IF NOT EXISTS {PAIR} (chunk_id varchar NOT NULL {_FK_CHUNK}, collection_id uuid NOT NULL, "
    "source text NOT NULL, target text NOT NULL, n integer NOT NULL, PRIMARY KEY (chunk_id, source, target))",
    f"CREATE INDEX IF NOT EXISTS {PAIR}_collection ON {PAIR} (collection_id)",
    f"CREATE TABLE IF NOT EXISTS {ENTITY} (collection_id uuid NOT NULL {_FK_COLLECTION}, id text NOT NULL, "
    "key text NOT NULL, title text NOT NULL, kind text NOT NULL, description text NOT NULL, "
    "mentions integer NOT NULL, chunks integer NOT NULL, degree double precision NOT NULL, "
    f"communities text[] NOT NULL, embedding vector({EMBED_DIM}), embed_hash text, PRIMARY KEY (collection_id, id))",
    f"CREATE INDEX IF NOT EXISTS {ENTITY}_key ON {ENTITY} (collection_id, key)",
    f"CREATE INDEX IF NOT EXISTS {ENTITY}_embedding_hnsw ON {ENTITY} USING hnsw (embedding vector_cosine_ops)",
    f"CREATE TABLE IF NOT EXISTS {RELATIONSHIP} (collection_id uuid NOT NULL {_FK_COLLECTION}, id text NOT NULL, "
    "source text NOT NULL, target text NOT NULL, weight double precision NOT NULL, chunks integer NOT NULL, "
    "description text NOT NULL, PRIMARY KEY (collection_id, id))",
    f"CREATE INDEX IF NOT EXISTS {RELATIONSHIP}_source ON {RELATIONSHIP} (collection_id, source)",
    f"CREATE INDEX IF NOT EXISTS {RELATIONSHIP}_target ON {RELATIONSHIP} (collection_id, target)",
    f"CREATE TABLE IF NOT EXISTS {COMMUNITY} (collection_id uuid NOT NULL {_FK_COLLECTION}, id text NOT NULL, "
    "level integer NOT NULL, parent text, size integer NOT NULL, weight double precision NOT NULL, "
    "entity_ids text[] NOT NULL, PRIMARY KEY (collection_id, id))",
    f"CREATE TABLE IF NOT EXISTS {REPORT} (collection_id uuid NOT NULL {_FK_COLLECTION}, id text NOT NULL, "
    "level integer NOT NULL, title text NOT NULL, summary text NOT NULL, findings jsonb NOT NULL, "
    "rank double precision NOT NULL, kind text NOT NULL, chunk_ids text[] NOT NULL, document_ids text[] NOT NULL, "
    "entity_ids text[] NOT NULL, content_hash text NOT NULL, PRIMARY KEY (collection_id, id))",
    f"CREATE TABLE IF NOT EXISTS {STATE} (collection_id uuid PRIMARY KEY {_FK_COLLECTION}, extractor text NOT NULL, "
    "built_at timestamptz, dirty boolean NOT NULL DEFAULT true, stats jsonb NOT NULL DEFAULT '{}'::jsonb)",
)

# --- per chunk ---------------------------------------------------------------------------
SQL_INSERT_MENTION = (
    f"INSERT INTO {MENTION} (chunk_id, collection_id, entity, title, kind, n, sentence) "
    "VALUES (:chunk, :collection, :entity, :title, :kind, :n, :sentence) ON CONFLICT (chunk_id, entity) DO UPDATE "
    "SET title = EXCLUDED.title, kind = EXCLUDED.kind, n = EXCLUDED.n, sentence = EXCLUDED.sentence"
)
SQL_INSERT_PAIR = (
    f"INSERT INTO {PAIR} (chunk_id, collection_id, source, target, n) VALUES (:chunk, :collection, :source, :target, :n) "
    "ON CONFLICT (chunk_id, source, target) DO UPDATE SET n = EXCLUDED.n"
)
SQL_DELETE_CHUNK_MENTIONS = f"DELETE FROM {MENTION} WHERE chunk_id = ANY(CAST(:ids AS varchar[]))"
SQL_DELETE_CHUNK_PAIRS = f"DELETE FROM {PAIR} WHERE chunk_id = ANY(CAST(:ids AS varchar[]))"
# Chunks written: the graph is out of date. The state remembers which extractor wrote the links; when
# links from another one (or none: GRAPH_EXTRACTOR=off, '') join them, it is '' and the next build
# extracts every chunk again.
SQL_MARK_WRITTEN = (
    f"INSERT INTO {STATE} (collection_id, extractor, dirty) VALUES (:collection, :extractor, true) "
    f"ON CONFLICT (collection_id) DO UPDATE SET dirty = true, "
    f"extractor = CASE WHEN {STATE}.extractor = EXCLUDED.extractor THEN {STATE}.extractor ELSE '' END"
)
SQL_MARK_DIRTY = f"UPDATE {STATE} SET dirty = true WHERE collection_id = :collection"
# Upgrading a store made before the graph existed: its chunks have no links yet.
SQL_MARK_UNEXTRACTED = (
    f"INSERT INTO {STATE} (collection_id, extractor, dirty) SELECT uuid, '', true FROM {COLLECTIONS} "
    "ON CONFLICT (collection_id) DO NOTHING"
)
# chunk text for a full re-extraction (make graph), in pages of PAGE_SIZE
SQL_CHUNK_PAGE = (
    f"SELECT id, document, cmetadata FROM {CHUNKS} WHERE collection_id = :collection AND id > :after "
    "ORDER BY id LIMIT :limit"
)
SQL_DELETE_ALL_MENTIONS = f"DELETE FROM {MENTION} WHERE collection_id = :collection"
SQL_DELETE_ALL_PAIRS = f"DELETE FROM {PAIR} WHERE collection_id = :collection"

# --- reading the per-chunk tables for a build --------------------------------------------
# An entity's sentences in the order of their chunks' text hashes: a renamed or moved file keeps its
# entities' descriptions (and their embeddings) as they were.
SQL_ENTITY_FACTS = (
    "SELECT m.entity, min(m.title) AS title, mode() WITHIN GROUP (ORDER BY m.kind) AS kind, sum(m.n) AS mentions, "
    f"count(*) AS chunks FROM {MENTION} m WHERE m.collection_id = :collection GROUP BY m.entity ORDER BY m.entity"
)
SQL_ENTITY_SENTENCES = (
    f"SELECT m.entity, m.sentence, m.chunk_id, e.cmetadata->>'doc_id' AS doc_id, e.cmetadata->>'source' AS source "
    f"FROM {MENTION} m JOIN {CHUNKS} e ON e.id = m.chunk_id WHERE m.collection_id = :collection "
    "ORDER BY m.entity, e.cmetadata->>'content_hash', m.chunk_id"
)
SQL_PAIR_WEIGHTS = (
    f"SELECT source, target, sum(n) AS weight, count(*) AS chunks FROM {PAIR} WHERE collection_id = :collection "
    "GROUP BY source, target ORDER BY source, target"
)
SQL_STATE = f"SELECT extractor, built_at, dirty, stats FROM {STATE} WHERE collection_id = :collection"
SQL_STORED_EMBEDDINGS = (
    f"SELECT embed_hash, CAST(embedding AS text) FROM {ENTITY} WHERE collection_id = :collection "
    "AND embed_hash = ANY(:hashes) AND embedding IS NOT NULL"
)
SQL_STORED_REPORTS = (
    f"SELECT content_hash, title, summary, findings, kind FROM {REPORT} WHERE collection_id = :collection"
)

# --- writing a build (one transaction) --------------------------------------------------
SQL_CLEAR = tuple(
    f"DELETE FROM {table} WHERE collection_id = :collection" for table in (ENTITY, RELATIONSHIP, COMMUNITY, REPORT)
)
SQL_INSERT_ENTITY = (
    f"INSERT INTO {ENTITY} (collection_id, id, key, title, kind, description, mentions, chunks, degree, communities, "
    "embedding, embed_hash) VALUES (:collection, :id, :key, :title, :kind, :description, :mentions, :chunks, :degree, "
    "CAST(:communities AS text[]), CAST(:embedding AS vector), :embed_hash)"
)
SQL_INSERT_RELATIONSHIP = (
    f"INSERT INTO {RELATIONSHIP} (collection_id, id, source, target, weight, chunks, description) "
    "VALUES (:collection, :id, :source, :target, :weight, :chunks, :description)"
)
SQL_INSERT_COMMUNITY = (
    f"INSERT INTO {COMMUNITY} (collection_id, id, level, parent, size, weight, entity_ids) "
    "VALUES (:collection, :id, :level, :parent, :size, :weight, CAST(:entity_ids AS text[]))"
)
SQL_INSERT_REPORT = (
    f"INSERT INTO {REPORT} (collection_id, id, level, title, summary, findings, rank, kind, chunk_ids, document_ids, "
    "entity_ids, content_hash) VALUES (:collection, :id, :level, :title, :summary, CAST(:findings AS jsonb), :rank, "
    ":kind, CAST(:chunk_ids AS text[]), CAST(:document_ids AS text[]), CAST(:entity_ids AS text[]), :content_hash)"
)
SQL_SAVE_STATE = (
    f"INSERT INTO {STATE} (collection_id, extractor, built_at, dirty, stats) "
    "VALUES (:collection, :extractor, now(), false, CAST(:stats AS jsonb)) "
    "ON CONFLICT (collection_id) DO UPDATE SET extractor = EXCLUDED.extractor, built_at = EXCLUDED.built_at, "
    "dirty = false, stats = EXCLUDED.stats"
)

# --- queries (local and global search, make docs) ----------------------------------------
SQL_COUNTS = (
    f"SELECT (SELECT count(*) FROM {ENTITY} WHERE collection_id = :collection) AS entities, "
    f"(SELECT count(*) FROM {RELATIONSHIP} WHERE collection_id = :collection) AS relationships, "
    f"(SELECT count(*) FROM {COMMUNITY} WHERE collection_id = :collection) AS communities, "
    f"(SELECT count(*) FROM {REPORT} WHERE collection_id = :collection) AS reports, "
    f"(SELECT count(*) FROM {MENTION} WHERE collection_id = :collection) AS links"
)
_ENTITY_COLUMNS = "id, key, title, kind, description, mentions, chunks, degree, communities"
SQL_ENTITIES_BY_VECTOR = (
    f"SELECT {_ENTITY_COLUMNS}, 1 - (embedding <=> CAST(:vector AS vector)) AS similarity FROM {ENTITY} "
    "WHERE collection_id = :collection AND embedding IS NOT NULL "
    "ORDER BY embedding <=> CAST(:vector AS vector) LIMIT :k"
)
# Entities named in the question: their normalized title occurs in the normalized question
# (longest first: a compound such as パッケージ管理システム before パッケージ).
SQL_ENTITIES_IN_TEXT = (
    f"SELECT {_ENTITY_COLUMNS}, length(key) AS similarity FROM {ENTITY} "
    "WHERE collection_id = :collection AND length(key) >= 2 AND strpos(:text, key) > 0 "
    "ORDER BY length(key) DESC, chunks DESC, id LIMIT :k"
)
SQL_RELATIONSHIPS_OF = (
    f"SELECT id, source, target, weight, chunks, description FROM {RELATIONSHIP} "
    "WHERE collection_id = :collection AND (source = ANY(:ids) OR target = ANY(:ids)) "
    "ORDER BY weight DESC, id"
)
SQL_ENTITIES_BY_ID = (
    f"SELECT {_ENTITY_COLUMNS}, 0.0 AS similarity FROM {ENTITY} WHERE collection_id = :collection AND id = ANY(:ids)"
)
# the chunks that name the entities (by key), how many of them and how often
SQL_TEXT_UNITS_OF = (
    f"SELECT m.chunk_id, e.document, e.cmetadata, array_agg(m.entity ORDER BY m.entity) AS keys, sum(m.n) AS n "
    f"FROM {MENTION} m JOIN {CHUNKS} e ON e.id = m.chunk_id "
    "WHERE m.collection_id = :collection AND m.entity = ANY(:keys) GROUP BY m.chunk_id, e.document, e.cmetadata"
)
SQL_REPORTS_BY_ID = (
    f"SELECT id, level, title, summary, findings, rank, kind, chunk_ids, document_ids, entity_ids FROM {REPORT} "
    "WHERE collection_id = :collection AND id = ANY(:ids)"
)
SQL_REPORTS_AT_LEVEL = (
    f"SELECT id, level, title, summary, findings, rank, kind, chunk_ids, document_ids, entity_ids FROM {REPORT} "
    "WHERE collection_id = :collection AND level = :level AND rank >= :min_rank ORDER BY rank DESC, id"
)
SQL_LEVELS = f"SELECT level, count(*) FROM {REPORT} WHERE collection_id = :collection GROUP BY level ORDER BY level"
SQL_CORPUS_SIZE = (
    f"SELECT count(DISTINCT cmetadata->>'source') AS pages, count(*) AS chunks FROM {CHUNKS} "
    "WHERE collection_id = :collection"
)
# bytes of a collection's rows in each graph table (row data, not indexes: tables hold several collections)
SQL_TABLE_BYTES = " UNION ALL ".join(
    f"SELECT '{table}' AS name, coalesce(sum(pg_column_size(t.*)), 0) AS bytes FROM {table} t "
    "WHERE t.collection_id = :collection"
    for table in (MENTION, PAIR, ENTITY, RELATIONSHIP, COMMUNITY, REPORT)
)
SQL_DOCUMENT_OF_CHUNKS = (
    f"SELECT id, cmetadata->>'doc_id', cmetadata->>'source' FROM {CHUNKS} WHERE id = ANY(CAST(:ids AS varchar[]))"
)


def _text(statement: str):
    from sqlalchemy import text

    return text(statement)


def create(conn) -> None:
    """Create the graph's tables and indexes if missing (write path, inside app.db.create_schema)."""
    for statement in GRAPH_DDL:
        conn.execute(_text(statement))


def write_chunk_graphs(conn, collection, graphs: Mapping[str, ChunkGraph]) -> None:
    """Insert the mentions and pairs of newly written chunks (chunk ID -> ChunkGraph), inside the
    caller's transaction (which marks the graph dirty: :func:`mark_dirty`)."""
    mentions = [
        {
            "chunk": chunk,
            "collection": collection,
            "entity": m.key,
            "title": m.title,
            "kind": m.kind,
            "n": m.count,
            "sentence": m.sentence,
        }
        for chunk, g in graphs.items()
        for m in g.mentions.values()
    ]
    pairs = [
        {"chunk": chunk, "collection": collection, "source": a, "target": b, "n": n}
        for chunk, g in graphs.items()
        for (a, b), n in g.pairs.items()
    ]
    if mentions:
        conn.execute(_text(SQL_INSERT_MENTION), mentions)
    if pairs:
        conn.execute(_text(SQL_INSERT_PAIR), pairs)


def replace_chunk_graphs(conn, collection, graphs: Mapping[str, ChunkGraph]) -> None:
    """Replace the mentions and pairs of existing chunks (a re-extraction)."""
    ids = list(graphs)
    conn.execute(_text(SQL_DELETE_CHUNK_MENTIONS), {"ids": ids})
    conn.execute(_text(SQL_DELETE_CHUNK_PAIRS), {"ids": ids})
    write_chunk_graphs(conn, collection, graphs)


def clear_chunk_graphs(conn, collection) -> None:
    """Delete every mention and pair of the collection (before a full re-extraction)."""
    conn.execute(_text(SQL_DELETE_ALL_MENTIONS), {"collection": collection})
    conn.execute(_text(SQL_DELETE_ALL_PAIRS), {"collection": collection})


def mark_written(conn, collection, extractor: str) -> None:
    """Record that chunks were written with links from ``extractor`` ('' for none) since the graph
    was built (same transaction as the chunks)."""
    conn.execute(_text(SQL_MARK_WRITTEN), {"collection": collection, "extractor": extractor})


def mark_dirty(conn, collection) -> None:
    """Record that chunks were deleted since the graph was built (same transaction as the deletion)."""
    conn.execute(_text(SQL_MARK_DIRTY), {"collection": collection})


def mark_unextracted(conn) -> None:
    """Schema upgrade from before the graph: every existing collection's chunks need extracting."""
    conn.execute(_text(SQL_MARK_UNEXTRACTED))


def chunk_pages(engine, collection, page_size: int = 500):
    """Yield the collection's chunks as lists of (id, text, metadata), ``page_size`` at a time."""
    after = ""
    while True:
        with engine.connect() as conn:
            rows = conn.execute(
                _text(SQL_CHUNK_PAGE), {"collection": collection, "after": after, "limit": page_size}
            ).all()
        if not rows:
            return
        yield [(r.id, r.document, r.cmetadata or {}) for r in rows]
        after = rows[-1].id


def state(conn, collection) -> dict | None:
    """The graph's state row (extractor, built_at, dirty, stats), or None before the first write."""
    row = conn.execute(_text(SQL_STATE), {"collection": collection}).mappings().first()
    return dict(row) if row else None


def read_build_inputs(conn, collection) -> tuple[list, list, list]:
    """(entity facts, entity sentences, pair weights) of the collection, for a build."""
    facts = [dict(r) for r in conn.execute(_text(SQL_ENTITY_FACTS), {"collection": collection}).mappings()]
    sentences = [dict(r) for r in conn.execute(_text(SQL_ENTITY_SENTENCES), {"collection": collection}).mappings()]
    pairs = [dict(r) for r in conn.execute(_text(SQL_PAIR_WEIGHTS), {"collection": collection}).mappings()]
    return facts, sentences, pairs


def stored_embeddings(conn, collection, hashes: Sequence[str]) -> dict[str, list[float]]:
    """Entity vectors already stored for these description hashes (not embedded again)."""
    if not hashes:
        return {}
    rows = conn.execute(_text(SQL_STORED_EMBEDDINGS), {"collection": collection, "hashes": list(hashes)})
    return {h: json.loads(v) for h, v in rows}


def stored_reports(conn, collection) -> dict[str, dict]:
    """Reports already stored, by content hash (an LLM report is not written again for the same community)."""
    return {
        r.content_hash: {"title": r.title, "summary": r.summary, "findings": list(r.findings or []), "kind": r.kind}
        for r in conn.execute(_text(SQL_STORED_REPORTS), {"collection": collection})
    }


def _vector(values: Sequence[float] | None) -> str | None:
    return None if values is None else "[" + ",".join(repr(float(x)) for x in values) + "]"


def save_build(
    conn,
    collection,
    entities: Sequence[dict],
    relationships: Sequence[dict],
    communities: Sequence[dict],
    reports: Sequence[dict],
    extractor: str,
    stats: Mapping[str, Any],
) -> None:
    """Replace the derived tables with a new build and mark the graph current (caller's transaction)."""
    params = {"collection": collection}
    for statement in SQL_CLEAR:
        conn.execute(_text(statement), params)
    if entities:
        conn.execute(
            _text(SQL_INSERT_ENTITY), [{**params, **e, "embedding": _vector(e.get("embedding"))} for e in entities]
        )
    if relationships:
        conn.execute(_text(SQL_INSERT_RELATIONSHIP), [{**params, **r} for r in relationships])
    if communities:
        conn.execute(_text(SQL_INSERT_COMMUNITY), [{**params, **c} for c in communities])
    if reports:
        conn.execute(
            _text(SQL_INSERT_REPORT),
            [{**params, **r, "findings": json.dumps(r["findings"], ensure_ascii=False)} for r in reports],
        )
    conn.execute(
        _text(SQL_SAVE_STATE), {**params, "extractor": extractor, "stats": json.dumps(dict(stats), ensure_ascii=False)}
    )


def counts(conn, collection) -> dict[str, int]:
    """How many entities, relationships, communities, reports and entity ↔ chunk links are stored."""
    return dict(conn.execute(_text(SQL_COUNTS), {"collection": collection}).mappings().one())


def entities_by_vector(conn, collection, vector: Sequence[float], k: int) -> list[dict]:
    """The ``k`` entities whose description embedding is nearest ``vector`` (HNSW), nearest first."""
    return [
        dict(r)
        for r in conn.execute(
            _text(SQL_ENTITIES_BY_VECTOR), {"collection": collection, "vector": _vector(vector), "k": k}
        ).mappings()
    ]


def entities_in_text(conn, collection, text: str, k: int) -> list[dict]:
    """Entities whose key occurs in ``text`` (already normalized), longest first."""
    return [
        dict(r)
        for r in conn.execute(_text(SQL_ENTITIES_IN_TEXT), {"collection": collection, "text": text, "k": k}).mappings()
    ]


def entities_by_id(conn, collection, ids: Iterable[str]) -> list[dict]:
    """Entities by ID (any order)."""
    return [
        dict(r)
        for r in conn.execute(_text(SQL_ENTITIES_BY_ID), {"collection": collection, "ids": list(ids)}).mappings()
    ]


def relationships_of(conn, collection, ids: Sequence[str]) -> list[dict]:
    """Relationships touching any of the entity ``ids``, heaviest first."""
    return [
        dict(r)
        for r in conn.execute(_text(SQL_RELATIONSHIPS_OF), {"collection": collection, "ids": list(ids)}).mappings()
    ]


def text_units_of(conn, collection, keys: Sequence[str]) -> list[dict]:
    """The chunks that name any of the entity ``keys``: chunk_id, document, cmetadata, keys, n."""
    return [
        dict(r)
        for r in conn.execute(_text(SQL_TEXT_UNITS_OF), {"collection": collection, "keys": list(keys)}).mappings()
    ]


def _report(row) -> CommunityReport:
    return CommunityReport(
        id=row.id,
        level=row.level,
        title=row.title,
        summary=row.summary,
        rank=float(row.rank),
        findings=list(row.findings or []),
        chunk_ids=list(row.chunk_ids),
        document_ids=list(row.document_ids),
        entity_ids=list(row.entity_ids),
        kind=row.kind,
    )


def reports_by_id(conn, collection, ids: Sequence[str]) -> list[CommunityReport]:
    """Community reports by ID (any order)."""
    return [_report(r) for r in conn.execute(_text(SQL_REPORTS_BY_ID), {"collection": collection, "ids": list(ids)})]


def reports_at_level(conn, collection, level: int, min_rank: float) -> list[CommunityReport]:
    """The reports of one level with rank >= ``min_rank``, best rank first."""
    return [
        _report(r)
        for r in conn.execute(
            _text(SQL_REPORTS_AT_LEVEL), {"collection": collection, "level": level, "min_rank": min_rank}
        )
    ]


def report_levels(conn, collection) -> dict[int, int]:
    """Level -> number of reports."""
    return {int(level): int(n) for level, n in conn.execute(_text(SQL_LEVELS), {"collection": collection})}


def corpus_size(conn, collection) -> dict[str, int]:
    """Pages (distinct source IDs: PDF pages, CSV rows, Markdown sections) and chunks of a collection."""
    return {
        k: int(v) for k, v in conn.execute(_text(SQL_CORPUS_SIZE), {"collection": collection}).mappings().one().items()
    }


def table_bytes(conn, collection) -> dict[str, int]:
    """Bytes of the collection's rows in each graph table."""
    return {name: int(n) for name, n in conn.execute(_text(SQL_TABLE_BYTES), {"collection": collection})}


def chunk_documents(conn, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Chunk ID -> (document ID, source ID) for the chunks that still exist."""
    if not ids:
        return {}
    return {r[0]: (r[1], r[2]) for r in conn.execute(_text(SQL_DOCUMENT_OF_CHUNKS), {"ids": list(ids)})}
