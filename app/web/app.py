"""The web page's HTTP surface (Starlette): the page, the streamed answer, the stored documents.

Routes:

* ``GET /`` — the page (Japanese interface, :mod:`app.web.page`);
* ``POST /api/ask`` — JSON ``{"question": "…", "mode": "hybrid", "history": ["earlier question", …]}``
  and optionally ``"scope": {"folders": […], "formats": […], "since": "YYYY-MM-DD"}`` (app.web.scopes);
  the answer as Server-Sent Events: ``searched`` (the question as searched: a follow-up made to stand
  alone, app.web.followup), ``queued`` (questions ahead), ``token`` (a generated piece), then
  ``done`` (the answer, its quote, sources cited first, abstention, timings in milliseconds) or ``error`` (one line);
* ``GET /documents`` — the documents page; ``GET /api/documents`` — what is stored, and the last sync's
  summary and failures (one line each); ``POST /api/sync`` — sync the data folder now (from this
  machine only: the administrator's);
* ``GET /api/source?id=faq.csv:r2`` — one stored source as the page shows it (app.web.sources); a PDF
  or scan page adds its image's URL, ``stale`` and, with ``&quote=…``, the quote's boxes (app.web.page_image);
* ``GET /api/page-image?id=guide.pdf:p3`` — that page rendered as a PNG (app.web.page_image);
* ``GET /files/<doc_id>`` — a stored file the asker may read: a PDF in the browser's own viewer
  (``#page=N``), any other as a download;
* ``GET /api/scopes`` — the folders and formats the asker may narrow a question to (app.web.scopes);
* ``GET /admin`` — the administrator's usage view (app.web.admin): 403 with one line for anyone else.

The service (:class:`app.serving.service.RagService`: models and pool loaded once) is handed in, so tests
pass a fake; questions take turns on the one in-process model (:class:`app.web.turns.Turns`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app import storage
from app.errors import AnswerStoppedError, DatabaseUnavailableError, RagError
from app.serving.hosts import is_loopback
from app.text.storable import check_fields
from app.users.identity import Identity
from app.web.admin import admin_routes
from app.web.feedback import feedback_routes
from app.web.followup import standalone
from app.web.guard import DATABASE_GONE, LOCAL
from app.web.page import DOCUMENTS_PAGE, PAGE, content_security_policy
from app.web.page_image import PageImages, page_image_routes, source_extras_args
from app.web.scopes import asked_scope, scope_routes
from app.web.turns import Turns

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
MAX_BODY_BYTES = 64 * 1024  # a question of MAX_QUESTION_CHARS and its history, in JSON, with room to spare
HISTORY_KEPT = 3  # earlier questions a follow-up may refer to


def sse(kind: str, data: dict[str, Any]) -> str:
    """One Server-Sent Event: ``event: kind`` and its JSON data (Japanese kept readable)."""
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def page_headers(page: str) -> dict[str, str]:
    """Headers of an HTML page: its Content-Security-Policy, no MIME sniffing, no Referer sent."""
    return {
        "Content-Security-Policy": content_security_policy(page),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


def sync_result(report: Any) -> dict[str, Any] | None:
    """A sync report as the page shows it: its summary line and failures (None: no sync yet)."""
    if report is None:
        return None
    return {"summary": report.summary(), "failures": list(report.failures)}


def read_question(body: Any) -> tuple[str, str, list[str]]:
    """``(question, mode, history)`` from the request's JSON; ValueError with the one line the page shows,
    also for a character that cannot be stored (app.text.storable), before anything is searched."""
    if not isinstance(body, dict):
        raise ValueError("質問を JSON で送ってください")
    question = body.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("質問を入力してください")
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"質問が長すぎます（{MAX_QUESTION_CHARS} 文字まで）")
    mode = body.get("mode") or "hybrid"
    if not isinstance(mode, str):
        raise ValueError("mode は文字列で指定してください")
    history = body.get("history") or []
    if not isinstance(history, list) or not all(isinstance(h, str) for h in history):
        raise ValueError("history は文字列のリストで指定してください")
    check_fields({"question": question, "mode": mode, "history": history})
    return question.strip(), mode, [h[:MAX_QUESTION_CHARS] for h in history[-HISTORY_KEPT:]]


def page_result(result: Any) -> dict[str, Any]:
    """The ``done`` event: the service's answer with its timings in whole milliseconds
    (``timings_ms``), as the page shows them."""
    out = dict(result)
    out["timings_ms"] = {name: round(seconds * 1000) for name, seconds in (out.pop("timings", None) or {}).items()}
    return out


class Cancelled(AnswerStoppedError):
    """The asker closed the connection: the answer is stopped at its next token."""


Followup = Callable[[str, Sequence[str]], str]  # (question, earlier questions) -> the question to search


def error_line(exc: BaseException) -> str:
    """The one line the page shows for a failed answer; the log keeps the type, never the question."""
    message = database_message(exc)
    if message is None and isinstance(exc, (RagError, ValueError)):
        message = str(exc)
    if message is None:
        log.error("ask failed (%s)", type(exc).__name__, exc_info=exc)
        message = f"回答できませんでした（{type(exc).__name__}）"
    return message


async def answer_events(
    service: Any,
    turns: Turns,
    question: str,
    mode: str,
    history: Sequence[str] = (),
    followup: Followup = standalone,
    who: Identity = LOCAL,
    executor: Executor | None = None,
    scope: Any = None,
) -> AsyncIterator[str]:
    """The answer to ``question`` (made to stand alone after ``history`` by ``followup``) as events.

    An earlier answer to the same question (app.serving.service.RagService.cached_answer) comes at once,
    without waiting in line. Otherwise the question takes its place in ``turns`` (waiting holds no
    thread; a queued asker is told its place and, for a question without history, shown the passages
    retrieval finds meanwhile), then is answered on ``executor`` (the model's own threads) while this
    streams its ``sources`` and ``token`` events. When the asker goes away, the question leaves the line
    at once, or its work stops at the next check (``stopped``: between model calls, at each generated
    piece; a global question's map calls not yet made are never made) and the model passes on. ``scope``
    (app.storage.scope.Scope) narrows the search, the passages and the kept answers looked up."""
    within = {"scope": scope} if scope else {}  # no scope: the service's calls as before scopes existed
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
    gone = threading.Event()
    asked = time.perf_counter()
    working: list[asyncio.Future] = []  # the answer's work, once it holds a turn

    def put(kind: str, data: dict[str, Any]) -> None:  # from any thread
        loop.call_soon_threadsafe(events.put_nowait, (kind, data))

    def on_token(piece: str) -> None:
        if gone.is_set():
            raise Cancelled
        put("token", {"text": piece})

    def on_passages(shown: list[dict]) -> None:
        put("sources", {"passages": shown, "ms": round((time.perf_counter() - asked) * 1000)})

    def work() -> None:
        try:
            if gone.is_set():
                raise Cancelled
            searched = followup(question, history) if history else question
            put("searched", {"question": searched, "rewritten": searched != question})
            result = service.ask(
                searched, mode, on_token=on_token, who=who, on_passages=on_passages, stopped=gone.is_set, **within
            )
            put("done", page_result(result))
        except AnswerStoppedError:
            log.info("an answer was stopped: the asker closed the connection")
        except Exception as exc:
            put("error", {"message": error_line(exc)})

    async def run() -> None:
        try:
            if not history:
                earlier = await asyncio.to_thread(service.cached_answer, question, mode, who=who, **within)
                if earlier is not None:
                    put("searched", {"question": question, "rewritten": False})
                    on_passages(list(earlier.get("passages") or []))
                    put("done", page_result(earlier))
                    return
            ticket = turns.join(lambda ahead: events.put_nowait(("queued", {"ahead": ahead})))
            try:
                if not ticket.started and not history:  # something to read while waiting
                    on_passages(await asyncio.to_thread(service.passages, question, mode, who=who, **within))
                await turns.wait(ticket)
            except BaseException:
                turns.drop(ticket)
                raise
            future = loop.run_in_executor(executor, work)
            future.add_done_callback(lambda _: turns.leave())
            working.append(future)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            put("error", {"message": error_line(exc)})

    task = asyncio.ensure_future(run())
    try:
        while True:
            kind, data = await events.get()
            yield sse(kind, data)
            if kind in ("done", "error"):
                break
        # ends after the work and its turn's release (that callback runs first): a loop that ends with the
        # response (a test client's) would never run it, and the next question would wait forever
        if working:
            await asyncio.wait(working)
    finally:  # normally a no-op; on a closed connection, the question leaves the line or stops at its next token
        gone.set()
        task.cancel()


class BadBody(ValueError):
    """A request body the page never sends: too large, not JSON, nested too deep (one line, 400/413)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


async def read_json(request: Request, limit: int = MAX_BODY_BYTES) -> Any:
    """The request's JSON body, read no further than ``limit`` bytes; :class:`BadBody` for a larger
    one, one that is not UTF-8 (RFC 8259; ``json.loads`` would let encoded surrogates through), not
    JSON, or nested so deep that parsing it would exhaust the stack."""
    size, parts = 0, []
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise BadBody(f"リクエストが大きすぎます（{limit // 1024} KB まで）", status=413)
        parts.append(part)
    try:  # strict UTF-8: json.loads(bytes) would decode encoded surrogates (ED A0 80) into the text
        return json.loads(b"".join(parts).decode("utf-8"))
    except RecursionError:
        raise BadBody("JSON の入れ子が深すぎます") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadBody("質問を JSON で送ってください") from None


def refusal(fields: dict[str, Any]) -> Response | None:
    """400 with one line when a request's text (name → value) holds a character that cannot be stored
    (app.text.storable), before anything is looked up; None when all of it can."""
    try:
        check_fields(fields)
    except ValueError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    return None


def database_message(exc: BaseException) -> str | None:
    """The one line a person reads when the database is gone (stopped, unreachable, full), or None
    for any other error; logged once as a warning, without a traceback."""
    gone = storage.database_error(exc)
    if gone is None:
        return None
    log.warning("the database is not available: %s", gone)
    return DATABASE_GONE  # the driver's own text names the socket path or the server's address: the log's only


def with_database(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """``handler`` answering 503 with one line when the database is gone, instead of a 500 and a
    traceback; the next request tries again (the pool reconnects once the server is back)."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as exc:
            message = database_message(exc)
            if message is None:
                raise
            return JSONResponse({"error": message}, status_code=503)

    return run


def identity(request: Request) -> Identity:
    """Who asks (set by app.web.guard); this machine's user when the app runs without the guard (tests)."""
    return getattr(request.state, "identity", None) or LOCAL


def may_administer(request: Request, who: Identity) -> bool:
    """Sync from the page and see skipped files: group ``admin``, or in single-team mode this machine's
    user from this machine."""
    local = who.kind == "local" and is_loopback(request.client.host if request.client else "")
    return who.admin or local


def create_app(
    service: Any,
    turns: Turns | None = None,
    view_source: Callable[[str, Identity], dict | None] = lambda source, who: None,
    document_path: Callable[[str, Identity], Path | None] = lambda doc_id, who: None,
    followup: Followup = standalone,
) -> Starlette:
    """The web app over ``service`` (``ask``, ``list_documents``); ``view_source`` and
    ``document_path`` look a source and a stored document's file up as who asks (None: not in the
    store, or not theirs to read); ``followup`` makes a follow-up stand alone (the rules, or
    :func:`app.web.rewrite.llm_standalone`). Who asks is ``request.state.identity`` (app.web.guard);
    a request without one is this machine's user in single-team mode."""
    concurrency = int(getattr(service, "concurrency", 1) or 1)
    turns = turns or Turns(concurrency)
    # the model's work runs on its own threads: the default pool stays free for every other route
    model_threads = ThreadPoolExecutor(max_workers=turns.capacity, thread_name_prefix="answer")
    pages = PageImages(service, view_source, document_path)  # page images and their cache (app.web.page_image)

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE, headers=page_headers(PAGE))

    async def ask(request: Request) -> Response:
        try:
            body = await read_json(request)
            question, mode, history = read_question(body)
            scope = await asked_scope(service, body, mode, identity(request))
        except BadBody as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return StreamingResponse(
            answer_events(service, turns, question, mode, history, followup, identity(request), model_threads, scope),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def documents(request: Request) -> Response:
        who = identity(request)
        stored = await asyncio.to_thread(service.list_documents, who)
        # the skipped files name paths of every folder: the administrator's only
        admin = may_administer(request, who)
        last_sync = sync_result(getattr(service, "last_sync", None)) if admin else None
        return JSONResponse({"documents": stored, "last_sync": last_sync, "user": who.name, "admin": admin})

    async def documents_page(request: Request) -> Response:
        return HTMLResponse(DOCUMENTS_PAGE, headers=page_headers(DOCUMENTS_PAGE))

    async def resync(request: Request) -> Response:
        if not may_administer(request, identity(request)):
            return JSONResponse({"error": "再同期は管理者（admin グループ）だけが実行できます"}, status_code=403)
        try:
            _, report = await asyncio.to_thread(service.sync)
        except DatabaseUnavailableError:
            raise  # 503 (with_database)
        except (RagError, ValueError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=500)
        return JSONResponse(sync_result(report))

    async def source(request: Request) -> Response:
        wanted = request.query_params.get("id", "")
        if (refused := refusal({"id": wanted})) is not None:
            return refused
        quote, bad = source_extras_args(request)
        if bad is not None:
            return bad
        view = await asyncio.to_thread(view_source, wanted, identity(request)) if wanted else None
        if view is None:
            return JSONResponse({"error": "この出典は保存されていません"}, status_code=404)
        return JSONResponse(await asyncio.to_thread(pages.extras, view, quote, identity(request)))

    async def document_file(request: Request) -> Response:
        doc_id = request.path_params["doc_id"]
        if (refused := refusal({"doc_id": doc_id})) is not None:
            return refused
        path = await asyncio.to_thread(document_path, doc_id, identity(request))
        if path is None:
            return JSONResponse({"error": "この文書は保存されていません"}, status_code=404)
        if path.suffix.lower() == ".pdf":  # the browser's own viewer, at #page=N
            return FileResponse(
                path, media_type="application/pdf", filename=path.name, content_disposition_type="inline"
            )
        # any other stored file downloads: never rendered in the page's origin (an HTML file could run script)
        return FileResponse(path, media_type="application/octet-stream", filename=path.name)

    return Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            Route("/api/ask", with_database(ask), methods=["POST"]),
            Route("/documents", documents_page, methods=["GET"]),
            Route("/api/documents", with_database(documents), methods=["GET"]),
            Route("/api/sync", with_database(resync), methods=["POST"]),
            Route("/api/source", with_database(source), methods=["GET"]),
            Route("/files/{doc_id:path}", with_database(document_file), methods=["GET"]),
            *feedback_routes(
                service, read_body=read_json, who=identity, administers=may_administer, guarded=with_database
            ),
            *admin_routes(service, who=identity, administers=may_administer, guarded=with_database),
            *page_image_routes(pages, who=identity, guarded=with_database),
            *scope_routes(service, who=identity, guarded=with_database),
        ]
    )
