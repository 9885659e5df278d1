"""Tables inside Word, PowerPoint and HTML files (app.tables.documents), read from real files: their
cells typed, and each cited by the source ID its rows' text is cited by today."""

from decimal import Decimal

import pytest

from app.config import Settings
from app.errors import DataSourceError
from app.formats.slides import pptx_document
from app.formats.word import docx_document
from app.tables.documents import grid_table, html_grids, may_hold_tables, section_of
from app.tables.reading import read_tables


def _docx(path, with_table=True):
    from docx import Document

    document = Document()
    document.add_heading("出張旅費規程", 1)
    document.add_paragraph("出張の日当は次のとおりとする。")
    document.add_heading("日当", 2)
    if with_table:
        table = document.add_table(rows=3, cols=3)
        for r, row in enumerate(
            [["役職", "日当", "宿泊費"], ["部長", "3,000円", "12,000円"], ["一般", "2,000円", "9,800円"]]
        ):
            for c, text in enumerate(row):
                table.cell(r, c).text = text
    document.add_paragraph("以上")
    document.save(path)
    return path


def test_a_word_table_is_typed_and_cited_by_its_section(tmp_path):
    path = _docx(tmp_path / "旅費.docx")
    (table,) = read_tables(path, Settings())
    assert (table.sheet, table.columns, table.kinds, table.units) == (
        "表1",
        ["役職", "日当", "宿泊費"],
        ["text", "number", "number"],
        ["", "円", "円"],
    )
    assert [cells[2].value for _, cells in table.rows] == [Decimal(12000), Decimal(9800)]
    sections = [source for _, source, _ in docx_document(path)]
    assert table.anchor == "旅費.docx#日当" and table.anchor in sections


def test_a_word_file_without_a_table_starts_no_reader(tmp_path):
    path = _docx(tmp_path / "案内.docx", with_table=False)
    assert may_hold_tables(path) is False and read_tables(path, Settings()) == []
    assert may_hold_tables(_docx(tmp_path / "旅費.docx")) is True


def test_a_slide_table_is_cited_by_its_slide(tmp_path):
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = "表紙"
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "拠点一覧"
    shape = slide.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2))
    for r, row in enumerate([["拠点", "開設日"], ["大阪", "2019年4月1日"], ["福岡", "令和2年10月1日"]]):
        for c, text in enumerate(row):
            shape.table.cell(r, c).text = text
    path = tmp_path / "拠点.pptx"
    deck.save(path)
    (table,) = read_tables(path, Settings())
    assert (table.sheet, table.anchor, table.kinds) == ("スライド2の表1", "拠点.pptx:s2", ["text", "date"])
    assert [cells[1].value.isoformat() for _, cells in table.rows] == ["2019-04-01", "2020-10-01"]
    assert "拠点.pptx:s2" in [source for _, source, _ in pptx_document(path)]


PAGE = """<html><head><meta charset="utf-8"><title>料金</title></head><body>
<h1>料金表</h1><p>サービスの料金は次のとおりです。料金は税別です。</p>
<table><tr><th rowspan="2">プラン</th><th colspan="2">料金</th></tr>
<tr><th>月額</th><th>年額</th></tr>
<tr><td>ライト</td><td>月額980円（税別）</td><td>9,800円</td></tr>
<tr><td>スタンダード</td><td>1,980円</td><td>19,800円</td></tr></table>
<h2>注意</h2><p>価格は予告なく変わることがあります。</p>
<table><tr><td><table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table></td></tr></table>
</body></html>"""


def test_html_grids_fill_spans_and_leave_layout_tables_out():
    grids = html_grids(PAGE.encode())
    assert grids[0] == (
        [
            ["プラン", "料金", "料金"],
            ["プラン", "月額", "年額"],
            ["ライト", "月額980円（税別）", "9,800円"],
            ["スタンダード", "1,980円", "19,800円"],
        ],
        2,  # two rows of <th>: the header
    )
    assert grids[1] == ([["a", "b"], ["1", "2"]], 1)  # the inner table; its layout table is none
    assert len(grids) == 2


def test_an_html_table_is_stored_with_typed_cells(tmp_path):
    path = tmp_path / "料金.html"
    path.write_text(PAGE, encoding="utf-8")
    first = read_tables(path, Settings())[0]
    assert first.columns == ["プラン", "料金/月額", "料金/年額"] and first.sheet == "表1"
    assert [cells[1].value for _, cells in first.rows] == [Decimal(980), Decimal(1980)]
    assert first.kinds == ["text", "number", "number"] and first.units == ["", "円", "円"]
    assert first.anchor.startswith("料金.html")


@pytest.mark.parametrize("grid", [[["見出し", "値"]], [["一列"], ["だけ"], ["の表"]], [["", ""], ["", ""]]])
def test_one_row_or_one_column_is_text_not_a_table(grid):
    assert grid_table("表1", grid, "x.docx") is None


def test_header_rows_name_the_columns_together():
    grid = [["区分", "料金", "料金"], ["区分", "月額", "年額"], ["A", "1円", "2円"]]
    assert grid_table("表1", grid, "x.html", header_rows=2).columns == ["区分", "料金/月額", "料金/年額"]
    assert grid_table("表1", grid, "x.html", header_rows=9).columns == ["区分", "料金/月額", "料金/年額"]
    assert len(grid_table("表1", grid, "x.html").rows) == 2  # one header row: the second is data


def test_rows_are_cited_by_the_first_section_holding_them():
    units = [("前文", "a.docx", ""), ("役職:部長\n日当:3,000円", "a.docx#日当", "日当")]
    assert section_of([["役職", "日当"], ["部長", "3,000円"]], units, "a.docx") == "a.docx#日当"
    assert section_of([["役職", "日当"], ["課長", "2,500円"]], units, "a.docx") == "a.docx"


def test_a_damaged_word_file_is_one_line(tmp_path):
    path = tmp_path / "壊れた.docx"
    path.write_bytes(b"PK\x03\x04 not really a zip" + b"<w:tbl" * 3)
    with pytest.raises(DataSourceError) as raised:
        read_tables(path, Settings())
    assert "壊れた.docx" in str(raised.value) and "\n" not in str(raised.value)
