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
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from app import storage
from app.config import Settings
from app.errors import RagError
from app.serving.access import Token, guard, weak_token_warning
from app.serving.feedback import FeedbackReceipt, feedback_on
from app.serving.gate import LOCKED, AccessGate
from app.serving.hits import SearchHit
from app.serving.hosts import MachineNames, is_loopback, public_host, server_hosts, serving_line
from app.serving.identify import Identifier
from app.serving.service import DEFAULT_K, AskResult, RagService, SyncResult
from app.storage.scope import Scope, parse_scope
from app.text.storable import check_fields
from app.users.identity import FULL, Identity, identity_for_token, principals_for_user

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Search and question a private collection of Japanese business documents (PDF, CSV) stored in "
    "PostgreSQL + pgvector. search_rag returns passages with sources; ask answers with cited sources "
    "or says 資料に記載がありません when the documents do not say."
)


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a blocking service call in a worker thread; a user-fixable error becomes a tool error."""
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except (RagError, ValueError) as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        mapped = storage.database_error(exc)
        if mapped is None:
            raise
        raise ToolError(str(mapped)) from exc


def storable(**arguments: Any) -> None:
    """A tool error with one line when a tool's text argument holds a character that cannot be stored
    (NUL, a lone surrogate, …: app.text.storable), before any search, model call or database write."""
    try:
        check_fields(arguments)
    except ValueError as exc:
        raise ToolError(str(exc)) from exc


def tool_scope(folders: Any = None, formats: Any = None, since: Any = None) -> Scope | None:
    """The ``folders``, ``formats`` and ``since`` arguments of ``search_rag`` and ``ask`` as a Scope
    (app.storage.scope.parse_scope), None when they narrow nothing; a tool error with the one line for a
    value that could widen it or is not a list of strings (``..``, an absolute path, a pattern, a day that
    is not YYYY-MM-DD)."""
    try:
        for name, value in (("folders", folders), ("formats", formats)):
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                raise ValueError(f"{name} is a list of strings, got {value!r}")
        if since is not None and not isinstance(since, str):
            raise ValueError(f"since takes a day as YYYY-MM-DD (2025-04-01), got {since!r}")
        check_fields({"folders": folders or [], "formats": formats or [], "since": since})
        return parse_scope(folders, formats, since) or None
    except ValueError as exc:
        raise ToolError(str(exc)) from exc


def request_identity(ctx: Context | None, service: RagService, as_user: str = "") -> Identity:
    """Who calls a tool: over HTTP the identity the guard found (a personal token's user, or ``everyone``
    for MCP_TOKEN); over stdio MCP_AS_USER's user (looked up now, so a changed membership holds at once)
    or, unset, full access (the client runs as someone who reads ``data/`` already)."""
    request = None
    if ctx is not None:
        try:
            request = ctx.request_context.request
        except ValueError:  # no request context (called outside a request)
            request = None
    if request is not None:
        found = getattr(getattr(request, "state", None), "identity", None)
        if not isinstance(found, Identity):  # an HTTP request the guard did not pass: never full access
            raise ToolError("who is asking is unknown; send Authorization: Bearer <token>")
        return found
    if as_user:
        return Identity(as_user, principals_for_user(service.store.engine, as_user), "user")
    return FULL


def build_server(
    get_service: Callable[[], RagService],
    as_user: str = "",
    permissions_on: Callable[[], bool] = lambda: False,
    feedback: bool = True,
    gate: AccessGate | None = None,
) -> MCPServer:
    """The MCP server; ``get_service()`` (called once, in the lifespan) makes the warm service; over
    stdio the tools answer as ``as_user`` (MCP_AS_USER), or with full access when it is empty.
    ``permissions_on()``: an access file exists (then only group admin may sync). ``feedback``
    (FEEDBACK): offer the ``feedback`` tool. ``gate`` (app.serving.gate): while the server is locked,
    every tool refuses all but group admin with one line (over HTTP the guard refused them already)."""
    holder: dict[str, RagService] = {}

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict]:
        if "service" not in holder:
            holder["service"] = await anyio.to_thread.run_sync(get_service)
        yield {"service": holder["service"]}

    def service() -> RagService:
        return holder["service"]

    def identified(ctx: Context | None) -> Identity:
        who = request_identity(ctx, service(), as_user)
        if gate is not None and not who.admin and gate.mode() == LOCKED:
            raise ToolError(gate.locked_line())
        return who

    async def caller(ctx: Context | None) -> Identity:
        """Who calls this tool (:func:`request_identity`), refused while the server is locked unless admin."""
        return await _call(identified, ctx)

    server = MCPServer(name="rag-ja", instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool()
    async def search_rag(
        query: str,
        k: int = DEFAULT_K,
        mode: str = "hybrid",
        folders: list[str] | None = None,
        formats: list[str] | None = None,
        since: str | None = None,
        ctx: Context | None = None,
    ) -> list[SearchHit]:
        """Search the documents. Returns up to k (1-50) passages, best first, each with id, score (0-1,
        higher is better, monotone with rank), snippet (about 120 characters around the best match) and
        payload (source, document_id, page or row, chunk_index, start/end of the snippet in the chunk).
        mode: hybrid (default), vector or keyword. Optional: folders (folders of the data folder, such as
        docs/規程), formats (extensions, such as pdf) and since (YYYY-MM-DD) keep only passages of documents
        in those folders, of those formats, dated that day or later."""
        storable(query=query, mode=mode)
        scope = tool_scope(folders, formats, since)
        who = await caller(ctx)
        return await _call(service().search, query, k, mode, who=who, scope=scope)

    @server.tool()
    async def ask(
        question: str,
        mode: str = "hybrid",
        folders: list[str] | None = None,
        formats: list[str] | None = None,
        since: str | None = None,
        ctx: Context | None = None,
    ) -> AskResult:
        """Answer a question from the documents with the local LLM. mode: hybrid (default), vector,
        keyword, local or global (graph search), or auto (chosen per question; the answer's mode says
        which). Returns answer, mode, sources (cited ones first), cited_sources, abstained (why it
        said 資料に記載がありません, or null), withdrawn (the numbers or words of a withdrawn answer that
        no document states), status (that reason as one Japanese line), table (the table, SQL and rows of
        an answer computed over a table, or null), scope and timings. Optional: folders, formats and since
        narrow the documents read, as in search_rag (not with mode global)."""
        storable(question=question, mode=mode)
        scope = tool_scope(folders, formats, since)
        who = await caller(ctx)
        return await _call(service().ask, question, mode, who=who, scope=scope)

    @server.tool()
    async def list_documents(ctx: Context | None = None) -> list[dict[str, Any]]:
        """The stored documents you may read: doc_id, source_file, chunks, ingested_at, origin."""
        who = await caller(ctx)
        return await _call(service().list_documents, who)

    @server.tool()
    async def sync(ctx: Context | None = None) -> SyncResult:
        """Re-ingest the data folder now (changed, new and deleted files only); returns the summary.
        Group admin only once permissions are on (an access file); before, anyone the server lets in."""
        who = await caller(ctx)
        if not who.admin and permissions_on():
            raise ToolError("sync is for administrators (group admin) only")
        return await _call(service().sync_summary)

    if feedback:

        @server.tool(name="feedback")
        async def give_feedback(
            answer_id: str,
            helpful: bool,
            source: str | None = None,
            none_right: bool = False,
            comment: str = "",
            ctx: Context | None = None,
        ) -> FeedbackReceipt:
            """Say whether an answer of yours helped: answer_id is the one ask returned; with
            helpful=false, source names the source among the answer's sources that was the right one,
            or none_right=true says none of them was; comment (at most 1000 characters) is optional.
            Only the asker who received the answer may give feedback on it."""
            storable(answer_id=answer_id, source=source, comment=comment)
            who = await caller(ctx)
            body = {
                "answer_id": answer_id,
                "helpful": helpful,
                "source": source,
                "none_right": none_right,
                "comment": comment,
            }
            return await _call(feedback_on, service(), body, who)

    return server


def parse_http(value: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``PORT`` (host 127.0.0.1) for --http; ValueError otherwise."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--http needs HOST:PORT or PORT (a port from 1 to 65535), got {value!r}")
    return host, int(port)


def http_app(server: MCPServer, settings: Settings, host: str, port: int, token: Token, gate: AccessGate | None = None):
    """The SDK's streamable-HTTP Starlette app behind ``app.serving.access``'s Host/Origin/identity guard:
    a personal token is its user, MCP_TOKEN is ``everyone`` (app.serving.identify).

    The SDK's own Host/Origin check is turned off: on loopback it would accept any
    ``http://localhost:<port>`` origin and refuse ALLOWED_HOSTS names; the guard checks both,
    on every binding. The guard passes the lifespan through, so the service still loads once. ``gate``:
    the server's mode (app.serving.gate); while locked only group admin gets past the guard."""
    from mcp.server.transport_security import TransportSecuritySettings

    inner = server.streamable_http_app(
        host=host, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    identifier = Identifier.from_settings(
        settings, lambda personal: identity_for_token(storage.get_engine(settings), personal), token.value
    )
    return guard(
        inner,
        token.value,
        host,
        port,
        settings.servers.allowed_hosts,
        settings.servers.allowed_origins,
        public_url=settings.access.public_url,
        identify=identifier.identify,
        gate=gate,
    )


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


def start_lines(
    host: str, port: int, token: Token, public_url: str = "", machine: MachineNames | None = None
) -> list[str]:
    """What the HTTP server says at start: the URL clients use (PUBLIC_URL, else beyond loopback this
    machine's address, never only 127.0.0.1), where the token is (never the token) and how a client
    sends it, and a warning when it listens beyond loopback."""
    _, first = serving_line("MCP server", host, port, "/mcp", public_url, machine)
    lines = [first, f"token: {token.describe()}; clients send the header Authorization: Bearer <token>"]
    weak = weak_token_warning(token.value, token.source)
    if weak:
        lines.append(weak)
    if not is_loopback(host):
        public = public_host(public_url)
        names = server_hosts(host, port, machine) + ((public,) if public else ())
        lines.append(
            f"warning: listening on {host}: every request needs the token; the traffic is not "
            f"encrypted (use an SSH tunnel or a TLS proxy); Host names accepted: "
            f"{', '.join(dict.fromkeys(names)) or 'none'} (add more with ALLOWED_HOSTS)"
        )
    return lines
