"""bench.py's pure parts; tests/integration/test_bench.py runs a small benchmark for real."""
import numpy as np

from app import bench


def test_stats_ms():
    assert bench.stats_ms([0.001, 0.002, 0.003, 0.004]) == {"p50_ms": 2.5, "p95_ms": 3.85}


def test_stream_tokens_measures_ttft_and_rate():
    def generate(cb):
        for _ in range(5):
            cb("x")

    out = bench.stream_tokens(generate, repeat=2)
    assert out["tokens"] == 5 and out["runs"] == 2 and out["ttft_s"] >= 0 and out["tokens_per_s"] > 0


def test_stream_tokens_without_tokens():
    assert bench.stream_tokens(lambda cb: None) == {"ttft_s": None, "tokens": 0, "tokens_per_s": 0.0}


def test_clustered_vectors_are_unit_length():
    v = bench.clustered_vectors(50, np.random.default_rng(0), clusters=4)
    assert v.shape == (50, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_synthetic_texts_are_deterministic():
    words = ["受付", "時間", "製品"]
    a = bench.synthetic_texts(3, words, np.random.default_rng(1), length=4)
    assert a == bench.synthetic_texts(3, words, np.random.default_rng(1), length=4)
    assert all(t.endswith("。") and len(t) == 9 for t in a)


def test_format_table_lists_each_section():
    results = {
        "machine": {"cpu": "CPU", "cores": 2, "ram_gb": 24.0, "date": "2026-11-22"},
        "ingest": {"chunks": 100, "raw_encode_chunks_per_s": 20.0, "pipeline_chunks_per_s": 18.0,
                   "pipeline_vs_raw": 0.9, "unchanged_resync_s": 0.01},
        "rerank": {"pairs": 10, "tiny": {"p50_ms": 5.0, "p95_ms": 6.0}},
    }
    table = bench.format_table(results)
    assert "Machine: CPU, 2 cores, 24.0 GB — 2026-11-22" in table
    assert "pipeline 18.0 chunks/s vs raw encode 20.0 chunks/s → 90% of raw" in table
    assert "Rerank (10 pairs): tiny: p50 5.0 ms" in table
