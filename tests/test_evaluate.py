"""evaluate.py: loading and validating questions, scoring one question, aggregation, the report, the CLI."""

import json

import pytest
from langchain_core.language_models.fake import FakeListLLM

from app.cli import evaluate as evaluate_cli
from app.config import Settings
from app.errors import DataSourceError
from app.evaluation import report as evaluate_report
from app.evaluation import run as evaluate
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
    return RAGContext(
        search=lambda q, k: mock_documents[:k],
        llm=FakeListLLM(responses=["平日９時から18時です。"]),
        reranker=None,
        search_k=4,
        rerank_top_k=2,
    )


def test_load_questions_reads_the_list(qfile):
    assert evaluate.load_questions(qfile) == QUESTIONS


def test_load_questions_sample_set_has_36_answerable_and_8_unanswerable_questions():
    questions = evaluate.load_questions("data/eval_questions.json")
    assert len(questions) == 44 and sum(q["expected_source"] is None for q in questions) == 8
    assert all(set(evaluate.REQUIRED_KEYS) <= set(q) for q in questions)


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "invalid JSON"),
        ("{}", "expected a non-empty JSON list"),
        ("[]", "expected a non-empty JSON list"),
        ('[{"query": "q"}]', "question 1 lacks expected_source, expected_keywords"),
        ('[{"query": "q", "expected_source": "a", "expected_keywords": "x"}]', "expected_keywords must be a list"),
        ('["just a string"]', "question 1 lacks query, expected_source, expected_keywords"),
        ('[{"query": 1, "expected_source": "a", "expected_keywords": []}]', "query must be a non-empty string"),
        ('[{"query": " ", "expected_source": "a", "expected_keywords": []}]', "query must be a non-empty string"),
        ('[{"query": "q", "expected_source": "a", "expected_keywords": [1]}]', "expected_keywords must be a list of"),
    ],
)
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
    assert r["answer"] == "平日９時から18時です。[1]" and r["error"] is None  # [1]: cited for the model
    assert r["latency"] > 0 and set(r["timings"]) == {"route", "retrieve", "rerank", "generate", "first_token"}
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
    return {
        "retrieval_hit": hit,
        "retrieval_hit_search_k": hit_k,
        "faithfulness": faith,
        "exact_match": em,
        "latency": latency,
        "timings": {"retrieve": latency / 4, "rerank": 0.0, "generate": latency * 3 / 4},
        "error": error,
    }


def test_summarize_exact_values():
    results = [
        make_result(True, True, 1.0, True, 2.0),
        make_result(False, True, 0.5, False, 4.0),
        make_result(False, False, 0.0, False, 0.0, error="x"),
        make_result(True, True, 0.5, False, 6.0),
    ]
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
    report = evaluate_report.format_report(summary, Settings(), {"embed": "e", "reranker": "r", "llm": "l"}, True)
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
    report = evaluate_report.format_report(summary, Settings(), {}, False)
    assert "Re-rank=OFF (top_k=3)" in report and report.endswith("Questions evaluated: 1 (failed: 1)")


def test_format_table_marks_hits():
    row = {**make_result(True, False, 0.5, False, 1.0), "query": "Q", "expected_source": "a:r1", "sources": ["a:r1"]}
    table = evaluate_report.format_table([row]).splitlines()
    assert table[1] == " 1  ✓   ✗    0.50   1.0s  Q  [a:r1 → a:r1]"


def test_main_prints_report_and_writes_json(context, qfile, tmp_path, capsys):
    out_json = tmp_path / "out" / "r.json"
    code = evaluate_cli.main(
        ["--questions", str(qfile), "--json", str(out_json), "--per-question", "--no-progress"], context=context
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "=== Evaluation Report ===" in out and "Questions evaluated: 2" in out and " 1  ✓" in out
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["summary"]["questions"] == 2 and len(data["results"]) == 2
    assert data["results"][0]["query"] == "受付時間は？" and data["models"]["reranker"] == "none (retrieval order)"


def test_main_missing_question_file_is_one_line_error(context, tmp_path, capsys):
    assert evaluate_cli.main(["--questions", str(tmp_path / "x.json")], context=context) == 1
    assert capsys.readouterr().err == f"Error: question file not found: {tmp_path / 'x.json'}\n"


def test_summarize_scores_abstention_and_keeps_unanswerable_out_of_retrieval():
    answered = {**make_result(True, True, 1.0, True, 2.0), "answerable": True, "abstained": None}
    wrongly = {**make_result(True, True, 0.0, False, 2.0), "answerable": True, "abstained": "model"}
    right = {**make_result(False, False, 1.0, True, 1.0), "answerable": False, "abstained": "low_confidence"}
    missed = {**make_result(False, False, 1.0, True, 1.0), "answerable": False, "abstained": None}
    s = evaluate.summarize([answered, wrongly, right, missed])
    assert s["answerable"] == 2 and s["retrieval_at_top_k"] == 1.0 and s["faithfulness"] == 0.5
    assert (s["abstained"], s["unanswerable"]) == (2, 2)
    assert s["abstention_precision"] == 0.5 and s["abstention_recall"] == 0.5


def test_abstention_scores_are_undefined_without_abstentions_or_unanswerable_questions():
    s = evaluate.abstention_scores([{"answerable": True, "abstained": None}])
    assert s["abstention_precision"] is None and s["abstention_recall"] is None


def test_generation_speed_splits_prompt_evaluation_and_generation():
    rows = [
        {"timings": {"first_token": 1.0, "generate": 3.0}, "answer_tokens": 11},
        {"timings": {"first_token": 3.0, "generate": 5.0}, "answer_tokens": 21},
        {"timings": {"generate": 0.0}, "answer_tokens": 0},
    ]  # abstained without the LLM
    s = evaluate.generation_speed(rows)
    assert s == {
        "llm_calls": 2,
        "prompt_eval_mean": 2.0,
        "first_token_median": 2.0,
        "generation_mean": 2.0,
        "tokens_per_s": 7.5,
    }


def test_format_table_shows_the_answer_preview_and_unanswerable_rows():
    row = {
        **make_result(False, False, 1.0, True, 1.0),
        "query": "Q",
        "expected_source": None,
        "answerable": False,
        "abstained": "low_confidence",
        "answer": "資料に記載がありません",
        "sources": ["a:r1"],
    }
    long = {
        **make_result(True, True, 1.0, True, 1.0),
        "query": "L",
        "expected_source": "a:r1",
        "answer": "あ" * 100 + "\n",
        "sources": ["a:r1"],
        "cited_sources": ["a:r1"],
    }
    lines = evaluate_report.format_table([row, long]).splitlines()
    assert "-   -       - " in lines[1] and "[(not in the documents) → a:r1]" in lines[1]
    assert lines[2].strip() == "→ 資料に記載がありません  (abstained: low_confidence)"
    assert lines[4].strip() == "→ " + "あ" * 80


def test_load_questions_accepts_null_but_not_other_sources(tmp_path):
    path = tmp_path / "q.json"
    path.write_text('[{"query": "q", "expected_source": 3, "expected_keywords": []}]', encoding="utf-8")
    with pytest.raises(DataSourceError, match="expected_source must be a source ID or null"):
        evaluate.load_questions(path)
    path.write_text('[{"query": "q", "expected_source": null, "expected_keywords": []}]', encoding="utf-8")
    assert evaluate.load_questions(path)[0]["expected_source"] is None


def test_citation_rate_counts_the_model_s_own_citations_among_answers_given():
    rows = [
        {"answer": "a[1]", "model_cited": True, "abstained": None},
        {"answer": "b", "model_cited": False, "abstained": None},
        {"answer": "資料に記載がありません", "model_cited": False, "abstained": "model"},
        {"answer": "", "model_cited": False, "abstained": None, "error": "x"},
    ]
    assert evaluate.citation_rate(rows) == 0.5 and evaluate.citation_rate([]) is None


def test_overview_questions_are_scored_by_coverage_and_source_recall(tmp_path, monkeypatch):
    from app.evaluation.run import summarize

    path = tmp_path / "q.json"
    path.write_text(
        '[{"query": "製品を一覧で", "expected_keywords": ["ミナト勤怠", "ミナトBI"], '
        '"expected_sources": ["products.csv", "faq.csv"]}]',
        encoding="utf-8",
    )
    question = evaluate.load_questions(path)[0]

    class Context:
        count_tokens = None

    def fake_run(query, context, graph):
        return {
            "answer": "ミナト勤怠があります。",
            "sources": ["products.csv:r3"],
            "mode": "global",
            "timings": {"route": 0.0, "global": 1.0},
        }

    import app.evaluation.run

    monkeypatch.setattr(app.evaluation.run, "run_rag", fake_run)
    result = evaluate.evaluate_single(question, Context())
    assert result["overview"] and not result["answerable"] and result["mode"] == "global"
    assert result["coverage"] == 0.5 and result["source_recall"] == 0.5
    summary = summarize([result])
    assert summary["overview"] == 1 and summary["coverage"] == 0.5 and summary["source_recall"] == 0.5
    assert summary["unanswerable"] == 0 and summary["answerable"] == 0  # neither retrieval nor abstention
    assert summary["faithfulness"] is None and summary["exact_match"] is None  # no question they apply to
    report = evaluate_report.format_report(summary, Settings(), {"mode": "global", "llm": "q.gguf"}, False)
    assert "Faithfulness: -\nExact Match: -" in report and "Coverage: 50.0%" in report
    assert summary["modes"] == {"global": 1} and "global" in summary["stages"]


def test_load_questions_rejects_bad_expected_sources(tmp_path):
    path = tmp_path / "q.json"
    path.write_text('[{"query": "q", "expected_keywords": [], "expected_sources": "faq.csv"}]', encoding="utf-8")
    with pytest.raises(DataSourceError, match="expected_sources must be a list of file names"):
        evaluate.load_questions(path)


def test_answer_outcomes_separate_refusals_and_invented_answers():
    from app.evaluation.run import answer_outcomes

    results = [
        {"answerable": True, "abstained": None},
        {"answerable": True, "abstained": "model"},
        {"answerable": True, "abstained": None},
        {"answerable": True, "abstained": "low_coverage"},
        {"answerable": False, "abstained": None},
        {"answerable": False, "abstained": "low_coverage"},
        {"answerable": False, "abstained": None, "error": "boom"},
        {"answerable": False, "overview": True, "abstained": None},
    ]
    assert answer_outcomes(results) == {"false_abstention_rate": 0.5, "invented_rate": 1 / 3}
    assert answer_outcomes([]) == {"false_abstention_rate": None, "invented_rate": None}


def test_evaluate_single_scores_the_keywords_in_the_context_given_to_the_llm():
    from langchain_core.documents import Document
    from langchain_core.language_models.fake import FakeListLLM

    from app.evaluation.run import evaluate_single
    from app.graph import RAGContext

    docs = [Document(page_content="締め切りは2027-06-30です。", metadata={"source": "a.md"})]
    ctx = RAGContext(search=lambda q, k: docs, llm=FakeListLLM(responses=["わかりません"]))
    result = evaluate_single(
        {"query": "締め切りは？", "expected_source": "a.md", "expected_keywords": ["2027年6月30日", "提出"]}, ctx
    )
    assert result["context_keywords"] == 0.5 and result["faithfulness"] == 0.0


def test_evidence_hits_count_quotes_holding_every_keyword_among_found_sources():
    from app.evaluation.run import evidence_hits

    rows = [
        {"retrieval_hit_search_k": True, "quote": "締め切りは毎月25日です。", "evidence_keywords": 1.0},
        {"retrieval_hit_search_k": True, "quote": "締め切りは月末です。", "evidence_keywords": 0.5},
        {"retrieval_hit_search_k": True, "quote": None, "evidence_keywords": 1.0},  # no quote, no hit
        {"retrieval_hit_search_k": True, "quote": "x", "evidence_keywords": 1.0},
        {"retrieval_hit_search_k": False, "quote": "y", "evidence_keywords": 1.0},
    ]  # source not found: left out
    assert evidence_hits(rows) == {"evidence_hit": 0.5, "quoted": 0.75}
    assert evidence_hits([]) == {"evidence_hit": None, "quoted": None}


def test_the_first_passage_shown_is_scored_like_the_answer():
    from app.evaluation.run import passage_scores

    shown = [{"text": "受付時間は平日9時から18時です。"}, {"text": "土日は休みです。"}]
    assert passage_scores(shown, ["9時", "18時"]) == {
        "passage": "受付時間は平日9時から18時です。",
        "passage_keywords": 1.0,
        "passage_hit": True,
    }
    assert passage_scores(shown, ["9時", "土日"])["passage_keywords"] == 0.5
    assert passage_scores([], ["9時"]) == {"passage": "", "passage_keywords": 0.0, "passage_hit": False}


# --- a question's scope ---------------------------------------------------------------------------


def test_a_questions_scope_is_parsed_into_a_scope():
    from datetime import date

    from app.storage.scope import Scope

    question = {**QUESTIONS[0], "scope": {"folders": ["docs/規程"], "formats": [".PDF"], "since": "2025-04-01"}}
    assert evaluate.question_scope(question) == Scope(folders=("docs/規程/",), formats=("pdf",), since=date(2025, 4, 1))
    assert evaluate.question_scope(QUESTIONS[0]) is None
    assert evaluate.question_scope({**QUESTIONS[0], "scope": {}}) is None


@pytest.mark.parametrize(
    "scope, message",
    [
        ("docs", 'question 1: scope is {"folders": [...], "formats": [...], "since": "YYYY-MM-DD"}, got \'docs\''),
        ({"folder": ["docs"]}, 'question 1: scope is {"folders": [...], "formats": [...], "since": "YYYY-MM-DD"}'),
        ({"folders": "docs"}, "question 1: scope: folders is a list of strings, got 'docs'"),
        ({"since": 2025}, "question 1: scope: since takes a day as YYYY-MM-DD (2025-04-01), got 2025"),
        ({"folders": ["../x"]}, "question 1: a folder may not contain '..', got '../x'"),
        ({"since": "4/1"}, "question 1: since takes a day as YYYY-MM-DD (2025-04-01), got '4/1'"),
    ],
)
def test_load_questions_rejects_a_bad_scope_in_one_line(tmp_path, scope, message):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([{**QUESTIONS[0], "scope": scope}], ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DataSourceError) as caught:
        evaluate.load_questions(path)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_a_scoped_question_is_asked_with_its_scopes_context(context, mock_documents):
    from dataclasses import replace

    rules = [d for d in mock_documents if d.metadata["source"] != "faq.csv:r2"]
    made = []

    def scoped(scope):
        made.append(scope)
        return replace(context, search=lambda q, k: rules[:k])

    scope = {"folders": ["docs/規程"], "formats": ["pdf"]}
    questions = [QUESTIONS[0], {**QUESTIONS[0], "scope": scope}, {**QUESTIONS[0], "scope": scope}]
    results = evaluate.run_evaluation(questions, context, scoped=scoped)
    assert [r["retrieval_hit_search_k"] for r in results] == [True, False, False]
    assert "scope" not in results[0]
    assert results[1]["scope"] == {"folders": ["docs/規程/"], "formats": ["pdf"], "since": None}
    assert len(made) == 1  # one context per scope
    unscoped_run = evaluate.run_evaluation(questions[1:2], context)
    assert unscoped_run[0]["error"] == (
        "ValueError: this question has a scope, and this run makes no context for a scope"
    )
    table = evaluate_report.format_table(results).splitlines()
    rows = [line for line in table if "受付時間は？" in line and "→" in line and "[" in line]
    assert ["[in docs/規程/; pdf]" in line for line in rows] == [False, True, True]


def test_the_command_makes_a_scoped_context_sharing_the_models(context, mocker):
    from app.storage.scope import Scope, missing_folder_message

    missing = mocker.patch("app.cli.evaluate.missing_folders_of", return_value=[])
    made = mocker.patch("app.cli.evaluate.default_context", return_value="scoped ctx")
    scoped = evaluate_cli.scoped_contexts(Settings(), context, "hybrid", ("everyone",), generate=False)
    rules = Scope(folders=("docs/規程",))
    assert scoped(rules) == "scoped ctx"
    assert made.call_args.kwargs == {
        "llm": context.llm,
        "reranker": context.reranker,
        "mode": "hybrid",
        "generate": False,
        "principals": ("everyone",),
        "scope": rules,
    }
    missing.return_value = ["docs/規程/"]
    with pytest.raises(ValueError) as caught:
        scoped(rules)
    assert str(caught.value) == missing_folder_message(["docs/規程/"])
