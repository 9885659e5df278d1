"""``make bench``, section ``graph``: what the graph costs and how fast its searches answer.

* build: each corpus (the sample corpus; the real corpora of ``make real-corpus`` when present)
  synced into its own collection of the bench database without the graph, then built twice:
  cold (every entity description embedded) and again (extracted again, vectors reused: what a
  rebuild after a change costs), each step timed; rows and bytes of the graph tables; both per
  100 pages (PDF pages, CSV rows and Markdown sections);
* queries: local and global search on the sample corpus through the workflow, split into
  retrieval (question → entities, graph reads), context building and LLM time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.config import Settings

LOCAL_QUESTIONS = (
    "ミナトVPNに接続するときに必要なものは何ですか？",
    "ワンタイムパスワードと認証アプリの関係は？",
    "ミナト経費精算とミナト給与の違いは？",
)
GLOBAL_QUESTIONS = (
    "ミナトデータが提供している製品を一覧でまとめてください。",
    "社員が守るべき情報セキュリティのルールを全体としてまとめてください。",
)


def corpus_size(engine: Any, collection_name: str) -> dict[str, int]:
    """Pages (distinct sources: PDF pages, CSV rows, Markdown sections) and chunks of a collection."""
    from app import storage
    from app.storage import graphrag_rows

    collection = storage.collection_id(engine, collection_name)
    with engine.connect() as conn:
        return graphrag_rows.corpus_size(conn, collection)


def bench_build(settings: Settings, engine: Any, embeddings: Any, data_dir: Path, label: str) -> dict:
    """Sync ``data_dir`` into its own collection, build its graph cold and again; the collection is
    dropped afterwards (the graph's tables go with it)."""
    from app import storage
    from app.graphrag import index
    from app.storage import graphrag_rows
    from app.store import RagStore

    own = settings.changed(retrieval={"collection_name": f"bench_graph_{label}"})
    store = RagStore(own, embeddings=embeddings, engine=engine)
    start = time.perf_counter()
    store.sync(data_dir, graph=False)
    synced = time.perf_counter() - start
    try:
        with store.writing():
            cold = index.build(engine, own, embeddings, force_extract=True)
            again = index.build(engine, own, embeddings, force_extract=True)
        size = corpus_size(engine, own.retrieval.collection_name)
        with engine.connect() as conn:
            table_bytes = graphrag_rows.table_bytes(conn, storage.collection_id(engine, own.retrieval.collection_name))
    finally:
        with store.writing():
            store.vectorstore.delete_collection()
    per_page = 100.0 / max(size["pages"], 1)
    return {
        "corpus": label,
        **size,
        "sync_without_graph_s": round(synced, 2),
        "cold": {k: round(v, 3) for k, v in cold.seconds.items()},
        "cold_total_s": round(sum(cold.seconds.values()), 2),
        "again": {k: round(v, 3) for k, v in again.seconds.items()},
        "again_total_s": round(sum(again.seconds.values()), 2),
        "entities": cold.entities,
        "relationships": cold.relationships,
        "communities": cold.communities,
        "reports": cold.reports,
        "links": cold.links,
        "entities_embedded": cold.entities_embedded,
        "graph_table_bytes": table_bytes,
        "per_100_pages": {
            "cold_s": round(sum(cold.seconds.values()) * per_page, 2),
            "again_s": round(sum(again.seconds.values()) * per_page, 2),
            "entities": round(cold.entities * per_page),
            "mb": round(sum(table_bytes.values()) / 2**20 * per_page, 2),
        },
    }


def median_of(samples: Sequence[dict], *keys: str) -> float:
    """The median over ``samples`` of the sum of ``keys`` in each one's timings."""
    return round(statistics.median(sum(s.get(k, 0.0) for k in keys) for s in samples), 3)


def bench_queries(settings: Settings, llm: Any = None, questions: int | None = None) -> dict:
    """Local and global questions (at most ``questions`` of each) on the stored sample corpus through
    the workflow (the LLM in process)."""
    from app.graph import default_context, run_rag
    from app.permissions.principals import FULL_ACCESS

    out: dict = {}
    # the benchmark reads the whole graph, as the owner: full access, on purpose
    local_ctx = default_context(settings, mode="local", llm=llm, reranker=None, principals=FULL_ACCESS)
    local = [run_rag(q, local_ctx)["timings"] for q in LOCAL_QUESTIONS[:questions]]
    out["local"] = {
        "questions": len(local),
        "retrieval_s": median_of(local, "local_entities", "local_graph_read"),
        "context_s": median_of(local, "local_context"),
        "llm_s": median_of(local, "generate"),
        "first_token_s": median_of(local, "first_token"),
        "total_s": median_of(local, "local", "generate"),
    }
    global_ctx = default_context(settings, mode="global", llm=llm, reranker=None, principals=FULL_ACCESS)
    runs = [run_rag(q, global_ctx) for q in GLOBAL_QUESTIONS[:questions]]
    timings = [r["timings"] for r in runs]
    out["global"] = {
        "questions": len(runs),
        "retrieval_s": median_of(timings, "global_read_reports"),
        "context_s": median_of(timings, "global_context"),
        "llm_map_s": median_of(timings, "global_map"),
        "llm_reduce_s": median_of(timings, "global_reduce"),
        "total_s": median_of(timings, "global"),
        "batches": statistics.median(len(r["map_results"]) for r in runs),
        "failed_batches": sum(1 for r in runs for m in r["map_results"] if m["error"]),
    }
    return out


def bench_graph(
    settings: Settings,
    engine: Any,
    embeddings: Any,
    corpora: dict[str, Path],
    llm: Any = None,
    questions: int | None = None,
) -> dict:
    """Build costs for each corpus, then query latency on the sample corpus (already stored in the
    bench database's main collection), at most ``questions`` local and global questions."""
    builds = [
        bench_build(settings, engine, embeddings, path, label)
        for label, path in corpora.items()
        if (path / "pdf").is_dir() or (path / "csv").is_dir()
    ]
    return {"builds": builds, "queries": bench_queries(settings, llm, questions)}


def format_graph(result: dict) -> list[str]:
    """The printed lines of the section."""
    lines = ["", "Graph (make graph; cold = every entity description embedded, again = vectors reused):"]
    for b in result.get("builds", []):
        cold = b["cold"]
        lines.append(
            f"  {b['corpus']}: {b['pages']} pages, {b['chunks']} chunks → {b['entities']} entities, "
            f"{b['relationships']} relationships, {b['communities']} communities; "
            f"{sum(b['graph_table_bytes'].values()) / 2**20:.1f} MB"
        )
        lines.append(
            f"    cold {b['cold_total_s']} s (extract {cold.get('extract', 0)}, graph {cold.get('graph', 0)}, "
            f"reports {cold.get('reports', 0)}, embed {cold.get('embed', 0)} for {b['entities_embedded']}, "
            f"write {cold.get('write', 0)}); again {b['again_total_s']} s; per 100 pages: cold "
            f"{b['per_100_pages']['cold_s']} s, again {b['per_100_pages']['again_s']} s"
        )
    q = result.get("queries") or {}
    if "local" in q:
        lo = q["local"]
        lines.append(
            f"  local search (median of {lo['questions']}): retrieval {lo['retrieval_s']} s, context "
            f"{lo['context_s']} s, LLM {lo['llm_s']} s (first token {lo['first_token_s']} s); total {lo['total_s']} s"
        )
    if "global" in q:
        gl = q["global"]
        lines.append(
            f"  global search (median of {gl['questions']}, {gl['batches']} batches): reports {gl['retrieval_s']} s, "
            f"context {gl['context_s']} s, LLM map {gl['llm_map_s']} s + reduce {gl['llm_reduce_s']} s; "
            f"total {gl['total_s']} s; failed batches {gl['failed_batches']}"
        )
    return lines
