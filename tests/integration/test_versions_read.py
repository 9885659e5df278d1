"""Issue 51's done-when check on the real pipeline (embedded PostgreSQL + pgvector, the real embedder, the
real Qwen2.5-Coder-0.5B): two versions of a rule, the past one fuller with another amount; the model reads
the version in force only, answers its amount, cites it first, and the note says what the past one said.
A question about the time before the revision reads both versions, as before."""

from __future__ import annotations

import json
import uuid

import pytest

from app.permissions.principals import FULL_ACCESS
from app.text.normalize import contains
from tests.integration.conftest import ROOT, run_cli

pytestmark = pytest.mark.integration

QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QUESTION = "資格取得奨励金は一資格につきいくらですか？"
OLD, NEW = "人事規程_2023.md#資格取得奨励金", "人事規程_2024.md#資格取得奨励金"

COMMON = (
    "## 目的\n\nこの規程は、社員の人事に関する基本的な事項を定める。\n\n"
    "## 勤務時間\n\n所定の勤務時間は9時から18時までとし、休憩は12時から13時までの1時間とする。\n\n"
    "## 休暇\n\n年次有給休暇は入社6か月後に10日付与し、その後は勤続年数に応じて加算する。\n\n"
)
PAST_TEXT = (
    "# 人事規程\n\n2023年4月1日改定\n\n"
    + COMMON
    + "## 資格取得奨励金\n\n会社が業務に必要と認める資格を取得した社員には、資格取得奨励金を支給する。"
    "資格取得奨励金は一資格につき30,000円とする。申請は合格証の写しを添えて、合格の日から3か月以内に"
    "人事部へ行う。同じ資格に二度支給することはない。\n"
)
CURRENT_TEXT = (
    "# 人事規程\n\n2024年4月1日改定\n\n"
    + COMMON
    + "## 資格取得奨励金\n\n資格取得奨励金は一資格につき50,000円とする。\n"
)


@pytest.fixture(scope="module")
def rules(integration_env, tmp_path_factory):
    """The two versions in a data folder of their own, synced into a collection of their own."""
    if not QWEN.is_file():
        pytest.fail(f"{QWEN} is missing: run `make test` (it runs `python -m app.models --offline --llm 0.5b`)")
    data = tmp_path_factory.mktemp("versions-read")
    (data / "docs" / "規程").mkdir(parents=True)
    (data / "docs" / "規程" / "人事規程_2023.md").write_text(PAST_TEXT, encoding="utf-8")
    (data / "docs" / "規程" / "人事規程_2024.md").write_text(CURRENT_TEXT, encoding="utf-8")
    env = {
        "DB_NAME": f"t51_{uuid.uuid4().hex[:8]}",  # a database of its own: the collection name is no variable
        "LLM_MODEL_PATH": str(QWEN),
        "LLM_MAX_TOKENS": "80",
        "RERANKER_MODEL": "acme/absent",
        "ABSTAIN_MIN_SIMILARITY": "0",
        "GRAPH_EXTRACTOR": "off",
    }
    result = run_cli("app.ingest", "--data-dir", str(data), env=env)
    assert result.returncode == 0, result.stderr
    return env


def test_the_version_in_force_answers_and_the_past_amount_is_noted(rules):
    result = run_cli("app.ask", "--json", "--", QUESTION, env=rules)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)

    assert contains(out["answer"], "50,000円") and not contains(out["answer"], "30,000円"), out
    assert out["abstained"] is None and out["sources"][0] == NEW, out
    old = [v for v in out["source_versions"] if v["source"] == OLD]
    assert old and old[0]["superseded_by"] == "docs/規程/人事規程_2024.md" and old[0]["effective"] == "2023-04-01"
    assert any(note.startswith("2023-04-01 版では 30,000円") for note in out["version_notes"]), out["version_notes"]


def test_a_question_about_the_time_before_the_revision_reads_both(rules, monkeypatch):
    from app.config import Settings
    from app.graph import default_context, run_rag

    for name, value in rules.items():
        monkeypatch.setenv(name, value)
    ctx = default_context(Settings.from_env(), reranker=None, generate=False, principals=FULL_ACCESS)
    now = run_rag(QUESTION, ctx)
    before = run_rag("改定前の資格取得奨励金は一資格につきいくらでしたか？", ctx)

    def sources(state, key):
        return [d.metadata["source"] for d in state[key]]

    assert OLD in sources(now, "hidden_versions") and OLD not in sources(now, "reranked_documents")
    assert sources(now, "reranked_documents")[0] == NEW
    assert before["hidden_versions"] == [] and OLD in sources(before, "reranked_documents")
