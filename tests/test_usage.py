"""The administrator's usage summary (app.serving.usage), its page and chart (app.web.admin) and the page's
conversation export (the page's own script, run by Node): pure functions, exact values."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, date, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient

from app.serving.usage import AnswerClock, Day, answer_usage, document_of, summarize, summary_lines
from app.users.identity import Identity
from app.web.admin import ADMIN_ONLY, admin_page, admin_reader, chart_svg, read_days
from app.web.app import create_app
from app.web.export import EXPORT_SCRIPT
from tests.web_fakes import PageService

DOCS = ["faq.csv", "rules.md", "manual.pdf", "rules.md.bak"]


def row(at: datetime, answer_id: str, total_ms: int | None, **extra) -> dict:
    """One audit row of an answer, as app.storage.usage.answer_rows reads it."""
    base = {
        "at": at,
        "surface": "web",
        "answer_id": answer_id,
        "abstained": None,
        "cached": False,
        "cited": [],
        "sources": [],
        "passages_ms": None,
        "first_token_ms": None,
        "total_ms": total_ms,
        "question": None,
    }
    return {**base, **extra}


ROWS = [
    row(datetime(2026, 11, 20, 10, 0, tzinfo=UTC), "old", 99_999, cited=["gone.md#a"]),  # before the window
    row(
        datetime(2026, 11, 25, 9, 0, tzinfo=UTC),
        "a1",
        3000,
        cited=["faq.csv:r2", "rules.md#経費", "faq.csv:r3"],
        passages_ms=100,
        first_token_ms=900,
        question="受付時間は？",
    ),
    row(datetime(2026, 11, 26, 9, 0, tzinfo=UTC), "a2", 500, surface="mcp", abstained="no_context", passages_ms=200),
    row(
        datetime(2026, 11, 26, 10, 0, tzinfo=UTC),
        "a3",
        4000,
        cited=["faq.csv:r3"],
        passages_ms=301,
        first_token_ms=1200,
    ),
    row(
        datetime(2026, 11, 26, 11, 0, tzinfo=UTC), "a3", 4000, cached=True, abstained="unsupported"
    ),  # same answer again
]


@pytest.fixture
def usage():
    return summarize(ROWS, {"a3", "elsewhere"}, DOCS, date(2026, 11, 26), 2, tz=UTC)


def test_summarize_counts_each_day_of_the_window(usage):
    assert usage.days == (
        Day(date(2026, 11, 25), questions=1, refusals=0, flagged=0, passages_ms=100, first_token_ms=900),
        Day(date(2026, 11, 26), questions=3, refusals=2, flagged=2, passages_ms=250, first_token_ms=1200),
    )
    assert usage.total == Day(None, questions=4, refusals=2, flagged=2, passages_ms=200, first_token_ms=1050)
    assert usage.total.flagged_share == 0.5
    assert usage.days[0].flagged_share == 0.0


def test_summarize_keeps_empty_days_for_the_chart():
    got = summarize(ROWS, set(), DOCS, date(2026, 11, 28), 4, tz=UTC).days
    assert [(d.day.day, d.questions) for d in got] == [(25, 1), (26, 3), (27, 0), (28, 0)]
    assert got[-1] == Day(date(2026, 11, 28), 0, 0, 0, None, None) and got[-1].flagged_share is None


def test_summarize_names_the_slowest_answers_first_the_earlier_on_a_tie(usage):
    assert [(s.total_ms, s.at.hour, s.surface, s.question) for s in usage.slowest] == [
        (4000, 10, "web", None),
        (4000, 11, "web", None),
        (3000, 9, "web", "受付時間は？"),
        (500, 9, "mcp", None),
    ]
    assert len(summarize(ROWS, set(), DOCS, date(2026, 11, 26), 2, tz=UTC, slowest=1).slowest) == 1


def test_summarize_counts_citing_answers_per_document_and_the_never_cited(usage):
    # faq.csv: a1 cites two of its rows (one answer), a3 one: 2 answers; rules.md.bak is not rules.md
    assert usage.most_cited == (("faq.csv", 2), ("rules.md", 1))
    assert usage.never_cited == ("manual.pdf", "rules.md.bak")


def test_summarize_days_follow_the_time_zone():
    late = [row(datetime(2026, 11, 25, 16, 0, tzinfo=UTC), "x", 10)]  # 01:00 on the 26th in Tokyo
    tokyo = timezone(timedelta(hours=9))
    assert [d.questions for d in summarize(late, set(), [], date(2026, 11, 26), 2, tz=UTC).days] == [1, 0]
    assert [d.questions for d in summarize(late, set(), [], date(2026, 11, 26), 2, tz=tokyo).days] == [0, 1]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("faq.csv:r2", "faq.csv"),
        ("rules.md#経費", "rules.md"),
        ("rules.md.bak", "rules.md.bak"),  # the longer ID, not rules.md
        ("manual.pdf", "manual.pdf"),
        ("book.xlsx!Sheet1:r4", "book.xlsx!Sheet1:r4"),  # not stored: itself
        ("faq.csvx:r2", "faq.csvx:r2"),
    ],
)
def test_document_of_a_source(source, expected):
    assert document_of(source, DOCS) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("faq.csv:r2", "csv/faq.csv"),  # a source is named by its file's name, the document by its path
        ("営業手当.md#支給額", "docs/営業/営業手当.md"),
        ("休暇規程.md#年次有給休暇", "休暇規程.md#年次有給休暇"),  # two documents of that name: neither is credited
        ("docs/営業/営業手当.md", "docs/営業/営業手当.md"),
    ],
)
def test_document_of_a_source_named_by_its_files_name(source, expected):
    docs = ["csv/faq.csv", "docs/営業/営業手当.md", "docs/規程/2024/休暇規程.md", "docs/規程/2025/休暇規程.md"]
    assert document_of(source, docs) == expected


def test_answer_usage_of_a_written_answer():
    clock = AnswerClock(started=100.0, passages_s=0.25, first_token_s=1.5)
    clock.elapsed = lambda: 3.2  # type: ignore[method-assign]  (the clock's own reading, fixed)
    result = {"answer_id": "a1", "abstained": "", "cited_sources": ["faq.csv:r2"]}
    assert answer_usage(result, clock) == {
        "answer_id": "a1",
        "abstained": None,
        "cached": False,
        "cited": ["faq.csv:r2"],
        "passages_ms": 250,
        "first_token_ms": 1500,
        "total_ms": 3200,
    }


def test_answer_usage_of_an_earlier_answer_given_again():
    got = answer_usage({"answer_id": None, "abstained": "no_context"}, cached_s=0.0124)
    assert got == {
        "answer_id": None,
        "abstained": "no_context",
        "cached": True,
        "cited": [],
        "passages_ms": 12,
        "first_token_ms": 12,
        "total_ms": 12,
    }


def test_answer_clock_notes_the_first_call_and_passes_every_call_on():
    clock, seen = AnswerClock(), []
    on_token = clock.on_token(seen.append)
    on_token("受付")
    first = clock.first_token_s
    on_token("時間")
    assert seen == ["受付", "時間"] and first is not None and clock.first_token_s == first
    clock.on_passages(None)([{"source": "faq.csv:r2"}])  # no callback of the asker's: only timed
    assert clock.passages_s is not None


def test_summary_lines(usage):
    flagged = [{"question": "受付時間は？", "flagged": 2, "helpful": 1}]
    assert summary_lines(usage, flagged, show_questions=False, tz=UTC) == [
        "日付\t質問\t回答なし\t👎\t👎の割合\t出典まで（中央値）\t最初の文字まで（中央値）",
        "2026-11-26\t3\t2\t2\t67%\t250 ms\t1,200 ms",
        "2026-11-25\t1\t0\t0\t0%\t100 ms\t900 ms",
        "合計\t4\t2\t2\t50%\t200 ms\t1,050 ms",
        "",
        "slowest answers:",
        "  2026-11-26 10:00\tweb\t4,000 ms\tfirst token 1,200 ms",
        "  2026-11-26 11:00\tweb\t4,000 ms\tfirst token -",
        "  2026-11-25 09:00\tweb\t3,000 ms\tfirst token 900 ms\t受付時間は？",
        "  2026-11-26 09:00\tmcp\t500 ms\tfirst token -",
        "most cited documents:",
        "  2\tfaq.csv",
        "  1\trules.md",
        "never cited (2):",
        "  manual.pdf",
        "  rules.md.bak",
        "most flagged questions:",
        "  👎 2\t👍 1\t(question not stored: AUDIT_LOG_QUESTIONS=0)",
    ]
    assert summary_lines(usage, flagged, show_questions=True, tz=UTC)[-1] == "  👎 2\t👍 1\t受付時間は？"


def test_chart_svg_of_two_days():
    days = [Day(date(2026, 11, 25), 1, 0, 0, None, None), Day(date(2026, 11, 26), 4, 1, 1, None, None)]
    assert chart_svg(days) == (
        '<svg xmlns="http://www.w3.org/2000/svg" id="chart" width="70" height="128" viewBox="0 0 70 128" '
        'role="img" aria-label="直近2日の質問と回答なしの数">'
        '<line x1="26" y1="110" x2="64" y2="110" stroke="#999"/>'
        '<text x="24" y="14" font-size="10" text-anchor="end">4</text>'
        '<text x="24" y="110" font-size="10" text-anchor="end">0</text>'
        "<g><title>2026-11-25: 質問 1、回答なし 0、👎 0</title>"
        '<rect x="28" y="85" width="14" height="25" fill="#4a7bb7"/></g>'
        "<g><title>2026-11-26: 質問 4、回答なし 1、👎 1</title>"
        '<rect x="46" y="10" width="14" height="75" fill="#4a7bb7"/>'
        '<rect x="46" y="85" width="14" height="25" fill="#d9822b"/></g>'
        '<text x="35" y="124" font-size="10" text-anchor="middle">11/25</text>'
        '<text x="53" y="124" font-size="10" text-anchor="middle">11/26</text></svg>'
    )


def test_chart_svg_without_answers_draws_the_axis_only():
    got = chart_svg([Day(date(2026, 11, 26), 0, 0, 0, None, None)])
    assert "<rect" not in got and got.count("11/26") == 1 and ">1</text>" in got


def page(usage, flagged, show_questions: bool) -> str:
    return admin_page(
        usage, usage.days, flagged, days=2, audit_on=True, show_questions=show_questions, feedback_on=True
    )


def test_admin_page_shows_question_texts_only_when_stored_and_escaped(usage):
    flagged = [{"question": "<script>x</script>賞与は？", "flagged": 1, "helpful": 0, "chosen_sources": ["a&b.md"]}]
    shown = page(usage, flagged, show_questions=True)
    assert "&lt;script&gt;x&lt;/script&gt;賞与は？" in shown and "<script>" not in shown
    assert "a&amp;b.md" in shown and "受付時間は？" in shown  # the slow answer's stored question
    hidden = page(usage, flagged, show_questions=False)
    assert "賞与は？" not in hidden and "AUDIT_LOG_QUESTIONS=1" in hidden
    assert "受付時間は？" in hidden  # stored by the audit with AUDIT_LOG_QUESTIONS=1 at the time
    assert "<td>67%</td>" in shown and "<svg" in shown and 'value="2"' in shown


@pytest.mark.parametrize("value, expected", [(None, 30), ("", 30), ("7", 7), ("90", 90)])
def test_read_days(value, expected):
    assert read_days(value, 90) == expected


@pytest.mark.parametrize("value", ["0", "91", "-1", "x", "７", "1e2"])
def test_read_days_refuses(value):
    with pytest.raises(ValueError, match="^days は 1 から 90 までの整数で指定してください$"):
        read_days(value, 90)


def test_admin_reader_is_the_administrator_or_the_owner_from_this_machine():
    admin = Identity("root", ("admin", "everyone", "user:root"))
    assert admin_reader(admin) is admin
    assert admin_reader(Identity("(this machine)", ("everyone",), "local")).principals == ("admin",)


def test_admin_route_refuses_anyone_but_an_administrator_with_one_line():
    service = PageService()
    service.settings = SimpleNamespace(access=SimpleNamespace(audit_retention_days=90))
    got = TestClient(create_app(service), client=("192.0.2.7", 50000)).get("/admin")  # not this machine
    assert got.status_code == 403 and got.text == ADMIN_ONLY


def test_admin_route_refuses_a_bad_window_before_reading():
    service = PageService()
    service.settings = SimpleNamespace(access=SimpleNamespace(audit_retention_days=90))
    got = TestClient(create_app(service), client=("127.0.0.1", 50000)).get("/admin?days=400")
    assert got.status_code == 400 and got.text == "days は 1 から 90 までの整数で指定してください"


# --- the page's conversation export (its own script, run by Node) ---------------------------------


def node_function(name: str) -> str:
    start = EXPORT_SCRIPT.index(f"function {name}(")
    return EXPORT_SCRIPT[start : EXPORT_SCRIPT.index("\n}\n", start) + 3]


def test_the_page_exports_the_conversation_as_markdown():
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("Node.js is not installed (the browser test runs the page's script)")
    turns = [
        {
            "question": "受付時間は？",
            "searched": "受付時間は？",
            "answer": "平日9時から18時です [1]。",
            "quote": "[1] faq.csv:r2「受付時間は平日9時から18時」",
            "sources": ["faq.csv:r2", "rules.md#経費"],
            "cited": ["faq.csv:r2"],
        },
        {
            "question": "それは土日も？",
            "searched": "受付時間は土日も？",
            "answer": "資料に記載がありません。[見る](http://evil.example/) <b>",
            "quote": "",
            "sources": [],
            "cited": [],
        },
    ]
    program = (
        node_function("markdownText")
        + node_function("conversationMarkdown")
        + f"console.log(JSON.stringify(conversationMarkdown({json.dumps(turns)}, 'http://127.0.0.1:8780', '2026-11-26 10:32')));"
    )
    ran = subprocess.run([node, "-e", program], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == "\n".join(
        [
            "# 会話の記録（2026-11-26 10:32）",
            "",
            "## 質問 1: 受付時間は？",
            "",
            "平日9時から18時です \\[1\\]。",
            "",
            "> \\[1\\] faq.csv:r2「受付時間は平日9時から18時」",
            "",
            "出典:",
            "",
            "- [faq.csv:r2](http://127.0.0.1:8780/api/source?id=faq.csv%3Ar2)（回答が引用）",
            "- [rules.md\\#経費](http://127.0.0.1:8780/api/source?id=rules.md%23%E7%B5%8C%E8%B2%BB)",
            "",
            "## 質問 2: それは土日も？",
            "",
            "検索した質問: 受付時間は土日も？",
            "",
            "資料に記載がありません。\\[見る\\](http://evil.example/) \\<b\\>",
            "",
        ]
    )
