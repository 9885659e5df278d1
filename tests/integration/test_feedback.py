"""Feedback for real (issue 42, item 3): the real service on the sample corpus (embedded PostgreSQL, real
embedder, SmolLM2) behind the real web app and MCP server. The page's ``done`` event carries an
``answer_id``; ``POST /api/feedback`` with it, ``helpful: false`` and a source stores the row; ``python -m
app.feedback export`` writes that question with that ``expected_source``, and ``python -m app.evaluate
--questions`` runs the file. Someone else's answer, an unknown one and a source the answer did not have
are refused; the administrator's list counts the flag; a later 👍 on the same answer replaces the 👎."""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.testclient import TestClient

from app.web.app import create_app
from app.web.feedback import NOT_FOUND
from tests.integration.conftest import run_cli, sse_events

pytestmark = pytest.mark.integration

QUESTION = "サポート窓口の受付時間は何時から何時までですか？"


@pytest.fixture(scope="module")
def service(settings, rag_store, ingested):
    """The real service over the sample corpus, keeping its answers (as ``make web`` runs it)."""
    from app.graph import default_context
    from app.serving.answers import AnswerMemory
    from app.serving.service import RagService, no_search

    made = RagService(
        settings=settings,
        store=rag_store,
        context_factory=lambda: default_context(settings, search=no_search, principals=()),
        memory=AnswerMemory(rag_store.engine, settings.retrieval.collection_name, settings),
        surface="web",
    )
    made.context()
    return made


@pytest.fixture(scope="module")
def page(service):
    """The web app over the service, asked from this machine (single-team mode: may see the list)."""
    return TestClient(create_app(service), client=("127.0.0.1", 50000))


@pytest.fixture(scope="module")
def answered(page):
    """The ``done`` event of QUESTION, asked on the page."""
    got = sse_events(page.post("/api/ask", json={"question": QUESTION}).text)
    assert got[-1][0] == "done", got[-1]
    return got[-1][1]


def exported_questions(path) -> list:
    """What ``python -m app.feedback export`` writes now (the session's collection: other files' flags too)."""
    done = run_cli("app.feedback", "export", str(path))
    assert done.returncode == 0, done.stderr
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_flagged_answer_with_a_chosen_source_becomes_an_evaluation_question(page, answered, tmp_path):
    # the session's collection may hold other files' flags (the page's browser test flags one): counted first
    before = exported_questions(tmp_path / "before.json")
    assert isinstance(answered["answer_id"], str) and answered["answer_id"], answered
    chosen = answered["sources"][-1]  # the asker says the last source shown was the right one
    body = {"answer_id": answered["answer_id"], "helpful": False, "source": chosen, "comment": "時間が違います"}
    given = page.post("/api/feedback", json=body)
    assert given.status_code == 200, given.text
    assert given.json() == {"answer_id": answered["answer_id"], "helpful": False, "source": chosen, "none_right": False}

    listed = page.get("/api/feedback").json()
    assert listed["enabled"] is True
    row = next(q for q in listed["questions"] if q["question"] == QUESTION)
    assert {k: v for k, v in row.items() if k != "last_flagged"} == {
        "question": QUESTION,
        "flagged": 1,
        "helpful": 0,
        "none_right": 0,
        "chosen_sources": [chosen],
        "comments": ["時間が違います"],
    }
    assert row["last_flagged"][:2] == "20"

    out = tmp_path / "flagged.json"
    exported = run_cli("app.feedback", "export", str(out))  # the real command, in its own process
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith(f"Wrote {len(before) + 1} questions to "), exported.stdout
    mine = {"query": QUESTION, "expected_source": chosen, "expected_keywords": []}
    written = json.loads(out.read_text(encoding="utf-8"))
    assert mine in written and [q for q in written if q != mine] == before
    evaluated = run_cli("app.evaluate", "--questions", str(out), "--no-generate", "--no-progress")
    assert evaluated.returncode == 0, evaluated.stderr
    assert "1" in evaluated.stdout and "Error" not in evaluated.stderr, evaluated.stdout

    liked = page.post("/api/feedback", json={"answer_id": answered["answer_id"], "helpful": True})
    assert liked.status_code == 200  # the asker changed their mind: one row per answer, the latest word
    assert QUESTION not in [q["question"] for q in page.get("/api/feedback").json()["questions"]]
    assert run_cli("app.feedback", "export", str(out)).stdout.startswith(f"Wrote {len(before)} questions")
    assert json.loads(out.read_text(encoding="utf-8")) == before


def test_feedback_on_an_answer_that_is_not_the_askers_is_refused(page, service, answered):
    bobs = service.memory.keep(
        QUESTION, "hybrid", ("everyone", "user:bob"), service.memory.fingerprint(), {"sources": ["faq.csv:r2"]}
    )
    for answer_id in (bobs, "0" * 32):  # bob's answer, and one that never was
        refused = page.post("/api/feedback", json={"answer_id": answer_id, "helpful": False})
        assert refused.status_code == 404 and refused.json() == {"error": NOT_FOUND}
    wrong = page.post(
        "/api/feedback", json={"answer_id": answered["answer_id"], "helpful": False, "source": "hr.md#給与"}
    )
    assert wrong.status_code == 400 and wrong.json() == {
        "error": "source 'hr.md#給与' is not one of the answer's sources"
    }


def test_the_list_is_refused_to_anyone_but_an_administrator(service):
    elsewhere = TestClient(create_app(service), client=("192.0.2.7", 50000))  # not this machine
    assert elsewhere.get("/api/feedback").status_code == 403


def test_the_mcp_feedback_tool_says_none_was_right(service, answered):
    from mcp import Client

    from app.mcp.server import build_server

    server = build_server(lambda: service, as_user="")  # stdio: full access, an administrator

    async def session():
        async with Client(server) as client:
            given = await client.call_tool(
                "feedback", {"answer_id": answered["answer_id"], "helpful": False, "none_right": True}
            )
            bad = await client.call_tool("feedback", {"answer_id": answered["answer_id"], "helpful": "maybe"})
            return given, bad

    given, bad = asyncio.run(session())
    assert not given.is_error, given.content[0].text
    assert given.structured_content == {
        "answer_id": answered["answer_id"],
        "helpful": False,
        "source": None,
        "none_right": True,
    }
    assert bad.is_error
    row = next(q for q in service_flagged(service) if q["question"] == QUESTION)
    assert row["none_right"] == 1 and row["chosen_sources"] == []


def service_flagged(service) -> list[dict]:
    """The administrator's list, read as the page reads it."""
    from app.serving.feedback import flagged_questions

    return flagged_questions(service.settings, service.store.engine)
