"""Japanese-aware keyword search and hybrid retrieval on real PostgreSQL with the sample corpus."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from app import storage
from app.cli import tune as tune_cli
from app.metrics import retrieval_at_k
from app.retrieval.search import keyword_search
from app.storage import keywords as keyword_sql
from tests.integration.conftest import ROOT

pytestmark = pytest.mark.integration

QUESTIONS = json.loads((ROOT / "data" / "eval_questions.json").read_text(encoding="utf-8"))


def test_keyword_index_is_in_step_with_vector_rows(ingested, engine):
    with engine.connect() as conn:
        vectors = conn.execute(text("SELECT count(*) FROM langchain_pg_embedding")).scalar()
        keywords = conn.execute(text(f"SELECT count(*) FROM {storage.KEYWORD_TABLE}")).scalar()
        orphans = conn.execute(
            text(
                f"SELECT count(*) FROM langchain_pg_embedding e LEFT JOIN {storage.KEYWORD_TABLE} k ON k.id = e.id "
                "WHERE k.id IS NULL"
            )
        ).scalar()
        gin = conn.execute(
            text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"), {"n": f"{storage.KEYWORD_TABLE}_tsv_gin"}
        ).scalar()
    assert vectors == keywords and orphans == 0
    assert "USING gin (tsv)" in gin


def test_keyword_search_finds_an_exact_japanese_proper_noun_first(ingested, engine):
    # (with all-MiniLM-L6-v2 the vector search missed this page; multilingual-e5 finds it too)
    assert (
        keyword_search(engine, "documents", "芝浦信用金庫", 3, ("admin",))[0].metadata["source"]
        == "company_overview.pdf:p3"
    )


def test_keyword_search_matches_latin_codes_and_full_width_input(ingested, engine):
    assert (
        keyword_search(engine, "documents", "Ｅ３０１０", 1, ("admin",))[0].metadata["source"]
        == "technical_guide.pdf:p3"
    )
    assert (
        keyword_search(engine, "documents", "iso/iec 27001", 1, ("admin",))[0].metadata["source"]
        == "company_overview.pdf:p2"
    )


def test_keyword_search_with_no_usable_token_returns_nothing(ingested, engine):
    assert keyword_search(engine, "documents", "。、！", 5, ("admin",)) == []


def test_deleting_a_chunk_row_removes_its_keyword_row(own_store, engine, tmp_path):
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "tmp.csv").write_text("項目\n削除テスト用の行\n", encoding="utf-8")
    own_store.sync(tmp_path)
    name = own_store.settings.retrieval.collection_name
    assert keyword_search(engine, name, "削除テスト", 1, ("admin",))[0].metadata["source"] == "tmp.csv:r1"
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM langchain_pg_embedding WHERE cmetadata->>'file' = 'tmp.csv'"))
    assert keyword_search(engine, name, "削除テスト", 10, ("admin",)) == []


def test_keyword_query_uses_the_gin_index(store, engine, real_embeddings):
    """EXPLAIN the keyword query on a collection of 3,000 chunks: the GIN index answers it."""
    import random
    import uuid

    from langchain_core.documents import Document
    from langchain_postgres import PGVector

    from app.text.keywords import query_tokens

    name = f"gin_{uuid.uuid4().hex[:8]}"
    big = PGVector(
        embeddings=real_embeddings, connection=engine, embedding_length=384, collection_name=name, use_jsonb=True
    )
    rng = random.Random(0)
    kana = "アイウエオカキクケコサシスセソタチツテトナニヌネノ"
    docs = [
        Document(
            id=str(uuid.uuid4()),
            page_content="".join(rng.choice(kana) for _ in range(40)),
            metadata={"source": f"f.csv:r{i}", "file": "f.csv"},
        )
        for i in range(3000)
    ]
    docs.append(
        Document(id=str(uuid.uuid4()), page_content="受付時間は平日です", metadata={"source": "x", "file": "f.csv"})
    )
    import numpy as np

    vectors = np.random.default_rng(1).normal(size=(len(docs), 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    storage.replace_document(
        engine,
        name,
        {"doc_id": "f.csv", "source_file": "f.csv", "content_hash": "x", "settings_hash": "x"},
        docs,
        vectors.tolist(),
    )
    with engine.begin() as conn:
        conn.execute(text(f"ANALYZE {storage.KEYWORD_TABLE}"))
    collection = storage.collection_id(engine, name)
    with storage.reading(engine, ["admin"]) as conn:
        params = storage.keyword_search_params(conn, collection, query_tokens("受付時間"), 10, ["admin"])
    # the candidates' statement, as the search's definer function runs it (the query role may not EXPLAIN it)
    with engine.begin() as conn:
        plan = "\n".join(r[0] for r in conn.execute(text("EXPLAIN " + keyword_sql.SQL_KEYWORD_CANDIDATES), params))
    big.delete_collection()
    assert f"{storage.KEYWORD_TABLE}_tsv_gin" in plan, plan


def retrieval_rates(search, n, depth=10):
    """Share of questions whose expected source is in the first ``n`` of ``depth`` candidates."""
    hits = [retrieval_at_k(search(q["query"], depth)[:n], q["expected_source"]) for q in QUESTIONS]
    return sum(hits) / len(hits)


def test_hybrid_retrieval_on_the_sample_corpus(ingested, rag_store):
    """As make evaluate does it: SEARCH_K=10 candidates per search, fused with the default
    RRF settings. Hybrid is at least as good as the best single mode at both depths."""
    rates = {}
    for mode in ("vector", "keyword", "hybrid"):
        search = rag_store.search_function(mode)
        rates[mode] = {n: retrieval_rates(search, n) for n in (3, 10)}
    print("Retrieval@3/@10 by mode:", rates)
    for n in (3, 10):
        assert rates["hybrid"][n] >= max(rates["vector"][n], rates["keyword"][n]), rates


def test_default_fusion_settings_are_what_tune_chooses_on_the_tuning_set(ingested, rag_store, capsys, tmp_path):
    """The defaults were chosen by `make tune` on data/tuning_questions.json (held apart from
    the evaluation set); if the corpus, questions or grid change, this says to re-tune."""
    from app.config import DEFAULT_HYBRID_WEIGHTS, DEFAULT_RRF_K

    report = tmp_path / "tune.json"
    assert (
        tune_cli.main(
            ["--questions", str(ROOT / "data" / "tuning_questions.json"), "--json", str(report)], store=rag_store
        )
        == 0
    )
    out = capsys.readouterr().out
    saved = json.loads(report.read_text(encoding="utf-8"))
    assert saved["questions"] == 26 and len(saved["rows"]) == 2 + 5 * 7  # 22 answerable + 4 unanswerable
    assert (saved["chosen"]["rrf_k"], tuple(saved["chosen"]["weights"])) == (DEFAULT_RRF_K, DEFAULT_HYBRID_WEIGHTS)
    assert (
        f"Best on these questions: RRF_K={DEFAULT_RRF_K} "
        f"HYBRID_WEIGHTS={DEFAULT_HYBRID_WEIGHTS[0]:g},{DEFAULT_HYBRID_WEIGHTS[1]:g}\n"
    ) in out, out
    assert "Abstention: ABSTAIN_MIN_COVERAGE=" in out and saved["abstention_coverage"]["unanswerable"] == 4


def test_tune_per_question_ranks_each_question_in_both_lists(ingested, rag_store, capsys, tmp_path):
    questions = tmp_path / "q.json"
    questions.write_text(
        json.dumps(
            [
                {"query": "サポート窓口の受付時間は？", "expected_source": "faq.csv:r2", "expected_keywords": ["9時"]},
                {"query": "火星の首都は？", "expected_source": "nowhere.pdf:p1", "expected_keywords": ["x"]},
            ],
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    report = tmp_path / "tune.json"
    assert tune_cli.main(["--questions", str(questions), "--per-question", "--json", str(report)], store=rag_store) == 0
    out = capsys.readouterr().out
    rows = json.loads(report.read_text(encoding="utf-8"))["per_question"]
    assert [(r["expected_source"], r["verdict"]) for r in rows] == [("faq.csv:r2", "ok"), ("nowhere.pdf:p1", "missed")]
    assert rows[0]["keyword_rank"] == 1 and rows[0]["hybrid_rank"] == 1 and rows[0]["vector_rank"] is not None
    assert (
        "Per question (ranks in the top 50 of each list" in out
        and "Verdicts: ok 1, rerank 0, fusion 0, deeper 0, missed 1" in out
    )
