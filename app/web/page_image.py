"""A PDF page or a scan as its rendered image, with the quoted sentence marked (app.formats.page_image).

* ``GET /api/page-image?id=guide.pdf:p3`` — the PNG of that source's page (a scan's page too:
  ``scan.tif:p2``, a single image ``scan.png``). Looked up exactly as ``/api/source`` and ``/files``
  are: the source as who asks (not theirs to read: the same 404 as an unknown source), then the
  document's file through the same permission-checked ``document_path``. Rendered on a worker thread;
  the PNGs are kept in a small LRU per app, keyed by the file's resolved path, size, mtime_ns, the
  page and the width, so a changed file is never answered from it.
* ``/api/source`` (app.web.app) adds, for such a source, ``"image"`` (that URL), ``"stale"`` (the
  file's SHA-256 differs from the stored document's ``content_hash``: the quote is the ingested
  version's) and, when asked with ``&quote=…``, ``"boxes"``: the quote's rectangles as fractions of
  the page (a PDF's text layer; a scan's words as the sync's OCR kept them, read as who asks, or, for a
  scan stored before they were kept or changed since, read by Tesseract on demand; kept in the same kind
  of LRU). A quote that runs from the end of one page onto the next also gets ``"pages"``: both pages,
  in order, each ``{"number", "source", "image", "boxes"}`` (app.formats.quote_marks).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any
from urllib.parse import quote as url_quote

from cachetools import LRUCache
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.formats.limits import file_hash
from app.formats.page_image import DEFAULT_WIDTH, SCAN_SUFFIXES, is_paged, render_page
from app.formats.quote_marks import page_marks
from app.text.storable import check_fields
from app.users.identity import Identity

log = logging.getLogger(__name__)

UNKNOWN_SOURCE = "この出典は保存されていません"  # the words of /api/source's 404
UNKNOWN_FILE = "この文書は保存されていません"  # the words of /files' 404
NOT_A_PAGE = "この出典はページ画像で表示できません（PDF と画像のページだけです）"
MAX_QUOTE_CHARS = 2000


class Lru:
    """A thread-safe LRU (cachetools' LRUCache under a lock): at most ``entries`` values, or with
    ``max_bytes`` at most that many bytes of them in all (a value larger than that is not kept)."""

    def __init__(self, entries: int, max_bytes: int = 0) -> None:
        self.items = LRUCache(maxsize=max_bytes, getsizeof=len) if max_bytes else LRUCache(maxsize=entries)
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value kept under ``key`` (now the most recent), or None."""
        with self.lock:
            return self.items.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key``, dropping the least recent past the bound."""
        with self.lock:
            try:
                self.items[key] = value
            except ValueError:  # larger than the whole cache: served, not kept
                pass


def file_key(path: Path) -> tuple[str, int, int]:
    """The file as a cache key: its resolved path, size and mtime_ns (a changed file is another key)."""
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


def page_number(view: dict) -> int | None:
    """The page a source view (app.web.sources.source_view) shows as an image: a PDF's or a TIFF's
    ``:pN`` page, 1 for a single image (its source is the file's name, ``scan.png`` for the document
    ``pdf/scan.png``, or its ID); None for any other source."""
    doc_id = str(view.get("doc_id", ""))
    if not is_paged(doc_id):
        return None
    if view.get("kind") == "page" and view.get("number"):
        return int(view["number"])
    if view.get("source") in (doc_id, doc_id.rsplit("/", 1)[-1]) and doc_id.lower().endswith(SCAN_SUFFIXES):
        return 1
    return None


def image_url(source: str) -> str:
    """The ``/api/page-image`` URL of a source."""
    return "/api/page-image?id=" + url_quote(source, safe="")


def page_source(source: str, number: int, other: int) -> str:
    """The source of page ``other`` of the document whose page ``number`` is ``source`` (``guide.pdf:p3``
    -> ``guide.pdf:p4``)."""
    return source.removesuffix(f":p{number}") + f":p{other}"


class PageImages:
    """The page images and quote boxes of one web app, over its ``view_source`` and ``document_path``
    (both as who asks, None when not theirs) and ``service`` (its ``list_documents`` for the stored
    hashes, its ``settings`` for the OCR languages, its store's ``page_words`` for the words the sync's
    OCR kept, read as who asks); the caches live as long as the app."""

    def __init__(
        self,
        service: Any,
        view_source: Callable[[str, Identity], dict | None],
        document_path: Callable[[str, Identity], Path | None],
        width: int = DEFAULT_WIDTH,
    ) -> None:
        self.service, self.view_source, self.document_path, self.width = service, view_source, document_path, width
        self.images = Lru(32, max_bytes=48 << 20)  # 48 MB of PNGs
        self.boxes = Lru(256)
        self.hashes = Lru(256)
        settings = getattr(service, "settings", None)
        self.langs = getattr(getattr(settings, "ingest", None), "ocr_langs", None) or "jpn+eng"

    def png(self, path: Path, number: int) -> bytes:
        """The page's PNG, from the cache when this very file was rendered before."""
        key = (*file_key(path), number, self.width)
        found = self.images.get(key)
        if found is None:
            found = render_page(path, number, self.width)
            self.images.put(key, found)
        return found

    def quote_marks(self, path: Path, doc_id: str, number: int, quote: str, who: Identity, kept: bool) -> dict:
        """The quote's boxes by page (app.formats.quote_marks.page_marks: the cited page, or the two a quote
        runs across), cached per file version, page and quote; ``{number: []}`` when they cannot be found
        (no match, Tesseract missing: logged). ``kept``: a scan's words may come from the store (the file is
        the version the sync read), read as ``who`` (the caller looked the source up as ``who`` first)."""
        key = (*file_key(path), number, quote, kept)
        found = self.boxes.get(key)
        if found is None:
            stored = None
            if kept and (words := getattr(getattr(self.service, "store", None), "page_words", None)):
                stored = lambda page: words(doc_id, page, who.principals)  # noqa: E731
            try:
                found = page_marks(path, number, quote, stored, self.langs)
            except ValueError as exc:
                log.warning("no quote boxes on %s page %d: %s", path.name, number, exc)
                found = {number: []}
            self.boxes.put(key, found)
        return found

    def stale(self, path: Path, doc_id: str, who: Identity) -> bool | None:
        """Whether the file's bytes differ from the stored document's (its ``content_hash``); None when
        the store names no hash for it."""
        listing = getattr(self.service, "list_documents", None)
        stored = next((d for d in (listing(who) if listing else []) if d.get("doc_id") == doc_id), None)
        if not stored or not stored.get("content_hash"):
            return None
        key = file_key(path)
        digest = self.hashes.get(key)
        if digest is None:
            digest = file_hash(path)
            self.hashes.put(key, digest)
        return digest != stored["content_hash"]

    def extras(self, view: dict, quote: str, who: Identity) -> dict:
        """``view`` with ``image``, ``stale`` and (for a ``quote``) ``boxes`` added when its source is a
        page of a PDF or a scan whose file who asks may read; unchanged otherwise."""
        number = page_number(view)
        path = self.document_path(view["doc_id"], who) if number is not None else None
        if path is None or number is None:
            return view
        extra: dict[str, Any] = {"image": image_url(view["source"])}
        stale = self.stale(path, view["doc_id"], who)
        if stale is not None:
            extra["stale"] = stale
        if quote:
            marks = self.quote_marks(path, view["doc_id"], number, quote, who, kept=stale is not True)
            extra["boxes"] = marks.get(number, [])
            if len(marks) > 1:  # the quote runs across a page break: both pages, in order
                sources = {n: page_source(view["source"], number, n) for n in marks}
                extra["pages"] = [
                    {"number": n, "source": sources[n], "image": image_url(sources[n]), "boxes": marks[n]}
                    for n in sorted(marks)
                ]
        return {**view, **extra}

    def image_of(self, source: str, who: Identity) -> bytes | tuple[int, str]:
        """The PNG of ``source``'s page as who asks, or ``(status, message)``: 404 for a source or file
        not theirs (the words of /api/source and /files), 400 for a source that is not such a page."""
        view = self.view_source(source, who)
        if view is None:
            return 404, UNKNOWN_SOURCE
        number = page_number(view)
        if number is None:
            return 400, NOT_A_PAGE
        path = self.document_path(view["doc_id"], who)
        if path is None:
            return 404, UNKNOWN_FILE
        try:
            return self.png(path, number)
        except ValueError as exc:  # the file changed since: that page is gone, or it no longer reads
            return 404, str(exc)


def source_extras_args(request: Request) -> tuple[str, Response | None]:
    """The ``quote`` of an ``/api/source`` request, or a 400 with one line for one that cannot be
    stored or is longer than MAX_QUOTE_CHARS."""
    quote = request.query_params.get("quote", "")
    try:
        check_fields({"quote": quote})
    except ValueError as exc:
        return "", JSONResponse({"error": str(exc)}, status_code=400)
    if len(quote) > MAX_QUOTE_CHARS:
        return "", JSONResponse({"error": f"引用が長すぎます（{MAX_QUOTE_CHARS} 文字まで）"}, status_code=400)
    return quote, None


def page_image_routes(
    pages: PageImages, who: Callable[[Request], Identity], guarded: Callable[[Callable], Callable]
) -> list[Route]:
    """``GET /api/page-image`` over ``pages``; ``who`` names the asker, ``guarded`` wraps a route that
    reads the database (503 with one line when it is gone)."""

    async def page_image(request: Request) -> Response:
        wanted = request.query_params.get("id", "")
        try:
            check_fields({"id": wanted})
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        if not wanted:
            return JSONResponse({"error": UNKNOWN_SOURCE}, status_code=404)
        got = await asyncio.to_thread(pages.image_of, wanted, who(request))
        if isinstance(got, tuple):
            return JSONResponse({"error": got[1]}, status_code=got[0])
        return Response(got, media_type="image/png", headers={"Cache-Control": "private, no-store"})

    return [Route("/api/page-image", guarded(page_image), methods=["GET"])]
