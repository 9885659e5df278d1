"""The page's 絞り込み (scope): the choices offered, from what the asker may read, and the ``scope`` of an
``/api/ask`` body checked (app.storage.scope.Scope: folders, formats, a date).

* ``GET /api/scopes`` — ``{"folders": [...], "formats": [...]}``: every folder holding a document the asker
  may read (each ancestor: ``docs/``, ``docs/規程/``) and the formats of those documents, from
  ``service.list_documents(who)``, which reads as the asker in SQL: a folder only others may read is never
  offered. Its own route rather than a field of ``/api/documents``: the question page needs the choices
  only, never the list of every document, and the documents page keeps its shape.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.storage.scope import Scope, parse_scope
from app.text.storable import check_fields

SCOPE_KEYS = ("folders", "formats", "since")
_EXTENSION = re.compile(r"[.]([^./]+)$")  # app.storage.scope's SQL: substring(doc_id from '[.]([^./]+)$')
_FORMAT = re.compile(r"[a-z0-9]+")  # what parse_formats accepts: a choice offered is one that may be sent
MAX_CHOICES = 20  # folders or formats one question may name


def scope_choices(doc_ids: Iterable[str]) -> dict[str, list[str]]:
    """The folders and formats of documents: every ancestor folder of each ID (``docs/規程/a.pdf`` →
    ``docs/``, ``docs/規程/``), each ending in ``/``, and each lower-case extension (``pdf``), both sorted
    without repeats; a document at the top of the data folder has no folder, one without an extension (or
    with one that is not letters and digits) no format."""
    folders: set[str] = set()
    formats: set[str] = set()
    for doc_id in doc_ids:
        parts = str(doc_id).split("/")
        folders.update("/".join(parts[:n]) + "/" for n in range(1, len(parts)) if parts[n - 1])
        found = _EXTENSION.search(str(doc_id))  # the extension as the scope's SQL reads it
        if found and _FORMAT.fullmatch(found.group(1).lower()):
            formats.add(found.group(1).lower())
    return {"folders": sorted(folders), "formats": sorted(formats)}


def _text_list(value: Any, name: str) -> list[str]:
    """A list of strings (a single string counts as one) of at most MAX_CHOICES; ValueError otherwise."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise ValueError(f"scope.{name} は文字列のリストで指定してください")
    if len(items) > MAX_CHOICES:
        raise ValueError(f"scope.{name} は {MAX_CHOICES} 個までです")
    return [v for v in items if v.strip()]


def read_scope(body: Any) -> Scope:
    """The ``scope`` of an ask body (``{"folders": [...], "formats": [...], "since": "YYYY-MM-DD"}``, each
    optional; none or ``{}``: every document) as a Scope; ValueError with one line for an unknown key, a
    value of the wrong type, a character that cannot be stored, or a value app.storage.scope refuses
    (``..``, an absolute path, a pattern, a day that is not YYYY-MM-DD)."""
    raw = body.get("scope") if isinstance(body, dict) else None
    if raw is None:
        return Scope()
    if not isinstance(raw, dict):
        raise ValueError("scope は {folders, formats, since} のオブジェクトで指定してください")
    unknown = sorted(set(raw) - set(SCOPE_KEYS))
    if unknown:
        raise ValueError(f"scope に使えない項目があります: {', '.join(map(str, unknown))}（folders, formats, since）")
    folders = _text_list(raw.get("folders"), "folders")
    formats = _text_list(raw.get("formats"), "formats")
    since = raw.get("since")
    if since is not None and not isinstance(since, str):
        raise ValueError("scope.since は YYYY-MM-DD の文字列で指定してください")
    check_fields({"scope.folders": folders, "scope.formats": formats, "scope.since": since})
    return parse_scope(folders, formats, since or None)


async def asked_scope(service: Any, body: Any, mode: str, who: Any) -> Any:
    """The ask body's ``scope`` (app.web.scopes.read_scope), checked as ``who`` before anything is searched
    (``service.check_scope``: a folder with nothing they may read, or global mode); None without one.
    ValueError with the one line the page shows."""
    scope = read_scope(body)
    if not scope:
        return None
    return await asyncio.to_thread(service.check_scope, scope, who, mode)


def scope_routes(service: Any, who: Callable[[Request], Any], guarded: Callable[[Callable], Callable]) -> list[Route]:
    """``GET /api/scopes``: the folders and formats the asker may narrow a question to (:func:`scope_choices`
    of ``service.list_documents(who)``); ``guarded`` answers 503 in one line when the database is gone."""

    async def scopes(request: Request) -> Response:
        docs = await asyncio.to_thread(service.list_documents, who(request))
        return JSONResponse(scope_choices(d["doc_id"] for d in docs))

    return [Route("/api/scopes", guarded(scopes), methods=["GET"])]
