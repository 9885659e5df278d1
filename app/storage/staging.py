"""Batched, resumable ingest: a file's chunks are embedded and written to the staging table batch by
batch (each batch committed), invisible to searches; the document is then switched over in one
transaction (:func:`switch_document`).

A killed ingest leaves its batches here: the next sync of the same bytes and settings (the same
``generation``) finds them and embeds only the rest. ``run`` names the sync that found or wrote a row
(only those rows are moved in); ``keep`` marks, during a switch, rows already stored with the same id
and metadata.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from app.storage import graphrag_tables, page_words, readers, table_rows
from app.storage.chunks import SQL_DELETE_DOC_STAGING, SQL_UPSERT_DOCUMENT, document_params, document_readers
from app.storage.collection import collection_id, require_collection
from app.storage.engine import lift_statement_timeout
from app.storage.keywords import keyword_row
from app.storage.queue import SQL_DELETE_DOC_QUEUED
from app.storage.tables import sql, vector_literal

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# --- schema (app.storage.schema applies these) ---------------------------------------------
SQL_CREATE_STAGING_TABLE = sql(
    "CREATE TABLE IF NOT EXISTS {staging} ("
    " collection_id uuid NOT NULL REFERENCES {collections}(uuid) ON DELETE CASCADE,"
    " doc_id text NOT NULL, generation text NOT NULL, run text NOT NULL, id varchar NOT NULL,"
    " position integer NOT NULL, document text NOT NULL, cmetadata jsonb NOT NULL,"
    " embedding vector({embed_dim}) NOT NULL, content_hash text NOT NULL, embed_model text NOT NULL,"
    " tsv tsvector NOT NULL, dl integer NOT NULL, graph jsonb, keep boolean NOT NULL DEFAULT false,"
    " PRIMARY KEY (collection_id, doc_id, id))"
)
SQL_CREATE_STAGING_HASH_INDEX = sql("CREATE INDEX IF NOT EXISTS {staging_hash_index} ON {staging} (content_hash)")

# --- batches ---------------------------------------------------------------------------------
# Staged rows of this document and generation among a batch's chunk ids: claimed for this run.
SQL_CLAIM_STAGED = sql(
    "UPDATE {staging} SET run = :run WHERE collection_id = :collection AND doc_id = :doc "
    "AND generation = :generation AND id = ANY(CAST(:ids AS varchar[])) RETURNING id"
)
SQL_STAGE_CHUNK = sql(
    "INSERT INTO {staging} (collection_id, doc_id, generation, run, id, position, document, cmetadata, "
    "embedding, content_hash, embed_model, tsv, dl, graph) VALUES (:collection, :doc, :generation, :run, :id, "
    ":position, :document, CAST(:cmetadata AS jsonb), CAST(:embedding AS vector), :content_hash, :embed_model, "
    "setweight(to_tsvector('simple', :context), 'A') || to_tsvector('simple', :tokens), :dl, CAST(:graph AS jsonb)) "
    "ON CONFLICT (collection_id, doc_id, id) DO UPDATE SET generation = EXCLUDED.generation, run = EXCLUDED.run, "
    "position = EXCLUDED.position, document = EXCLUDED.document, cmetadata = EXCLUDED.cmetadata, "
    "embedding = EXCLUDED.embedding, content_hash = EXCLUDED.content_hash, embed_model = EXCLUDED.embed_model, "
    "tsv = EXCLUDED.tsv, dl = EXCLUDED.dl, graph = EXCLUDED.graph, keep = false"
)
_STAGED = "{staging} s WHERE s.collection_id = :collection AND s.doc_id = :doc AND s.run = :run"
SQL_COUNT_STAGED = sql("SELECT count(*) FROM " + _STAGED)
SQL_STAGED_PROGRESS = sql(
    "SELECT doc_id, count(*) FROM {staging} WHERE collection_id = :collection AND run = :run GROUP BY doc_id"
)

# --- the switch (one transaction) ------------------------------------------------------------
# Which staged rows are stored already (same id and metadata: kept as they are, with their keyword row
# and links), the document's other stored rows out (their keyword rows and links go with them: ON
# DELETE CASCADE), the other staged rows in, its staging rows deleted.
SQL_SWITCH_MARK_KEPT = sql(
    "UPDATE {staging} s SET keep = EXISTS (SELECT 1 FROM {chunks} e "
    "WHERE e.id = s.id AND e.cmetadata = s.cmetadata) WHERE s.collection_id = :collection AND s.doc_id = :doc "
    "AND s.run = :run"
)
SQL_SWITCH_DELETE_OLD = sql(
    "DELETE FROM {chunks} e WHERE e.collection_id = :collection AND (e.cmetadata->>'doc_id' = :doc "
    "OR (e.cmetadata->>'doc_id' IS NULL AND e.cmetadata->>'file' = :file)) "
    "AND NOT EXISTS (SELECT 1 FROM " + _STAGED + " AND s.keep AND s.id = e.id)"
)
SQL_SWITCH_INSERT_CHUNKS = sql(
    "INSERT INTO {chunks} (id, collection_id, embedding, document, cmetadata) "
    "SELECT s.id, s.collection_id, s.embedding, s.document, s.cmetadata FROM " + _STAGED + " AND NOT s.keep "
    "ORDER BY s.position "
    "ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, embedding = EXCLUDED.embedding, "
    "document = EXCLUDED.document, cmetadata = EXCLUDED.cmetadata"
)
SQL_SWITCH_INSERT_KEYWORDS = sql(
    "INSERT INTO {keywords} (id, collection_id, tsv, dl) SELECT s.id, s.collection_id, s.tsv, s.dl "
    "FROM " + _STAGED + " AND NOT s.keep "
    "ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, tsv = EXCLUDED.tsv, dl = EXCLUDED.dl"
)
SQL_SWITCH_INSERT_MENTIONS = sql(
    "INSERT INTO {mentions} (chunk_id, collection_id, entity, title, kind, n, sentence) "
    "SELECT s.id, s.collection_id, m.entity, m.title, m.kind, m.n, m.sentence "
    "FROM {staging} s CROSS JOIN LATERAL jsonb_to_recordset(s.graph->'mentions') "
    "AS m(entity text, title text, kind text, n integer, sentence text) "
    "WHERE s.collection_id = :collection AND s.doc_id = :doc AND s.run = :run AND NOT s.keep "
    "ON CONFLICT (chunk_id, entity) DO UPDATE SET title = EXCLUDED.title, kind = EXCLUDED.kind, n = EXCLUDED.n, "
    "sentence = EXCLUDED.sentence"
)
SQL_SWITCH_INSERT_PAIRS = sql(
    "INSERT INTO {pairs} (chunk_id, collection_id, source, target, n) "
    "SELECT s.id, s.collection_id, p.source, p.target, p.n "
    "FROM {staging} s CROSS JOIN LATERAL jsonb_to_recordset(s.graph->'pairs') "
    "AS p(source text, target text, n integer) "
    "WHERE s.collection_id = :collection AND s.doc_id = :doc AND s.run = :run AND NOT s.keep "
    "ON CONFLICT (chunk_id, source, target) DO UPDATE SET n = EXCLUDED.n"
)
# Stale batches: of other generations (the file changed since) or of documents no longer synced.
_NOT_CURRENT = (
    "NOT EXISTS (SELECT 1 FROM unnest(CAST(:docs AS text[]), CAST(:generations AS text[])) AS k(doc_id, generation) "
    "WHERE k.doc_id = s.doc_id AND k.generation = s.generation)"
)
SQL_DELETE_STALE_STAGING = sql("DELETE FROM {staging} s WHERE s.collection_id = :collection AND " + _NOT_CURRENT)
SQL_DELETE_STALE_DOC_STAGING = sql(
    "DELETE FROM {staging} s WHERE s.collection_id = :collection AND s.doc_id = ANY(CAST(:docs AS text[])) "
    "AND " + _NOT_CURRENT
)


def claim_staged(
    engine: Engine, collection_name: str, doc_id: str, generation: str, run: str, ids: Sequence[str]
) -> set[str]:
    """Which of ``ids`` an earlier, interrupted sync of the same bytes and settings (``generation``)
    staged already; they are claimed for ``run`` (moved in by its switch) and need no embedding."""
    from sqlalchemy import text

    if not ids:
        return set()
    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        return set(
            conn.execute(
                text(SQL_CLAIM_STAGED),
                {"collection": collection, "doc": doc_id, "generation": generation, "run": run, "ids": list(ids)},
            ).scalars()
        )


def stage_chunks(
    engine: Engine,
    collection_name: str,
    doc_id: str,
    generation: str,
    run: str,
    chunks: Sequence[tuple[int, object]],
    vectors: Sequence[Sequence[float]],
    graphs: Mapping | None = None,
) -> None:
    """Write one batch of a document's chunks to the staging table and commit it (searches do not
    see it). ``chunks`` are ``(position in the document, Document)``; ``graphs`` chunk ID -> ChunkGraph."""
    from sqlalchemy import text

    if not chunks:
        return
    collection = require_collection(engine, collection_name)
    rows = [
        _staging_row(collection, doc_id, generation, run, position, d, v, (graphs or {}).get(d.id))
        for (position, d), v in zip(chunks, vectors)
    ]
    with engine.begin() as conn:
        conn.execute(text(SQL_STAGE_CHUNK), rows)


def _staging_row(collection, doc_id: str, generation: str, run: str, position: int, chunk, vector, graph) -> dict:
    """Bound values of one staging row: the chunk row's values, its keyword tokens and its links."""
    keyword = keyword_row(chunk.id, collection, chunk.page_content, chunk.metadata.get("context", ""))
    return {
        "collection": collection,
        "doc": doc_id,
        "generation": generation,
        "run": run,
        "id": chunk.id,
        "position": position,
        "document": chunk.page_content,
        "cmetadata": json.dumps(chunk.metadata, ensure_ascii=False),
        "embedding": vector_literal(vector),
        "content_hash": chunk.metadata.get("content_hash", ""),
        "embed_model": chunk.metadata.get("embed_model", ""),
        "context": keyword["context"],
        "tokens": keyword["tokens"],
        "dl": keyword["dl"],
        "graph": _graph_json(graph),
    }


def _graph_json(chunk_graph) -> str | None:
    """A ChunkGraph as the JSON the switch reads back (SQL_SWITCH_INSERT_MENTIONS/PAIRS); None when empty."""
    if not chunk_graph:
        return None
    return json.dumps(
        {
            "mentions": [
                {"entity": m.key, "title": m.title, "kind": m.kind, "n": m.count, "sentence": m.sentence}
                for m in chunk_graph.mentions.values()
            ],
            "pairs": [{"source": a, "target": b, "n": n} for (a, b), n in chunk_graph.pairs.items()],
        },
        ensure_ascii=False,
    )


def switch_document(
    engine: Engine,
    collection_name: str,
    doc: Mapping,
    run: str,
    chunks: int,
    extractor: str = "",
    tables: Sequence | None = None,
    words: Mapping | None = None,
) -> None:
    """Replace a document by its rows staged in ``run``, in one transaction: its stored chunk rows that
    are not among them (same id and metadata) out, with their keyword rows and links; the staged rows
    in (vector, keyword and link rows); its ``rag_document`` row; its staging rows deleted. Readers
    see the old version or the new one, never a mix. ``chunks`` is how many rows the run staged
    (anything else is an error: nothing changes). ``doc`` as for app.storage.chunks.replace_document.
    ``tables`` (app.tables.extract.SourceTable), when given, replace the document's stored tables in the
    same transaction (app.storage.table_rows). ``words`` (page number -> app.formats.page_words.PageWords:
    the words of its OCR'd pages) replace its stored page words in the same transaction (none given: it
    keeps none; app.storage.page_words)."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    key = {"collection": collection, "doc": doc["doc_id"], "run": run}
    with engine.begin() as conn:
        lift_statement_timeout(conn)  # a large document moves in one statement per table
        staged = int(conn.execute(text(SQL_COUNT_STAGED), key).scalar())
        if staged != chunks:
            raise RuntimeError(f"{staged} chunks staged, {chunks} expected; run the sync again")
        conn.execute(text(SQL_SWITCH_MARK_KEPT), key)
        gone = conn.execute(text(SQL_SWITCH_DELETE_OLD), {**key, "file": doc["source_file"]}).rowcount or 0
        changed = conn.execute(text(SQL_SWITCH_INSERT_CHUNKS), key).rowcount or 0
        if changed:
            conn.execute(text(SQL_SWITCH_INSERT_KEYWORDS), key)
            conn.execute(text(SQL_SWITCH_INSERT_MENTIONS), key)
            conn.execute(text(SQL_SWITCH_INSERT_PAIRS), key)
            graphrag_tables.mark_written(conn, collection, extractor)
        elif gone:
            graphrag_tables.mark_dirty(conn, collection)
        conn.execute(text(SQL_UPSERT_DOCUMENT), document_params(collection, doc, chunks))
        readers.set_document_readers(conn, collection, doc["doc_id"], doc["source_file"], document_readers(doc))
        if tables is not None:
            table_rows.replace_tables(
                conn, collection, doc["doc_id"], doc["source_file"], tables, document_readers(doc)
            )
        page_words.replace_page_words(conn, collection, doc["doc_id"], words or {})
        conn.execute(text(SQL_DELETE_DOC_STAGING), {"collection": collection, "doc": doc["doc_id"]})
        conn.execute(
            text(SQL_DELETE_DOC_QUEUED), {"collection": collection, "doc": doc["doc_id"]}
        )  # a late job: nothing to do


def clean_staging(engine: Engine, collection_name: str, current: Mapping[str, str], only_these: bool = False) -> int:
    """Delete staged batches that no sync will switch over: those of another generation than
    ``current`` (doc_id -> generation) and, unless ``only_these``, of any document not in it.
    Returns the rows deleted (0 when the collection does not exist)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return 0
    params = {"collection": collection, "docs": list(current), "generations": list(current.values())}
    statement = SQL_DELETE_STALE_DOC_STAGING if only_these else SQL_DELETE_STALE_STAGING
    with engine.begin() as conn:
        return conn.execute(text(statement), params).rowcount or 0


def staged_progress(engine: Engine, collection_name: str, run: str) -> dict[str, int]:
    """doc_id -> chunks staged so far by ``run`` (the progress of files being ingested elsewhere)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return {}
    with engine.connect() as conn:
        return {
            doc: int(n) for doc, n in conn.execute(text(SQL_STAGED_PROGRESS), {"collection": collection, "run": run})
        }
