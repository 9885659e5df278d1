"""bench.py's pure parts; tests/integration/test_bench.py runs a small benchmark for real."""

import numpy as np
import pytest

from bench import kit as benchkit
from bench import suite as bench


def test_stats_ms():
    assert benchkit.stats_ms([0.001, 0.002, 0.003, 0.004]) == {"p50_ms": 2.5, "p95_ms": 3.85}


def test_stream_tokens_measures_ttft_and_rate():
    def generate(cb):
        for _ in range(5):
            cb("x")

    out = bench.stream_tokens(generate, repeat=2)
    assert out["tokens"] == 5 and out["runs"] == 2 and out["ttft_s"] >= 0 and out["tokens_per_s"] > 0


def test_stream_tokens_without_tokens():
    assert bench.stream_tokens(lambda cb: None) == {"ttft_s": None, "tokens": 0, "tokens_per_s": 0.0}


def test_clustered_vectors_are_unit_length():
    v = benchkit.clustered_vectors(50, np.random.default_rng(0), clusters=4)
    assert v.shape == (50, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_synthetic_texts_are_deterministic():
    words = ["受付", "時間", "製品"]
    a = benchkit.synthetic_texts(3, words, np.random.default_rng(1), length=4)
    assert a == benchkit.synthetic_texts(3, words, np.random.default_rng(1), length=4)
    assert all(t.endswith("。") and len(t) == 9 for t in a)


def test_format_table_lists_each_section():
    results = {
        "machine": {"cpu": "CPU", "cores": 2, "ram_gb": 24.0, "date": "2026-11-22"},
        "ingest": {
            "chunks": 100,
            "raw_encode_chunks_per_s": 20.0,
            "pipeline_chunks_per_s": 18.0,
            "pipeline_vs_raw": 0.9,
            "unchanged_resync_s": 0.01,
        },
        "rerank": {"pairs": 10, "tiny": {"p50_ms": 5.0, "p95_ms": 6.0}},
    }
    table = bench.format_table(results)
    assert "Machine: CPU, 2 cores, 24.0 GB — 2026-11-22" in table
    assert "pipeline 18.0 chunks/s vs raw encode 20.0 chunks/s → 90% of raw" in table
    assert "Rerank (10 pairs): tiny: p50 5.0 ms" in table


def test_format_serve_puts_each_figure_next_to_its_target():
    from bench.serve import format_serve

    ms = lambda p50, p95: {"p50_ms": p50, "p95_ms": p95}  # noqa: E731
    serve = {
        "chunks": 50000,
        "start_to_first_search_s": 1.85,
        "one_file_sync": {"runs": 5, "total_ms": 102.3, "embedding_ms": 37.0, "without_embedding_ms": 66.0},
        "search_rag_mcp": {"hybrid": ms(38.2, 52.0), "vector": ms(20.6, 25.7), "keyword": ms(29.4, 46.4)},
        "search_rag_in_process": {"hybrid": ms(35.0, 40.0), "vector": ms(16.9, 20.0), "keyword": ms(24.1, 30.0)},
        "rss_after_search_mb": 180.2,
        "embedding_weights_mb": 68.3,
        "rss_without_embedding_weights_mb": 111.9,
        "rss_after_ask_mb": 2012.4,
        "llm": {"file": "qwen.gguf", "mb": 1065.6},
        "asks": [
            {"s": 8.4, "timings": {"retrieve": 0.05, "rerank": 0.0, "first_token": 5.1}},
            {"s": 8.9, "timings": {"retrieve": 0.04, "first_token": 4.0}},
            {"s": 4.8, "timings": {}},
        ],
    }
    assert format_serve(serve) == [
        "Serve (MCP, 50,000 chunks) — Dialogoi targets:",
        "  start → first search_rag answer   1.85 s   (target < 3 s)",
        "  one changed file synced           66.0 ms without embedding (102.3 ms with 37.0 ms embedding)   (target < 50 ms)",
        "  search_rag k=10 p50/p95 ms        hybrid 38.2/52.0 over MCP, 35.0 in process; vector 20.6/25.7 over MCP, "
        "16.9 in process; keyword 29.4/46.4 over MCP, 24.1 in process   (target ≤ 10 ms)",
        "  server RSS after searches         180.2 MB, without the embedding weights (68.3 MB) 111.9 MB   (target < 50 MB)",
        "  ask: first 8.4 s (loads qwen.gguf), then two new questions 8.9 s, 4.8 s; RSS after ask 2012.4 MB",
        "  ask, time to first token (retrieve + rerank + prompt evaluation): 5.15 s, 4.04 s, 0.00 s",
    ]


def test_unknown_graph_corpus_is_one_line_before_any_work(capsys):
    with pytest.raises(SystemExit) as exit_info:  # parser.error: nothing connected, nothing built
        bench.main(["--graph-corpora", "sample,huge"])
    assert exit_info.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith("error: --graph-corpora: unknown huge (valid: sample, real, real-large)")
    )


def test_filtered_section_names_and_table():
    from bench.access import group_name

    assert [group_name(s) for s in (0.5, 0.05, 0.005)] == ["g50", "g5", "g05"]
    ms = {"p50_ms": 2.0, "p95_ms": 3.0}
    row = {"recall_at_10": 0.9, "k_rows_always": True, "server": {"p50_ms": 1.0, "p95_ms": 1.5}, **ms}
    results = {
        "machine": {"cpu": "CPU", "cores": 2, "ram_gb": 24.0, "date": "2026-11-26"},
        "filtered": {
            "size": 100000,
            "queries": 50,
            "goals": {"recall_at_10": 0.95, "p50_ratio": 1.3},
            "unfiltered": {**row, "plan": "HNSW"},
            "shares": [{**row, "share": 0.005, "p50_ratio": 0.7, "recall_at_10": 1.0, "plan": "readers GIN + sort"}],
        },
    }
    table = bench.format_table(results)
    assert "Filtered vector search at 100,000 chunks (50 queries" in table
    assert "  0.5 %         1.000     2.0     3.0   0.70      1.0     yes  readers GIN + sort" in table
