"""LLM-written community reports (app.graphrag.reports) with fake LLMs, and the LLM options the graph's
calls use (app.llm.with_options)."""

from __future__ import annotations

from langchain_core.language_models.fake import FakeListLLM

from app.graphrag.reports import LLMReportWriter
from app.llm import with_options
from app.storage.graphrag_types import CommunityReport


def extractive() -> CommunityReport:
    return CommunityReport(
        id="c0-1",
        level=0,
        title="VPN・認証アプリ",
        summary="VPNにはOTPが要る。",
        rank=7.5,
        findings=["認証アプリ: OTPを作る。"],
        chunk_ids=["k1"],
        document_ids=["d1"],
        entity_ids=["e1"],
    )


def test_llm_report_replaces_title_summary_findings_and_keeps_traceability():
    llm = FakeListLLM(
        responses=[
            '{"title": "社外接続の認証", "summary": "VPN接続にはOTPが必要。", '
            '"findings": ["OTPは認証アプリで作る", ""]}'
        ]
    )
    report = LLMReportWriter(llm).write(extractive())
    assert (report.title, report.summary, report.findings, report.kind) == (
        "社外接続の認証",
        "VPN接続にはOTPが必要。",
        ["OTPは認証アプリで作る"],
        "llm",
    )
    assert (report.id, report.rank, report.chunk_ids, report.entity_ids) == ("c0-1", 7.5, ["k1"], ["e1"])


def test_llm_report_unreadable_or_empty_keeps_the_extractive_one(caplog):
    assert LLMReportWriter(FakeListLLM(responses=["書けません"])).write(extractive()) is None
    assert LLMReportWriter(FakeListLLM(responses=['{"title": "x", "summary": ""}'])).write(extractive()) is None
    assert "keeping the extractive one" in caplog.text


def test_llm_report_prompt_shows_the_material():
    assert LLMReportWriter(None).prompt(extractive()) == (
        "エンティティ: VPN・認証アプリ\n\n文:\n- VPNにはOTPが要る。\n- 認証アプリ: OTPを作る。"
    )


def test_with_options_changes_stops_and_length_without_touching_the_model():
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        model="m",
        stop=["\n["],
        max_tokens=300,
        extra_body={"max_tokens": 300},
    )
    copy = with_options(chat, ["</s>"], 400)
    assert (copy.stop, copy.max_tokens, copy.extra_body) == (["</s>"], 400, {"max_tokens": 400})
    assert (chat.stop, chat.max_tokens) == (["\n["], 300)  # the original is unchanged
    plain = object()
    assert with_options(plain, [], 1) is plain
