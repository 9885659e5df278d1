"""Word files built with python-docx, read back by app.formats.word (exact sources, paths and texts)."""

from __future__ import annotations

import pytest
from docx import Document
from docx.shared import Pt

from app.config import Settings
from app.errors import DataSourceError
from app.formats.word import docx_document
from app.ingestion.datadir import SourceFile
from app.ingestion.reading import chunk_file


@pytest.fixture
def rules_docx(tmp_path):
    """A rulebook: Title, Heading 1/2, a list, a table with a merged header, a bold-large heading."""
    doc = Document()
    doc.add_heading("就業規則", 0)
    doc.add_paragraph("この規則は社員に適用する。")
    doc.add_heading("第1章 総則", 1)
    doc.add_paragraph("目的を定める。")
    doc.add_paragraph("項目一", style="List Bullet")
    doc.add_paragraph("項目二", style="List Number")
    doc.add_heading("1.1 勤務時間", 2)
    table = doc.add_table(rows=3, cols=3)
    table.cell(0, 0).text, table.cell(0, 1).text = "区分", "時間"
    table.cell(0, 1).merge(table.cell(0, 2))
    for row, values in ((1, ("正社員", "9時", "18時")), (2, ("契約社員", "10時", "19時"))):
        for col, value in enumerate(values):
            table.cell(row, col).text = value
    run = doc.add_paragraph().add_run("特別休暇")
    run.bold, run.font.size = True, Pt(16)
    doc.add_paragraph("慶弔休暇がある。")
    doc.add_heading("第1章 総則", 1)  # a repeated heading gets -1
    doc.add_paragraph("繰り返しの見出し。")
    path = tmp_path / "規則.docx"
    doc.save(path)
    return path


def test_docx_document_cuts_at_headings_with_paths_lists_and_tables(rules_docx):
    assert docx_document(rules_docx) == [
        ("この規則は社員に適用する。", "規則.docx#就業規則", "就業規則"),
        ("目的を定める。\n\n・項目一\n・項目二", "規則.docx#第1章-総則", "就業規則 > 第1章 総則"),
        (
            "区分:正社員\n時間:9時\n時間:18時\n\n区分:契約社員\n時間:10時\n時間:19時",
            "規則.docx#11-勤務時間",
            "就業規則 > 第1章 総則 > 1.1 勤務時間",
        ),
        ("慶弔休暇がある。", "規則.docx#特別休暇", "就業規則 > 第1章 総則 > 特別休暇"),
        ("繰り返しの見出し。", "規則.docx#第1章-総則-1", "就業規則 > 第1章 総則"),
    ]


def test_docx_outline_level_makes_a_heading(tmp_path):
    doc = Document()
    heading = doc.add_paragraph("概要")
    outline = heading._p.get_or_add_pPr()
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    level = OxmlElement("w:outlineLvl")
    level.set(qn("w:val"), "0")
    outline.append(level)
    doc.add_paragraph("本文です。")
    doc.save(tmp_path / "a.docx")
    assert docx_document(tmp_path / "a.docx") == [("本文です。", "a.docx#概要", "概要")]


def test_docx_chunks_carry_stem_and_heading_path_as_context(rules_docx):
    source = SourceFile("docs/規則.docx", rules_docx, "規則.docx", "h")
    chunks = chunk_file(source, Settings())
    assert [(c.metadata["source"], c.metadata["context"], c.metadata.get("title")) for c in chunks][:2] == [
        ("規則.docx#就業規則", "規則 — 就業規則", "就業規則"),
        ("規則.docx#第1章-総則", "規則 — 就業規則 > 第1章 総則", "就業規則 > 第1章 総則"),
    ]
    assert [c.id for c in chunks] == [c.id for c in chunk_file(source, Settings())]  # stable IDs


def test_docx_without_text_is_one_line(tmp_path):
    Document().save(tmp_path / "empty.docx")
    with pytest.raises(DataSourceError, match=r"^empty.docx: no text \(an empty document\)$"):
        docx_document(tmp_path / "empty.docx")
