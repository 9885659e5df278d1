"""make bench, small: every section except generation and e2e runs for real (they are slow), the MCP
server and concurrency sections at 600 chunks, the LLM server comparison with the test GGUF (8 tokens an
answer from contexts of 60 characters: enough for a rate, not a long wait), and the load run with two askers."""

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
        "--llm-context-chars",
        "60",
        "--filtered-size",
        "2000",
        "--load-askers",
        "2",
        "--load-minutes",
        "0.05",
        "--out",
        str(tmp_path),
        # short prompts for the stand-in (its tokenizer spends 1-2 tokens a Japanese character): the
        # sections' paths are under test here, not the answers
        env={"GRAPH_MAP_MAX_BATCHES": "1", "GRAPH_CONTEXT_TOKENS": "300", "CONTEXT_MAX_CHARS": "100"},
        timeout=3000,  # a guard against a hang, not a time limit: on a busy machine it takes several times its ~3 min
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
    assert [s["share"] for s in data["filtered"]["shares"]] == [0.5, 0.05, 0.005]
    assert "Filtered vector search at 2,000 chunks" in result.stdout
    serve = data["serve"]
    assert serve["chunks"] == 600 and serve["start_to_first_search_s"] > 0
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
    assert (
        llm["max_tokens"] == 8
        and llm["context_chars"] == 60
        and llm["in_process"]["tokens_per_s"] > 0
        and llm["server"]["tokens_per_s"] > 0
    )
    assert [b["requests"] for b in llm["server_concurrent"]] == [1, 2]
    assert "in process vs OpenAI-compatible server" in result.stdout
    load = data["load"]
    for run in (load["in_process"], load["server"]):
        assert run["asked"] == run["answered"] == 2 and run["errors"] == []
        assert run["passages_s"]["n"] == 2 and run["passages_s"]["p50"] <= run["done_s"]["p50"]
    assert "Load: 2 askers over 0.05 min on the page" in result.stdout


def test_filtered_search_section_small(settings):
    """bench.access at 2,000 chunks, 3 queries, in a bench database of its own (the section empties the
    chunk tables): every share gives k rows through the product's path, as the query role."""
    from app import db, storage
    from bench.access import bench_filtered_search, format_filtered

    s = settings.changed(db={"name": f"{settings.db.name}_bench_filtered", "statement_timeout_ms": 0})
    engine = storage.get_engine(s)
    db.init_db(s, engine=engine)
    out = bench_filtered_search(s, engine, n=2000, shares=(0.5, 0.05, 0.005), queries=3)
    assert out["size"] == 2000 and out["queries"] == 3 and out["k"] == 10
    assert out["query_role"] == "rag_query"  # row-level security applies to the timed searches
    assert out["pgvector_settings"]["hnsw.iterative_scan"] == "strict_order"
    unfiltered = out["unfiltered"]
    assert unfiltered["principal"] == "admin" and unfiltered["k_rows_always"] and unfiltered["p50_ms"] > 0
    assert [(f["share"], f["principal"], f["visible_rows"]) for f in out["shares"]] == [
        (0.5, "g50", 1000),
        (0.05, "g5", 100),
        (0.005, "g05", 10),
    ]
    for f in out["shares"]:
        assert f["k_rows_always"] and f["rows_min"] == 10
        assert 0 <= f["recall_at_10"] <= 1 and f["p95_ms"] >= f["p50_ms"] > 0 and f["p50_ratio"] > 0
        assert isinstance(f["hnsw_used"], bool) and f["plan"]
    assert out["shares"][-1]["recall_at_10"] == 1.0  # 10 readable rows: every one is in the top 10
    lines = format_filtered(out)
    assert "Filtered vector search at 2,000 chunks" in lines[1] and len(lines) == 3 + 1 + 3
    assert storage.collection_id(engine, "bench_filtered_2000") is None  # loaded, measured, dropped


def test_the_tiny_llm_reads_prompts_as_the_stand_in_and_writes_tokens(integration_env):
    """bench.tiny_models.build_tiny_llm (the suite's LLM_MODEL_PATH): llama.cpp loads it as any GGUF,
    with SmolLM2's tokens, chat template and context length, so prompts count and fit as they would."""
    from llama_cpp import Llama

    from tests.integration.conftest import GGUF

    tiny = Llama(model_path=integration_env["LLM_MODEL_PATH"], n_ctx=512, n_threads=1, verbose=False)
    real = Llama(model_path=str(GGUF), vocab_only=True, verbose=False)
    text = "サポート窓口の受付時間は平日9時から18時です。<|im_start|>"
    assert tiny.tokenize(text.encode(), special=True) == real.tokenize(text.encode(), special=True)
    assert tiny.n_vocab() == real.n_vocab() == 49152
    assert tiny.metadata["llama.context_length"] == real.metadata["llama.context_length"] == "8192"
    tokenizer = {k: v for k, v in real.metadata.items() if k.startswith("tokenizer.")}
    assert "tokenizer.chat_template" in tokenizer and tokenizer.items() <= tiny.metadata.items()
    assert tiny.metadata["llama.block_count"] == "2" and tiny.metadata["llama.embedding_length"] == "64"
    out = tiny.create_chat_completion([{"role": "user", "content": text}], max_tokens=8, temperature=0)
    assert out["usage"]["completion_tokens"] == 8 and out["choices"][0]["message"]["content"]
