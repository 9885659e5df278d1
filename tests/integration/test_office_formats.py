"""Word, Excel, PowerPoint, HTML and a scan synced into the real database (issue 26): found by search
under their row/section/slide sources, a bad file is one failure, an unchanged folder embeds nothing,
a removed file leaves the store."""

from __future__ import annotations

import pytest
from docx import Document
from openpyxl import Workbook
from PIL import Image, ImageDraw, ImageFont
from pptx import Presentation

from app.formats.ocr import Ocr
from app.retrieval.search import keyword_search
from tests.integration.test_sync import rows
from tests.test_formats_ocr import FONT

pytestmark = pytest.mark.integration
OCR_READY = Ocr().missing() is None and FONT is not None


def make_folder(data):
    """One file of each format (the scan only where Tesseract and a Japanese font are), and a truncated .docx."""
    for folder in ("pdf", "csv", "docs"):
        (data / folder).mkdir(parents=True)
    wb = Workbook()
    ws = wb.active
    ws.title = "備品台帳"
    ws["A1"] = "備品台帳 2024年度"
    ws.merge_cells("A1:C1")
    ws.append(["品名", "保管場所", "数量"])
    ws.append(["プロジェクター", "第二会議室の戸棚", 2])
    ws.append(["延長コード", "総務部のキャビネット", 5])
    wb.save(data / "csv" / "備品.xlsx")
    doc = Document()
    doc.add_heading("出張規程", 1)
    doc.add_heading("日当", 2)
    doc.add_paragraph("国内出張の日当は一日あたり二千四百円とする。")
    doc.save(data / "docs" / "出張規程.docx")
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = "防災訓練"
    slide.placeholders[1].text = "避難場所は北公園の噴水前です。"
    prs.save(data / "docs" / "防災.pptx")
    (data / "docs" / "wifi.html").write_text(
        "<html><head><title>無線LAN</title></head><body><nav><a href='/'>ホーム</a></nav><main><h1>来客用Wi-Fi</h1>"
        "<p>来客用の無線LANのSSIDはGUEST-NETで、パスワードは受付で毎朝更新されます。</p></main></body></html>",
        encoding="utf-8",
    )
    broken = data / "docs" / "壊れた.docx"
    broken.write_bytes((data / "docs" / "出張規程.docx").read_bytes()[:500])
    if OCR_READY:
        font = ImageFont.truetype(FONT, 40)
        image = Image.new("L", (1300, 200), 255)
        ImageDraw.Draw(image).text((60, 60), "駐車場の利用は事前申請が必要です。", font=font, fill=0)
        image.save(data / "pdf" / "駐車場.png")


def test_office_formats_sync_search_and_remove(own_store, engine, tmp_path):
    data = tmp_path / "data"
    make_folder(data)
    name = own_store.settings.retrieval.collection_name
    _, report = own_store.sync(data, graph=False)
    assert (report.added, report.failed) == (5 if OCR_READY else 4, 1)
    assert (
        report.failures == [f for f in report.failures if f.startswith("docs/壊れた.docx")]
        and len(report.failures) == 1
        and "\n" not in report.failures[0]
    )
    stored = {source for source, _ in rows(engine, name)}
    assert {
        "備品.xlsx:備品台帳!r1",
        "備品.xlsx:備品台帳!r2",
        "出張規程.docx#日当",
        "防災.pptx:s1",
        "wifi.html#来客用wi-fi",
    } <= stored
    assert keyword_search(engine, name, "延長コード", 1, ("admin",))[0].metadata["source"] == "備品.xlsx:備品台帳!r2"
    hits = own_store.search("プロジェクターはどこに保管されていますか", search_mode="hybrid", top_k=3)
    assert hits[0].metadata["source"] == "備品.xlsx:備品台帳!r1"
    assert hits[0].metadata["context"] == "備品 — 備品台帳 — 備品台帳 2024年度 — 品名, 保管場所, 数量"
    assert keyword_search(engine, name, "日当", 1, ("admin",))[0].metadata["source"] == "出張規程.docx#日当"
    assert keyword_search(engine, name, "北公園", 1, ("admin",))[0].metadata["source"] == "防災.pptx:s1"
    assert keyword_search(engine, name, "GUEST-NET", 1, ("admin",))[0].metadata["source"] == "wifi.html#来客用wi-fi"
    if OCR_READY:
        assert keyword_search(engine, name, "駐車場", 1, ("admin",))[0].metadata["source"] == "駐車場.png"

    _, again = own_store.sync(data, graph=False)  # unchanged: nothing read again (no OCR), nothing embedded
    assert (again.added, again.updated, again.removed, again.embedded) == (0, 0, 0, 0)

    (data / "docs" / "防災.pptx").unlink()
    _, removed = own_store.sync(data, graph=False)
    assert removed.removed == 1
    assert not any(source.startswith("防災.pptx") for source, _ in rows(engine, name))
    assert not keyword_search(engine, name, "北公園", 5, ("admin",))
