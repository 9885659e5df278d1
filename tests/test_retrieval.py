"""retrieval.py: rank fusion with hand-computed values; vector/keyword/hybrid search with doubles.

The SQL side runs against real PostgreSQL in tests/integration/test_hybrid.py."""

import pytest
from langchain_core.documents import Document

from app import storage
from app.retrieval.search import (
    SearchRetriever,
    best_per_source,
    hybrid_search,
    keyword_search,
    reciprocal_rank_fusion,
    vector_search,
)


def test_rrf_hand_computed_k60():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]], k=60)
    assert [key for key, _ in fused] == ["a", "c", "b", "d"]
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)  # 0.032522475
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)  # 0.032266459
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["d"] == pytest.approx(1 / 63)


def test_rrf_weights():
    scores = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]], k=60, weights=[2.0, 1.0]))
    assert scores["a"] == pytest.approx(0.048915917, abs=1e-9)
    assert scores["c"] == pytest.approx(0.048139475, abs=1e-9)
    assert scores["b"] == pytest.approx(0.032258065, abs=1e-9)


def test_rrf_k0():
    assert reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]], k=0) == [
        ("a", 1.5),
        ("c", pytest.approx(4 / 3)),
        ("b", 0.5),
        ("d", pytest.approx(1 / 3)),
    ]


def test_rrf_ties_keep_first_seen_order():
    assert [k for k, _ in reciprocal_rank_fusion([["a"], ["b"]])] == ["a", "b"]


def test_rrf_zero_weight_ignores_a_ranking():
    assert [k for k, _ in reciprocal_rank_fusion([["a"], ["b", "a"]], weights=[0.0, 1.0])] == ["b", "a"]


def test_rrf_duplicate_ids_in_one_ranking_count_once():
    assert dict(reciprocal_rank_fusion([["a", "a", "b"]], k=0)) == {"a": 1.0, "b": 0.5}


def test_rrf_empty():
    assert reciprocal_rank_fusion([]) == [] and reciprocal_rank_fusion([[], []]) == []


@pytest.mark.parametrize(
    "kwargs,message", [({"k": -1}, "k must be >= 0, got -1"), ({"weights": [1.0]}, "1 weights for 2 rankings")]
)
def test_rrf_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError) as err:
        reciprocal_rank_fusion([["a"], ["b"]], **kwargs)
    assert str(err.value) == message


def doc(id_, source):
    return Document(id=id_, page_content=f"text {id_}", metadata={"source": source})


def test_hybrid_search_fuses_and_annotates_ranks():
    vector = [doc("1", "a:p1"), doc("2", "a:p2"), doc("3", "a:p3")]
    keyword = [doc("3", "a:p3"), doc("4", "b:r1")]
    out = hybrid_search(vector, keyword, 3, rrf_k=60, weights=(1.0, 1.0))
    assert [d.id for d in out] == ["3", "1", "2"]  # "2" and "4" tie at 1/62: vector ranking seen first
    assert out[0].metadata["vector_rank"] == 3 and out[0].metadata["keyword_rank"] == 1
    assert out[0].metadata["relevance_score"] == pytest.approx(round(1 / 63 + 1 / 61, 6))
    assert out[1].metadata["keyword_rank"] is None


def test_hybrid_search_defaults_are_plain_rrf():
    """Defaults k=60, weights 1:1: 1: 1/61, 2: 1/62, 3: 1/63 + 1/61, 4: 1/62 — a chunk both
    searches found leads; then the two first ranks, vector first (seen first)."""
    vector = [doc("1", "a:p1"), doc("2", "a:p2"), doc("3", "a:p3")]
    keyword = [doc("3", "a:p3"), doc("4", "b:r1")]
    out = hybrid_search(vector, keyword, 3)
    assert [d.id for d in out] == ["3", "1", "2"]
    assert [d.metadata["relevance_score"] for d in out] == [
        round(1 / 63 + 1 / 61, 6),
        round(1 / 61, 6),
        round(1 / 62, 6),
    ]


def test_best_per_source_keeps_the_first_chunk_of_each_source():
    docs = [
        doc("1", "a:p1"),
        doc("2", "a:p1"),
        doc("3", "b:r1"),
        Document(id="4", page_content="x"),
        Document(id="5", page_content="y"),
        doc("6", "a:p2"),
    ]
    assert [d.id for d in best_per_source(docs, 10)] == ["1", "3", "4", "5", "6"]  # no source: its own
    assert [d.id for d in best_per_source(docs, 2)] == ["1", "3"]


def test_hybrid_search_fuses_by_source_and_shows_the_vector_chunk():
    """a:p1 is found through chunk 1 (vector) and chunk 2 (keyword): one result, both ranks."""
    vector = [doc("9", "c:p1"), doc("1", "a:p1")]
    keyword = [doc("2", "a:p1"), doc("4", "b:r1")]
    out = hybrid_search(vector, keyword, 3)
    assert [(d.id, d.metadata["vector_rank"], d.metadata["keyword_rank"]) for d in out] == [
        ("1", 2, 1),
        ("9", 1, None),
        ("4", None, 2),
    ]
    assert out[0].metadata["relevance_score"] == round(1 / 62 + 1 / 61, 6)


def test_vector_and_keyword_search_return_one_chunk_per_source(mock_vectorstore, monkeypatch):

    hits = [
        Document(page_content=f"t{i}", metadata={"source": s})
        for i, s in enumerate(["faq.csv:r2", "faq.csv:r2", "guide.pdf:p1", "guide.pdf:p2"])
    ]
    mock_vectorstore.similarity_search_with_score.side_effect = lambda q, k, principals: [
        (d, 0.1 * i) for i, d in enumerate(hits[:k])
    ]
    out = vector_search(mock_vectorstore, "q", 2, ("admin",))
    assert [(d.page_content, d.metadata["relevance_score"]) for d in out] == [("t0", 1.0), ("t2", 0.8)]
    asked = []
    monkeypatch.setattr(
        storage,
        "keyword_search",
        lambda engine, name, terms, k, principals: (
            asked.append(k)
            or [
                ("a", "一", {"source": "x.pdf:p1"}, 3.0),
                ("b", "二", {"source": "x.pdf:p1"}, 2.0),
                ("c", "三", {"source": "x.pdf:p2"}, 1.0),
            ]
        ),
    )
    assert [d.id for d in keyword_search(object(), "documents", "受付", 2, ("admin",))] == ["a", "c"] and asked == [6]


def test_hybrid_search_does_not_mutate_inputs():
    d = doc("1", "a:p1")
    hybrid_search([d], [], 5)
    assert d.metadata == {"source": "a:p1"}


def test_hybrid_search_returns_the_best_k_of_both_lists():
    vector = [doc("1", "a:p1"), doc("2", "a:p2")]
    keyword = [doc("3", "b:r1"), doc("4", "b:r2")]
    assert [d.id for d in hybrid_search(vector, keyword, 3)] == ["1", "3", "2"]
    assert hybrid_search([], [], 3) == []


def test_vector_search_scores_are_one_minus_distance(mock_vectorstore):
    out = vector_search(mock_vectorstore, "q", 2, ("admin",))
    assert [d.metadata["relevance_score"] for d in out] == [1.0, 0.9]


def test_vector_search_blank_query(mock_vectorstore):
    assert vector_search(mock_vectorstore, "  ", 3, ("admin",)) == []


def test_search_retriever_is_a_langchain_retriever():
    retriever = SearchRetriever(search=lambda q, k: [doc(str(i), "s") for i in range(k)], k=2)
    assert [d.id for d in retriever.invoke("q")] == ["0", "1"]


def test_search_retriever_takes_k_from_invoke_or_the_constructor():
    from langchain_core.documents import Document

    from app.retrieval.search import SearchRetriever

    calls = []

    def search(query, k):
        calls.append((query, k))
        return [Document(page_content=str(i)) for i in range(k)]

    retriever = SearchRetriever(search=search, k=4)
    assert len(retriever.invoke("q")) == 4
    assert len(retriever.invoke("q", k=2)) == 2
    assert calls == [("q", 4), ("q", 2)]
