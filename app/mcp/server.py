"""The MCP server (Dialogoi's ``search_rag``, plus ``ask``, ``list_documents`` and ``sync``) on the
official MCP Python SDK's ``MCPServer``.

    python -m app.mcp                       # stdio, for desktop MCP clients
    python -m app.mcp --http 127.0.0.1:8765 # streamable HTTP at http://127.0.0.1:8765/mcp
    python -m app.mcp --watch               # and keep data/ in sync while serving (make serve)

Over HTTP every request needs ``Authorization: Bearer <token>`` (MCP_TOKEN, or the token file
MCP_TOKEN_FILE, made on first start) and a Host/Origin of this server (``app.serving.access``); stdio
needs nothing, as the client starts the process as its own user.

The lifespan loads the models and opens the database pool once per process; every tool call
uses them. Blocking work runs in worker threads, so a long ``ask`` does not stall searches.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from app import storage
from app.config import Settings
from app.errors import RagError
from app.serving.access import Token, guard, host_port, is_loopback, server_hosts, weak_token_warning
from app.serving.service import DEFAULT_K, AskResult, RagService, SearchHit, SyncResult

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Search and question a private collection of Japanese business documents (PDF, CSV) stored in "
    "PostgreSQL + pgvector. search_rag returns passages with sources; ask answers with cited sources "
    "or says 資料に記載がありません when the documents do not say."
)


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking service call in a worker thread; a user-fixable error becomes a tool error."""
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args))
    except (RagError, ValueError) as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        mapped = storage.database_error(exc)
        if mapped is None:
            raise
        raise ToolError(str(mapped)) from exc


def build_server(get_service: Callable[[], RagService]) -> MCPServer:
    """The MCP server; ``get_service()`` (called once, in the lifespan) makes the warm service."""
    holder: dict[str, RagService] = {}

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict]:
        if "service" not in holder:
            holder["service"] = await anyio.to_thread.run_sync(get_service)
        yield {"service": holder["service"]}

    def service() -> RagService:
        return holder["service"]

    server = MCPServer(name="rag-ja", instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool()
    async def search_rag(query: str, k: int = DEFAULT_K, mode: str = "hybrid") -> list[SearchHit]:
        """Search the documents. Returns up to k (1-50) passages, best first, each with id, score (0-1,
        higher is better, monotone with rank), snippet (about 120 characters around the best match) and
        payload (source, document_id, page or row, chunk_index, start/end of the snippet in the chunk).
        mode: hybrid (default), vector or keyword."""
        return await _call(service().search, query, k, mode)

    @server.tool()
    async def ask(question: str, mode: str = "hybrid") -> AskResult:
        """Answer a question from the documents with the local LLM. mode: hybrid (default), vector,
        keyword, local or global (graph search), or auto (chosen per question; the answer's mode says
        which). Returns answer, mode, sources (cited ones first), cited_sources, abstained (why it
        said 資料に記載がありません, or null), withdrawn (the numbers or words of a withdrawn answer that
        no document states) and timings."""
        return await _call(service().ask, question, mode)

    @server.tool()
    async def list_documents() -> list[dict[str, Any]]:
        """The stored documents: doc_id, source_file, chunks, ingested_at, origin."""
        return await _call(service().list_documents)

    @server.tool()
    async def sync() -> SyncResult:
        """Re-ingest the data folder now (changed, new and deleted files only); returns the summary."""
        return await _call(service().sync_summary)

    return server


def parse_http(value: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``PORT`` (host 127.0.0.1) for --http; ValueError otherwise."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--http needs HOST:PORT or PORT (a port from 1 to 65535), got {value!r}")
    return host, int(port)


def http_app(server: MCPServer, settings: Settings, host: str, port: int, token: Token):
    """The SDK's streamable-HTTP Starlette app behind ``app.serving.access``'s Host/Origin/token guard.

    The SDK's own Host/Origin check is turned off: on loopback it would accept any
    ``http://localhost:<port>`` origin and refuse ALLOWED_HOSTS names; the guard checks both,
    on every binding. The guard passes the lifespan through, so the service still loads once."""
    from mcp.server.transport_security import TransportSecuritySettings

    inner = server.streamable_http_app(
        host=host, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    return guard(inner, token.value, host, port, settings.servers.allowed_hosts, settings.servers.allowed_origins)


class PathOnly(logging.Filter):
    """uvicorn's access lines with the request's path only: a query string may carry a secret
    (``?token=…``), and the log is kept longer than the request."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) >= 3 and isinstance(record.args[2], str):
            args = list(record.args)
            path, sep, _ = args[2].partition("?")
            args[2] = path + (sep and "?…")
            record.args = tuple(args)
        return True


def access_log_config() -> dict:
    """uvicorn's own logging configuration with :class:`PathOnly` on its access lines."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["path_only"] = {"()": PathOnly}
    config["handlers"]["access"]["filters"] = ["path_only"]
    return config


def serve_http(app: Any, host: str, port: int, log_level: str) -> None:
    """Serve the ASGI ``app`` (:func:`http_app`) with uvicorn on ``host:port`` until Ctrl-C; its access
    lines name each request's path without the query string."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level.lower(), log_config=access_log_config())
    anyio.run(uvicorn.Server(config).serve)


def start_lines(host: str, port: int, token: Token) -> list[str]:
    """What the HTTP server says at start: the URL, where the token is (never the token) and how a
    client sends it, and a warning when it listens beyond loopback."""
    lines = [
        f"MCP server on http://{host_port(host, port)}/mcp (Ctrl-C to stop)",
        f"token: {token.describe()}; clients send the header Authorization: Bearer <token>",
    ]
    weak = weak_token_warning(token.value, token.source)
    if weak:
        lines.append(weak)
    if not is_loopback(host):
        lines.append(
            f"warning: listening on {host}: every request needs the token; the traffic is not "
            f"encrypted (use an SSH tunnel or a TLS proxy); Host names accepted: "
            f"{', '.join(server_hosts(host, port)) or 'none'} (add more with ALLOWED_HOSTS)"
        )
    return lines
