"""Who may read what, over MCP: the real server (app.mcp.server.build_server behind http_app's guard)
served by uvicorn on 127.0.0.1 over a real RagService on the ``acl`` collection (embedded
PostgreSQL, real embedder, SmolLM2, tiny re-ranker), called with the MCP SDK's own client. Bob (営業)
tries every tool and mode for the accounting document; none of ACL_SECRETS may reach him, while
alice (経理) lists it. Over stdio, MCP_AS_USER names who asks."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from app.mcp.server import build_server, http_app, request_identity
from app.serving.access import Token
from app.storage import users as user_rows
from app.users.identity import FULL, UnknownUserError, new_token, token_hash
from tests.integration.conftest import ACL_FILES, ACL_QUESTION, free_port
from tests.integration.conftest import assert_no_secret as shared_assert_no_secret
from tests.integration.test_mcp_auth import INITIALIZE, MCP_HEADERS, mcp_client

pytestmark = pytest.mark.integration

SHARED_TOKEN = "shared-mcp-token-value-123"
ACCOUNTING = next(name for name in ACL_FILES if "賞与規程" in name)  # 経理 only
MISC = next(name for name in ACL_FILES if "未分類" in name)  # no key covers it: admin only
QUESTION = ACL_QUESTION
SYNC_REFUSED = "Error executing tool sync: sync is for administrators (group admin) only"


def assert_no_secret(result, where: str) -> None:
    """None of ACL_SECRETS in a tool result: its structured content and each text content (as JSON
    when it is JSON)."""
    parts = [result.structured_content]
    for content in result.content:
        text = getattr(content, "text", "")
        try:
            parts.append(json.loads(text))
        except ValueError:
            parts.append(text)
    shared_assert_no_secret(parts, where)


def call(url: str, token: str, name: str, arguments: dict | None = None):
    """Call one tool in a session of its own; the CallToolResult."""

    async def session():
        async with mcp_client(url, token) as client:
            return await client.call_tool(name, arguments or {})

    return asyncio.run(session())


def listed(result) -> set[str]:
    """The doc_ids of a list_documents result (asserting it is no error)."""
    assert not result.is_error, result.content[0].text
    return {d["doc_id"] for d in result.structured_content["result"]}


def error_text(result) -> str:
    """The text of a tool error (asserting it is one)."""
    assert result.is_error, result.structured_content
    return result.content[0].text


def initialize(url: str, headers: dict) -> httpx.Response:
    """A bare ``initialize`` request with ``headers``."""
    return httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=30)


@pytest.fixture(scope="module")
def url(acl_service, acl) -> Iterator[str]:
    """The MCP server over HTTP (permissions on, MCP_TOKEN shared) served by uvicorn in a thread."""
    import uvicorn

    port = free_port()
    server = build_server(lambda: acl_service, permissions_on=lambda: True)
    app = http_app(server, acl.settings, "127.0.0.1", port, Token(SHARED_TOKEN, "MCP_TOKEN"))
    runner = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=runner.run, name="mcp-http", daemon=True)
    thread.start()
    deadline = time.time() + 60
    while not runner.started:
        assert thread.is_alive() and time.time() < deadline, "the MCP server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    runner.should_exit = True
    thread.join(timeout=30)


# --- 11. search_rag ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "vector"])
def test_bob_searches_for_the_bonus(url, acl, mode):
    result = call(url, acl.tokens["bob"], "search_rag", {"query": QUESTION, "mode": mode})
    assert not result.is_error, result.content[0].text
    hits = result.structured_content["result"]
    assert hits and all(ACCOUNTING.rsplit("/", 1)[-1] not in h["payload"]["source"] for h in hits)
    assert_no_secret(result, f"in bob's {mode} search")


def test_alice_finds_the_bonus(url, acl):
    result = call(url, acl.tokens["alice"], "search_rag", {"query": QUESTION, "mode": "keyword"})
    assert not result.is_error, result.content[0].text
    assert "3.7" in result.structured_content["result"][0]["snippet"]


def test_bob_asking_for_ten_thousand_hits_is_a_tool_error(url, acl):
    result = call(url, acl.tokens["bob"], "search_rag", {"query": QUESTION, "k": 10000})
    assert "k must be an integer from 1 to 50, got 10000" in error_text(result)
    assert_no_secret(result, "in the k=10000 error")


def test_bob_asking_for_fifty_hits_still_gets_no_secret(url, acl):
    for mode in ("hybrid", "keyword", "vector"):
        result = call(url, acl.tokens["bob"], "search_rag", {"query": QUESTION, "k": 50, "mode": mode})
        assert not result.is_error, result.content[0].text
        assert_no_secret(result, f"in bob's k=50 {mode} search")


# --- 12. list_documents ------------------------------------------------------------------------


def test_each_caller_lists_what_they_may_read(url, acl):
    bob = listed(call(url, acl.tokens["bob"], "list_documents"))
    assert ACCOUNTING not in bob and MISC not in bob and "csv/faq.csv" in bob
    alice = listed(call(url, acl.tokens["alice"], "list_documents"))
    assert ACCOUNTING in alice and MISC not in alice
    shared = listed(call(url, SHARED_TOKEN, "list_documents"))
    assert ACCOUNTING not in shared and MISC not in shared and "csv/faq.csv" in shared


def test_bob_list_shows_no_readers_and_no_secret(url, acl):
    result = call(url, acl.tokens["bob"], "list_documents")
    assert all("readers" not in d for d in result.structured_content["result"])
    assert_no_secret(result, "in bob's list")


# --- 13. ask -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["local", "global", "hybrid"])
def test_bob_asks_about_the_bonus(url, acl, mode):
    result = call(url, acl.tokens["bob"], "ask", {"question": QUESTION, "mode": mode})
    assert not result.is_error, result.content[0].text
    assert result.structured_content["mode"] == mode
    assert_no_secret(result, f"in bob's {mode} answer")


# --- 14. sync ----------------------------------------------------------------------------------


def test_bob_may_not_sync(url, acl, acl_service):
    before = acl_service.last_sync
    assert error_text(call(url, acl.tokens["bob"], "sync")) == SYNC_REFUSED
    assert error_text(call(url, SHARED_TOKEN, "sync")) == SYNC_REFUSED
    assert acl_service.last_sync is before  # nothing ran


# --- 15. who is refused --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer rag_" + "x" * 43}, {"Authorization": "Bearer shared-mcp-token-value-12"}],
    ids=["no token", "unknown personal token", "shared token, one short"],
)
def test_without_a_known_token_nothing_runs(url, headers):
    refused = initialize(url, headers)
    assert refused.status_code == 401 and "mcp-session-id" not in refused.headers


def test_a_revoked_token_is_refused_at_once(url, acl):
    engine = acl.store.engine
    name = f"carol_{acl.names['bob']}"
    user_rows.upsert_user(engine, name, ["経理"])
    try:
        token = new_token()
        user_rows.add_token(engine, name, token_hash(token))
        assert initialize(url, {"Authorization": f"Bearer {token}"}).status_code == 200
        assert ACCOUNTING in listed(call(url, token, "list_documents"))
        assert user_rows.revoke_tokens(engine, name) == 1
        assert initialize(url, {"Authorization": f"Bearer {token}"}).status_code == 401
    finally:
        user_rows.delete_user(engine, name)


def test_a_removed_group_membership_holds_at_once(url, acl):
    engine, alice = acl.store.engine, acl.names["alice"]
    try:
        user_rows.upsert_user(engine, alice, [])
        assert ACCOUNTING not in listed(call(url, acl.tokens["alice"], "list_documents"))
    finally:
        user_rows.upsert_user(engine, alice, ["経理"])
    assert ACCOUNTING in listed(call(url, acl.tokens["alice"], "list_documents"))


# --- 16. stdio: MCP_AS_USER --------------------------------------------------------------------


def test_stdio_identity_is_mcp_as_user(acl_service, acl):
    bob = request_identity(None, acl_service, as_user=acl.names["bob"])
    assert bob.name == acl.names["bob"] and bob.principals == acl.principals["bob"] and not bob.admin
    assert request_identity(None, acl_service) == FULL
    with pytest.raises(UnknownUserError):
        request_identity(None, acl_service, as_user=f"nobody_{acl.names['bob']}")


def test_stdio_server_as_bob_keeps_the_accounting_document_away(acl_service, acl):
    from mcp import Client

    server = build_server(lambda: acl_service, as_user=acl.names["bob"], permissions_on=lambda: True)

    async def session():
        async with Client(server) as client:
            documents = await client.call_tool("list_documents", {})
            found = await client.call_tool("search_rag", {"query": QUESTION, "k": 50, "mode": "keyword"})
            synced = await client.call_tool("sync", {})
            return documents, found, synced

    documents, found, synced = asyncio.run(session())
    assert ACCOUNTING not in listed(documents)
    assert not found.is_error, found.content[0].text
    assert_no_secret(found, "in bob's stdio search")
    assert error_text(synced) == SYNC_REFUSED


def test_stdio_server_as_an_unknown_user_refuses_every_tool(acl_service, acl):
    from mcp import Client

    server = build_server(lambda: acl_service, as_user=f"nobody_{acl.names['bob']}", permissions_on=lambda: True)

    async def session():
        async with Client(server) as client:
            return await client.call_tool("list_documents", {})

    assert "no user" in error_text(asyncio.run(session()))
