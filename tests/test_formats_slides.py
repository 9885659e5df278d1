"""Decks built with python-pptx, read back by app.formats.slides (exact sources, titles and texts)."""

from __future__ import annotations

import pytest
from pptx import Presentation
from pptx.util import Inches

from app.config import Settings
from app.errors import DataSourceError
from app.formats.slides import pptx_document
from app.ingestion.datadir import SourceFile
from app.ingestion.reading import chunk_file


@pytest.fixture
def deck(tmp_path):
    """Slide 1: title, body, notes; slide 2: title, a table with a merged header, a text box below;
    slide 3: blank."""
    prs = Presentation()
    first = prs.slides.add_slide(prs.slide_layouts[1])
    first.shapes.title.text = "新人研修 概要"
    first.placeholders[1].text = "研修は4月1日から始まります。\n場所は本社3階です。"
    first.notes_slide.notes_text_frame.text = "出席を取ること"
    second = prs.slides.add_slide(prs.slide_layouts[5])
    second.shapes.title.text = "日程"
    second.shapes.add_textbox(Inches(1), Inches(5.5), Inches(3), Inches(1)).text_frame.text = "持ち物: 筆記用具"
    table = second.shapes.add_table(3, 3, Inches(1), Inches(2), Inches(6), Inches(2)).table
    table.cell(0, 0).text, table.cell(0, 1).text = "日付", "内容"
    table.cell(0, 1).merge(table.cell(0, 2))
    for row, values in ((1, ("4月1日", "入社式", "本社")), (2, ("4月2日", "ビジネスマナー", "研修室"))):
        for col, value in enumerate(values):
            table.cell(row, col).text = value
    prs.slides.add_slide(prs.slide_layouts[6])
    path = tmp_path / "研修.pptx"
    prs.save(path)
    return path


def test_pptx_one_unit_per_slide_in_reading_order_with_notes(deck):
    assert pptx_document(deck) == [
        (
            "新人研修 概要\n\n研修は4月1日から始まります。\n場所は本社3階です。\n\nノート:\n出席を取ること",
            "研修.pptx:s1",
            "新人研修 概要",
        ),
        (
            "日程\n\n日付:4月1日\n内容:入社式\n内容:本社\n\n日付:4月2日\n内容:ビジネスマナー\n内容:研修室\n\n持ち物: 筆記用具",
            "研修.pptx:s2",
            "日程",
        ),
    ]


def test_pptx_chunks_carry_the_slide_title(deck):
    chunks = chunk_file(SourceFile("docs/研修.pptx", deck, "研修.pptx", "h"), Settings())
    assert [(c.metadata["source"], c.metadata["context"], c.metadata["title"]) for c in chunks] == [
        ("研修.pptx:s1", "研修 — 新人研修 概要", "新人研修 概要"),
        ("研修.pptx:s2", "研修 — 日程", "日程"),
    ]


def test_empty_deck_is_one_line(tmp_path):
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    prs.save(tmp_path / "empty.pptx")
    with pytest.raises(DataSourceError, match=r"^empty.pptx: no text on any slide \(an empty deck\)$"):
        pptx_document(tmp_path / "empty.pptx")
