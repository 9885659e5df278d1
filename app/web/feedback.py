"""The page's feedback routes (app.serving.feedback does the checks, app.storage.feedback the rows):

* ``POST /api/feedback`` — ``{"answer_id": "…", "helpful": false, "source": "faq.csv:r2" | null,
  "none_right": false, "comment": "…"}`` on an answer the asker received → the receipt; 400 (a bad
  body, a source the answer did not have), 404 (no such answer of theirs, or FEEDBACK=0), one line each;
* ``GET /api/feedback`` — the most flagged questions (the documents page's list): an administrator's
  only (group ``admin``, or this machine's user from this machine in single-team mode), else 403.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.serving.feedback import AnswerNotFoundError, FeedbackOffError, feedback_on, flagged_questions
from app.users.identity import Identity

MAX_FEEDBACK_BYTES = 16 * 1024  # an ID, a source and a comment of at most 1,000 characters, in JSON
OFF = "フィードバックは無効です（FEEDBACK=0）"
NOT_FOUND = "この回答は見つかりません（あなたへの回答ではないか、保存期間を過ぎています）"
ADMIN_ONLY = "よく指摘される質問は管理者（admin グループ）だけが見られます"


def feedback_routes(
    service: Any,
    *,
    read_body: Callable[[Request], Awaitable[Any]],
    who: Callable[[Request], Identity],
    administers: Callable[[Request, Identity], bool],
    guarded: Callable[[Callable[[Request], Any]], Callable[[Request], Any]],
) -> list[Route]:
    """The two routes over ``service`` (its ``settings``, ``answer_record`` and ``store.engine``), with the app's own
    helpers (app.web.app, which imports this module): ``read_body`` reads a bounded JSON body (a
    ValueError with a ``status`` for a bad one), ``who`` says who asks, ``administers`` whether they
    may see the administrator's list, ``guarded`` answers 503 when the database is gone."""

    async def give(request: Request) -> Response:
        try:
            body = await read_body(request, limit=MAX_FEEDBACK_BYTES)
        except ValueError as exc:  # too large, not JSON, nested too deep
            return JSONResponse({"error": str(exc)}, status_code=getattr(exc, "status", 400))
        asker = who(request)
        try:
            receipt = await asyncio.to_thread(feedback_on, service, body, asker)
        except FeedbackOffError:
            return JSONResponse({"error": OFF}, status_code=404)
        except AnswerNotFoundError:
            return JSONResponse({"error": NOT_FOUND}, status_code=404)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(receipt)

    async def flagged(request: Request) -> Response:
        if not administers(request, who(request)):
            return JSONResponse({"error": ADMIN_ONLY}, status_code=403)
        if not service.settings.memory.feedback:
            return JSONResponse({"enabled": False, "questions": []})
        rows = await asyncio.to_thread(flagged_questions, service.settings, service.store.engine)
        return JSONResponse({"enabled": True, "questions": rows})

    return [
        Route("/api/feedback", guarded(give), methods=["POST"]),
        Route("/api/feedback", guarded(flagged), methods=["GET"]),
    ]
