"""make bench, small: every section except generation and e2e runs for real (they are slow), the MCP
server and concurrency sections at 600 chunks, the LLM server comparison with the test GGUF (8 tokens an
answer: enough for a rate, not a long wait)."""

import json

import pytest

from tests.integration.conftest import run_cli

pytestmark = pytest.mark.integration


def test_bench_small_run_writes_results_and_chart(integration_env, tmp_path):
    result = run_cli(
        "bench",
        "--sizes",
        "600",
        "--queries",
        "3",
        "--ingest-files",
        "2",
        "--serve-size",
        "600",
        "--concurrency-size",
        "600",
        "--clients",
        "1,2",
        "--skip",
        "generation,e2e",
        "--graph-corpora",
        "sample",
        "--graph-questions",
        "1",
        "--llm-tokens",
        "8",
        "--out",
        str(tmp_path),
        env={"GRAPH_MAP_MAX_BATCHES": "1"},
        timeout=600,
        process=True,  # as `make bench` runs it: its sections start servers that write to this stderr
    )
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    scale = data["scale"][0]
    assert scale["size"] == 600 and 0 <= scale["hnsw_recall_at_10"] <= 1
    assert scale["keyword_budget_overlap_at_10"] == 1.0  # 600 chunks: the postings budget never binds
    assert scale["vector_hnsw"]["p50_ms"] > 0 and scale["keyword_gin"]["p50_ms"] > 0
    assert data["ingest"]["chunks"] == 50 and data["ingest"]["pipeline_vs_raw"] > 0
    assert "tiny (2-layer, random weights)" in data["rerank"]
    assert (tmp_path / "results.png").stat().st_size > 1000
    assert "Retrieval at 600 chunks" in result.stdout
    serve = data["serve"]
    assert serve["chunks"] == 600 and 0 < serve["start_to_first_search_s"] < 120
    assert serve["one_file_sync"]["embedding_ms"] > 0 and serve["one_file_sync"]["without_embedding_ms"] > 0
    assert all(serve["search_rag_mcp"][m]["p50_ms"] > 0 for m in ("hybrid", "vector", "keyword"))
    assert len(serve["asks"]) == 3 and serve["rss_after_ask_mb"] > serve["rss_without_embedding_weights_mb"] > 0
    assert "Serve (MCP, 600 chunks) — Dialogoi targets:" in result.stdout
    conc = data["concurrency"]
    assert conc["chunks"] == 600 and [w["workers"] for w in conc["ingest_workers"]] == [1, 2]
    assert all(w["chunks"] == 50 and w["failed"] == 0 for w in conc["ingest_workers"])
    assert [(r["mode"], r["clients"]) for r in conc["search"]] == [
        (m, n) for m in ("keyword", "vector", "hybrid") for n in (1, 2)
    ]
    assert all(r["searches_per_s"] > 0 and r["p95_ms"] >= r["p50_ms"] > 0 for r in conc["search"])
    graph = data["graph"]
    [sample] = graph["builds"]
    assert sample["pages"] > 0 and sample["entities"] > 0 and sample["communities"] > 0
    assert sample["entities_embedded"] > 0 and sample["cold"]["embed"] > 0
    assert graph["queries"]["local"]["questions"] == 1 and graph["queries"]["global"]["questions"] == 1
    assert graph["queries"]["global"]["batches"] == 1
    assert "Graph (make graph" in result.stdout
    llm = data["llm_server"]
    assert llm["max_tokens"] == 8 and llm["in_process"]["tokens_per_s"] > 0 and llm["server"]["tokens_per_s"] > 0
    assert [b["requests"] for b in llm["server_concurrent"]] == [1, 2]
    assert "in process vs OpenAI-compatible server" in result.stdout
