"""graph.py, PROMPT_STYLE=evidence: windows from every candidate as the contexts, the citation checked,
and the passage shown instead of an answer stating a number no passage holds (fakes; the real 0.5B runs
it in tests/integration/test_real_answers.py)."""

from dataclasses import replace

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM

from app.graph import RAGContext
from app.workflow.checks.quote import SHOWN_PREFIX, evidence_instead
from app.workflow.generate import generate_node
from tests.conftest import runtime

FILLER = "会社の沿革を説明します。" * 30
HOURS = FILLER + "サポート窓口の受付時間は平日9時から18時までです。" + FILLER


@pytest.fixture
def docs():
    return [
        Document(page_content=FILLER, metadata={"source": "a.pdf:p1"}),
        Document(page_content="店舗:本店\n電話:03-1234-5678", metadata={"source": "b.csv:r1"}),
        Document(page_content=HOURS, metadata={"source": "c.pdf:p7"}),
    ]


def context(answer: str, **kw) -> RAGContext:
    return RAGContext(
        search=lambda q, k: [], llm=FakeListLLM(responses=[answer]), prompt_style="evidence", evidence_chars=200, **kw
    )


def test_the_passages_come_from_every_candidate_within_the_budget(docs):
    ctx = context("受付時間は平日9時から18時までです[1]")
    state = {"query": "サポート窓口の受付時間は？", "documents": docs, "reranked_documents": docs[:1]}
    out = generate_node(state, runtime(ctx))
    assert sum(len(c) for c in out["contexts"]) <= 200
    assert "平日9時から18時まで" in out["contexts"][0]  # from the third candidate, not re-ranked in
    assert out["cited_sources"] == ["c.pdf:p7"]
    assert out["answer"] == "受付時間は平日9時から18時までです[1]"
    assert out["quote"]["source"] == "c.pdf:p7"


def test_an_unsupported_number_shows_the_cited_passage_instead(docs):
    ctx = context("受付時間は平日8時から20時までです[1]")
    state = {"query": "サポート窓口の受付時間は？", "documents": docs, "reranked_documents": docs[:1]}
    out = generate_node(state, runtime(ctx))
    assert out["abstained"] is None and out["evidence_shown"] == "unsupported"
    assert out["answer"].startswith(SHOWN_PREFIX + "「") and out["answer"].endswith("」[1]")
    assert "平日9時から18時まで" in out["answer"]
    assert out["model_answer"] == "受付時間は平日8時から20時までです[1]"
    assert out["unsupported"] == ["8時", "20時"]
    assert out["cited_sources"] == ["c.pdf:p7"]


def test_weak_evidence_is_refused_rather_than_shown(docs):
    ctx = replace(context("受付時間は平日8時から20時までです[1]"), evidence_min_coverage=1.0)
    state = {"query": "サポート窓口の土曜日の受付時間は？", "documents": docs, "reranked_documents": docs[:1]}
    out = generate_node(state, runtime(ctx))
    assert out["abstained"] == "unsupported" and "evidence_shown" not in out
    assert out["answer"] == "資料に記載がありません"


def test_evidence_instead_exact_values():
    contexts = ["受付時間は平日9時から18時までです。", "店舗:本店"]
    assert (
        evidence_instead("受付時間は？", contexts, [], 0.5)
        == "資料の該当箇所: 「受付時間は平日9時から18時までです。」[1]"
    )
    assert evidence_instead("店舗は？", contexts, [2], 0.5) == "資料の該当箇所: 「店舗:本店」[2]"
    assert evidence_instead("駐車場の台数は？", contexts, [1], 0.5) is None
    assert evidence_instead("受付時間は？", [], [], 0.0) is None
