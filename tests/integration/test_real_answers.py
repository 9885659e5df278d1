"""Real Japanese answers from a real Japanese-capable GGUF (Qwen2.5-Coder-0.5B-Instruct, assembled from its
PyPI part packages by `make test`): cited answers, the Sources order, and abstention, through the real CLI."""

from __future__ import annotations

import re

import pytest

from tests.integration.conftest import ROOT, run_cli

pytestmark = pytest.mark.integration

QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


@pytest.fixture(scope="module")
def qwen_env(ingested):
    if not QWEN.is_file():
        pytest.fail(f"{QWEN} is missing: run `make test` (it runs `python -m app.models --offline --llm 0.5b`)")
    return {"LLM_MODEL_PATH": str(QWEN), "LLM_MAX_TOKENS": "120", "RERANKER_MODEL": "acme/absent"}


def sources_section(stdout: str) -> list[str]:
    """The lines under the Sources header."""
    return [line for line in stdout.split("=== Sources")[1].splitlines()[1:] if line.startswith("- ")]


def test_ask_answers_in_japanese_with_a_valid_citation(qwen_env):
    result = run_cli(
        "app.ask",
        "--no-stream",
        "サポート窓口は何時から何時まで受け付けていますか？",
        env={**qwen_env, "ABSTAIN_MIN_SIMILARITY": "0"},
    )
    assert result.returncode == 0, result.stderr
    answer = result.stdout.split("=== Answer ===")[1].split("=== Sources")[0]
    assert "9" in answer and "18" in answer, answer  # 平日9時から18時
    assert all(1 <= int(n) <= 3 for n in re.findall(r"\[(\d+)\]", answer)), answer  # only valid citations
    assert sources_section(result.stdout)[0] == "- faq.csv:r2", result.stdout  # cited, or matched to the answer


def test_ask_abstains_below_the_similarity_threshold(qwen_env):
    result = run_cli(
        "app.ask",
        "--no-stream",
        "社員食堂の今週のメニューを教えてください。",
        env={**qwen_env, "ABSTAIN_MIN_SIMILARITY": "0.99"},
    )
    assert result.returncode == 0, result.stderr
    assert "=== Answer ===\n資料に記載がありません\n" in result.stdout
    assert "=== Sources (closest; they do not answer the question) ===" in result.stdout
    assert len(sources_section(result.stdout)) == 3


def test_evaluate_reports_abstention_and_generation_speed(qwen_env, tmp_path):
    questions = tmp_path / "q.json"
    questions.write_text(
        '[{"query": "無料トライアルの期間はどれくらいですか？", "expected_source": "faq.csv:r3", '
        '"expected_keywords": ["30日間"]},'
        ' {"query": "社員食堂の今週のメニューを教えてください。", "expected_source": null, "expected_keywords": []}]',
        encoding="utf-8",
    )
    result = run_cli(
        "app.evaluate",
        "--questions",
        str(questions),
        "--per-question",
        "--no-progress",
        env={**qwen_env, "ABSTAIN_MIN_SIMILARITY": "0"},
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "llm=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" in out
    assert "Questions evaluated: 2 (1 answerable, 1 not answered by the documents)" in out
    assert re.search(r"Abstention: precision (\d+\.\d%|-), recall (\d+\.\d%|-)", out)
    assert re.search(
        r"LLM: prompt evaluation \(to the first token\) mean \d+\.\d\ds \(median \d+\.\d\ds\), "
        r"generation mean \d+\.\d\ds, \d+\.\d tokens/s \(\d calls\)",
        out,
    ), out
    assert "→ " in out  # the answer preview line


def test_the_evidence_style_answers_from_windows_with_one_citation_under_the_grammar(qwen_env):
    """PROMPT_STYLE=evidence with the real 0.5B: the reply is `answer[n]` (the grammar leaves no other
    form but the refusal), n names a passage that exists, and the passages are windows within
    EVIDENCE_CHARS; the streamed text is the answer."""
    result = run_cli(
        "app.ask",
        "--json",
        "サポート窓口は何時から何時まで受け付けていますか？",
        env={**qwen_env, "ABSTAIN_MIN_SIMILARITY": "0", "PROMPT_STYLE": "evidence", "EVIDENCE_CHARS": "300"},
    )
    assert result.returncode == 0, result.stderr
    import json

    report = json.loads(result.stdout)
    answer = report["answer"]
    assert re.fullmatch(r"[^\[\]]+\[\d\]", answer) or answer == "資料に記載がありません", answer  # lines allowed
    assert "9" in answer and "18" in answer, answer
    assert report["sources"][0] == "faq.csv:r2", report


def test_an_answer_naming_what_no_document_says_is_withdrawn(qwen_env):
    """The unstated check on the real 0.5B: asked what the documents do not say (the product's programming
    language), the model names one; the answer is withdrawn with its text kept, and the same answer is
    given when the check is off (ABSTAIN_MIN_SUPPORT=0)."""
    import json

    from app.workflow.checks.support import support

    question = "ミナト勤怠のプログラミング言語は何ですか？"
    env = {**qwen_env, "ABSTAIN_MIN_SIMILARITY": "0", "ABSTAIN_MIN_COVERAGE": "0"}
    checked = run_cli("app.ask", "--json", question, env=env)
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["abstained"] == "unstated" and report["answer"] == "資料に記載がありません", report
    invented = report["model_answer"]
    assert support(invented, [], question) == 0.0, invented  # it adds words, and the check found them in no context
    unchecked = json.loads(run_cli("app.ask", "--json", question, env={**env, "ABSTAIN_MIN_SUPPORT": "0"}).stdout)
    assert unchecked["abstained"] is None and unchecked["answer"].startswith(invented.rstrip("。")), unchecked


def test_the_quote_under_a_real_answer_is_verbatim_in_its_source(qwen_env, rag_store):
    """The quote under the 0.5B's answer is found mechanically: its text occurs, after NFKC and whitespace
    normalization, in the stored chunk of the source it names, and it holds the answer's hours."""
    import json
    import unicodedata

    question = "サポート窓口は何時から何時まで受け付けていますか？"
    result = run_cli("app.ask", "--json", question, env={**qwen_env, "ABSTAIN_MIN_SIMILARITY": "0"})
    assert result.returncode == 0, result.stderr
    quote = json.loads(result.stdout)["quote"]
    assert quote and quote["line"] == f"根拠: 「{quote['text']}」[{quote['number']}]", quote
    norm = lambda s: "".join(unicodedata.normalize("NFKC", s).split())  # noqa: E731
    chunks = [d.page_content for d in rag_store.search(question, top_k=10) if d.metadata["source"] == quote["source"]]
    assert any(norm(quote["text"].strip("…")) in norm(c) for c in chunks), (quote, chunks)
    assert "9" in quote["text"] and "18" in quote["text"], quote


def test_an_answer_stating_a_number_no_document_states_is_withdrawn(qwen_env):
    """The number check on the real 0.5B: asked the staff's average age (no document states it), the
    model states one; the answer is withdrawn as unsupported, its text kept."""
    import json

    from app.workflow.checks.numbers import unsupported_numbers

    env = {**qwen_env, "ABSTAIN_MIN_SIMILARITY": "0", "ABSTAIN_MIN_COVERAGE": "0"}
    result = run_cli("app.ask", "--json", "従業員の平均年齢は何歳ですか？", env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["abstained"] == "unsupported" and report["answer"] == "資料に記載がありません", report
    assert unsupported_numbers(report["model_answer"], []), report  # it does state a number


def test_a_date_written_in_another_form_is_stated_and_scored(qwen_env, tmp_path):
    """Dates on the real 0.5B: the document writes the contract's end as ``2027-06-30``, the expected keyword
    is ``2027年6月30日``, the question names no date. The answer is not withdrawn by the number check,
    whichever form the model writes, `evaluate` scores it with the dates read in one form, and the quote
    holds the document's own form."""
    import json

    from app.text.normalize import contains

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "contract.md").write_text(
        "# 保守契約\n\n## 契約期間\n\n本契約の期間は2025-07-01から2027-06-30までとします。"
        "期間満了の3か月前までに申し出がない場合は1年間自動更新します。\n\n"
        "## 料金\n\n月額保守料金は12万円（税別）です。\n",
        encoding="utf-8",
    )
    question = {
        "query": "保守契約はいつ満了しますか？",
        "expected_source": "contract.md#契約期間",
        "expected_keywords": ["2027年6月30日"],
    }
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([question], ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "out.json"
    env = {**qwen_env, "ABSTAIN_MIN_SIMILARITY": "0", "GRAPH_EXTRACTOR": "off"}
    result = run_cli(
        "app.evaluate",
        "--no-progress",
        "--data-dir",
        str(tmp_path),
        "--questions",
        str(questions),
        "--json",
        str(out),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    row = json.loads(out.read_text(encoding="utf-8"))["results"][0]
    assert row["abstained"] is None and contains(row["answer"], "2027年6月30日"), row
    assert row["faithfulness"] == 1.0 and row["retrieval_hit"], row  # (the 0.5B writes 2027-06-30 today)
    assert row["quote"] and "2027-06-30" in row["quote"], row
