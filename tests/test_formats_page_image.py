"""app.formats.page_image: one page of a real PDF or scan rendered as PNG, and a quote's rectangles
compared with PDFium's own character boxes (computed here independently)."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image

from app.formats.page_image import (
    has_text_layer,
    merged,
    quote_boxes,
    render_page,
    scan_quote_boxes,
    squeezed,
    turned,
    word_boxes,
)
from app.formats.page_words import PageWords
from app.formats.quote_marks import page_marks
from tests.test_formats_ocr import needs_ocr, page_image

GUIDE = Path(__file__).resolve().parents[1] / "data" / "pdf" / "technical_guide.pdf"
ONE_LINE = "推奨ブラウザはGoogle Chromeの最新版とMicrosoft Edgeの最新版です。"


def png_size(data: bytes) -> tuple[int, int]:
    """The size of a PNG (asserting it is one)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def expected_box(path: Path, number: int, first: str, last: str) -> dict:
    """The union of PDFium's char boxes from ``first``'s first character to ``last``'s last (whitespace
    left out) on one page, as fractions of the crop box, top-left origin."""
    document = pdfium.PdfDocument(str(path))
    page = document[number - 1]
    textpage = page.get_textpage()
    text = textpage.get_text_range()
    start = text.index(first)
    end = text.index(last, start) + len(last)
    boxes = [textpage.get_charbox(i) for i in range(start, end) if not text[i].isspace()]
    left0, bottom0, right0, top0 = page.get_cropbox()
    width, height = right0 - left0, top0 - bottom0
    left, right = min(b[0] for b in boxes) - left0, max(b[2] for b in boxes) - left0
    top, bottom = top0 - max(b[3] for b in boxes), top0 - min(b[1] for b in boxes)
    textpage.close()
    page.close()
    document.close()
    return {"x": left / width, "y": top / height, "w": (right - left) / width, "h": (bottom - top) / height}


def close_to(got: dict, want: dict) -> bool:
    """Two rectangles equal to the 5 decimal places the boxes are rounded to."""
    return all(abs(got[k] - want[k]) <= 1.5e-5 for k in "xywh")


def test_a_pdf_page_renders_at_the_width_asked():
    width, height = png_size(render_page(GUIDE, 2, width_px=600))
    assert width == 600
    assert height == round(600 * 841.8897705078125 / 595.2755737304688)  # A4's proportions


@pytest.mark.parametrize("number", [0, 5, -1])
def test_a_page_outside_the_pdf_is_a_value_error_naming_the_count(number):
    with pytest.raises(ValueError) as caught:
        render_page(GUIDE, number)
    assert str(caught.value) == f"technical_guide.pdf: no page {number} (the file has 4 pages)"


def test_bad_input_is_a_value_error(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(ValueError, match=r"^broken.pdf: PDFium cannot open it"):
        render_page(tmp_path / "broken.pdf", 1)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match=r"^notes.txt: not a PDF or a scanned image$"):
        render_page(tmp_path / "notes.txt", 1)
    with pytest.raises(ValueError, match=r"^width 0 px is outside 1\.\.3000$"):
        render_page(GUIDE, 1, width_px=0)


def test_page_1500_of_a_2000_page_pdf_renders_alone(tmp_path):
    document = pdfium.PdfDocument.new()
    for number in range(1, 2001):
        document.new_page(300, 600) if number == 1500 else document.new_page(600, 300)
    document.save(str(tmp_path / "long.pdf"))
    document.close()
    assert png_size(render_page(tmp_path / "long.pdf", 1500, width_px=200)) == (200, 400)  # that page's shape
    with pytest.raises(ValueError, match=r"\(the file has 2000 pages\)$"):
        render_page(tmp_path / "long.pdf", 2001)


def test_a_tiff_page_and_a_single_image(tmp_path):
    first, second = Image.new("L", (2400, 1200), 255), Image.new("L", (800, 1600), 0)
    first.save(tmp_path / "scan.tif", save_all=True, append_images=[second])
    assert png_size(render_page(tmp_path / "scan.tif", 1, width_px=1200)) == (1200, 600)  # scaled down
    assert png_size(render_page(tmp_path / "scan.tif", 2, width_px=1200)) == (800, 1600)  # never up
    with pytest.raises(ValueError, match=r"^scan.tif: no page 3 \(the file has 2 pages\)$"):
        render_page(tmp_path / "scan.tif", 3)
    Image.new("RGB", (300, 200), "white").save(tmp_path / "photo.png")
    assert png_size(render_page(tmp_path / "photo.png", 1, width_px=150)) == (150, 100)
    with pytest.raises(ValueError, match=r"^photo.png: no page 2 \(the file has 1 page\)$"):
        render_page(tmp_path / "photo.png", 2)


def test_squeezed_drops_whitespace_and_maps_back():
    assert squeezed("Ａ B\n㈱") == ("AB(株)", [0, 2, 4, 4, 4])


def test_a_quote_on_one_line_is_the_union_of_its_char_boxes():
    [box] = quote_boxes(GUIDE, 1, ONE_LINE)
    assert close_to(box, expected_box(GUIDE, 1, "推奨ブラウザ", "最新版です。"))


def test_a_quote_with_other_whitespace_still_matches():
    assert quote_boxes(
        GUIDE, 1, "推奨ブラウザは Google\nChrome の最新版と Microsoft　Edge の最新版です。"
    ) == quote_boxes(GUIDE, 1, ONE_LINE)


def test_a_quote_over_two_lines_is_one_rectangle_per_line():
    first, second = quote_boxes(GUIDE, 1, ONE_LINE + "Internet Explorerには対応していません。")
    assert close_to(first, expected_box(GUIDE, 1, "推奨ブラウザ", "Internet"))
    assert close_to(second, expected_box(GUIDE, 1, "Explorer", "対応していません。"))
    assert second["y"] > first["y"] + first["h"] / 2


def test_an_absent_quote_has_no_boxes():
    assert quote_boxes(GUIDE, 1, "この文はどこにもありません") == []
    assert quote_boxes(GUIDE, 1, " \n") == []
    assert has_text_layer(GUIDE, 1)


def test_merged_joins_a_line_and_breaks_at_the_next():
    assert merged([(0, 0, 1, 1), (1, 0, 2, 1.2), (0, 2, 1, 3)]) == [(0, 0, 2, 1.2), (0, 2, 1, 3)]


def test_word_boxes_join_the_words_of_one_line():
    words = PageWords(
        200,
        100,
        (
            ("勤務", 10, 20, 40, 10, 0),
            ("時間は", 60, 18, 40, 12, 0),
            ("9時", 10, 50, 20, 10, 1),
            ("まで", 40, 50, 20, 10, 1),
        ),
    )
    assert word_boxes(words, "務時間は 9時") == [  # a word partly quoted is marked whole
        {"x": 0.05, "y": 0.18, "w": 0.45, "h": 0.12},
        {"x": 0.05, "y": 0.5, "w": 0.1, "h": 0.1},
    ]
    assert word_boxes(words, "ない") == []


@needs_ocr
def test_a_scan_quote_is_found_by_tesseracts_words(tmp_path):
    page_image().save(tmp_path / "scan.png")  # lines drawn at y = 60, 140, 220 px of 360, 40 px high
    boxes = scan_quote_boxes(tmp_path / "scan.png", 1, "社員の勤務時間は午前9時から午後6時までとする。")
    assert boxes and page_marks(tmp_path / "scan.png", 1, "社員の勤務時間は")[1] != []
    top = min(b["y"] for b in boxes) * 360
    bottom = max(b["y"] + b["h"] for b in boxes) * 360
    assert 120 <= top <= 160 and 150 <= bottom <= 200  # the second line, not the first or third


@pytest.mark.parametrize(
    "rotation, want",
    [
        (0, (0.1, 0.2, 0.4, 0.3)),
        (90, (0.7, 0.1, 0.8, 0.4)),
        (180, (0.6, 0.7, 0.9, 0.8)),
        (270, (0.2, 0.6, 0.3, 0.9)),
        (-90, (0.2, 0.6, 0.3, 0.9)),
    ],
)
def test_turned_moves_a_rectangle_with_the_page(rotation, want):
    got = turned(0.1, 0.2, 0.4, 0.3, rotation)
    assert got == pytest.approx(want, abs=1e-12)


def test_turned_refuses_an_odd_angle():
    with pytest.raises(ValueError, match=r"^a page turns by 0, 90, 180 or 270 degrees, not 45$"):
        turned(0, 0, 1, 1, 45)


def test_a_quote_on_a_page_with_rotate_90_is_marked_where_the_rendered_page_shows_it(tmp_path):
    from reportlab.pdfgen import canvas

    drawn = canvas.Canvas(str(tmp_path / "turned.pdf"), pagesize=(600, 800))
    drawn.setPageRotation(90)  # reportlab stores the page 800 wide and 600 high, /Rotate 90: shown 600 × 800
    drawn.setFont("Helvetica", 20)
    drawn.drawString(100, 500, "Rotated line here.")
    drawn.showPage()
    drawn.save()
    [box] = quote_boxes(tmp_path / "turned.pdf", 1, "Rotated line here.")
    # PDFium's char boxes, unturned: left 101.76, bottom 499.72, right 256.12, top 514.36 of 800 × 600;
    # turned 90° clockwise, the text runs down the right-hand side of the 600 × 800 page
    assert box == pytest.approx(
        {"x": 1 - (600 - 499.72) / 600, "y": 101.76 / 800, "w": (514.36 - 499.72) / 600, "h": (256.12 - 101.76) / 800},
        abs=2e-5,
    )
    with Image.open(io.BytesIO(render_page(tmp_path / "turned.pdf", 1, width_px=600))) as image:
        assert image.size == (600, 800)
        dark = image.convert("L").point(lambda v: 255 if v < 128 else 0).getbbox()  # the inked pixels
    left, top, right, bottom = box["x"] * 600, box["y"] * 800, (box["x"] + box["w"]) * 600, (box["y"] + box["h"]) * 800
    assert left - 1 <= dark[0] and dark[2] <= right + 1 and top - 1 <= dark[1] and dark[3] <= bottom + 1
    assert dark[2] - dark[0] >= 0.8 * (right - left) and dark[3] - dark[1] >= 0.9 * (bottom - top)


def test_threads_rendering_and_marking_at_once_get_what_one_thread_gets():
    """PDFium is not thread-safe: the page's threads render both pages of a quote at once and mark it
    (app.formats.ocr.PDFIUM_LOCK serializes every call). Without the lock this crashed the process."""
    from concurrent.futures import ThreadPoolExecutor

    jobs = [("render", n) for n in (1, 2, 1, 2)] * 4 + [("marks", n) for n in (1, 2)] * 4

    def run(job):
        kind, number = job
        if kind == "render":
            return render_page(GUIDE, number, 400)
        return page_marks(GUIDE, number, ONE_LINE)

    alone = [run(job) for job in jobs]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(run, jobs))
    assert together == alone
    assert any(marks for kind, marks in zip(jobs, alone) if kind[0] == "marks" and any(marks.values()))
