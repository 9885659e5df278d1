"""The graph's tables and every statement that reads or writes them (app.storage.graphrag_rows turns the rows
into the graph's objects).

Two kinds of tables:

* **per chunk**, written in the same transaction as the chunk rows (app.storage.chunks,
  app.storage.staging) and deleted with them (``ON DELETE CASCADE`` on the chunk ID): mentions (entity
  ↔ chunk, the text-unit links, with the first sentence naming the entity) and pairs (two entities
  named in one sentence of the chunk, and how often). A changed or deleted document's links are
  therefore replaced or purged atomically with its chunks. The writers of these rows are here.
* **derived**, rebuilt from the per-chunk tables after a sync that changed anything and by
  ``make graph`` (app.graphrag.index), in one transaction, so readers see the old graph or the new
  one: entities (with an embedding of title + description, HNSW), relationships, communities and
  their reports, and the state (which extractor built it, when, and whether chunks changed since:
  ``dirty``, set by every chunk write).
"""

from __future__ import annotations

from collections.abc import Mapping

from app.storage.readers import readers_predicate
from app.storage.scope import scope_predicate
from app.storage.tables import (
    COMMUNITY_TABLE,
    ENTITY_TABLE,
    MENTION_TABLE,
    PAIR_TABLE,
    RELATIONSHIP_TABLE,
    REPORT_TABLE,
    sql,
)

_FK_CHUNK = "REFERENCES {chunks}(id) ON DELETE CASCADE"
_FK_COLLECTION = "REFERENCES {collections}(uuid) ON DELETE CASCADE"
GRAPH_DDL = tuple(
    sql(statement)
    for statement in (
        "CREATE TABLE IF NOT EXISTS {mentions} (chunk_id varchar NOT NULL " + _FK_CHUNK + ", "
        "collection_id uuid NOT NULL, entity text NOT NULL, title text NOT NULL, kind text NOT NULL, "
        "n integer NOT NULL, sentence text NOT NULL, PRIMARY KEY (chunk_id, entity))",
        "CREATE INDEX IF NOT EXISTS {mention_entity_index} ON {mentions} (collection_id, entity)",
        "CREATE TABLE IF NOT EXISTS {pairs} (chunk_id varchar NOT NULL " + _FK_CHUNK + ", collection_id uuid NOT NULL, "
        "source text NOT NULL, target text NOT NULL, n integer NOT NULL, PRIMARY KEY (chunk_id, source, target))",
        "CREATE INDEX IF NOT EXISTS {pair_collection_index} ON {pairs} (collection_id)",
        "CREATE TABLE IF NOT EXISTS {entities} (collection_id uuid NOT NULL " + _FK_COLLECTION + ", id text NOT NULL, "
        "key text NOT NULL, title text NOT NULL, kind text NOT NULL, description text NOT NULL, "
        "mentions integer NOT NULL, chunks integer NOT NULL, degree double precision NOT NULL, "
        "communities text[] NOT NULL, embedding vector({embed_dim}), embed_hash text, PRIMARY KEY (collection_id, id))",
        "CREATE INDEX IF NOT EXISTS {entity_key_index} ON {entities} (collection_id, key)",
        "CREATE INDEX IF NOT EXISTS {entity_hnsw_index} ON {entities} USING hnsw (embedding vector_cosine_ops)",
        "CREATE TABLE IF NOT EXISTS {relationships} (collection_id uuid NOT NULL " + _FK_COLLECTION + ", "
        "id text NOT NULL, source text NOT NULL, target text NOT NULL, weight double precision NOT NULL, "
        "chunks integer NOT NULL, description text NOT NULL, PRIMARY KEY (collection_id, id))",
        "CREATE INDEX IF NOT EXISTS {relationship_source_index} ON {relationships} (collection_id, source)",
        "CREATE INDEX IF NOT EXISTS {relationship_target_index} ON {relationships} (collection_id, target)",
        "CREATE TABLE IF NOT EXISTS {communities} (collection_id uuid NOT NULL " + _FK_COLLECTION + ", "
        "id text NOT NULL, level integer NOT NULL, parent text, size integer NOT NULL, "
        "weight double precision NOT NULL, entity_ids text[] NOT NULL, PRIMARY KEY (collection_id, id))",
        "CREATE TABLE IF NOT EXISTS {reports} (collection_id uuid NOT NULL " + _FK_COLLECTION + ", id text NOT NULL, "
        "level integer NOT NULL, title text NOT NULL, summary text NOT NULL, findings jsonb NOT NULL, "
        "rank double precision NOT NULL, kind text NOT NULL, chunk_ids text[] NOT NULL, document_ids text[] NOT NULL, "
        "entity_ids text[] NOT NULL, content_hash text NOT NULL, PRIMARY KEY (collection_id, id))",
        "CREATE TABLE IF NOT EXISTS {graph_state} (collection_id uuid PRIMARY KEY " + _FK_COLLECTION + ", "
        "extractor text NOT NULL, built_at timestamptz, dirty boolean NOT NULL DEFAULT true, "
        "stats jsonb NOT NULL DEFAULT '{{}}'::jsonb)",
    )
)

# --- per chunk ---------------------------------------------------------------------------
SQL_INSERT_MENTION = sql(
    "INSERT INTO {mentions} (chunk_id, collection_id, entity, title, kind, n, sentence) "
    "VALUES (:chunk, :collection, :entity, :title, :kind, :n, :sentence) ON CONFLICT (chunk_id, entity) DO UPDATE "
    "SET title = EXCLUDED.title, kind = EXCLUDED.kind, n = EXCLUDED.n, sentence = EXCLUDED.sentence"
)
SQL_INSERT_PAIR = sql(
    "INSERT INTO {pairs} (chunk_id, collection_id, source, target, n) VALUES (:chunk, :collection, :source, :target, :n) "
    "ON CONFLICT (chunk_id, source, target) DO UPDATE SET n = EXCLUDED.n"
)
SQL_DELETE_CHUNK_MENTIONS = sql("DELETE FROM {mentions} WHERE chunk_id = ANY(CAST(:ids AS varchar[]))")
SQL_DELETE_CHUNK_PAIRS = sql("DELETE FROM {pairs} WHERE chunk_id = ANY(CAST(:ids AS varchar[]))")
# Chunks written: the graph is out of date. The state remembers which extractor wrote the links; when
# links from another one (or none: GRAPH_EXTRACTOR=off, '') join them, it is '' and the next build
# extracts every chunk again.
SQL_MARK_WRITTEN = sql(
    "INSERT INTO {graph_state} (collection_id, extractor, dirty) VALUES (:collection, :extractor, true) "
    "ON CONFLICT (collection_id) DO UPDATE SET dirty = true, "
    "extractor = CASE WHEN {graph_state}.extractor = EXCLUDED.extractor THEN {graph_state}.extractor ELSE '' END"
)
SQL_MARK_DIRTY = sql("UPDATE {graph_state} SET dirty = true WHERE collection_id = :collection")
# Upgrading a store made before the graph existed: its chunks have no links yet.
SQL_MARK_UNEXTRACTED = sql(
    "INSERT INTO {graph_state} (collection_id, extractor, dirty) SELECT uuid, '', true FROM {collections} "
    "ON CONFLICT (collection_id) DO NOTHING"
)
# chunk text for a full re-extraction (make graph), in pages
SQL_CHUNK_PAGE = sql(
    "SELECT id, document, cmetadata FROM {chunks} WHERE collection_id = :collection AND id > :after "
    "ORDER BY id LIMIT :limit"
)
SQL_DELETE_ALL_MENTIONS = sql("DELETE FROM {mentions} WHERE collection_id = :collection")
SQL_DELETE_ALL_PAIRS = sql("DELETE FROM {pairs} WHERE collection_id = :collection")

# --- reading the per-chunk tables for a build --------------------------------------------
# An entity's sentences in the order of their chunks' text hashes: a renamed or moved file keeps its
# entities' descriptions (and their embeddings) as they were.
SQL_ENTITY_FACTS = sql(
    "SELECT m.entity, min(m.title) AS title, mode() WITHIN GROUP (ORDER BY m.kind) AS kind, sum(m.n) AS mentions, "
    "count(*) AS chunks FROM {mentions} m WHERE m.collection_id = :collection GROUP BY m.entity ORDER BY m.entity"
)
SQL_ENTITY_SENTENCES = sql(
    "SELECT m.entity, m.sentence, m.chunk_id, e.cmetadata->>'doc_id' AS doc_id, e.cmetadata->>'source' AS source "
    "FROM {mentions} m JOIN {chunks} e ON e.id = m.chunk_id WHERE m.collection_id = :collection "
    "ORDER BY m.entity, e.cmetadata->>'content_hash', m.chunk_id"
)
SQL_PAIR_WEIGHTS = sql(
    "SELECT source, target, sum(n) AS weight, count(*) AS chunks FROM {pairs} WHERE collection_id = :collection "
    "GROUP BY source, target ORDER BY source, target"
)
SQL_STATE = sql("SELECT extractor, built_at, dirty, stats FROM {graph_state} WHERE collection_id = :collection")
SQL_STORED_EMBEDDINGS = sql(
    "SELECT embed_hash, CAST(embedding AS text) FROM {entities} WHERE collection_id = :collection "
    "AND embed_hash = ANY(:hashes) AND embedding IS NOT NULL"
)
SQL_STORED_REPORTS = sql(
    "SELECT content_hash, title, summary, findings, kind FROM {reports} WHERE collection_id = :collection"
)

# --- writing a build (one transaction) --------------------------------------------------
# The planner's idea of the entity table's size: -1 before it was ever analyzed. A first build over a
# real corpus (6,085 entities, 22,409 relationships) took 336 s to write with no statistics on the fresh
# tables (the readers' refresh joined them by nested loops), 4 s with them.
SQL_PLANNER_ENTITIES = sql("SELECT reltuples FROM pg_class WHERE oid = CAST('{entities}' AS regclass)")
SQL_ANALYZE_GRAPH = sql("ANALYZE {chunks}, {mentions}, {entities}, {relationships}, {reports}")
SQL_CLEAR = tuple(
    sql(statement)
    for statement in (
        "DELETE FROM {entities} WHERE collection_id = :collection",
        "DELETE FROM {relationships} WHERE collection_id = :collection",
        "DELETE FROM {communities} WHERE collection_id = :collection",
        "DELETE FROM {reports} WHERE collection_id = :collection",
    )
)
SQL_INSERT_ENTITY = sql(
    "INSERT INTO {entities} (collection_id, id, key, title, kind, description, mentions, chunks, degree, "
    "communities, embedding, embed_hash) VALUES (:collection, :id, :key, :title, :kind, :description, :mentions, "
    ":chunks, :degree, CAST(:communities AS text[]), CAST(:embedding AS vector), :embed_hash)"
)
SQL_INSERT_RELATIONSHIP = sql(
    "INSERT INTO {relationships} (collection_id, id, source, target, weight, chunks, description) "
    "VALUES (:collection, :id, :source, :target, :weight, :chunks, :description)"
)
SQL_INSERT_COMMUNITY = sql(
    "INSERT INTO {communities} (collection_id, id, level, parent, size, weight, entity_ids) "
    "VALUES (:collection, :id, :level, :parent, :size, :weight, CAST(:entity_ids AS text[]))"
)
SQL_INSERT_REPORT = sql(
    "INSERT INTO {reports} (collection_id, id, level, title, summary, findings, rank, kind, chunk_ids, document_ids, "
    "entity_ids, content_hash) VALUES (:collection, :id, :level, :title, :summary, CAST(:findings AS jsonb), :rank, "
    ":kind, CAST(:chunk_ids AS text[]), CAST(:document_ids AS text[]), CAST(:entity_ids AS text[]), :content_hash)"
)
SQL_SAVE_STATE = sql(
    "INSERT INTO {graph_state} (collection_id, extractor, built_at, dirty, stats) "
    "VALUES (:collection, :extractor, now(), false, CAST(:stats AS jsonb)) "
    "ON CONFLICT (collection_id) DO UPDATE SET extractor = EXCLUDED.extractor, built_at = EXCLUDED.built_at, "
    "dirty = false, stats = EXCLUDED.stats"
)

# --- queries (local and global search, make docs) ----------------------------------------
# Communities counted through their entities: the query role may not read the community table (no readers).
SQL_COUNTS = sql(
    "SELECT (SELECT count(*) FROM {entities} WHERE collection_id = :collection) AS entities, "
    "(SELECT count(*) FROM {relationships} WHERE collection_id = :collection) AS relationships, "
    "(SELECT count(DISTINCT c) FROM {entities}, unnest(communities) c WHERE collection_id = :collection) "
    "AS communities, "
    "(SELECT count(*) FROM {reports} WHERE collection_id = :collection) AS reports, "
    "(SELECT count(*) FROM {mentions} WHERE collection_id = :collection) AS links"
)
_ENTITY_COLUMNS = "id, key, title, kind, description, mentions, chunks, degree, communities"
# Only the entities embedded with the question's model (a collection re-embedded with another model
# may still hold the old size until its graph is rebuilt).
SQL_ENTITIES_BY_VECTOR = sql(
    "SELECT " + _ENTITY_COLUMNS + ", 1 - (embedding <=> CAST(:vector AS vector)) AS similarity FROM {entities} "
    "WHERE collection_id = :collection AND embedding IS NOT NULL AND "
    + readers_predicate()
    + " AND vector_dims(embedding) = vector_dims(CAST(:vector AS vector)) "
    "ORDER BY embedding <=> CAST(:vector AS vector) LIMIT :k"
)
# Entities named in the question: their normalized title occurs in the normalized question
# (longest first: a compound such as パッケージ管理システム before パッケージ).
SQL_ENTITIES_IN_TEXT = sql(
    "SELECT " + _ENTITY_COLUMNS + ", length(key) AS similarity FROM {entities} "
    "WHERE collection_id = :collection AND length(key) >= 2 AND strpos(:text, key) > 0 AND "
    + readers_predicate()
    + " ORDER BY length(key) DESC, chunks DESC, id LIMIT :k"
)
SQL_RELATIONSHIPS_OF = sql(
    "SELECT id, source, target, weight, chunks, description FROM {relationships} "
    "WHERE collection_id = :collection AND (source = ANY(:ids) OR target = ANY(:ids)) AND "
    + readers_predicate()
    + " ORDER BY weight DESC, id"
)
SQL_ENTITIES_BY_ID = sql(
    "SELECT " + _ENTITY_COLUMNS + ", 0.0 AS similarity FROM {entities} "
    "WHERE collection_id = :collection AND id = ANY(:ids) AND " + readers_predicate()
)
# the chunks that name the entities (by key), how many of them and how often
SQL_TEXT_UNITS_OF = sql(
    "SELECT m.chunk_id, e.document, e.cmetadata, array_agg(m.entity ORDER BY m.entity) AS keys, sum(m.n) AS n "
    "FROM {mentions} m JOIN {chunks} e ON e.id = m.chunk_id "
    "WHERE m.collection_id = :collection AND m.entity = ANY(:keys) AND "
    + readers_predicate("e")
    + " AND "
    + scope_predicate("e")
    + " GROUP BY m.chunk_id, e.document, e.cmetadata"
)
_REPORT_COLUMNS = "id, level, title, summary, findings, rank, kind, chunk_ids, document_ids, entity_ids"
SQL_REPORTS_BY_ID = sql(
    "SELECT "
    + _REPORT_COLUMNS
    + " FROM {reports} WHERE collection_id = :collection AND id = ANY(:ids) AND "
    + readers_predicate()
)
SQL_REPORTS_AT_LEVEL = sql(
    "SELECT " + _REPORT_COLUMNS + " FROM {reports} "
    "WHERE collection_id = :collection AND level = :level AND rank >= :min_rank AND "
    + readers_predicate()
    + " ORDER BY rank DESC, id"
)
SQL_LEVELS = sql(
    "SELECT level, count(*) FROM {reports} WHERE collection_id = :collection AND "
    + readers_predicate()
    + " GROUP BY level ORDER BY level"
)
SQL_CORPUS_SIZE = sql(
    "SELECT count(DISTINCT cmetadata->>'source') AS pages, count(*) AS chunks FROM {chunks} "
    "WHERE collection_id = :collection"
)
# bytes of a collection's rows in each graph table (row data, not indexes: tables hold several collections),
# in the order of TABLE_BYTES_NAMES
TABLE_BYTES_NAMES = (MENTION_TABLE, PAIR_TABLE, ENTITY_TABLE, RELATIONSHIP_TABLE, COMMUNITY_TABLE, REPORT_TABLE)
SQL_TABLE_BYTES = sql(
    "SELECT (SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {mentions} t WHERE t.collection_id = :collection), "
    "(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {pairs} t WHERE t.collection_id = :collection), "
    "(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {entities} t WHERE t.collection_id = :collection), "
    "(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {relationships} t WHERE t.collection_id = :collection), "
    "(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {communities} t WHERE t.collection_id = :collection), "
    "(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {reports} t WHERE t.collection_id = :collection)"
)
SQL_DOCUMENT_OF_CHUNKS = sql(
    "SELECT id, cmetadata->>'doc_id', cmetadata->>'source' FROM {chunks} e WHERE id = ANY(CAST(:ids AS varchar[])) "
    "AND " + readers_predicate() + " AND " + scope_predicate("e")
)


def _text(statement: str):
    from sqlalchemy import text

    return text(statement)


def create(conn) -> None:
    """Create the graph's tables and indexes if missing (write path, a migration of app.storage.schema)."""
    for statement in GRAPH_DDL:
        conn.execute(_text(statement))


def write_chunk_graphs(conn, collection, graphs: Mapping) -> None:
    """Insert the mentions and pairs of newly written chunks (chunk ID -> ChunkGraph), inside the
    caller's transaction (which marks the graph dirty: :func:`mark_written`)."""
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


def mark_written(conn, collection, extractor: str) -> None:
    """Record that chunks were written with links from ``extractor`` ('' for none) since the graph
    was built (same transaction as the chunks)."""
    conn.execute(_text(SQL_MARK_WRITTEN), {"collection": collection, "extractor": extractor})


def mark_dirty(conn, collection) -> None:
    """Record that chunks were deleted since the graph was built (same transaction as the deletion)."""
    conn.execute(_text(SQL_MARK_DIRTY), {"collection": collection})
