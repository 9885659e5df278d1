"""evaluate.py: loading and validating questions, scoring one question, aggregation, the report, the CLI."""
import json

import pytest
from langchain_core.language_models.fake import FakeListLLM

from app import evaluate
from app.config import Settings
from app.errors import DataSourceError
from app.graph import RAGContext

QUESTIONS = [
    {"query": "受付時間は？", "expected_source": "faq.csv:r2", "expected_keywords": ["平日9時", "18時"]},
    {"query": "エラーE3010は？", "expected_source": "technical_guide.pdf:p3", "expected_keywords": ["タイムアウト"]},
]


@pytest.fixture
def qfile(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps(QUESTIONS, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def context(mock_documents):
    return RAGContext(search=lambda q, k: mock_documents[:k],
                      llm=FakeListLLM(responses=["平日９時から18時です。"]), reranker=None,
                      search_k=4, rerank_top_k=2)


def test_load_questions_reads_the_list(qfile):
    assert evaluate.load_questions(qfile) == QUESTIONS


def test_load_questions_sample_set_has_33_valid_questions():
    questions = evaluate.load_questions("data/eval_questions.json")
    assert len(questions) == 33
    assert all(set(evaluate.REQUIRED_KEYS) <= set(q) for q in questions)


@pytest.mark.parametrize("content,message", [
    ("{not json", "invalid JSON"),
    ("{}", "expected a non-empty JSON list"),
    ("[]", "expected a non-empty JSON list"),
    ('[{"query": "q"}]', "question 1 lacks expected_source, expected_keywords"),
    ('[{"query": "q", "expected_source": "a", "expected_keywords": "x"}]', "expected_keywords must be a list"),
    ('["just a string"]', "question 1 lacks query, expected_source, expected_keywords"),
])
def test_load_questions_rejects_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataSourceError, match=message):
        evaluate.load_questions(path)


def test_load_questions_missing_file(tmp_path):
    with pytest.raises(DataSourceError, match="question file not found"):
        evaluate.load_questions(tmp_path / "none.json")


def test_evaluate_single_scores_hits_keywords_and_latency(context):
    r = evaluate.evaluate_single(QUESTIONS[0], context)
    assert r["retrieval_hit"] is True and r["retrieval_hit_search_k"] is True
    assert r["faithfulness"] == 1.0 and r["exact_match"] is True
    assert r["answer"] == "平日９時から18時です。" and r["error"] is None
    assert r["latency"] > 0 and set(r["timings"]) == {"retrieve", "rerank", "generate"}
    assert r["sources"] == ["faq.csv:r2", "technical_guide.pdf:p4"]


def test_evaluate_single_distinguishes_before_and_after_rerank(context):
    r = evaluate.evaluate_single(QUESTIONS[1], context)  # p3 is 4th of 4: retrieved but not in top 2
    assert r["retrieval_hit_search_k"] is True and r["retrieval_hit"] is False
    assert r["faithfulness"] == 0.0 and r["exact_match"] is False


def test_evaluate_single_records_failure_instead_of_raising(context):
    def broken(q, k):
        raise RuntimeError("db went away")

    context.search = broken
    r = evaluate.evaluate_single(QUESTIONS[0], context)
    assert r["error"] == "RuntimeError: db went away"
    assert r["retrieval_hit"] is False and r["faithfulness"] == 0.0


def test_run_evaluation_runs_every_question(context):
    results = evaluate.run_evaluation(QUESTIONS, context)
    assert [r["query"] for r in results] == ["受付時間は？", "エラーE3010は？"]


def make_result(hit, hit_k, faith, em, latency, error=None):
    return {"retrieval_hit": hit, "retrieval_hit_search_k": hit_k, "faithfulness": faith, "exact_match": em,
            "latency": latency, "timings": {"retrieve": latency / 4, "rerank": 0.0, "generate": latency * 3 / 4},
            "error": error}


def test_summarize_exact_values():
    results = [make_result(True, True, 1.0, True, 2.0), make_result(False, True, 0.5, False, 4.0),
               make_result(False, False, 0.0, False, 0.0, error="x"), make_result(True, True, 0.5, False, 6.0)]
    s = evaluate.summarize(results)
    assert s["questions"] == 4 and s["failed"] == 1
    assert s["retrieval_at_top_k"] == 0.5 and s["retrieval_at_search_k"] == 0.75
    assert s["faithfulness"] == 0.5 and s["exact_match"] == 0.25
    assert s["latency_mean"] == 4.0 and s["latency_p95"] == pytest.approx(5.8)
    assert s["stages"]["retrieve"]["mean"] == 1.0 and s["stages"]["generate"]["mean"] == 3.0


def test_summarize_empty():
    s = evaluate.summarize([])
    assert s["questions"] == 0 and s["retrieval_at_top_k"] == 0.0 and s["latency_mean"] == 0.0


def test_format_report_has_the_spec_lines():
    summary = evaluate.summarize([make_result(True, True, 1.0, True, 2.0), make_result(False, True, 0.5, False, 4.0)])
    report = evaluate.format_report(summary, Settings(), {"embed": "e", "reranker": "r", "llm": "l"}, True)
    lines = report.splitlines()
    assert lines[:5] == ["=== Evaluation Report ===", "", "Chunk=500 overlap=100", "Top-k=10", "Re-rank=ON (top_k=3)"]
    assert "Retrieval@k: 50.0%  (k=3: the chunks given to the LLM)" in lines
    assert "Retrieval@10: 100.0%  (before re-ranking)" in lines
    assert "Faithfulness: 75.0%" in lines and "Exact Match: 50.0%" in lines
    assert "Latency: 3.0s  (mean; p95 3.9s)" in lines
    assert "  generate  mean 2.25s  p95 2.92s" in lines
    assert lines[-1] == "Questions evaluated: 2"


def test_format_report_rerank_off_and_failures():
    summary = evaluate.summarize([make_result(False, False, 0.0, False, 0.0, error="x")])
    report = evaluate.format_report(summary, Settings(), {}, False)
    assert "Re-rank=OFF (top_k=3)" in report and report.endswith("Questions evaluated: 1 (failed: 1)")


def test_format_table_marks_hits():
    row = {**make_result(True, False, 0.5, False, 1.0), "query": "Q", "expected_source": "a:r1", "sources": ["a:r1"]}
    table = evaluate.format_table([row]).splitlines()
    assert table[1] == " 1  ✓   ✗    0.50   1.0s  Q  [a:r1 → a:r1]"


def test_main_prints_report_and_writes_json(context, qfile, tmp_path, capsys):
    out_json = tmp_path / "out" / "r.json"
    code = evaluate.main(["--questions", str(qfile), "--json", str(out_json), "--per-question", "--no-progress"],
                         context=context)
    assert code == 0
    out = capsys.readouterr().out
    assert "=== Evaluation Report ===" in out and "Questions evaluated: 2" in out and " 1  ✓" in out
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["summary"]["questions"] == 2 and len(data["results"]) == 2
    assert data["results"][0]["query"] == "受付時間は？" and data["models"]["reranker"] == "none (retrieval order)"


def test_main_missing_question_file_is_one_line_error(context, tmp_path, capsys):
    assert evaluate.main(["--questions", str(tmp_path / "x.json")], context=context) == 1
    assert capsys.readouterr().err == f"Error: question file not found: {tmp_path / 'x.json'}\n"
