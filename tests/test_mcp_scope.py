"""app.mcp.server: search_rag's and ask's optional folders, formats and since, as a Scope handed to the
service (in-process MCP client over the real server), refused in one line when they could widen it; the
tools' existing arguments unchanged (Dialogoi's search_rag contract)."""

import asyncio
from datetime import date

import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError

from app.mcp.server import build_server, tool_scope
from app.serving.service import AskResult
from app.storage.scope import Scope


class Recording:
    """What the service's search and ask are given."""

    def __init__(self):
        self.calls = []

    def search(self, query, k, mode, who=None, scope=None):
        self.calls.append(("search", scope))
        return []

    def ask(self, question, mode, who=None, scope=None):
        self.calls.append(("ask", scope))
        lists = ("sources", "cited_sources", "numbered_sources", "withdrawn", "warnings", "passages")
        return {
            **dict.fromkeys(AskResult.__annotations__),
            **{name: [] for name in (*lists, "past_versions", "version_notes")},
            "answer": "a",
            "mode": mode,
            "timings": {},
            "scope": scope.as_dict() if scope else None,
        }


def call(service, name: str, arguments: dict):
    """One tool call over an in-process client; the CallToolResult."""

    async def session():
        async with Client(build_server(lambda: service)) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(session())


def test_the_arguments_become_a_scope():
    assert tool_scope(["docs/規程"], ["PDF"], "2025-04-01") == Scope(
        folders=("docs/規程/",), formats=("pdf",), since=date(2025, 4, 1)
    )
    assert tool_scope() is None and tool_scope([], [], "") is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"folders": "docs"}, "folders is a list of strings, got 'docs'"),
        ({"formats": [1]}, "formats is a list of strings, got [1]"),
        ({"since": 20250401}, "since takes a day as YYYY-MM-DD (2025-04-01), got 20250401"),
        ({"folders": ["../x"]}, "a folder may not contain '..', got '../x'"),
        ({"folders": ["docs/*"]}, "a folder is a plain path without * ? or [ (no patterns), got 'docs/*'"),
        ({"since": "昨日"}, "since takes a day as YYYY-MM-DD (2025-04-01), got '昨日'"),
    ],
)
def test_a_bad_scope_is_one_line(arguments, message):
    with pytest.raises(ToolError) as caught:
        tool_scope(**arguments)
    assert str(caught.value) == message


@pytest.mark.parametrize("tool", ["search_rag", "ask"])
def test_the_tools_hand_the_scope_to_the_service(tool):
    service = Recording()
    first = {"search_rag": {"query": "有給"}, "ask": {"question": "有給は？"}}[tool]
    scoped = call(service, tool, {**first, "folders": ["docs/規程"], "formats": ["pdf"], "since": "2025-04-01"})
    assert not scoped.is_error, scoped.content
    plain = call(service, tool, first)
    assert not plain.is_error, plain.content
    kind = "search" if tool == "search_rag" else "ask"
    wanted = Scope(folders=("docs/規程/",), formats=("pdf",), since=date(2025, 4, 1))
    assert service.calls == [(kind, wanted), (kind, None)]


@pytest.mark.parametrize("tool", ["search_rag", "ask"])
def test_a_bad_scope_is_the_tools_error_before_the_service(tool):
    service = Recording()
    first = {"search_rag": {"query": "有給"}, "ask": {"question": "有給は？"}}[tool]
    result = call(service, tool, {**first, "folders": ["/etc"]})
    assert result.is_error
    assert result.content[0].text == (
        f"Error executing tool {tool}: a folder is a path inside the data folder, not an absolute one, got '/etc'"
    )
    assert service.calls == []


def test_the_existing_arguments_are_unchanged():
    async def tools() -> dict:
        return {t.name: t for t in await build_server(lambda: None).list_tools()}

    listed = asyncio.run(tools())
    search = listed["search_rag"].input_schema
    assert search["required"] == ["query"]
    assert list(search["properties"]) == ["query", "k", "mode", "folders", "formats", "since"]
    assert search["properties"]["k"]["default"] == 10 and search["properties"]["mode"]["default"] == "hybrid"
    ask = listed["ask"].input_schema
    assert ask["required"] == ["question"]
    assert list(ask["properties"]) == ["question", "mode", "folders", "formats", "since"]
    assert "folders" in listed["search_rag"].description and "since" in listed["ask"].description
