"""OCR of scanned pages with Tesseract: images (``.png``, ``.jpg``, ``.tif`` …) and PDF pages with no text layer.

Tesseract runs as its command-line program (``tesseract stdin stdout -l jpn+jpn_vert+eng``), one page at
a time, one thread (``OMP_THREAD_LIMIT=1``: on a small machine its threads slow it down), with the
languages of OCR_LANGS; it needs no network and no model download (Debian ships the models:
``tesseract-ocr-jpn``, ``tesseract-ocr-jpn-vert``). PDF pages are rendered with PDFium (pypdfium2) at
OCR_DPI. Each page must be read within PARSE_TIMEOUT_S. Without Tesseract or its Japanese models a
file that needs OCR fails with one line saying what to install.

OCR is slow (seconds per page), but a sync reads a file again only when its bytes change: the OCR'd
text is stored with the document's chunks, so an unchanged scan is never OCR'd twice. The same run of
Tesseract writes the page's words with their boxes (its ``tsv`` output beside ``txt``:
:class:`app.formats.page_words.PageWords`), which the sync stores with the document for the page's web
view (a quote marked on the scan without OCR at request time). Progress is
reported per page through ``on_page(done, total)`` (the ingest's bar shows ``OCR page 3/12``) and logged
at INFO; nothing here prints.
"""

from __future__ import annotations

import io
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.config import OCR_LANGS_DEFAULT
from app.errors import DataSourceError
from app.formats.limits import Deadline, Limits, display_name, strip_nul
from app.formats.page_words import PageWords, words_from_tsv
from app.formats.pdf import clean_pdf_text

PDFIUM_LOCK = threading.RLock()
"""PDFium is not thread-safe (pypdfium2 says so): every call into it in this process (opening, rendering,
reading a text page, closing) holds this lock, whichever thread makes it: the page's threads render two
pages of a quote at once, and a watch sync may OCR beside them."""

DEFAULT_LIMITS = Limits()  # the defaults of every limit (app.config's defaults)
PageProgress = Callable[[int, int], None]  # on_page(pages done, pages to OCR in this file)

log = logging.getLogger(__name__)

INSTALL_HINT = "apt-get install tesseract-ocr tesseract-ocr-jpn tesseract-ocr-jpn-vert"
MAX_PIXELS = 60_000_000  # a page is rendered (or an image read) at most this large: 300 dpi A3 is 17.4 M
# Tesseract puts spaces between Japanese characters; a space between two of them is not text.
_CJK = r"[\u3000-\u303f\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]"
_CJK_SPACE = re.compile(rf"(?<={_CJK})[ \t]+(?={_CJK})")


def clean_ocr_text(text: str) -> str:
    """Tesseract's output as text: spaces between Japanese characters removed, NULs removed, wrapped
    lines joined as for a PDF page (:func:`app.formats.pdf.clean_pdf_text`)."""
    return clean_pdf_text(_CJK_SPACE.sub("", strip_nul(text).replace("\f", "")))


@dataclass(frozen=True)
class Ocr:
    """How to OCR: Tesseract's languages (OCR_LANGS), the PDF render resolution (OCR_DPI) and the
    program to run."""

    langs: str = OCR_LANGS_DEFAULT
    dpi: int = 300
    command: str = "tesseract"

    @classmethod
    def from_settings(cls, settings) -> Ocr:
        """The OCR a :class:`app.config.Settings` sets."""
        return cls(settings.ingest.ocr_langs, settings.ingest.ocr_dpi)

    def missing(self) -> str | None:
        """What is missing for OCR (the program, or some of its languages), as words; None when ready."""
        program = shutil.which(self.command)
        if program is None:
            return "Tesseract is not installed"
        try:
            listed = subprocess.run([program, "--list-langs"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"Tesseract does not run ({exc.__class__.__name__}: {exc})"
        have = {line.strip() for line in (listed.stdout + listed.stderr).splitlines()[1:]}
        lacking = [lang for lang in self.langs.split("+") if lang not in have]
        return f"Tesseract has no {'+'.join(lacking)} model" if lacking else None

    def refusal(self, name: str) -> str | None:
        """The one line a file needing OCR fails with when OCR cannot run, or None."""
        missing = self.missing()
        return f"{name}: needs OCR, but {missing}; skipped (install it: {INSTALL_HINT})" if missing else None

    def read_page(
        self, image, name: str, where: str, seconds: float, budget_s: float | None = None
    ) -> tuple[str, PageWords]:
        """The text Tesseract reads in a PIL image (converted to grayscale PNG, fed on stdin), and its
        words with their boxes in the image's pixels, from one run (``txt`` and ``tsv`` written to a
        temporary folder). DataSourceError if it fails or takes longer than ``seconds`` (what is left of
        the file's PARSE_TIMEOUT_S, ``budget_s``, which the message names)."""
        buffer = io.BytesIO()
        image.convert("L").save(buffer, format="PNG")
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        with tempfile.TemporaryDirectory(prefix="rag-ocr-") as folder:
            out = Path(folder) / "page"
            self._run(buffer.getvalue(), out, name, where, seconds, budget_s, env)
            text = out.with_suffix(".txt").read_bytes().decode("utf-8", "replace")
            tsv = out.with_suffix(".tsv").read_bytes().decode("utf-8", "replace")
        return clean_ocr_text(text), words_from_tsv(tsv, image.width, image.height)

    def _run(
        self, png: bytes, out: Path, name: str, where: str, seconds: float, budget_s: float | None, env: dict
    ) -> None:
        """Tesseract over ``png``, writing ``out``.txt and ``out``.tsv; DataSourceError as :meth:`read_page`."""
        try:
            done = subprocess.run(
                [self.command, "stdin", str(out), "-l", self.langs, "--psm", "3", "txt", "tsv"],
                input=png,
                capture_output=True,
                timeout=seconds,
                env=env,
            )
        except subprocess.TimeoutExpired:
            raise DataSourceError(
                f"{name}: OCR of {where} took longer than PARSE_TIMEOUT_S={budget_s or seconds:g} s; skipped "
                "(raise PARSE_TIMEOUT_S to read it)"
            ) from None
        except OSError as exc:
            raise DataSourceError(f"{name}: OCR failed ({exc.__class__.__name__}: {exc}); skipped") from None
        if done.returncode != 0 or not (out.with_suffix(".txt").is_file() and out.with_suffix(".tsv").is_file()):
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise DataSourceError(f"{name}: OCR of {where} failed ({lines[-1] if lines else done.returncode}); skipped")

    def pdf_pages(
        self,
        path: Path,
        numbers: list[int],
        page_count: int,
        limits: Limits = DEFAULT_LIMITS,
        on_page: PageProgress | None = None,
        words: dict[int, PageWords] | None = None,
    ) -> dict[int, str]:
        """The OCR text of the PDF pages ``numbers`` (1-based; those with no text layer) as
        ``{number: text}`` (pages where Tesseract reads nothing left out); ``on_page(done, len(numbers))``
        after each page; ``words``, when given, receives each such page's words (``{number: PageWords}``).

        When OCR cannot run: DataSourceError (one line, what to install) if no page of the PDF has text,
        else a warning is logged and ``{}`` returned (the text pages are still stored).
        """
        name = display_name(path)
        refused = self.refusal(name)
        if refused:
            if len(numbers) == page_count:
                raise DataSourceError(refused)
            log.warning(
                "%s: %d of %d pages have no text layer and were not OCR'd (install Tesseract: %s)",
                name,
                len(numbers),
                page_count,
                INSTALL_HINT,
            )
            return {}
        import pypdfium2 as pdfium

        texts: dict[int, str] = {}
        try:
            with PDFIUM_LOCK:
                document = pdfium.PdfDocument(str(path))
        except Exception as exc:  # PDFium refuses what pypdf read: this file's failure only
            raise DataSourceError(f"{name}: cannot render for OCR ({exc.__class__.__name__}: {exc})") from exc
        deadline = Deadline(name, limits.parse_timeout_s)  # one budget for the file's OCR, not one a page
        try:
            for done, number in enumerate(numbers, start=1):
                deadline.check(f"page {number}")
                started = time.monotonic()
                with PDFIUM_LOCK:
                    image = render_page(document[number - 1], self.dpi)
                text, page_words = self.read_page(
                    image, name, f"page {number}", deadline.remaining(), budget_s=limits.parse_timeout_s
                )
                log.info(
                    "%s: OCR page %d (%d/%d) in %.1f s", name, number, done, len(numbers), time.monotonic() - started
                )
                if on_page is not None:
                    on_page(done, len(numbers))
                if text:
                    texts[number] = text
                    if words is not None:
                        words[number] = page_words
        finally:
            with PDFIUM_LOCK:
                document.close()
        return texts


def render_page(page, dpi: int):
    """A PDFium page as a grayscale PIL image at ``dpi`` (lower for a page so large it would pass MAX_PIXELS)."""
    width, height = page.get_size()  # points (1/72 inch)
    scale = min(dpi / 72, (MAX_PIXELS / max(width * height, 1.0)) ** 0.5)
    return page.render(scale=scale, grayscale=True).to_pil()


def image_document(
    path: Path,
    ocr: Ocr,
    limits: Limits = DEFAULT_LIMITS,
    on_page: PageProgress | None = None,
    words: dict[int, PageWords] | None = None,
) -> list[tuple[str, str]]:
    """An image file OCR'd: ``[(text, source), ...]``, source ``file.png`` for a single image and
    ``file.tif:p<N>`` for each page of a multi-page TIFF; ``on_page(done, frames)`` after each page;
    ``words``, when given, receives each page's words (``{number: PageWords}``, a single image page 1).
    DataSourceError if OCR cannot run (one line saying what to install), the image is unreadable or
    too large (MAX_PIXELS), or no text is read."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    name = display_name(path)
    refused = ocr.refusal(name)
    if refused:
        raise DataSourceError(refused)
    units: list[tuple[str, str]] = []
    deadline = Deadline(name, limits.parse_timeout_s)  # one budget for the whole file, not one a page
    try:
        with Image.open(path) as image:
            frames = getattr(image, "n_frames", 1)
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                if frame.width * frame.height > MAX_PIXELS:
                    raise DataSourceError(
                        f"{name}: {frame.width}×{frame.height} pixels, more than {MAX_PIXELS:,} "
                        "(a decompression bomb?); skipped"
                    )
                deadline.check(f"page {number}")
                started = time.monotonic()
                text, page_words = ocr.read_page(
                    frame, name, f"page {number}", deadline.remaining(), budget_s=limits.parse_timeout_s
                )
                log.info("%s: OCR page %d/%d in %.1f s", name, number, frames, time.monotonic() - started)
                if on_page is not None:
                    on_page(number, frames)
                if text:
                    units.append((text, name if frames == 1 else f"{name}:p{number}"))
                    if words is not None:
                        words[number] = page_words
    except DataSourceError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError) as exc:
        raise DataSourceError(f"{name}: unreadable image ({exc.__class__.__name__}: {exc})") from exc
    if not units:
        raise DataSourceError(f"{name}: OCR found no text")
    return units
