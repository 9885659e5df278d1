"""`make bench`, section "concurrency": what one PostgreSQL server and one LLM give to many workers.

* parallel ingest: ``RagStore.sync(workers=N)`` on synthetic CSVs (files partitioned among N
  processes that read, chunk and embed; one writer under the advisory lock);
* concurrent search: N client processes (each its own RagStore, model and connections) searching
  the same corpus at once: searches/s over all, p50/p95 per search;
* the LLM in process vs over llama-cpp-python's OpenAI-compatible server (same GGUF): time to
  first token and tokens/s, alone and with N requests at once.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from app.config import Settings

ROOT = Path(__file__).resolve().parents[1]
MODES = ("keyword", "vector", "hybrid")


def sample_queries(limit: int = 30) -> list[str]:
    """Real questions (the sample evaluation set), the first ``limit``."""
    items = json.loads((ROOT / "data" / "eval_questions.json").read_text(encoding="utf-8"))
    return [q["query"] for q in items][:limit]


def bench_parallel_ingest(
    settings: Settings, engine: Any, workers: Sequence[int] = (1, 2), files: int = 12, rows: int = 25
) -> list[dict]:
    """Sync the same synthetic CSVs into a new collection with each worker count; chunks/s."""
    import numpy as np

    from app.store import RagStore
    from bench.kit import synthetic_texts, vocabulary

    rng = np.random.default_rng(7)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        (data / "csv").mkdir()
        for f in range(files):
            body = synthetic_texts(rows, vocabulary(), rng, length=40)
            (data / "csv" / f"scale{f:03d}.csv").write_text(
                "番号,内容\n" + "\n".join(f"{f}-{i},{t}" for i, t in enumerate(body)) + "\n", encoding="utf-8"
            )
        for n in workers:
            s = settings.changed(retrieval={"collection_name": f"bench_workers_{uuid.uuid4().hex[:6]}"})
            store = RagStore(s, engine=engine)
            start = time.perf_counter()
            _, report = store.sync(data, workers=n)
            seconds = time.perf_counter() - start
            store.vectorstore.delete_collection()
            out.append(
                {
                    "workers": n,
                    "chunks": report.chunks_written,
                    "seconds": round(seconds, 1),
                    "chunks_per_s": round(report.chunks_written / seconds, 1),
                    "failed": report.failed,
                }
            )
    return out


def _search_client(settings: Settings, queries: list[str], barrier, results) -> None:
    """One client process: warm up every mode, then for each mode wait for the others, run every
    query and report its timings (one process serves all three modes: starting one costs seconds)."""
    from app.permissions.principals import FULL_ACCESS
    from app.store import RagStore

    store = RagStore(settings, principals=FULL_ACCESS)  # the benchmark's: full access
    for mode in MODES:
        store.warm_up_search(mode).search(queries[0], search_mode=mode, top_k=10)
    for mode in MODES:
        barrier.wait()
        start = time.monotonic()
        times = []
        for q in queries:
            t0 = time.perf_counter()
            store.search(q, search_mode=mode, top_k=10)
            times.append(time.perf_counter() - t0)
        results.put((mode, start, time.monotonic(), times))


def bench_concurrent_search(settings: Settings, clients: Sequence[int] = (1, 2, 4), queries: int = 30) -> list[dict]:
    """For each mode and client count: searches/s over all clients, p50/p95 ms per search."""
    from bench.kit import stats_ms

    ctx = multiprocessing.get_context("spawn")
    qs = sample_queries(queries)
    runs: dict[tuple[str, int], dict] = {}
    for n in clients:
        # each client's embedder gets cores/n threads: with all cores each, OpenMP threads of
        # two processes spin against each other (measured: 2 clients fell from 58 to 20 vector searches/s)
        client = settings.changed(llm={"n_threads": max(1, (os.cpu_count() or 1) // n)})
        barrier, results = ctx.Barrier(n), ctx.Queue()
        procs = [ctx.Process(target=_search_client, args=(client, qs[i:] + qs[:i], barrier, results)) for i in range(n)]
        for p in procs:
            p.start()
        got = [results.get(timeout=600) for _ in range(n * len(MODES))]
        for p in procs:
            p.join()
        for mode in MODES:
            mine = [g for g in got if g[0] == mode]
            wall = max(g[2] for g in mine) - min(g[1] for g in mine)
            times = [t for g in mine for t in g[3]]
            runs[mode, n] = {
                "mode": mode,
                "clients": n,
                "searches_per_s": round(len(times) / wall, 1),
                **stats_ms(times),
            }
    return [runs[mode, n] for mode in MODES for n in clients]


def _start_llm_server(model: Path, settings: Settings) -> tuple[subprocess.Popen, str, Any]:
    """llama-cpp-python's OpenAI-compatible server on a free 127.0.0.1 port, once it answers."""
    import socket

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(settings.llm.n_ctx),
            "--n_threads",
            str(settings.llm.n_threads),
            "--n_batch",
            "512",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            httpx.get(f"{url}/models", timeout=2)
            return proc, url, log
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("llama_cpp.server did not start")


def _generation(model: Any, prompts: list[str]) -> dict:
    """Stream each prompt once: median time to first token, tokens/s after it (one piece = one token)."""
    from app import llm as app_llm

    runs = []
    for prompt in prompts:
        marks: list[float] = []
        start = time.perf_counter()
        app_llm.generate(prompt, llm=model, on_token=lambda _p: marks.append(time.perf_counter()))
        if len(marks) > 1:
            runs.append((marks[0] - start, (len(marks) - 1) / (marks[-1] - marks[0]), len(marks)))
    return {
        "ttft_s": round(statistics.median(r[0] for r in runs), 2),
        "tokens_per_s": round(statistics.median(r[1] for r in runs), 1),
        "tokens": round(statistics.median(r[2] for r in runs)),
        "runs": len(runs),
    }


def _concurrent_generation(model: Any, prompts: list[str]) -> dict:
    """One request per prompt, all at once (threads): tokens/s over the wall time, slowest request."""
    from app import llm as app_llm

    def one(prompt: str) -> tuple[float, int]:
        pieces: list[str] = []
        start = time.perf_counter()
        app_llm.generate(prompt, llm=model, on_token=pieces.append)
        return time.perf_counter() - start, len(pieces)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        done = list(pool.map(one, prompts))
    wall = time.perf_counter() - start
    return {
        "requests": len(prompts),
        "tokens": sum(t for _, t in done),
        "total_tokens_per_s": round(sum(t for _, t in done) / wall, 1),
        "max_request_s": round(max(s for s, _ in done), 2),
    }


def bench_llm_server(
    settings: Settings, max_tokens: int = 64, concurrent: Sequence[int] = (1, 2), context_chars: int = 0
) -> dict:
    """The same GGUF in process (LangChain's LlamaCpp) and behind llama_cpp.server (ChatOpenAI),
    on three sample questions with their contexts (different prompts: no prompt-cache flattery),
    each context cut to ``context_chars`` characters when that is not 0."""
    from app import llm as app_llm
    from app.ingest import load_pdfs
    from app.models import resources
    from app.models.locate import resolve_llm_path
    from app.workflow.prompts import build_prompt

    path = resolve_llm_path(settings.llm.model_path, settings.models.dir, settings.llm.model_path_is_default)
    contexts = [t[:context_chars] if context_chars else t for t, _ in load_pdfs(ROOT / "data" / "pdf")]
    # a different question each time: the server's and the in-process KV cache never hold the prompt yet
    questions = sample_queries(4 + sum(concurrent))  # warm-up, 3 single runs, the concurrent batches
    prompts = [build_prompt(q, contexts[i % len(contexts) :][:2]) for i, q in enumerate(questions)]
    single, fresh = prompts[1:4], prompts[4:]
    s = settings.changed(llm={"max_tokens": max_tokens})
    resources.clear("llm")
    local = app_llm.get_llm(s)
    app_llm.generate(prompts[0], llm=local)  # load and warm
    results: dict = {
        "model": path.name,
        "max_tokens": max_tokens,
        "context_chars": context_chars,
        "in_process": _generation(local, single),
    }
    resources.clear("llm")
    del local
    proc, url, log = _start_llm_server(path, settings)
    try:
        served = app_llm.get_llm(s.changed(llm={"base_url": url}))
        app_llm.generate(prompts[0], llm=served)  # warm
        results["server"] = _generation(served, single)
        batches = []
        for n in concurrent:
            batches.append(_concurrent_generation(served, fresh[:n]))
            fresh = fresh[n:]
        results["server_concurrent"] = batches
        results["server_note"] = "llama_cpp.server runs one request at a time (llama-server --parallel batches them)"
    finally:
        proc.kill()
        proc.wait()
        log.close()
        resources.clear("llm")
    return results


def bench_concurrency(
    base: Settings, size: int = 100_000, clients: Sequence[int] = (1, 2, 4), queries: int = 30, ingest_files: int = 12
) -> dict:
    """Ingest workers and search clients, in their own database (``<DB_NAME>_scale``) holding ``size`` chunks."""
    from app import storage
    from app.embeddings import get_embeddings
    from bench.serve import load_corpus

    settings = base.changed(db={"name": f"{base.db.name}_scale", "statement_timeout_ms": 0})
    engine = storage.get_engine(settings)
    embeddings = get_embeddings(settings)
    chunks = load_corpus(settings, engine, embeddings, size)
    out: dict = {
        "chunks": chunks,
        "cores": os.cpu_count(),
        "ingest_workers": bench_parallel_ingest(settings, engine, files=ingest_files),
        "search": bench_concurrent_search(settings, clients, queries),
    }
    return out


def format_concurrency(c: dict) -> list[str]:
    """Report lines for the section."""
    lines = [
        f"\nConcurrency ({c['chunks']:,} chunks, {c['cores']} cores)",
        "  parallel ingest (synthetic CSVs; workers read/chunk/embed, one writer):",
    ]
    lines += [
        f"    {w['workers']} worker(s): {w['chunks']} chunks in {w['seconds']} s = {w['chunks_per_s']} chunks/s"
        for w in c["ingest_workers"]
    ]
    lines.append("  concurrent search clients (k=10, separate processes):")
    lines += [
        f"    {r['mode']:<8} {r['clients']} client(s): {r['searches_per_s']:>6} searches/s, "
        f"p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms"
        for r in c["search"]
    ]
    return lines


def format_llm_server(llm: dict) -> list[str]:
    """Report lines for the LLM in process vs over the server."""
    lines = [f"\nLLM {llm['model']}, in process vs OpenAI-compatible server ({llm['max_tokens']} tokens max):"]
    for key, label in (("in_process", "in process"), ("server", "llama_cpp.server")):
        g = llm[key]
        lines.append(f"  {label:<17} first token {g['ttft_s']} s, {g['tokens_per_s']} tokens/s")
    lines += [
        f"  server, {r['requests']} request(s) at once: {r.get('tokens', '?')} tokens, "
        f"{r['total_tokens_per_s']} tokens/s over the wall time (first tokens included), "
        f"slowest request {r['max_request_s']} s"
        for r in llm["server_concurrent"]
    ]
    lines.append(f"  ({llm['server_note']})")
    return lines
