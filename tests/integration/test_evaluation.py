"""Evaluation end to end on real components (embedded PostgreSQL, real models, the real CLI)."""

import json

import pytest

from tests.integration.conftest import ROOT, run_cli

pytestmark = pytest.mark.integration


def test_evaluate_cli_on_the_sample_corpus(ingested, integration_env, tmp_path):
    questions = json.loads((ROOT / "data" / "eval_questions.json").read_text(encoding="utf-8"))[:4]
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    out_json = tmp_path / "report.json"
    result = run_cli("app.evaluate", "--questions", str(qfile), "--json", str(out_json), "--per-question")
    assert result.returncode == 0, result.stderr
    report = result.stdout
    assert "=== Evaluation Report ===" in report and "Re-rank=ON (top_k=3)" in report
    assert "Questions evaluated: 4" in report and "llm=tiny-llama.gguf" in report
    assert "Retrieval@10:" in report and "generate  mean" in report
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["summary"]["questions"] == 4 and data["summary"]["failed"] == 0
    assert all(len(r["retrieved"]) == 10 for r in data["results"])
    assert data["summary"]["retrieval_at_search_k"] >= 0.75  # vector search finds these FAQ rows


def test_evaluate_no_generate_measures_retrieval_without_loading_the_llm(ingested, integration_env):
    from tests.integration.conftest import run_cli

    result = run_cli("app.evaluate", "--no-generate", "--no-progress", env={"LLM_MODEL_PATH": "/nowhere.gguf"})
    assert result.returncode == 0, result.stderr  # the LLM file does not exist: it was never loaded
    assert (
        "Retrieval@k: " in result.stdout and "Faithfulness, Exact Match, Abstention: - (--no-generate)" in result.stdout
    )
    assert "llm=none (--no-generate)" in result.stdout
