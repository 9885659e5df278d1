"""End to end on real components: embedded PostgreSQL + pgvector, multilingual-e5-small, the suite's tiny
GGUF (the SmolLM2 stand-in itself where the graph generates), a tiny cross-encoder, the sample
PDFs/CSVs and the real CLIs."""

from __future__ import annotations

import shutil
import uuid

import numpy as np
import pytest
from sqlalchemy import event, text

from app import db, storage
from app.graph import default_context, run_rag
from app.permissions.principals import FULL_ACCESS
from app.retrieval.search import vector_search
from bench import kit as benchkit
from tests.integration.conftest import ROOT, index_built_after, run_cli

pytestmark = pytest.mark.integration

SAMPLE_SOURCES = (
    {f"faq.csv:r{i}" for i in range(1, 23)}
    | {f"products.csv:r{i}" for i in range(1, 8)}
    | {f"company_overview.pdf:p{i}" for i in range(1, 4)}
    | {f"technical_guide.pdf:p{i}" for i in range(1, 5)}
    | {f"service_agreement.pdf:p{i}" for i in range(1, 5)}
    | {f"work_rules.pdf:p{i}" for i in range(1, 5)}
    | {
        f"it_helpdesk.md#{s}"
        for s in (
            "情報システム部-ヘルプデスク手順書",
            "アカウントの発行",
            "貸与",
            "紛失したとき",
            "vpn接続",
            "ソフトウェアの導入申請",
        )
    }
)


def sources_in_db(engine, collection="documents"):
    with engine.connect() as conn:
        rows = (
            conn.execute(
                text(
                    "SELECT e.cmetadata->>'source' FROM langchain_pg_embedding e JOIN langchain_pg_collection c "
                    "ON c.uuid = e.collection_id WHERE c.name = :name"
                ),
                {"name": collection},
            )
            .scalars()
            .all()
        )
    return rows


def test_ingest_stores_every_page_and_row_with_metadata(ingested, engine):
    assert (ingested.added, ingested.failed, ingested.chunks_written) == (7, 0, 50)
    rows = sources_in_db(engine)
    assert len(rows) == 50 and set(rows) == SAMPLE_SOURCES


def test_embedding_column_is_vector_384_with_hnsw_cosine_index(ingested, engine):
    with engine.connect() as conn:
        column = conn.execute(text(storage.SQL_COLUMN_TYPE), {"table": storage.EMBEDDING_TABLE}).scalar()
        indexdef = conn.execute(
            text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"), {"n": storage.HNSW_INDEX}
        ).scalar()
        ext = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
    assert column == "vector(384)"
    assert "USING hnsw (embedding vector_cosine_ops)" in indexdef
    assert ext is not None


def test_init_db_twice_is_harmless(store, settings, engine, real_embeddings):
    db.init_db(settings, embeddings=real_embeddings, engine=engine)
    with engine.connect() as conn:
        n = conn.execute(
            text("SELECT count(*) FROM pg_indexes WHERE indexname = :n"), {"n": storage.HNSW_INDEX}
        ).scalar()
    assert n == 1


def test_vector_search_finds_the_faq_row(ingested, store):
    hits = vector_search(store, "サポート窓口の受付時間を教えてください", 10, ("admin",))
    assert len(hits) == 10
    assert hits[0].metadata["source"] == "faq.csv:r2"
    scores = [h.metadata["relevance_score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_vector_search_uses_the_hnsw_index(ingested, engine, real_embeddings):
    """Capture the SQL PGVector really runs and EXPLAIN it, on a collection large enough
    (8,000 random unit vectors) that a sequential scan would cost more than the index."""
    name = f"hnsw_{uuid.uuid4().hex[:8]}"
    big = storage.make_vectorstore(engine, real_embeddings, name, create=True)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(8000, 384)).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with index_built_after(engine, storage.HNSW_INDEX, storage.SQL_CREATE_HNSW):
        benchkit.bench_bulk_load(
            engine,
            storage.collection_id(engine, name),
            [str(uuid.uuid4()) for _ in range(8000)],
            vectors,
            [f"filler {i}" for i in range(8000)],
            ["filler"] * 8000,
        )
    with engine.begin() as conn:
        conn.execute(text("ANALYZE langchain_pg_embedding"))
    captured = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if "<=>" in statement:
            captured.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        hits = vector_search(big, "データのバックアップは何時ですか", 10, ("admin",))
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert len(hits) == 10 and captured, "PGVector ran no cosine-distance query"
    statement, parameters = captured[0]
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        plan = "\n".join(r[0] for r in raw.execute("EXPLAIN " + statement, parameters).fetchall())
    big.delete_collection()
    assert f"Index Scan using {storage.HNSW_INDEX}" in plan, plan


def test_graph_with_real_models_and_tiny_cross_encoder(ingested, store, settings):
    """retrieve → rerank (real CrossEncoderReranker over a tiny BERT) → generate (the real SmolLM2 GGUF,
    a trained model that ends its answer itself)."""
    from functools import partial

    from tests.integration.conftest import GGUF

    smollm2 = settings.changed(llm={"model_path": str(GGUF)})
    ctx = default_context(
        smollm2, search=partial(vector_search, store, principals=FULL_ACCESS), principals=FULL_ACCESS
    )  # vector mode: the spec's path
    assert ctx.reranker is not None
    ctx.min_confidence = ctx.min_coverage = 0.0  # the tiny cross-encoder's picks may hold few question terms
    state = run_rag("サポート窓口の受付時間を教えてください", ctx)
    assert state["reranked"] is True and len(state["documents"]) == 10
    assert len(state["reranked_documents"]) == 3
    assert all("rerank_score" in d.metadata for d in state["reranked_documents"])
    retrieved = {d.metadata["source"] for d in state["documents"]}
    assert "faq.csv:r2" in retrieved and set(state["sources"]) <= retrieved
    assert state["prompt"].startswith("資料:\n[1]（出典: ") and state["prompt"].endswith(
        "質問: サポート窓口の受付時間を教えてください"
    )
    assert isinstance(state["answer"], str) and state["answer"]
    assert {"retrieve", "rerank", "generate"} <= set(state["timings"])


def test_ask_search_gives_what_the_workflows_retrieve_and_rerank_keep(ingested, settings):
    """The spec's ask.search on the real store (hybrid, the default mode) and the tiny cross-encoder: the
    chunks a question's retrieve and rerank nodes keep, in their order, with their scores."""
    from app import ask

    question = "サポート窓口の受付時間を教えてください"
    state = run_rag(question, default_context(settings, generate=False, principals=FULL_ACCESS))
    hits = ask.search(question, settings=settings)
    assert len(hits) == settings.retrieval.rerank_top_k and all(h["score"] is not None for h in hits)
    assert [(h["source"], h["chunk_index"], h["content"]) for h in hits] == [
        (d.metadata["source"], d.metadata["chunk_index"], d.page_content) for d in state["reranked_documents"]
    ]
    assert [h["score"] for h in hits] == pytest.approx(
        [d.metadata["rerank_score"] for d in state["reranked_documents"]]
    )
    assert ask.search(question, settings=settings, mode="keyword")[0]["source"] in SAMPLE_SOURCES


def test_ask_cli_end_to_end_without_cross_encoder(ingested, integration_env):
    """The offline configuration users get: no cross-encoder, so retrieval order and one warning."""
    result = run_cli("app.ask", "サポート窓口の受付時間を教えてください", env={"RERANKER_MODEL": "acme/absent"})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("=== Answer ===\n")
    answer, sources = out.split("\n\n=== Sources")  # SmolLM2 may be withdrawn: "(closest; …) ==="
    assert answer.strip() != "=== Answer ==="
    lines = sources.strip().splitlines()[1:]
    assert 1 <= len(lines) <= 3 and all(line.startswith("- ") for line in lines)
    assert "faq.csv:r2" in {line[2:].split(" ")[0] for line in lines}
    assert result.stderr.count("reranking is off") == 1 and "Traceback" not in result.stderr


def test_ingest_cli_skips_corrupt_pdf_and_reads_cp932_csv(integration_env, tmp_path, engine):
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data", data)
    (data / "pdf" / "broken.pdf").write_bytes(b"%PDF-1.7\nnot a pdf at all")
    (data / "csv" / "sjis.csv").write_bytes("品目,担当\n経費精算,髙橋①\n".encode("cp932"))
    env = {"DB_NAME": "rag_cli_test"}
    result = run_cli("app.ingest", "--data-dir", str(data), env=env)
    assert result.returncode == 0, result.stderr
    assert "broken.pdf: unreadable PDF" in result.stderr and "Traceback" not in result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-2] == "Ingest: 8 added, 0 updated, 0 unchanged, 0 removed, 1 failed; embedded 51 chunks, reused 0"
    assert lines[-1].startswith("Graph: ") and " entities, " in lines[-1]  # the graph was built with the chunks
    second = run_cli("app.ingest", "--data-dir", str(data), env=env)
    assert second.returncode == 0 and second.stdout.strip().endswith(  # nothing changed: no graph rebuild
        "Ingest: 0 added, 0 updated, 8 unchanged, 0 removed, 1 failed; embedded 0 chunks, reused 0"
    )
    status = run_cli("app.db", "status", env=env)
    assert "51 chunks" in status.stdout


def test_cli_unreachable_database_is_one_line(integration_env):
    result = run_cli("app.ask", "質問", env={"DB_HOST": "127.0.0.1", "DB_PORT": "9", "DB_PASSWORD": "pw"})
    assert result.returncode == 1
    assert result.stderr.startswith("Error: cannot connect to PostgreSQL at 127.0.0.1:9: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_missing_llm_file_names_it(ingested, integration_env, tmp_path):
    missing = tmp_path / "none.gguf"
    result = run_cli("app.ask", "質問", env={"LLM_MODEL_PATH": str(missing), "RERANKER_MODEL": "acme/absent"})
    assert result.returncode == 1
    assert f"Error: LLM model file not found: {missing}; run `make models`" in result.stderr
    assert "Traceback" not in result.stderr


def test_make_ask_without_q_prints_usage():
    result = __import__("subprocess").run(["make", "-s", "ask", "Q="], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert 'usage: make ask Q="質問文"' in result.stderr
