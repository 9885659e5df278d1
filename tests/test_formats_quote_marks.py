"""app.formats.quote_marks: a quote found on its page, or across a page break of a real two-page PDF
made with reportlab (the boxes compared with PDFium's own char boxes, computed independently), and on
a scan from the words the sync kept, without Tesseract."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from app.formats.page_words import PageWords
from app.formats.quote_marks import may_continue, page_marks, spread
from tests.test_formats_page_image import close_to, expected_box

SENTENCE = "The approval request is sent to the manager before Friday."
NO_TESSERACT = "/nonexistent/tesseract"  # any run of Tesseract fails: boxes must come from the kept words


def two_pages(path: Path) -> Path:
    """A two-page A4 PDF whose last line on page 1 is a sentence's beginning, and whose first line on
    page 2 is its end (Helvetica 14, no running header or footer)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    drawn = canvas.Canvas(str(path), pagesize=A4)
    drawn.setFont("Helvetica", 14)
    drawn.drawString(72, 770, "Section 2. Requests")
    drawn.drawString(72, 60, "Leave is asked for in writing. The approval request is sent to the")
    drawn.showPage()
    drawn.setFont("Helvetica", 14)
    drawn.drawString(72, 770, "manager before Friday. Late requests wait a week.")
    drawn.drawString(72, 740, "Section 3. Travel")
    drawn.showPage()
    drawn.save()
    return path


@pytest.fixture(scope="module")
def pdf(tmp_path_factory) -> Path:
    return two_pages(tmp_path_factory.mktemp("pages") / "rules.pdf")


def test_spread_covers_both_pages_only_when_the_quote_runs_across():
    assert spread(["a", "b", "c"], ["d", "e"], "b c d") == ([1, 2], [0])
    assert spread(["a", "b", "c"], ["d", "e"], "ab") == ([], [])  # all on the first page
    assert spread(["a", "b", "c"], ["d", "e"], "de") == ([], [])  # all on the second
    assert spread(["a", "b"], ["x"], "bz") == ([], [])


@pytest.mark.parametrize(
    "units, quote, onto_next, want",
    [
        (["…sent ", "to the"], "to the manager", True, True),
        (["…sent ", "to the"], "the manager", True, True),
        (["…sent ", "to the"], "manager", True, False),
        (["manager ", "before"], "to the manager", False, True),
        (["manager ", "before"], "sent to", False, False),
        (["x"], "x", True, False),  # the whole quote on the page is no continuation
    ],
)
def test_may_continue_compares_a_page_end_or_start_with_the_quote(units, quote, onto_next, want):
    assert may_continue(units, quote, onto_next) is want


def test_a_sentence_across_the_page_break_is_marked_on_both_pages(pdf):
    for cited in (1, 2):  # cited as page 1 (it goes on) or as page 2 (it began before)
        marks = page_marks(pdf, cited, SENTENCE)
        assert sorted(marks) == [1, 2]
        [first], [second] = marks[1], marks[2]
        assert close_to(first, expected_box(pdf, 1, "The approval", "to the"))
        assert close_to(second, expected_box(pdf, 2, "manager", "Friday."))
        assert first["y"] > 0.9 and second["y"] < 0.1  # the foot of page 1, the head of page 2


def test_a_quote_on_its_page_marks_that_page_only(pdf):
    marks = page_marks(pdf, 2, "Late requests wait a week.")
    assert list(marks) == [2] and close_to(marks[2][0], expected_box(pdf, 2, "Late", "week."))
    assert page_marks(pdf, 1, "Section 3. Travel") == {1: []}  # on the other page only: not this quote
    assert page_marks(pdf, 2, "nowhere at all") == {2: []}


def test_a_scan_is_marked_from_the_words_kept_without_tesseract(tmp_path):
    frames = [Image.new("L", (400, 200), 255), Image.new("L", (400, 200), 255)]
    frames[0].save(tmp_path / "scan.tif", save_all=True, append_images=frames[1:])
    kept = {
        1: PageWords(400, 200, (("勤務時間は", 40, 20, 200, 20, 0), ("午前9時から", 40, 160, 160, 20, 1))),
        2: PageWords(400, 200, (("午後6時まで", 40, 10, 120, 20, 0), ("とする。", 180, 12, 80, 18, 0))),
    }
    asked: list[int] = []

    def stored(page: int) -> PageWords | None:
        asked.append(page)
        return kept.get(page)

    assert page_marks(tmp_path / "scan.tif", 1, "勤務時間は", stored, command=NO_TESSERACT) == {
        1: [{"x": 0.1, "y": 0.1, "w": 0.5, "h": 0.1}]
    }
    across = page_marks(tmp_path / "scan.tif", 1, "午前9時から午後6時までとする。", stored, command=NO_TESSERACT)
    assert across == {
        1: [{"x": 0.1, "y": 0.8, "w": 0.4, "h": 0.1}],
        2: [{"x": 0.1, "y": 0.05, "w": 0.55, "h": 0.1}],  # one line: its two words in one rectangle
    }
    assert asked == [1, 1, 2]  # each page read once a call, the next only when the quote may go on
    with pytest.raises(ValueError, match=r"^tesseract did not read the page"):
        page_marks(tmp_path / "scan.tif", 1, "勤務", lambda page: None, command=NO_TESSERACT)
