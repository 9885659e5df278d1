"""app.serving.feedback (the checks, exact values), app.cli.feedback (the evaluation set it writes, the
list it prints), the page's feedback routes before the database, the MCP tool's switch, and the page
script's marking of a passage (run by Node). The stored path, for real: tests/integration/test_feedback.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient

from app.config import Settings
from app.serving.feedback import (
    AnswerNotFoundError,
    Feedback,
    FeedbackOffError,
    asker_name,
    check_source,
    evaluation_questions,
    feedback_row,
    give_feedback,
    read_feedback,
    received,
)
from app.users.identity import FULL, SHARED, Identity, user_identity
from app.web.guard import LOCAL

ANSWER = {
    "id": "a1",
    "question": "サポート窓口の受付時間は？",
    "mode": "hybrid",
    "sources": ["faq.csv:r2", "faq.csv:r1"],
    "principals": ["everyone"],
    "created_at": None,
}
ALICE = user_identity("alice", ["経理"])


@pytest.mark.parametrize(
    "body, message",
    [
        ([], "feedback must be a JSON object"),
        ({}, "answer_id must be the answer's ID (a string of 1 to 100 characters)"),
        ({"answer_id": "  "}, "answer_id must be the answer's ID (a string of 1 to 100 characters)"),
        ({"answer_id": "a" * 101}, "answer_id must be the answer's ID (a string of 1 to 100 characters)"),
        ({"answer_id": 7}, "answer_id must be the answer's ID (a string of 1 to 100 characters)"),
        ({"answer_id": "a1"}, "helpful must be true or false, got None"),
        ({"answer_id": "a1", "helpful": "no"}, "helpful must be true or false, got 'no'"),
        ({"answer_id": "a1", "helpful": 0}, "helpful must be true or false, got 0"),
        ({"answer_id": "a1", "helpful": False, "source": 3}, "source must be one of the answer's sources, or null"),
        ({"answer_id": "a1", "helpful": False, "source": ""}, "source must be one of the answer's sources, or null"),
        ({"answer_id": "a1", "helpful": False, "none_right": "yes"}, "none_right must be true or false, got 'yes'"),
        (
            {"answer_id": "a1", "helpful": True, "source": "faq.csv:r2"},
            "source and none_right go with helpful: false only",
        ),
        ({"answer_id": "a1", "helpful": True, "none_right": True}, "source and none_right go with helpful: false only"),
        (
            {"answer_id": "a1", "helpful": False, "source": "faq.csv:r2", "none_right": True},
            "give a source or none_right, not both",
        ),
        ({"answer_id": "a1", "helpful": False, "comment": ["x"]}, "comment must be a string"),
        (
            {"answer_id": "a1", "helpful": False, "comment": "あ" * 1001},
            "comment is too long (1001 characters; at most 1000)",
        ),
    ],
)
def test_read_feedback_refuses_a_bad_body_with_one_line(body, message):
    with pytest.raises(ValueError) as err:
        read_feedback(body)
    assert str(err.value) == message


def test_read_feedback_keeps_the_choice_and_the_trimmed_comment():
    assert read_feedback({"answer_id": " a1 ", "helpful": True}) == Feedback("a1", True)
    assert read_feedback(
        {"answer_id": "a1", "helpful": False, "source": "faq.csv:r2", "comment": "  土日の記載がない \n"}
    ) == Feedback("a1", False, "faq.csv:r2", False, "土日の記載がない")
    assert read_feedback({"answer_id": "a1", "helpful": False, "none_right": True, "comment": None}) == Feedback(
        "a1", False, None, True, ""
    )
    assert read_feedback({"answer_id": "a1", "helpful": False, "comment": "あ" * 1000}).comment == "あ" * 1000


def test_only_who_received_an_answer_or_an_administrator_may_give_feedback_on_it():
    alice = ALICE.principals  # sorted: everyone, user:alice, 経理
    assert received(ALICE, list(reversed(alice)))  # the same set, in another order
    assert not received(ALICE, ["everyone"])  # an answer given to the shared secret
    assert not received(user_identity("bob", ["経理"]), alice)  # the same group, another person
    assert received(LOCAL, ["everyone"]) and received(SHARED, ["everyone"])  # single-team mode: one asker
    assert received(FULL, alice) and received(user_identity("root", ["admin"]), alice)


def test_only_a_named_person_is_kept_with_the_feedback():
    assert [asker_name(who) for who in (ALICE, Identity("eve", ("everyone", "user:eve"), "proxy"))] == ["alice", "eve"]
    assert [asker_name(who) for who in (LOCAL, SHARED, FULL)] == [None, None, None]


def test_the_chosen_source_must_be_one_of_the_answers():
    check_source(Feedback("a1", False, "faq.csv:r1"), ANSWER["sources"])
    check_source(Feedback("a1", False, None, True), ANSWER["sources"])
    with pytest.raises(ValueError) as err:
        check_source(Feedback("a1", False, "hr.md#給与"), ANSWER["sources"])
    assert str(err.value) == "source 'hr.md#給与' is not one of the answer's sources"


def test_the_stored_row_copies_the_answer_and_names_only_the_asker():
    assert feedback_row(Feedback("a1", False, "faq.csv:r1", False, "r1 のほうが正しい"), ANSWER, ALICE) == {
        "answer_id": "a1",
        "question": "サポート窓口の受付時間は？",
        "mode": "hybrid",
        "sources": ["faq.csv:r2", "faq.csv:r1"],
        "asker": "alice",
        "helpful": False,
        "chosen_source": "faq.csv:r1",
        "none_right": False,
        "comment": "r1 のほうが正しい",
    }


class Desk:
    """The kept answers and the saved rows, in memory (the real ones: tests/integration/test_feedback.py)."""

    def __init__(self, answers):
        self.answers, self.saved, self.looked_up = answers, [], []

    def lookup(self, answer_id):
        self.looked_up.append(answer_id)
        return self.answers.get(answer_id)

    def save(self, row):
        self.saved.append(dict(row))
        return True


def give(desk, body, who=LOCAL, settings=None):
    return give_feedback(settings or Settings(), body, who, desk.lookup, desk.save)


def test_give_feedback_stores_the_askers_word_and_returns_the_receipt():
    desk = Desk({"a1": ANSWER})
    receipt = give(desk, {"answer_id": "a1", "helpful": False, "source": "faq.csv:r1", "comment": "r1"})
    assert receipt == {"answer_id": "a1", "helpful": False, "source": "faq.csv:r1", "none_right": False}
    assert desk.looked_up == ["a1"]
    assert desk.saved == [feedback_row(Feedback("a1", False, "faq.csv:r1", False, "r1"), ANSWER, LOCAL)]
    assert desk.saved[0]["asker"] is None


@pytest.mark.parametrize(
    "answers, who",
    [
        ({}, LOCAL),  # unknown, or forgotten
        ({"a1": {**ANSWER, "principals": ["everyone", "user:bob"]}}, LOCAL),  # bob's answer
        ({"a1": ANSWER}, ALICE),  # an answer alice did not receive
    ],
)
def test_someone_elses_answer_is_as_unknown_as_no_answer(answers, who):
    desk = Desk(answers)
    with pytest.raises(AnswerNotFoundError) as err:
        give(desk, {"answer_id": "a1", "helpful": True}, who)
    assert str(err.value) == "no answer 'a1' of yours is kept (unknown, or forgotten)"
    assert desk.saved == []


def test_a_source_the_answer_did_not_have_is_refused_and_nothing_is_stored():
    desk = Desk({"a1": ANSWER})
    with pytest.raises(ValueError, match="is not one of the answer's sources"):
        give(desk, {"answer_id": "a1", "helpful": False, "source": "products.csv:r3"})
    assert desk.saved == []


def test_feedback_off_refuses_before_reading_anything():
    desk = Desk({"a1": ANSWER})
    with pytest.raises(FeedbackOffError) as err:
        give(desk, {"answer_id": "a1", "helpful": True}, settings=Settings().changed(memory={"feedback": False}))
    assert str(err.value) == "feedback is off (FEEDBACK=0)" and desk.looked_up == [] and desk.saved == []


def test_the_export_is_one_question_each_in_the_evaluation_format(tmp_path):
    from app.cli.feedback import evaluation_json
    from app.evaluation.run import load_questions

    rows = [
        {"question": "受付時間は？", "chosen_source": "faq.csv:r2", "mode": "hybrid"},
        {"question": "受付時間は？", "chosen_source": "faq.csv:r1", "mode": "hybrid"},  # an older choice
        {"question": "料金は？", "chosen_source": "products.csv:r3", "mode": "keyword"},
        {"question": "保存期間は？", "chosen_source": None, "mode": "hybrid"},
    ]
    questions = evaluation_questions(rows)
    assert questions == [
        {"query": "受付時間は？", "expected_source": "faq.csv:r2", "expected_keywords": []},
        {"query": "料金は？", "expected_source": "products.csv:r3", "expected_keywords": []},
    ]
    written = tmp_path / "flagged.json"
    written.write_text(evaluation_json(questions), encoding="utf-8")
    assert written.read_text(encoding="utf-8") == (
        "[\n"
        '  {"query": "受付時間は？", "expected_source": "faq.csv:r2", "expected_keywords": []},\n'
        '  {"query": "料金は？", "expected_source": "products.csv:r3", "expected_keywords": []}\n'
        "]\n"
    )
    assert load_questions(written) == questions  # what `python -m app.evaluate --questions FILE` reads
    assert evaluation_json([]) == "[]\n"


def test_the_list_prints_counts_choices_and_the_question_on_its_own_line():
    from app.cli.feedback import format_flagged

    rows = [
        {
            "question": "受付\x1b[2J時間は？",
            "flagged": 3,
            "helpful": 1,
            "none_right": 1,
            "chosen_sources": ["faq.csv:r2"],
        }
    ]
    assert format_flagged(rows).splitlines() == [
        "flagged  helpful  none right  chosen sources / question",
        "      3        1           1  faq.csv:r2",
        "                              受付\\x1b[2J時間は？",
    ]
    assert format_flagged([]) == "No question has been flagged."


class NoDatabase:
    """A service whose database must not be reached: the routes answer before it."""

    def __init__(self, feedback: bool = True):
        self.settings = Settings().changed(memory={"feedback": feedback})
        self.store = SimpleNamespace(engine=None)


def client(service, loopback: bool = False) -> TestClient:
    from app.web.app import create_app

    return TestClient(create_app(service), client=("127.0.0.1", 50000) if loopback else ("testclient", 50000))


def test_the_feedback_route_says_one_line_for_a_bad_body_and_when_off():
    on = client(NoDatabase())
    bad = on.post("/api/feedback", json={"answer_id": "a1", "helpful": "yes"})
    assert bad.status_code == 400 and bad.json() == {"error": "helpful must be true or false, got 'yes'"}
    big = on.post("/api/feedback", content=b'{"comment": "' + b"a" * 20_000 + b'"}')
    assert big.status_code == 413 and big.json() == {"error": "リクエストが大きすぎます（16 KB まで）"}
    off = client(NoDatabase(feedback=False)).post("/api/feedback", json={"answer_id": "a1", "helpful": True})
    assert off.status_code == 404 and off.json() == {"error": "フィードバックは無効です（FEEDBACK=0）"}


def test_the_most_flagged_list_is_the_administrators():
    refused = client(NoDatabase()).get("/api/feedback")  # not this machine, not in group admin
    assert refused.status_code == 403
    assert refused.json() == {"error": "よく指摘される質問は管理者（admin グループ）だけが見られます"}
    off = client(NoDatabase(feedback=False), loopback=True).get("/api/feedback")
    assert off.status_code == 200 and off.json() == {"enabled": False, "questions": []}


def test_the_mcp_feedback_tool_is_offered_only_when_feedback_is_on():
    import asyncio

    from app.mcp.server import build_server

    async def tools(feedback: bool) -> dict:
        return {t.name: t for t in await build_server(lambda: None, feedback=feedback).list_tools()}

    on, off = asyncio.run(tools(True)), asyncio.run(tools(False))
    assert "feedback" in on and "feedback" not in off
    schema = on["feedback"].input_schema
    assert schema["required"] == ["answer_id", "helpful"]
    assert set(schema["properties"]) == {"answer_id", "helpful", "source", "none_right", "comment"}


def test_the_page_has_the_passages_and_the_feedback_form_and_sets_text_only():
    from app.web.page import DOCUMENTS_PAGE, PAGE

    for marker in ("<h2>該当箇所</h2>", 'id="helpful"', 'id="unhelpful"', 'id="feedback-form"', "どれも違う"):
        assert marker in PAGE, marker
    assert "よく指摘される質問" in DOCUMENTS_PAGE and 'fetch("/api/feedback")' in DOCUMENTS_PAGE
    assert "innerHTML" not in PAGE + DOCUMENTS_PAGE and "insertAdjacentHTML" not in PAGE + DOCUMENTS_PAGE


def node_function(name: str) -> str:
    """One top-level function of the page's script, as its source."""
    from app.web.page_script import ASK_SCRIPT

    start = ASK_SCRIPT.index(f"function {name}(")
    return ASK_SCRIPT[start : ASK_SCRIPT.index("\n}\n", start) + 3]


@pytest.mark.parametrize(
    "text, marks, parts",
    [
        ("受付時間は平日9時から", [[0, 4]], [["受付時間", True], ["は平日9時から", False]]),
        (
            "受付時間は平日9時から",
            [[5, 7], [0, 2]],
            [["受付", True], ["時間は", False], ["平日", True], ["9時から", False]],
        ),
        ("受付時間", [[0, 2], [1, 3], [3, 4]], [["受付時間", True]]),  # overlapping and touching: one mark
        ("受付時間", [[-2, 1], [3, 99], [2, 2], "x", [1.5, 2]], [["受", True], ["付時", False], ["間", True]]),
        ("𠮷野家の受付", [[4, 6]], [["𠮷野家の", False], ["受付", True]]),  # offsets count characters, not UTF-16
        ("受付", None, [["受付", False]]),
        ("", [[0, 1]], []),
    ],
)
def test_the_page_marks_a_passage_at_its_character_offsets(text, marks, parts):
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("Node.js is not installed (the browser test runs the page's script)")
    program = (
        node_function("markedParts")
        + f"console.log(JSON.stringify(markedParts({json.dumps(text)}, {json.dumps(marks)})));"
    )
    ran = subprocess.run([node, "-e", program], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == parts


@pytest.mark.parametrize(
    "value, quote, cited",
    [
        (
            "サポート窓口の受付時間は平日9時から18時までです。",
            "回答:サポート窓口の受付時間は平日9時から18時までです。",
            True,
        ),
        ("パスワードを忘れた場合はどうすればよいですか？", "回答:再設定ページから再設定してください。", False),
        ("平日9時から18時まで", "9時から18時", True),  # the cell holds the quote
        ("9", "回答:9時から", False),  # one character is never marked by itself
        ("", "回答", False),
        ("受付時間", None, False),
    ],
)
def test_the_page_marks_the_row_cell_the_quote_cites(value, quote, cited):
    """``citedCell`` (app.web.viewer_script, joined to the ask script), run by Node."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("Node.js is not installed (the browser test runs the page's script)")
    program = (
        node_function("citedCell")
        + f"console.log(JSON.stringify(citedCell({json.dumps(value)}, {json.dumps(quote)})));"
    )
    ran = subprocess.run([node, "-e", program], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) is cited
