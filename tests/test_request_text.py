"""Every face refuses a request whose text cannot be stored (app.text.storable) with one line, before
any search, model call or database write: the page (400), MCP (a tool error), the CLIs (exit 2).
The refusal happens before the service is reached, so the services here record whether it was."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient

from app.config import Settings
from app.web.app import create_app
from tests.web_fakes import PageService

NUL_QUESTION = "question contains a NUL character (U+0000) at character 3; remove it and try again"


class RecordingService(PageService):
    """Records every call that would do work; the refusals must leave it empty."""

    def __init__(self):
        self.calls: list[str] = []
        self.settings = Settings().changed(memory={"feedback": True})
        self.store = SimpleNamespace(engine=None)

    def ask(self, question, mode="hybrid", on_token=None, who=None, on_passages=None, stopped=None):
        self.calls.append("ask")
        on_token("答え")
        return {"answer": "答え", "sources": [], "cited_sources": [], "timings": {}}

    def passages(self, question, mode="hybrid", who=None):
        self.calls.append("passages")
        return []

    def cached_answer(self, question, mode="hybrid", who=None):
        self.calls.append("cached_answer")
        return None

    def answer_record(self, answer_id):
        self.calls.append("answer_record")
        return None


def post_json(client: TestClient, url: str, body: dict):
    """POST ``body`` as ASCII JSON, escapes and all (``"\\ud800"``), as a script would send it."""
    return client.post(url, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"})


def page(service: RecordingService, looked_up: list) -> TestClient:
    def view(source, who):
        looked_up.append(source)

    def path(doc_id, who):
        looked_up.append(doc_id)

    return TestClient(create_app(service, view_source=view, document_path=path))


@pytest.mark.parametrize(
    "body, message",
    [
        ({"question": "ab\x00cd"}, NUL_QUESTION),
        (
            {"question": "受付\ud800"},
            "question contains a lone surrogate (U+D800) at character 3; remove it and try again",
        ),
        (
            {"question": "料金\uffff"},
            "question contains a non-character (U+FFFF) at character 3; remove it and try again",
        ),
        (
            {"question": "\x1b[2J料金"},
            "question contains a control character (U+001B) at character 1; remove it and try again",
        ),
        (
            {"question": "料金", "history": ["前", "x\x00"]},
            "history[1] contains a NUL character (U+0000) at character 2; remove it and try again",
        ),
        (
            {"question": "料金", "mode": "global\x00"},
            "mode contains a NUL character (U+0000) at character 7; remove it and try again",
        ),
    ],
)
def test_the_page_refuses_an_unstorable_question_before_any_work(body, message):
    service, looked_up = RecordingService(), []
    response = post_json(page(service, looked_up), "/api/ask", body)
    assert response.status_code == 400 and response.json() == {"error": message}
    assert service.calls == []


@pytest.mark.parametrize(
    "raw",
    [
        b'{"question": "\xed\xa0\x80"}',  # an encoded surrogate: json.loads(bytes) would have let it in
        b'{"question": "\xff\xfe"}',  # not UTF-8 at all
        b'{"question": "\x80"}',
    ],
)
def test_the_page_refuses_a_body_that_is_not_utf8(raw):
    service, looked_up = RecordingService(), []
    response = page(service, looked_up).post("/api/ask", content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json() == {"error": "質問を JSON で送ってください"}
    assert service.calls == []


def test_the_page_still_answers_an_ordinary_question_with_a_tab_and_newline():
    service, looked_up = RecordingService(), []
    response = page(service, looked_up).post("/api/ask", json={"question": "料金は\t月額？\r\n教えて"})
    assert response.status_code == 200 and "event: done" in response.text
    assert "ask" in service.calls


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {"answer_id": "ab\x00cd", "helpful": True},
            "answer_id contains a NUL character (U+0000) at character 3; remove it and try again",
        ),
        (
            {"answer_id": "a1", "helpful": False, "source": "faq.csv:\udc80"},
            "source contains a lone surrogate (U+DC80) at character 9; remove it and try again",
        ),
        (
            {"answer_id": "a1", "helpful": False, "none_right": True, "comment": "違う\ufffe"},
            "comment contains a non-character (U+FFFE) at character 3; remove it and try again",
        ),
    ],
)
def test_the_feedback_route_refuses_unstorable_text_before_looking_the_answer_up(body, message):
    service, looked_up = RecordingService(), []
    response = post_json(page(service, looked_up), "/api/feedback", body)
    assert response.status_code == 400 and response.json() == {"error": message}
    assert service.calls == []


@pytest.mark.parametrize(
    "url, message",
    [
        ("/api/source?id=faq.csv%00r1", "id contains a NUL character (U+0000) at character 8; remove it and try again"),
        (
            "/api/source?id=faq%1B.csv",
            "id contains a control character (U+001B) at character 4; remove it and try again",
        ),
        ("/files/csv/faq%00.csv", "doc_id contains a NUL character (U+0000) at character 8; remove it and try again"),
    ],
)
def test_source_and_file_ids_that_cannot_be_stored_are_refused_before_the_lookup(url, message):
    service, looked_up = RecordingService(), []
    response = page(service, looked_up).get(url)
    assert response.status_code == 400 and response.json() == {"error": message}
    assert looked_up == []


def test_an_ordinary_source_id_is_still_looked_up():
    service, looked_up = RecordingService(), []
    response = page(service, looked_up).get("/api/source?id=faq.csv:r1")
    assert response.status_code == 404 and looked_up == ["faq.csv:r1"]


# --- MCP ------------------------------------------------------------------------------------------


def call_tool(name: str, arguments: dict) -> None:
    """Call a tool of the real MCP server in memory (its lifespan not run: a tool that got as far as
    the service would fail otherwise)."""
    from app.mcp.server import build_server

    asyncio.run(build_server(lambda: RecordingService()).call_tool(name, arguments))


@pytest.mark.parametrize(
    "tool, arguments, message",
    [
        ("ask", {"question": "ab\x00cd"}, "question contains a NUL character (U+0000) at character 3"),
        ("ask", {"question": "料金", "mode": "\ud800"}, "mode contains a lone surrogate (U+D800) at character 1"),
        ("search_rag", {"query": "料金\x07"}, "query contains a control character (U+0007) at character 3"),
        (
            "feedback",
            {"answer_id": "a\x00", "helpful": True},
            "answer_id contains a NUL character (U+0000) at character 2",
        ),
        (
            "feedback",
            {"answer_id": "a1", "helpful": False, "none_right": True, "comment": "\U0010ffff"},
            "comment contains a non-character (U+10FFFF) at character 1",
        ),
    ],
)
def test_mcp_tools_refuse_unstorable_arguments_with_one_line(tool, arguments, message):
    from mcp.server.mcpserver.exceptions import ToolError

    with pytest.raises(ToolError) as info:  # a client receives it as the tool's error result
        call_tool(tool, arguments)
    assert str(info.value) == f"Error executing tool {tool}: {message}; remove it and try again"


# --- CLIs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ab\x00cd"], NUL_QUESTION),
        # bytes that were not UTF-8 on the command line arrive as lone surrogates (surrogateescape)
        (["料金\udcff"], "question contains a lone surrogate (U+DCFF) at character 3; remove it and try again"),
        (
            ["料金", "--as", "bob\x1b"],
            "--as contains a control character (U+001B) at character 4; remove it and try again",
        ),
    ],
)
def test_ask_cli_refuses_unstorable_arguments_with_exit_2(argv, message, capsys):
    from app.cli.ask import main

    class Untouchable:  # a context whose use would mean the question was answered
        def __getattr__(self, name):
            raise AssertionError(f"the workflow was reached ({name})")

    assert main(argv, context=Untouchable()) == 2
    captured = capsys.readouterr()
    assert captured.err == f"Error: {message}\n" and captured.out == ""


@pytest.mark.parametrize(
    "argv, message",
    [
        (["add", "bob\udcff"], "name contains a lone surrogate (U+DCFF) at character 4; remove it and try again"),
        (
            ["add", "bob", "--groups", "営業\x00"],
            "--groups contains a NUL character (U+0000) at character 3; remove it and try again",
        ),
        (["token", "\ufdd0"], "name contains a non-character (U+FDD0) at character 1; remove it and try again"),
        (
            ["check", "--user", "a\x00"],
            "--user contains a NUL character (U+0000) at character 2; remove it and try again",
        ),
    ],
)
def test_users_cli_refuses_unstorable_names_with_exit_2(argv, message, capsys, monkeypatch):
    from app.cli import users

    monkeypatch.setattr(users, "get_settings", lambda: pytest.fail("the database was reached"))
    assert users.main(argv) == 2
    assert capsys.readouterr().err == f"Error: {message}\n"
