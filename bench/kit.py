"""What the benchmark sections share (bench.suite, bench.serve, bench.scale, bench.graph):
timing helpers, synthetic Japanese text and vectors, and bulk loading of the bench database (its own
``DB_NAME`` + ``_bench``; the app never runs these statements)."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app import db
from app.graphrag import store as graph_store
from app.metrics import percentile

ROOT = Path(__file__).resolve().parents[1]


def machine() -> dict:
    """What the figures were measured on."""
    import os

    import psutil

    cpu = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").exists()
        else ""
    )
    return {
        "date": time.strftime("%Y-%m-%d"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """Run ``fn`` ``repeat`` times; return the wall times and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def stats_ms(times: Sequence[float]) -> dict:
    """p50 and p95 in milliseconds."""
    return {"p50_ms": round(1000 * percentile(times, 50), 2), "p95_ms": round(1000 * percentile(times, 95), 2)}


# --- synthetic text ------------------------------------------------------------


def vocabulary() -> list[str]:
    """Japanese words (2–4 character pieces) drawn from the sample corpus."""
    from app.ingest import load_csvs, load_pdfs
    from app.keywords import tokenize

    text = "".join(t for t, _ in load_pdfs(ROOT / "data" / "pdf") + load_csvs(ROOT / "data" / "csv"))
    words = {text[i : i + n] for n in (2, 3, 4) for i in range(0, len(text) - n, 3)}
    return sorted(w for w in words if tokenize(w) and "\n" not in w and ":" not in w)


def synthetic_texts(n: int, words: Sequence[str], rng, length: int = 12) -> list[str]:
    """``n`` pseudo-sentences of ``length`` random words each (ending in 。)."""
    picks = rng.integers(0, len(words), size=(n, length))
    return ["".join(words[j] for j in row) + "。" for row in picks]


def clustered_vectors(n: int, rng, clusters: int = 256, spread: float = 0.35):
    """Unit vectors around random cluster centres (real embeddings are clustered, not uniform)."""
    import numpy as np

    centres = rng.normal(size=(clusters, 384)).astype("float32")
    vectors = centres[rng.integers(0, clusters, size=n)] + spread * rng.normal(size=(n, 384)).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


# --- bench SQL and bulk loading (a separate database; the app never runs these) -------------

SQL_BENCH_TRUNCATE = (
    f"TRUNCATE {db.KEYWORD_TABLE}, {db.EMBEDDING_TABLE}, {db.DOCUMENT_TABLE}, "
    f"{db.TERM_STATS_TABLE}, {db.COLLECTION_STATS_TABLE}, {graph_store.MENTION}, {graph_store.PAIR}, "
    f"{graph_store.ENTITY}, {graph_store.RELATIONSHIP}, {graph_store.COMMUNITY}, {graph_store.REPORT}, "
    f"{graph_store.STATE}"
)
SQL_BENCH_DROP_INDEXES = (f"DROP INDEX IF EXISTS {db.HNSW_INDEX}", f"DROP INDEX IF EXISTS {db.KEYWORD_TABLE}_tsv_gin")
SQL_BENCH_COPY_EMBEDDINGS = (
    f"COPY {db.EMBEDDING_TABLE} (id, collection_id, embedding, document, cmetadata) FROM STDIN WITH (FORMAT BINARY)"
)
SQL_BENCH_FILL_KEYWORDS = (
    f"INSERT INTO {db.KEYWORD_TABLE} (id, collection_id, tsv, dl) "
    f"SELECT id, collection_id, to_tsvector('simple', cmetadata->>'tokens'), "
    f"coalesce(array_length(string_to_array(cmetadata->>'tokens', ' '), 1), 0) FROM {db.EMBEDDING_TABLE} "
    "WHERE collection_id = :collection"
)
SQL_BENCH_SIZES = (
    f"SELECT pg_total_relation_size('{db.EMBEDDING_TABLE}'), pg_total_relation_size('{db.KEYWORD_TABLE}'), "
    f"pg_relation_size('{db.HNSW_INDEX}'), pg_relation_size('{db.KEYWORD_TABLE}_tsv_gin')"
)
SQL_EXACT_VECTOR = (  # exact when index scans are off; otherwise the planner uses HNSW
    f"SELECT id FROM {db.EMBEDDING_TABLE} WHERE collection_id = :collection "
    "ORDER BY embedding <=> CAST(:vector AS vector) LIMIT :k"
)
SQL_NO_INDEX_SCANS = (
    "SET LOCAL enable_indexscan = off",
    "SET LOCAL enable_bitmapscan = off",
    "SET LOCAL enable_indexonlyscan = off",
)


def bench_reset(engine: Any) -> None:
    """Empty the chunk tables and drop the vector and keyword indexes (bench database only)."""
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text(SQL_BENCH_TRUNCATE))
        for statement in SQL_BENCH_DROP_INDEXES:
            conn.execute(text(statement))


def bench_bulk_load(engine: Any, collection, ids, vectors, documents, tokens, doc_id: str | None = None) -> None:
    """COPY rows in binary (vectors as pgvector values); then fill the keyword table in SQL.

    With ``doc_id`` the rows belong to one stored document of origin ``api`` (so a sync of a data
    folder into the same collection keeps them), sources ``<doc_id>:r1``, ``:r2``, …
    """
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Jsonb
    from sqlalchemy import text

    raw = engine.raw_connection()
    try:
        conn = raw.driver_connection
        register_vector(conn)
        with conn.cursor() as cur, cur.copy(SQL_BENCH_COPY_EMBEDDINGS) as copy:
            copy.set_types(["varchar", "uuid", "vector", "varchar", "jsonb"])
            for i, row in enumerate(zip(ids, [collection] * len(ids), vectors, documents, tokens), start=1):
                meta = {"tokens": row[4]}
                if doc_id:
                    meta.update(doc_id=doc_id, file=doc_id, source=f"{doc_id}:r{i}", chunk_index=0)
                copy.write_row([row[0], row[1], row[2], row[3], Jsonb(meta)])
        conn.commit()
    finally:
        raw.close()
    with engine.begin() as c:
        c.execute(text(SQL_BENCH_FILL_KEYWORDS), {"collection": collection})
        if doc_id:
            c.execute(
                text(db.SQL_UPSERT_DOCUMENT),
                {
                    "collection": collection,
                    "doc": doc_id,
                    "file": doc_id,
                    "hash": "synthetic",
                    "settings": "document",
                    "chunks": len(ids),
                    "origin": "api",
                },
            )


def bench_build_indexes(engine: Any) -> dict[str, float]:
    """(Re)create the HNSW and GIN indexes after a bulk load; return build seconds for each."""
    import time

    from sqlalchemy import text

    timings = {}
    with engine.begin() as conn:
        conn.execute(text("SET LOCAL maintenance_work_mem = '1GB'"))
        for name, statement in (("hnsw", db.SQL_CREATE_HNSW), ("gin", db.SQL_CREATE_KEYWORD_GIN)):
            start = time.perf_counter()
            conn.execute(text(statement))
            timings[name] = time.perf_counter() - start
    # VACUUM ANALYZE now, the BM25 statistics tables included: until they are analyzed, the planner
    # reads a term's df with a scan of every term (measured: 30 ms per keyword search at 10k chunks,
    # 100-140 ms at 100k, until autovacuum came by); nor does autovacuum run while we time searches
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in (db.EMBEDDING_TABLE, db.KEYWORD_TABLE, db.TERM_STATS_TABLE, db.COLLECTION_STATS_TABLE):
            conn.execute(text(f"VACUUM ANALYZE {table}"))
    return timings


def bench_sizes(engine: Any) -> dict[str, int]:
    """Bytes on disk: chunk table (with indexes), keyword table, HNSW index, GIN index."""
    from sqlalchemy import text

    with engine.connect() as conn:
        table, keywords, hnsw, gin = conn.execute(text(SQL_BENCH_SIZES)).one()
    return {"chunks_table": table, "keyword_table": keywords, "hnsw_index": hnsw, "gin_index": gin}
