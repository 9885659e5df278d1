"""BM25 in PostgreSQL on real data: exact scores, statistics kept exact by every writer, ranking."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from sqlalchemy import text

from app import storage
from app.text.keywords import bm25_idf, bm25_term_score, tokenize

pytestmark = pytest.mark.integration


@pytest.fixture
def store(hash_store):
    return hash_store


def stats(store):
    cid = storage.collection_id(store.engine, store.settings.retrieval.collection_name)
    with store.engine.connect() as conn:
        n = conn.execute(
            text(f"SELECT n, total_len FROM {storage.COLLECTION_STATS_TABLE} WHERE collection_id = :c"), {"c": cid}
        ).one()
        dfs = dict(
            conn.execute(
                text(f"SELECT term, df FROM {storage.TERM_STATS_TABLE} WHERE collection_id = :c"), {"c": cid}
            ).all()
        )
    return (int(n[0]), int(n[1])), dfs


def expected_stats(texts):
    token_lists = [tokenize(t) for t in texts]
    dfs = {}
    for tokens in token_lists:
        for term in set(tokens):
            dfs[term] = dfs.get(term, 0) + 1
    return (len(texts), sum(len(t) for t in token_lists)), dfs


DOCS = {"a": "芝浦信用金庫の口座", "b": "サーバーのサーバー設定", "c": "信用金庫とサーバー"}


def add(store, key, body):
    store.add_document(Document(page_content=body, id=key))


def test_statistics_stay_exact_after_add_update_delete_and_cascade(store):
    for key, body in DOCS.items():
        add(store, key, body)
    assert stats(store) == expected_stats(list(DOCS.values()))
    add(store, "b", "ネットワーク機器")  # update: the old tokens leave, the new come in
    assert stats(store) == expected_stats([DOCS["a"], "ネットワーク機器", DOCS["c"]])
    store.remove_document("a")
    assert stats(store) == expected_stats(["ネットワーク機器", DOCS["c"]])
    cid = storage.collection_id(store.engine, store.settings.retrieval.collection_name)
    with store.engine.begin() as conn:  # a cascade from the vector rows
        conn.execute(
            text("DELETE FROM langchain_pg_embedding WHERE collection_id = :c AND cmetadata->>'doc_id' = 'c'"),
            {"c": cid},
        )
    assert stats(store) == expected_stats(["ネットワーク機器"])


def test_scores_are_exactly_bm25(store):
    for key, body in DOCS.items():
        add(store, key, body)
    (n, total), dfs = stats(store)
    avgdl = total / n
    hits = storage.keyword_search(
        store.engine, store.settings.retrieval.collection_name, ["信用", "サー"], 10, ("admin",)
    )
    got = {row[2]["doc_id"]: row[3] for row in hits}
    for key, body in DOCS.items():
        tokens = tokenize(body)
        want = sum(
            bm25_term_score(tokens.count(t), bm25_idf(n, dfs[t]), len(tokens), avgdl)
            for t in ("信用", "サー")
            if t in tokens
        )
        assert got[key] == pytest.approx(want, rel=1e-9), key


def test_short_page_with_the_rare_term_outranks_a_long_page_of_common_bigrams(store):
    add(store, "long", "サーバーの設定とサーバーの監視とサーバーの保守。" * 12 + "金庫室")
    add(store, "short", "芝浦信用金庫の口座番号")
    for i in range(6):
        add(store, f"filler{i}", f"サーバー{i}番の設定")
    hits = store.search("芝浦信用金庫のサーバー口座", search_mode="keyword", top_k=3)
    assert hits[0].metadata["doc_id"] == "short"


def test_context_tokens_count_double(store):
    store.add_document(Document(page_content="バージョン一覧", id="x", metadata={"context": "ubuntu.csv"}))
    store.add_document(Document(page_content="ubuntu のバージョン一覧", id="y"))
    hits = storage.keyword_search(store.engine, store.settings.retrieval.collection_name, ["ubuntu"], 10, ("admin",))
    scores = {row[2]["doc_id"]: row[3] for row in hits}
    assert scores["x"] > scores["y"] > 0


def test_frequent_terms_beyond_the_postings_budget_score_but_do_not_select(store, monkeypatch):
    from app.text import keywords

    add(store, "rare", "芝浦の案内")
    for i in range(5):
        add(store, f"common{i}", f"サーバー{i}番の案内")
    cid = storage.collection_id(store.engine, store.settings.retrieval.collection_name)
    terms = ["芝浦", "サー"]  # df 1 and 5
    with storage.reading(store.engine, ["admin"]) as conn:  # the statistics are given to a reading transaction
        assert storage.keyword_search_params(conn, cid, terms, 10, ["admin"])["tsquery"] == "'芝浦' | 'サー'"
        monkeypatch.setattr(keywords, "CANDIDATE_POSTINGS", 3)
        params = storage.keyword_search_params(conn, cid, terms, 10, ["admin"])
    assert params["tsquery"] == "'芝浦'" and params["terms"] == terms  # サー still scores
    hits = storage.keyword_search(store.engine, store.settings.retrieval.collection_name, terms, 10, ("admin",))
    assert [row[2]["doc_id"] for row in hits] == ["rare"]


def test_app_sessions_plan_every_query_for_its_own_values(store):
    """psycopg prepares a statement after 5 runs; a generic plan cannot see the tsquery. Every app
    connection forces custom plans (and keeps pgvector's iterative scan)."""
    with store.engine.connect() as conn:
        settings = [
            conn.execute(text(f"SHOW {name}")).scalar()
            for name in ("plan_cache_mode", "hnsw.iterative_scan", "hnsw.ef_search")
        ]
    assert settings == ["force_custom_plan", "strict_order", "200"]
