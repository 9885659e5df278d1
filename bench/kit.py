"""What the benchmark sections share (bench.suite, bench.serve, bench.scale, bench.graph):
timing helpers, synthetic Japanese text and vectors, and bulk loading of the bench database (its own
``DB_NAME`` + ``_bench``) through app.storage.bulk."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app.metrics import percentile
from app.storage import bulk

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
    from app.text.keywords import tokenize

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


# --- bulk loading (app.storage.bulk: a separate database; the app never runs these) --------------


def bench_reset(engine: Any) -> None:
    """Empty the chunk tables and drop the vector and keyword indexes (bench database only)."""
    bulk.reset(engine)


def bench_bulk_load(engine: Any, collection, ids, vectors, documents, tokens, doc_id: str | None = None) -> None:
    """COPY rows in binary, then fill the keyword table in SQL (app.storage.bulk.bulk_load)."""
    bulk.bulk_load(engine, collection, ids, vectors, documents, tokens, doc_id=doc_id)


def bench_build_indexes(engine: Any) -> dict[str, float]:
    """(Re)create the HNSW and GIN indexes after a bulk load; return build seconds for each."""
    return bulk.build_indexes(engine)


def bench_sizes(engine: Any) -> dict[str, int]:
    """Bytes on disk: chunk table (with indexes), keyword table, HNSW index, GIN index."""
    return bulk.sizes(engine)
