"""Filtered vector search (``make bench`` section ``filtered``): search as a principal who may read
only a share of the chunks, through the product's path (:func:`app.storage.nearest_chunks`: the
readers' predicate, the query role, row-level security), against the same search as ``admin`` (who
reads everything: the unfiltered baseline) and against an exact filtered search (index scans off,
the same predicate).

Synthetic corpus as the ``scale`` section's (clustered random unit vectors, generated Japanese
text), bulk-loaded into the bench database (its own ``DB_NAME`` + ``_bench``). Every row reads
``{admin}``; for each share a random subset of that size also gets a group (``g50``, ``g5``,
``g05`` for 50 %, 5 %, 0.5 %), the subsets drawn independently. Goals (the issue): recall@10 ≥ 0.95
against the exact filtered search, p50 ≤ 1.3× the unfiltered p50, and always k rows (pgvector's
iterative index scan keeps going past the rows the filter drops).
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

from app import storage
from app.config import Settings
from app.storage import bulk
from app.storage.tables import HNSW_INDEX, NAMES, vector_literal
from bench.kit import (
    bench_build_indexes,
    bench_bulk_load,
    bench_reset,
    clustered_vectors,
    stats_ms,
    synthetic_texts,
    vocabulary,
)

GOAL_RECALL = 0.95
GOAL_P50_RATIO = 1.3
READERS_INDEX = NAMES["chunk_readers_index"]
BASELINE = "admin"  # reads every row: the same path without a selective filter
# the pgvector settings that shape a filtered scan (read back from a searching session)
PGVECTOR_SETTINGS = ("hnsw.ef_search", "hnsw.iterative_scan", "hnsw.max_scan_tuples", "hnsw.scan_mem_multiplier")


def group_name(share: float) -> str:
    """The principal that reads ``share`` of the rows: 0.5 → ``g50``, 0.05 → ``g5``, 0.005 → ``g05``."""
    return "g" + f"{share * 100:g}".replace(".", "")


def plan_nodes(plan: dict) -> list[dict]:
    """Every node of an EXPLAIN (FORMAT JSON) plan, depth first."""
    nodes = [plan]
    for child in plan.get("Plans", ()):
        nodes += plan_nodes(child)
    return nodes


def plan_label(nodes: list[dict]) -> str:
    """A short name for a nearest-chunk plan: ``HNSW``, ``readers GIN + sort``, ``seq scan + sort``, or the
    node types."""
    if any(n.get("Index Name") == HNSW_INDEX for n in nodes):
        return "HNSW"
    if any(n.get("Index Name") == READERS_INDEX for n in nodes):
        return "readers GIN + sort"
    if any(n["Node Type"] == "Seq Scan" for n in nodes):
        return "seq scan + sort"
    return " > ".join(n["Node Type"] + (f" ({n['Index Name']})" if n.get("Index Name") else "") for n in nodes)


def explain_nearest(
    engine: Any, collection_name: str, vector: Sequence[float], k: int, principals: Sequence[str], analyze: bool = True
) -> dict:
    """EXPLAIN (ANALYZE) of the statement :func:`app.storage.nearest_chunks` runs, as ``principals`` (the
    query role, row-level security): whether the HNSW index was used, the plan, how many rows the
    scans handed over that the filters dropped, the server's execution time (timing off: the
    statement's own cost, without the per-node clock reads), and pgvector's settings in that session."""
    from sqlalchemy import text

    from app.storage.scope import scope_params
    from app.storage.vectors import nearest_query

    collection = storage.collection_id(engine, collection_name)
    params = {
        "collection": collection,
        "vector": vector_literal(vector),
        "k": k,
        "principals": list(principals),
        **scope_params(None),  # the statement's scope test, bound empty as an unscoped question binds it
    }
    options = "ANALYZE, TIMING OFF, FORMAT JSON" if analyze else "FORMAT JSON"
    with storage.reading(engine, principals) as conn:
        statement = nearest_query(conn, collection_name, len(vector)).replace("{filter}", "")
        [[explained]] = conn.execute(text(f"EXPLAIN ({options}) " + statement), params).all()
        *found, role = conn.execute(
            text(
                "SELECT "
                + ", ".join(f"current_setting('{name}', true)" for name in PGVECTOR_SETTINGS)
                + ", current_user"
            )
        ).one()
    top = explained[0]
    nodes = plan_nodes(top["Plan"])
    return {
        "hnsw_used": any(n.get("Index Name") == HNSW_INDEX for n in nodes),
        "plan": plan_label(nodes),
        "rows_removed_by_filter": sum(n.get("Rows Removed by Filter", 0) for n in nodes),
        "execution_ms": top.get("Execution Time"),
        "settings": dict(zip(PGVECTOR_SETTINGS, found)),
        "role": role,
    }


def load_corpus(engine: Any, n: int, shares: Sequence[float], rng) -> dict:
    """Bulk-load ``n`` synthetic chunks into a new collection (the bench tables emptied first), give
    each share of them to its group (independent random subsets), then build the indexes and
    analyze. Returns the collection's name and id, the vectors, the groups with their row counts
    and the timings."""
    from app.text.keywords import to_document

    bench_reset(engine)
    name = f"bench_filtered_{n}"
    storage.make_vectorstore(engine, None, name, create=True)
    collection = storage.collection_id(engine, name)
    vectors = clustered_vectors(n, rng)
    texts = synthetic_texts(n, vocabulary(), rng)
    ids = [str(uuid.uuid4()) for _ in range(n)]
    start = time.perf_counter()
    bench_bulk_load(engine, collection, ids, vectors, texts, [to_document(t) for t in texts])
    load_s = time.perf_counter() - start
    groups = {}
    start = time.perf_counter()
    for share in shares:
        picks = rng.choice(n, size=max(1, round(share * n)), replace=False)
        groups[group_name(share)] = (
            share,
            bulk.add_reader(engine, collection, [ids[i] for i in picks], group_name(share)),
        )
    readers_s = time.perf_counter() - start
    builds = bench_build_indexes(engine)  # after the readers: VACUUM ANALYZE sees them
    return {
        "name": name,
        "collection": collection,
        "vectors": vectors,
        "groups": groups,
        "load_s": round(load_s, 1),
        "readers_s": round(readers_s, 1),
        "hnsw_build_s": round(builds["hnsw"], 1),
    }


def drop_corpus(engine: Any, corpus: dict) -> None:
    """Empty the bench tables and drop the collection again."""
    bench_reset(engine)
    storage.make_vectorstore(engine, None, corpus["name"]).delete_collection()


def measure(engine: Any, corpus: dict, qvecs: Sequence[Sequence[float]], k: int, rounds: int = 2) -> dict:
    """Per principal (``admin``, then each group): search latencies through the product's path,
    rows returned, recall@k against the exact filtered search, the server's execution times, the plan.

    Timed in blocks, each principal's queries one after another (as different questions follow each
    other on a server: a search right after another one for the same vector finds its index pages
    in shared buffers and looks faster), the blocks in order then in reverse (``rounds`` = 2), so a
    busier moment of the machine does not fall on one principal only."""
    name, collection = corpus["name"], corpus["collection"]
    principals = [BASELINE, *corpus["groups"]]
    search = lambda v, p: storage.nearest_chunks(engine, name, v, k, [p])  # noqa: E731
    for v in qvecs:  # untimed pass: pages in the OS cache, as on a server in use
        for p in principals:
            search(v, p)
    times: dict[str, list[float]] = {p: [] for p in principals}
    rows: dict[str, list[int]] = {p: [] for p in principals}
    results: dict[str, list] = {p: [] for p in principals}
    for r in range(rounds):
        for p in principals if r % 2 == 0 else principals[::-1]:
            for v in qvecs:
                start = time.perf_counter()
                found = search(v, p)
                times[p].append(time.perf_counter() - start)
                rows[p].append(len(found))
                results[p].append({row[0] for row in found})
    out = {}
    for p in principals:
        exact_times, recalls, server = [], [], []
        for i, v in enumerate(qvecs):
            start = time.perf_counter()
            exact = bulk.exact_filtered_ids(engine, collection, v, k, [p])
            exact_times.append(time.perf_counter() - start)
            recalls.append(len(results[p][i] & set(exact)) / max(1, len(exact)))
        for v in qvecs:
            server.append(explain_nearest(engine, name, v, k, [p])["execution_ms"] / 1000)
        plan = explain_nearest(engine, name, qvecs[0], k, [p], analyze=False)
        out[p] = {
            "principal": p,
            **stats_ms(times[p]),
            "server": stats_ms(server),
            "recall_at_10": round(statistics.mean(recalls), 3),
            "recall_min": round(min(recalls), 3),
            "rows_min": min(rows[p]),
            "k_rows_always": min(rows[p]) == k,
            "exact_filtered": stats_ms(exact_times),
            "hnsw_used": plan["hnsw_used"],
            "plan": plan["plan"],
            "settings": plan["settings"],
            "role": plan["role"],
        }
    return out


def bench_filtered_search(
    settings: Settings,
    engine: Any,
    n: int = 100_000,
    shares: Sequence[float] = (0.5, 0.05, 0.005),
    queries: int = 50,
    k: int = 10,
) -> dict:
    """Load ``n`` synthetic chunks, give each share of them to a group, build the indexes; then per
    share: p50/p95 of the product's search as that group, rows returned, recall@k against the exact
    filtered search, the ratio to the unfiltered p50 (as ``admin``), and the plan (HNSW or not).
    ``engine`` is the bench database's (the chunk tables are emptied before and after); ``settings``
    is unused, as in the other sections' signatures."""
    import numpy as np

    rng = np.random.default_rng(n)
    corpus = load_corpus(engine, n, shares, rng)
    try:
        picks = rng.integers(0, n, size=queries)
        qvecs = [(corpus["vectors"][i] + 0.05 * rng.normal(size=384)).tolist() for i in picks]
        figures = measure(engine, corpus, qvecs, k)
    finally:
        drop_corpus(engine, corpus)
    unfiltered = figures.pop(BASELINE)
    pgvector = unfiltered.pop("settings")
    role = unfiltered.pop("role")
    base, base_server = unfiltered["p50_ms"], unfiltered["server"]["p50_ms"]
    per_share = []
    for group, (share, visible) in corpus["groups"].items():
        f = {"share": share, "visible_rows": visible, **figures[group]}
        del f["settings"], f["role"]
        f["p50_ratio"] = round(f["p50_ms"] / base, 2) if base else None
        f["server_p50_ratio"] = round(f["server"]["p50_ms"] / base_server, 2) if base_server else None
        f["meets_goals"] = bool(
            f["k_rows_always"] and f["recall_at_10"] >= GOAL_RECALL and (f["p50_ratio"] or 0) <= GOAL_P50_RATIO
        )
        per_share.append(f)
    return {
        "size": n,
        "queries": queries,
        "k": k,
        "vectors": "clustered random unit vectors (256 centres), queries near stored vectors",
        "goals": {"recall_at_10": GOAL_RECALL, "p50_ratio": GOAL_P50_RATIO},
        "pgvector_settings": pgvector,
        "query_role": role,  # rag_query: row-level security applied
        "load_s": corpus["load_s"],
        "readers_s": corpus["readers_s"],
        "hnsw_build_s": corpus["hnsw_build_s"],
        "unfiltered": unfiltered,
        "shares": per_share,
    }


def format_filtered(section: dict) -> list[str]:
    """The printed lines of the section."""
    u = section["unfiltered"]
    lines = [
        "",
        f"Filtered vector search at {section['size']:,} chunks ({section['queries']} queries, app path, as a group "
        f"that reads a share; goals: recall@10 ≥ {section['goals']['recall_at_10']}, p50 ≤ "
        f"{section['goals']['p50_ratio']}× unfiltered, k rows):",
        f"  {'visible':<9}{'recall@10':>10}{'p50 ms':>8}{'p95 ms':>8}{'ratio':>7}{'SQL p50':>9}{'k rows':>8}  plan",
        f"  {'100 %':<9}{u['recall_at_10']:>10.3f}{u['p50_ms']:>8}{u['p95_ms']:>8}{1.0:>7.2f}"
        f"{u['server']['p50_ms']:>9}{'yes' if u['k_rows_always'] else 'NO':>8}  {u['plan']}",
    ]
    for s in section["shares"]:
        visible = f"{s['share'] * 100:g} %"
        lines.append(
            f"  {visible:<9}{s['recall_at_10']:>10.3f}{s['p50_ms']:>8}{s['p95_ms']:>8}{s['p50_ratio']:>7.2f}"
            f"{s['server']['p50_ms']:>9}{'yes' if s['k_rows_always'] else 'NO':>8}  {s['plan']}"
        )
    return lines
