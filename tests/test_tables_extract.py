"""Tables read from CSV files and workbooks (app.tables.extract): names, kinds and row numbers that
match the citations of the same rows' text units."""

from decimal import Decimal
from pathlib import Path

import pytest

from app.config import Settings
from app.formats.csv_rows import csv_table
from app.formats.excel import xlsx_document
from app.tables.extract import column_names, csv_tables
from app.tables.reading import read_tables
from app.tables.values import Cell
from tests.test_formats_excel import roster  # noqa: F401  (the workbook fixture)

PRODUCTS = Path(__file__).parents[1] / "data" / "csv" / "products.csv"


@pytest.mark.parametrize(
    "header, width, expected",
    [
        (["製品名", "価格"], 2, ["製品名", "価格"]),
        (["価格", "価格", "価格"], 3, ["価格", "価格_2", "価格_3"]),
        (["", "=SUM(A1:A3)", "備考"], 3, ["列1", "列2", "備考"]),
        (["氏名"], 3, ["氏名", "列2", "列3"]),
        (["列2", ""], 2, ["列2", "列2_2"]),
        (["__row", "金額"], 2, ["__row_2", "金額"]),
        (["連絡 先\n(内線)"], 1, ["連絡 先 (内線)"]),
    ],
)
def test_column_names_are_unique_and_named_by_position_when_empty(header, width, expected):
    assert column_names(header, width) == expected


def test_products_csv_is_one_table_with_a_price_column_in_yen():
    (table,) = csv_tables(PRODUCTS)
    assert (table.sheet, table.columns) == ("", ["製品名", "価格", "仕様", "対象"])
    assert (table.kinds, table.units) == (["text", "number", "text", "text"], ["", "円", "", ""])
    prices = [cells[1].value for _, cells in table.rows]
    assert prices == [Decimal(n) for n in (9800, 500, 300, 48000, 1200000, 3000, 400)]
    assert [number for number, _ in table.rows] == [1, 2, 3, 4, 5, 6, 7]


def test_csv_rows_are_numbered_as_their_citations(tmp_path):
    path = tmp_path / "人数.csv"
    path.write_text("部署,人数,人数,\n営業,23人,１２,x\n\n開発,1.5万,,y\n", encoding="utf-8")
    (table,) = csv_tables(path)
    assert table.columns == ["部署", "人数", "人数_2", "列4"]
    assert table.rows[1] == (
        2,
        [Cell("開発", "text"), Cell("1.5万", "number", Decimal(15000)), Cell("", "empty"), Cell("y", "text")],
    )
    _, units = csv_table(path)
    assert [source for _, source in units] == [f"人数.csv:r{n}" for n, _ in table.rows]


def test_workbook_sheets_are_tables_under_their_title_block(roster):  # noqa: F811
    tables = read_tables(roster, Settings())
    assert [(t.sheet, t.columns, t.kinds) for t in tables] == [
        (
            "社員名簿",
            ["部署", "氏名", "連絡先/内線", "連絡先/メール", "出勤率", "内線+1"],
            ["text", "text", "number", "text", "number", "number"],
        ),
        ("集計", ["項目", "金額"], ["text", "text"]),  # a number and a date: a tie is text
    ]
    assert tables[0].rows[1][1][4] == Cell("90%", "number", Decimal(90), "%")
    cited = [source for _, source, _ in xlsx_document(roster)]
    assert cited == [f"名簿.xlsx:{t.sheet}!r{n}" for t in tables for n, _ in t.rows]


def test_other_files_hold_no_tables(tmp_path):
    path = tmp_path / "規程.md"
    path.write_text("# 規程\n", encoding="utf-8")
    assert read_tables(path, Settings()) == []
