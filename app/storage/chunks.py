"""Documents and their chunk rows: one ``rag_document`` row per source file, written in the same
transaction as the document's chunks (vector row, keyword row, entity links), so a document row exists
exactly when all of its chunks do, and readers see a document's old version or its new one, never a mix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from app.storage import graphrag_tables, readers
from app.storage.collection import collection_id, require_collection
from app.storage.keywords import keyword_row, upsert_keywords
from app.storage.queue import SQL_DELETE_DOC_QUEUED
from app.storage.readers import principals_param, readers_predicate, reading
from app.storage.tables import sql, vector_literal

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# --- schema (app.storage.schema applies these) ---------------------------------------------
# ef_construction 200 (pgvector's default is 64): recall@10 0.75 -> 0.96 at 100k chunks with
# hnsw.ef_search 200, whatever share of the rows the caller may read (docs/benchmarks.md, "Filtered vector search")
SQL_CREATE_HNSW = sql(
    "CREATE INDEX IF NOT EXISTS {hnsw_index} ON {chunks} USING hnsw (embedding vector_cosine_ops) "
    "WITH (m = 16, ef_construction = 200)"
)
SQL_CREATE_COLLECTION_INDEX = sql("CREATE INDEX IF NOT EXISTS {chunk_collection_index} ON {chunks} (collection_id)")
SQL_CREATE_DOC_ID_INDEX = sql("CREATE INDEX IF NOT EXISTS {chunk_doc_id_index} ON {chunks} ((cmetadata->>'doc_id'))")
SQL_CREATE_CONTENT_HASH_INDEX = sql(
    "CREATE INDEX IF NOT EXISTS {chunk_content_hash_index} ON {chunks} ((cmetadata->>'content_hash'))"
)
SQL_CREATE_DOCUMENT_TABLE = sql(
    "CREATE TABLE IF NOT EXISTS {documents} ("
    " collection_id uuid NOT NULL REFERENCES {collections}(uuid) ON DELETE CASCADE,"
    " doc_id text NOT NULL, source_file text NOT NULL, content_hash text NOT NULL,"
    " settings_hash text NOT NULL, chunks integer NOT NULL,"
    " ingested_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (collection_id, doc_id))"
)
# Where a document came from: 'data_dir' (a sync manages it) or 'api' (RagStore.add_document of a Document).
SQL_ADD_ORIGIN = sql("ALTER TABLE {documents} ADD COLUMN IF NOT EXISTS origin text NOT NULL DEFAULT 'data_dir'")
SQL_MARK_API_ORIGIN = sql(  # documents stored through the API before origins were recorded
    "UPDATE {documents} SET origin = 'api' WHERE settings_hash = 'document' AND origin <> 'api'"
)

# --- rows ------------------------------------------------------------------------------------
SQL_UPSERT_EMBEDDING = sql(
    "INSERT INTO {chunks} (id, collection_id, embedding, document, cmetadata) "
    "VALUES (:id, :collection, CAST(:embedding AS vector), :document, CAST(:cmetadata AS jsonb)) "
    "ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, embedding = EXCLUDED.embedding, "
    "document = EXCLUDED.document, cmetadata = EXCLUDED.cmetadata"
)
SQL_LIST_DOCUMENTS = sql(
    "SELECT doc_id, source_file, content_hash, settings_hash, chunks, ingested_at, origin, readers FROM {documents} "
    "WHERE collection_id = :collection AND " + readers_predicate() + " ORDER BY doc_id"
)
# A document's chunks: by doc_id, or (written before documents were tracked) by file.
_DOC_CHUNKS = (
    "collection_id = :collection AND (cmetadata->>'doc_id' = :doc "
    "OR (cmetadata->>'doc_id' IS NULL AND cmetadata->>'file' = :file))"
)
SQL_DELETE_DOC_CHUNKS = sql("DELETE FROM {chunks} WHERE " + _DOC_CHUNKS)
# The chunks of one source (a PDF page, a CSV row, a section), in their order: what a source shows.
_SOURCE_CHUNKS_WHERE = (
    "FROM {chunks} WHERE collection_id = :collection AND cmetadata->>'source' = :source "
    "AND " + readers_predicate() + " ORDER BY (cmetadata->>'chunk_index')::int, id LIMIT :limit"
)
SQL_SOURCE_CHUNKS = sql("SELECT document, cmetadata " + _SOURCE_CHUNKS_WHERE)
SQL_SOURCE_CHUNKS_WITH_VECTORS = sql("SELECT document, cmetadata, CAST(embedding AS text) " + _SOURCE_CHUNKS_WHERE)
# A replaced document keeps its chunk rows whose id and metadata are unchanged (the id covers the
# text, its context and position; the metadata the embedding model): only the others are
# deleted and inserted, so a one-row edit rewrites one row and its BM25 statistics.
SQL_DOC_CHUNK_METADATA = sql("SELECT id, cmetadata FROM {chunks} WHERE " + _DOC_CHUNKS)
SQL_DELETE_CHUNKS = sql("DELETE FROM {chunks} WHERE id = ANY(CAST(:ids AS varchar[]))")
SQL_DELETE_LEGACY_CHUNKS = sql(
    "DELETE FROM {chunks} WHERE collection_id = :collection AND cmetadata->>'doc_id' IS NULL "
    "AND NOT (coalesce(cmetadata->>'file', '') = ANY(:files))"
)
SQL_UPSERT_DOCUMENT = sql(
    "INSERT INTO {documents} (collection_id, doc_id, source_file, content_hash, settings_hash, chunks, "
    "ingested_at, origin) VALUES (:collection, :doc, :file, :hash, :settings, :chunks, now(), :origin) "
    "ON CONFLICT (collection_id, doc_id) DO UPDATE SET source_file = EXCLUDED.source_file, "
    "content_hash = EXCLUDED.content_hash, settings_hash = EXCLUDED.settings_hash, chunks = EXCLUDED.chunks, "
    "ingested_at = EXCLUDED.ingested_at, origin = EXCLUDED.origin"
)
SQL_DELETE_DOCUMENT = sql("DELETE FROM {documents} WHERE collection_id = :collection AND doc_id = :doc")
SQL_DELETE_DOC_STAGING = sql("DELETE FROM {staging} WHERE collection_id = :collection AND doc_id = :doc")
# Stored vectors by text hash (same model), in the chunks or in staged batches of an unfinished ingest.
SQL_VECTORS_BY_HASH = sql(
    "SELECT DISTINCT ON (h) h, v FROM ("
    "SELECT cmetadata->>'content_hash' AS h, CAST(embedding AS text) AS v FROM {chunks} "
    "WHERE cmetadata->>'content_hash' = ANY(:hashes) AND cmetadata->>'embed_model' = :model "
    "UNION ALL SELECT content_hash, CAST(embedding AS text) FROM {staging} "
    "WHERE content_hash = ANY(:hashes) AND embed_model = :model) found"
)


def document_params(collection, doc: Mapping, chunks: int) -> dict:
    """Bound values of a document's ``rag_document`` row (SQL_UPSERT_DOCUMENT)."""
    return {
        "collection": collection,
        "doc": doc["doc_id"],
        "file": doc["source_file"],
        "hash": doc["content_hash"],
        "settings": doc["settings_hash"],
        "chunks": chunks,
        "origin": doc.get("origin", "data_dir"),
    }


def document_readers(doc: Mapping) -> list[str]:
    """A document's readers as given (``doc["readers"]``), ``admin`` always among them; ``{admin}`` alone when none are given."""
    return sorted({"admin", *doc.get("readers", ())})


def _chunk_rows(collection, docs: Sequence, vectors: Sequence[Sequence[float]]) -> tuple[list, list]:
    """Bound parameters for the vector rows and the keyword rows of ``docs``."""
    rows = [
        {
            "id": d.id,
            "collection": collection,
            "embedding": vector_literal(v),
            "document": d.page_content,
            "cmetadata": json.dumps(d.metadata, ensure_ascii=False),
        }
        for d, v in zip(docs, vectors)
    ]
    keywords = [keyword_row(d.id, collection, d.page_content, d.metadata.get("context", "")) for d in docs]
    return rows, keywords


def replace_document(
    engine: Engine,
    collection_name: str,
    doc: Mapping,
    chunks: Sequence,
    vectors: Sequence[Sequence[float]],
    graphs: Mapping | None = None,
    extractor: str = "",
) -> None:
    """Write one document in a single transaction: its old chunks out, the new ones in (vector +
    keyword rows, and the graph's entity links of ``graphs``: chunk ID -> ChunkGraph, made by
    ``extractor``, '' for none), and its ``rag_document`` row. Chunk rows whose id and metadata are
    unchanged stay as they are (see SQL_DOC_CHUNK_METADATA), with their links. ``doc`` has doc_id,
    source_file, content_hash, settings_hash (and origin). Readers see the old version or the new one,
    never a mix."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        stored = dict(
            conn.execute(
                text(SQL_DOC_CHUNK_METADATA),
                {"collection": collection, "doc": doc["doc_id"], "file": doc["source_file"]},
            ).all()
        )
        keep = {d.id for d in chunks if d.id in stored and stored[d.id] == d.metadata}
        gone = [chunk for chunk in stored if chunk not in keep]
        if gone:
            conn.execute(text(SQL_DELETE_CHUNKS), {"ids": gone})
        changed = [(d, v) for d, v in zip(chunks, vectors) if d.id not in keep]
        rows, keywords = _chunk_rows(collection, [d for d, _ in changed], [v for _, v in changed])
        if rows:
            conn.execute(text(SQL_UPSERT_EMBEDDING), rows)
            upsert_keywords(conn, keywords)
        if graphs:
            written = {d.id for d, _ in changed}
            graphrag_tables.write_chunk_graphs(
                conn, collection, {k: g for k, g in graphs.items() if k in written and g}
            )
        if changed:
            graphrag_tables.mark_written(conn, collection, extractor if graphs is not None else "")
        elif gone:
            graphrag_tables.mark_dirty(conn, collection)
        conn.execute(text(SQL_UPSERT_DOCUMENT), document_params(collection, doc, len(chunks)))
        readers.set_document_readers(conn, collection, doc["doc_id"], doc["source_file"], document_readers(doc))


def delete_document(engine: Engine, collection_name: str, doc_id: str, source_file: str = "") -> int:
    """Remove a document and its chunks from every index in one transaction; return chunks deleted."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        deleted = (
            conn.execute(
                text(SQL_DELETE_DOC_CHUNKS), {"collection": collection, "doc": doc_id, "file": source_file}
            ).rowcount
            or 0
        )
        conn.execute(text(SQL_DELETE_DOCUMENT), {"collection": collection, "doc": doc_id})
        conn.execute(text(SQL_DELETE_DOC_STAGING), {"collection": collection, "doc": doc_id})
        conn.execute(text(SQL_DELETE_DOC_QUEUED), {"collection": collection, "doc": doc_id})
        if deleted:  # the chunks' entity links went with them (ON DELETE CASCADE)
            graphrag_tables.mark_dirty(conn, collection)
    return deleted


def delete_legacy_chunks(engine: Engine, collection_name: str, present_files: Sequence[str]) -> int:
    """Delete chunks written before documents were tracked whose file is no longer present."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        deleted = (
            conn.execute(
                text(SQL_DELETE_LEGACY_CHUNKS), {"collection": collection, "files": list(present_files)}
            ).rowcount
            or 0
        )
        if deleted:
            graphrag_tables.mark_dirty(conn, collection)
        return deleted


def list_documents(engine: Engine, collection_name: str, principals: Sequence[str]) -> list[dict]:
    """The collection's documents ``principals`` may read: doc_id, source_file, content_hash, settings_hash,
    chunks, ingested_at, origin, readers."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with reading(engine, principals) as conn:
        rows = conn.execute(
            text(SQL_LIST_DOCUMENTS), {"collection": collection, "principals": principals_param(principals)}
        )
        return [{**r._mapping, "readers": list(r.readers)} for r in rows]


def source_chunks(
    engine: Engine, collection_name: str, source: str, principals: Sequence[str], limit: int = 50, vectors: bool = False
) -> list[dict]:
    """The stored chunks of one source (``faq.csv:r2``, ``guide.pdf:p3``) that ``principals`` may read, in order: each as
    ``{"text", "doc_id", "context", "title", "chunk_index"}`` (with ``vectors``, also ``"vector"``: its stored
    embedding); ``[]`` when there is none."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with reading(engine, principals) as conn:
        params = {
            "collection": collection,
            "source": source,
            "limit": limit,
            "principals": principals_param(principals),
        }
        rows = conn.execute(text(SQL_SOURCE_CHUNKS_WITH_VECTORS if vectors else SQL_SOURCE_CHUNKS), params)
        return [
            {
                "text": row[0],
                "doc_id": row[1].get("doc_id", ""),
                "context": row[1].get("context", ""),
                "title": row[1].get("title", ""),
                "chunk_index": row[1].get("chunk_index", 0),
                **({"vector": json.loads(row[2])} if vectors and row[2] else {}),
            }
            for row in rows
        ]


def vectors_by_hash(engine: Engine, hashes: Sequence[str], model: str) -> dict[str, list[float]]:
    """Stored embeddings of chunks with these content hashes (same model), to avoid re-embedding."""
    from sqlalchemy import text

    if not hashes:
        return {}
    with engine.connect() as conn:
        rows = conn.execute(text(SQL_VECTORS_BY_HASH), {"hashes": list(set(hashes)), "model": model})
        return {h: json.loads(v) for h, v in rows}


def apply_readers(engine: Engine, collection_name: str, by_doc: Mapping[str, Sequence[str]]) -> int:
    """Write path: give each stored document of ``by_doc`` (doc_id -> principals) its readers, its
    chunks too, and the graph's derived rows theirs, in one transaction; nothing is embedded again.
    Returns how many documents changed."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return 0
    changed = 0
    with engine.begin() as conn:
        stored = conn.execute(text(readers.SQL_STORED_READERS), {"collection": collection}).all()
        for doc_id, source_file, current in stored:
            wanted = by_doc.get(doc_id)
            if wanted is None or sorted(current or ()) == sorted(wanted):
                continue
            readers.set_document_readers(conn, collection, doc_id, source_file, sorted(wanted))
            changed += 1
        if changed:
            readers.refresh_graph_readers(conn, collection)
    return changed
