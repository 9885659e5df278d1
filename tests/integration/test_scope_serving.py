"""A question's scope on the web page and over MCP, on real PostgreSQL with the real service over the
``acl`` collection (alice in 経理, bob in 営業): the folders offered are those the asker may read, a scoped
answer and search read only the folder, a kept answer is never given again across scopes, and a folder
bob may not read is refused in the same one line as one that does not exist."""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client
from starlette.testclient import TestClient

from app.mcp.server import build_server
from app.serving.answers import AnswerMemory
from app.serving.service import RagService, no_search
from app.storage.scope import missing_folder_message
from app.users.identity import identity_for_token
from app.web.server import guarded_app
from tests.integration.conftest import ACL_QUESTION, assert_no_secret, sse_events

pytestmark = pytest.mark.integration

SALES_QUESTION = "営業手当は一日いくらですか？"


@pytest.fixture(scope="module")
def service(acl, engine) -> RagService:
    """The real service over the acl collection, keeping its answers (the cache on)."""
    from app.graph import default_context

    settings = acl.settings.changed(retrieval={"rerank_top_k": 10}, memory={"answer_cache": True})
    made = RagService(
        settings=settings,
        store=acl.store,
        context_factory=lambda: default_context(settings, search=no_search, principals=()),
        memory=AnswerMemory(engine, settings.retrieval.collection_name, settings),
    )
    made.context()
    return made


@pytest.fixture(scope="module")
def web(service, acl) -> TestClient:
    """The guarded page, as ``python -m app.web`` runs it on 127.0.0.1:8780."""
    app = guarded_app(service, acl.settings, "127.0.0.1", 8780, acl.data)
    return TestClient(app, base_url="http://127.0.0.1:8780", client=("127.0.0.1", 50000), follow_redirects=False)


def bearer(acl, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {acl.tokens[who]}"}


def done(response) -> dict:
    """The ``done`` event of an /api/ask answer (asserting 200 and that it ended with it)."""
    assert response.status_code == 200, response.text
    events = sse_events(response.text)
    assert events[-1][0] == "done", events[-1]
    return events[-1][1]


def test_the_folders_offered_are_those_the_asker_may_read(web, acl):
    bob = web.get("/api/scopes", headers=bearer(acl, "bob"))
    alice = web.get("/api/scopes", headers=bearer(acl, "alice"))
    assert bob.status_code == alice.status_code == 200
    assert bob.json() == {"folders": ["csv/", "docs/", "docs/営業/"], "formats": ["csv", "md"]}
    assert alice.json()["folders"] == ["csv/", "docs/", "docs/営業/", "docs/経理/"]
    assert_no_secret(bob.json(), "in bob's scope choices")
    assert web.get("/api/scopes").status_code == 401  # no identity, no choices


def test_a_scoped_answer_reads_only_the_folder_and_an_unscoped_one_reads_others(web, acl):
    scoped = done(
        web.post(
            "/api/ask",
            json={"question": ACL_QUESTION, "scope": {"folders": ["docs/営業"]}},
            headers=bearer(acl, "alice"),
        )
    )
    sources = scoped["sources"] + [p["source"] for p in scoped["passages"]]
    assert sources and all(s.startswith("営業手当.md") for s in sources), sources  # a source names its file
    assert scoped["scope"] == {"folders": ["docs/営業/"], "formats": [], "since": None}
    assert "3.7" not in scoped["answer"]  # the accounting document was never read
    unscoped = done(web.post("/api/ask", json={"question": ACL_QUESTION}, headers=bearer(acl, "alice")))
    assert any(not s.startswith("営業手当.md") for s in unscoped["sources"]), unscoped["sources"]
    assert unscoped["scope"] is None


def test_a_kept_answer_is_never_given_across_scopes(service, acl, engine):
    alice = identity_for_token(engine, acl.tokens["alice"])
    everything = service.ask(SALES_QUESTION, "keyword", who=alice)
    assert everything["cached_at"] is None
    from app.storage.scope import Scope

    in_csv = service.ask(SALES_QUESTION, "keyword", who=alice, scope=Scope(folders=("csv",)))
    assert in_csv["cached_at"] is None and in_csv["answer_id"] != everything["answer_id"]
    assert all(s.startswith("faq.csv") for s in in_csv["sources"]), in_csv["sources"]
    again = service.ask(SALES_QUESTION, "keyword", who=alice, scope=Scope(folders=("csv/",)))
    assert again["cached_at"] is not None and again["answer_id"] == in_csv["answer_id"]
    plain = service.ask(SALES_QUESTION, "keyword", who=alice)
    assert plain["cached_at"] is not None and plain["answer_id"] == everything["answer_id"]


def test_a_folder_bob_may_not_read_reads_as_one_that_does_not_exist(web, acl):
    def refused(folder: str) -> str:
        response = web.post(
            "/api/ask", json={"question": ACL_QUESTION, "scope": {"folders": [folder]}}, headers=bearer(acl, "bob")
        )
        assert response.status_code == 400, response.text
        return response.json()["error"]

    assert refused("docs/経理") == missing_folder_message(["docs/経理/"])
    assert refused("docs/無い") == missing_folder_message(["docs/無い/"])
    bad = web.post(
        "/api/ask", json={"question": ACL_QUESTION, "scope": {"folders": ["../経理"]}}, headers=bearer(acl, "bob")
    )
    assert bad.status_code == 400 and bad.json() == {"error": "a folder may not contain '..', got '../経理'"}


def mcp_call(service, as_user: str, name: str, arguments: dict):
    """One tool call of the real MCP server over an in-process client, as ``as_user`` (MCP_AS_USER)."""

    async def session():
        async with Client(build_server(lambda: service, as_user=as_user)) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(session())


def test_mcp_search_rag_with_folders_returns_only_that_folder(service, acl):
    alice = acl.names["alice"]
    scoped = mcp_call(service, alice, "search_rag", {"query": ACL_QUESTION, "k": 10, "folders": ["docs/営業"]})
    assert not scoped.is_error, scoped.content[0].text
    hits = scoped.structured_content["result"]
    assert hits and all(h["payload"]["document_id"].startswith("docs/営業/") for h in hits), hits
    unscoped = mcp_call(service, alice, "search_rag", {"query": ACL_QUESTION, "k": 10})
    assert any(not h["payload"]["document_id"].startswith("docs/営業/") for h in unscoped.structured_content["result"])
    bob = mcp_call(service, acl.names["bob"], "search_rag", {"query": ACL_QUESTION, "folders": ["docs/経理"]})
    assert bob.is_error
    assert bob.content[0].text == f"Error executing tool search_rag: {missing_folder_message(['docs/経理/'])}"
