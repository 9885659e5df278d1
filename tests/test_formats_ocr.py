"""OCR with the real Tesseract on images drawn with a Japanese font (skipped, with the reason, without
them); the one-line refusal when Tesseract is missing needs neither."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from PIL import Image, ImageDraw, ImageFont

from app.config import Settings
from app.errors import DataSourceError
from app.formats import pdf_ocr
from app.formats.ocr import INSTALL_HINT, Ocr, clean_ocr_text, image_document
from app.formats.page_words import PageWords
from app.formats.pdf import pdf_document
from app.ingestion.datadir import SourceFile
from app.ingestion.reading import iter_chunks
from app.ingestion.workers import Progress

LINES = ["就業規則 第3条 勤務時間", "社員の勤務時間は午前9時から午後6時までとする。", "休憩時間は正午から1時間とする。"]
MISSING = Ocr(command="/nonexistent/tesseract")


def japanese_font() -> str | None:
    """A font file with Japanese glyphs (fontconfig), or None."""
    if shutil.which("fc-list") is None:
        return None
    listed = subprocess.run(["fc-list", ":lang=ja", "file"], capture_output=True, text=True).stdout.split("\n")
    files = sorted(
        (line.strip().rstrip(":") for line in listed if line.strip()),
        key=lambda f: ("gothic" not in f.lower(), "ipagp" not in f, f),
    )  # Gothic reads best
    return files[0] if files else None


FONT = japanese_font()
needs_ocr = pytest.mark.skipif(
    Ocr().missing() is not None or FONT is None,
    reason=f"needs Tesseract with jpn/jpn_vert/eng ({INSTALL_HINT}) and a Japanese font (fonts-ipafont-gothic)",
)


def page_image(lines=LINES) -> Image.Image:
    """A white page with ``lines`` drawn in black at 40 px (about 10 pt at 300 dpi)."""
    font = ImageFont.truetype(FONT, 40)
    image = Image.new("L", (1300, 120 + 80 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((60, 60 + 80 * number), line, font=font, fill=0)
    return image


def test_clean_ocr_text_drops_spaces_between_japanese_characters():
    assert (
        clean_ocr_text("勤 務 時 間 は 9 時 で す 。\n\fVersion 2.1 です。")
        == "勤務時間は 9 時です。\nVersion 2.1 です。"
    )


def test_without_tesseract_an_image_is_one_line(tmp_path):
    Image.new("L", (10, 10), 255).save(tmp_path / "scan.png")
    with pytest.raises(DataSourceError) as caught:
        image_document(tmp_path / "scan.png", MISSING)
    assert (
        str(caught.value)
        == f"scan.png: needs OCR, but Tesseract is not installed; skipped (install it: {INSTALL_HINT})"
    )


def test_without_tesseract_an_image_only_pdf_is_one_line(tmp_path):
    Image.new("L", (100, 100), 255).save(tmp_path / "scan.pdf")
    with pytest.raises(
        DataSourceError, match=r"^scan.pdf: needs OCR, but Tesseract is not installed; skipped \(install"
    ):
        pdf_document(tmp_path / "scan.pdf", ocr=lambda path, numbers, count: MISSING.pdf_pages(path, numbers, count))


def test_missing_language_is_named():
    assert Ocr(langs="jpn+nosuchlang").missing() in ("Tesseract has no nosuchlang model", "Tesseract is not installed")


@needs_ocr
def test_png_is_read_by_ocr(tmp_path):
    page_image().save(tmp_path / "規則.png")
    [(text, source)] = image_document(tmp_path / "規則.png", Ocr())
    assert source == "規則.png"
    assert "社員の勤務時間は午前9時から午後6時までとする。" in text
    assert "就業規則" in text and "休憩時間は" in text


@needs_ocr
def test_multipage_tiff_has_a_source_per_page(tmp_path):
    first, second = page_image(LINES[:1]), page_image(["有給休暇は年10日とする。"])
    first.save(tmp_path / "scan.tif", save_all=True, append_images=[second])
    pages: list[tuple[int, int]] = []
    units = image_document(tmp_path / "scan.tif", Ocr(), on_page=lambda done, total: pages.append((done, total)))
    assert pages == [(1, 2), (2, 2)]  # progress per page
    assert [source for _, source in units] == ["scan.tif:p1", "scan.tif:p2"]
    assert "有給休暇は年" in units[1][0]


@needs_ocr
def test_image_only_pdf_pages_are_ocrd_with_page_sources(tmp_path):
    page_image().save(
        tmp_path / "scan.pdf", resolution=300.0, save_all=True, append_images=[page_image(["有給休暇は年10日とする。"])]
    )
    pages: list[tuple[int, int]] = []
    source = SourceFile("pdf/scan.pdf", tmp_path / "scan.pdf", "scan.pdf", "h")
    chunks = list(iter_chunks(source, Settings(), on_page=lambda done, total: pages.append((done, total))))
    assert pages == [(1, 2), (2, 2)]  # the sync's progress bar hears of each page
    assert [c.metadata["source"] for c in chunks] == ["scan.pdf:p1", "scan.pdf:p2"]
    assert "午前9時から午後6時まで" in chunks[0].page_content
    assert "有給休暇は年" in chunks[1].page_content
    assert pdf_ocr(Settings())  # the hook the sync passes


def test_progress_bar_shows_the_page_being_ocrd_and_clears_it():
    with Progress(2, enabled=True) as bar:
        bar.reading("pdf/scan.pdf")
        bar.ocr_page(1, 3)
        assert bar.bar.postfix == "OCR page 1/3"
        bar.ocr_page(3, 3)  # the last page: the chunks come next
        assert not bar.bar.postfix
        bar.ocr_page(1, 2)
        bar.reading("pdf/next.pdf")  # a new file starts without the old page
        assert not bar.bar.postfix
    Progress(1, enabled=False).ocr_page(1, 2)  # a disabled bar ignores it


class SlowOcr(Ocr):
    """Tesseract stood in by 0.7 s a page: what each page is given, recorded."""

    def __init__(self):
        super().__init__(command="tesseract")
        self.given: list[tuple[float, float | None]] = []

    def missing(self):
        return None

    def read_page(self, image, name, where, seconds, budget_s=None):
        import time

        self.given.append((seconds, budget_s))
        time.sleep(0.7)
        return "本文", PageWords(image.width, image.height, ())


def test_a_scan_has_one_time_budget_for_the_whole_file_not_one_a_page(tmp_path):
    """Issue 40, case 7: a 200-page scan could take ~47 minutes (PARSE_TIMEOUT_S a page). Now the file
    has PARSE_TIMEOUT_S in all: each page gets what is left, and the page past it stops the file."""
    from app.formats.limits import Limits

    frames = [Image.new("L", (60, 40), 255) for _ in range(5)]
    frames[0].save(tmp_path / "scan.tif", save_all=True, append_images=frames[1:])
    ocr = SlowOcr()
    with pytest.raises(DataSourceError) as raised:
        image_document(tmp_path / "scan.tif", ocr, Limits(parse_timeout_s=1.0))
    message = str(raised.value)
    assert message.startswith("scan.tif: reading took longer than PARSE_TIMEOUT_S=1 s (stopped at page ")
    assert 2 <= len(ocr.given) <= 3 < 5  # stopped before the last pages, not after all five
    assert all(budget == 1.0 for _, budget in ocr.given) and ocr.given[0][0] <= 1.0


@needs_ocr
def test_the_words_tesseract_read_are_kept_with_their_boxes(tmp_path):
    """One run of Tesseract gives the text and the words (issue 52): the words hold the text, each line's
    words lie on the line drawn (y = 60, 140, 220 px, 40 px high), in the image's own pixels."""
    page_image().save(tmp_path / "規則.png")
    words: dict[int, PageWords] = {}
    [(text, _)] = image_document(tmp_path / "規則.png", Ocr(), words=words)
    [(again, _)] = image_document(tmp_path / "規則.png", Ocr())
    assert text == again  # the text read as before, whether or not the words are kept
    [page] = words.values()
    assert list(words) == [1] and (page.width, page.height) == (1300, 360)
    assert "".join(w[0] for w in page.words).replace(" ", "") == text.replace("\n", "").replace(" ", "")
    for word in page.words:
        drawn = 60 + 80 * word[5]  # the line's top as drawn
        assert drawn - 15 <= word[2] <= drawn + 15 and word[2] + word[4] <= drawn + 60, word


@needs_ocr
def test_a_scanned_pdf_keeps_the_words_of_its_ocrd_pages_only(tmp_path):
    from reportlab.pdfgen import canvas

    from app.formats import read_document

    page_image().save(tmp_path / "scan.pdf", resolution=300.0)
    document = read_document(tmp_path / "scan.pdf", Settings())
    [page] = document.page_words.values()
    assert list(document.page_words) == [1]  # rendered at OCR_DPI=300: the image's own size, give or take a pixel
    assert abs(page.width - 1300) <= 1 and abs(page.height - 360) <= 1
    drawn = canvas.Canvas(str(tmp_path / "text.pdf"))
    drawn.drawString(72, 700, "A text layer needs no OCR.")
    drawn.save()
    assert read_document(tmp_path / "text.pdf", Settings()).page_words == {}
