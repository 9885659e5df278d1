"""Fusion tuning: pure scoring of cached candidate lists, with hand-computed values."""

import pytest
from langchain_core.documents import Document

from app.cli import tune as tune_cli
from app.evaluation import tune


def doc(id_, source):
    return Document(page_content=id_, id=id_, metadata={"source": source})


V = [doc("v1", "a:p1"), doc("v2", "a:p2"), doc("v3", "a:p3")]
K = [doc("v3", "a:p3"), doc("k4", "b:r1")]
QUESTIONS = [{"query": "q1", "expected_source": "b:r1"}, {"query": "q2", "expected_source": "a:p2"}]


def test_reciprocal_rank_is_one_over_the_first_hit():
    assert tune.reciprocal_rank(V, "a:p2") == 0.5
    assert tune.reciprocal_rank(V, "zz") == 0.0


def test_hit_rates_at_both_depths_and_mrr():
    # q1 expects b:r1 at rank 2 of K; q2 expects a:p2 at rank 2 of V
    rates = tune.hit_rates([K, V], QUESTIONS, top_k=1, search_k=3)
    assert rates == {"at_top_k": 0.0, "at_search_k": 1.0, "mrr": 0.5}


def test_fuse_uses_the_given_settings():
    assert [d.id for d in tune.fuse((V, K), 3, 60, (1.0, 1.0))] == ["v3", "v1", "v2"]
    assert [d.id for d in tune.fuse((V, K), 3, 5, (1.0, 10.0))] == ["v3", "k4", "v1"]


def test_grid_rows_singles_then_hybrid_in_grid_order():
    candidates = [(V, K), (V, K)]
    rows = tune.grid(candidates, QUESTIONS, top_k=2, search_k=3, rrf_ks=(60, 5), keyword_weights=(1.0, 10.0))
    assert [(r["mode"], r["rrf_k"], r["weights"]) for r in rows] == [
        ("vector", None, None),
        ("keyword", None, None),
        ("hybrid", 60, (1.0, 1.0)),
        ("hybrid", 60, (1.0, 10.0)),
        ("hybrid", 5, (1.0, 1.0)),
        ("hybrid", 5, (1.0, 10.0)),
    ]
    # vector: q1 miss, q2 at rank 2 → @2 0.5, @3 0.5, MRR (0 + 1/2) / 2
    assert (rows[0]["at_top_k"], rows[0]["at_search_k"], rows[0]["mrr"]) == (0.5, 0.5, 0.25)
    # k=5, 1:10 → [v3, k4, v1]: q1 at rank 2, q2 (a:p2) absent
    assert (rows[5]["at_top_k"], rows[5]["at_search_k"], rows[5]["mrr"]) == (0.5, 0.5, 0.25)
    # k=60, 1:1 → [v3, v1, v2]: q1 absent, q2 at rank 3
    assert (rows[2]["at_top_k"], rows[2]["at_search_k"], rows[2]["mrr"]) == (0.0, 0.5, pytest.approx(1 / 6))


def row(rrf_k, top, search, mrr):
    return {"mode": "hybrid", "rrf_k": rrf_k, "weights": (1.0, 1.0), "at_top_k": top, "at_search_k": search, "mrr": mrr}


def test_best_setting_orders_by_top_k_then_search_k_then_mrr_then_grid_order():
    rows = [
        {"mode": "keyword", "rrf_k": None, "weights": None, "at_top_k": 1.0, "at_search_k": 1.0, "mrr": 1.0},
        row(60, 0.5, 1.0, 0.9),
        row(30, 0.8, 0.9, 0.9),
        row(10, 0.8, 1.0, 0.7),
        row(5, 0.8, 1.0, 0.8),
        row(1, 0.8, 1.0, 0.8),
    ]
    assert tune.best_setting(rows)["rrf_k"] == 5


def test_best_setting_needs_a_hybrid_row():
    with pytest.raises(ValueError, match="no hybrid rows"):
        tune.best_setting([{"mode": "vector", "at_top_k": 1, "at_search_k": 1, "mrr": 1}])


def test_format_grid_marks_the_choice_and_prints_env_values():
    rows = [row(60, 0.5, 1.0, 0.75), row(5, 1.0, 1.0, 1.0)]
    rows[1]["weights"] = (1.0, 10.0)
    text = tune.format_grid(rows, 3, 10, rows[1])
    assert text.splitlines()[0].split() == ["mode", "RRF_K", "HYBRID_WEIGHTS", "R@3", "R@10", "MRR"]
    assert text.splitlines()[1].split() == ["hybrid", "60", "1,1", "50.0%", "100.0%", "0.750"]
    assert text.splitlines()[2].endswith("1.000  ← chosen")
    assert text.endswith("Best on these questions: RRF_K=5 HYBRID_WEIGHTS=1,10")


def test_cli_reports_a_missing_question_file(tmp_path, capsys):
    assert tune_cli.main(["--questions", str(tmp_path / "nope.json")], store=object()) == 1
    assert capsys.readouterr().err.strip() == f"Error: question file not found: {tmp_path / 'nope.json'}"


def test_calibrate_abstention_refuses_no_answerable_question():
    from app.evaluation.tune import calibrate_abstention

    result = calibrate_abstention([0.90, 0.85, 0.8298, 0.88], [0.70, 0.829, 0.83, 0.95])
    assert result == {"threshold": 0.82, "kept": 4, "abstained": 1, "answerable": 4, "unanswerable": 4}


def test_calibrate_abstention_without_answerable_questions_is_off():
    from app.evaluation.tune import calibrate_abstention

    assert calibrate_abstention([], [0.9])["threshold"] == 0.0


def test_best_similarity_reads_the_vector_candidates():
    from langchain_core.documents import Document

    from app.evaluation.tune import best_similarity

    docs = [Document(page_content="", metadata={"vector_score": s}) for s in (0.7, 0.9)]
    assert best_similarity((docs, [])) == 0.9 and best_similarity(([], docs)) is None


def test_coverages_use_the_chunks_hybrid_gives_the_llm():
    from langchain_core.documents import Document

    from app.config import Settings
    from app.evaluation.tune import coverages

    doc = lambda i, text: Document(page_content=text, id=str(i), metadata={"source": f"s{i}"})  # noqa: E731
    cands = [([doc(1, "受付時間は9時から"), doc(2, "無関係")], [doc(3, "別の話")])]
    s = Settings().changed(retrieval={"rerank_top_k": 1})
    assert coverages(cands, [{"query": "受付時間"}], s) == [1.0]


def test_coverages_read_a_row_with_its_header_as_the_answer_check_does():
    from langchain_core.documents import Document

    from app.config import Settings
    from app.evaluation.tune import coverages

    row = Document(page_content="JPY,392,Yen", id="1", metadata={"source": "c.csv:r1", "context": "通貨コード表"})
    s = Settings().changed(retrieval={"rerank_top_k": 1})
    # every token is in the header, none in the row
    assert coverages([([row], [])], [{"query": "通貨コード"}], s) == [1.0]


def test_source_rank_and_truncate():
    assert (tune.source_rank(V, "a:p3"), tune.source_rank(V, "zz")) == (3, None)
    assert tune.truncate((V, K), 1) == ([V[0]], [K[0]])


@pytest.mark.parametrize(
    "ranks, expected",
    [
        ((None, None, 2), "ok"),  # in the top_k of the hybrid ranking
        ((5, 9, 4), "rerank"),  # among the hybrid candidates, below top_k
        ((None, 3, None), "fusion"),  # in a list's first search_k, dropped by the fusion
        ((12, 30, None), "deeper"),  # only below search_k
        ((None, None, None), "missed"),
    ],
)
def test_verdict_table(ranks, expected):
    assert tune.verdict(*ranks, top_k=2, search_k=5) == expected


def test_diagnose_ranks_in_deep_lists_and_in_the_fusion_of_their_first_search_k():
    deep_v = [doc("v1", "a:p1"), doc("v2", "a:p2"), doc("v3", "a:p3"), doc("v9", "c:p9")]
    deep_k = [doc("k4", "b:r1"), doc("v3", "a:p3")]
    rows = tune.diagnose(
        [(deep_v, deep_k)] * 3,
        [{"query": "q", "expected_source": s} for s in ("a:p3", "c:p9", "zz")],
        top_k=1,
        search_k=3,
        rrf_k=60,
        weights=(1.0, 1.0),
    )
    # fused first-3 lists: v3 (1/63 + 1/62) first, then v1 and k4 (1/61 each; v1 seen first), v2, …
    assert [(r["vector_rank"], r["keyword_rank"], r["hybrid_rank"], r["verdict"]) for r in rows] == [
        (3, 2, 1, "ok"),
        (4, None, None, "deeper"),
        (None, None, None, "missed"),
    ]
    text = tune.format_diagnosis(rows, 50)
    assert "     3       2      1  ok      q → a:p3" in text
    assert "     4       -      -  deeper  q → c:p9" in text
    assert text.endswith("Verdicts: ok 1, rerank 0, fusion 0, deeper 1, missed 1")
