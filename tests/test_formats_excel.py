"""Workbooks built with openpyxl, read back by app.formats.excel (exact sources, contexts and texts)."""

from __future__ import annotations

import datetime as dt
import zipfile

import pytest
from openpyxl import Workbook

from app.config import Settings
from app.errors import DataSourceError
from app.formats.excel import fill_merged, find_header, format_value, xlsx_document
from app.formats.limits import Limits
from app.ingestion.datadir import SourceFile
from app.ingestion.reading import chunk_file


def cache_formula_values(path, values: dict[str, str]) -> None:
    """Write the values Excel caches beside formulas when it saves (openpyxl writes none): ``<v>``."""
    with zipfile.ZipFile(path) as archive:
        parts = {info.filename: archive.read(info) for info in archive.infolist()}
    xml = parts["xl/worksheets/sheet1.xml"].decode()
    for formula, value in values.items():
        xml = xml.replace(f"<f>{formula}</f><v></v>", f"<f>{formula}</f><v>{value}</v>")
    parts["xl/worksheets/sheet1.xml"] = xml.encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)


@pytest.fixture
def roster(tmp_path):
    """A roster under a title block: a two-row header with merged cells, a category merged down two
    data rows, a percentage, formulas (one with a cached value), a hidden sheet and a second sheet."""
    wb = Workbook()
    ws = wb.active
    ws.title = "社員名簿"
    ws["A1"] = "2024年度 社員名簿"
    ws.merge_cells("A1:F1")
    ws["A2"], ws["B2"] = "作成日", "2024-04-01"
    ws.append([])
    ws.append(["部署", "氏名", "連絡先", None, "出勤率", "内線+1"])  # row 4
    ws.append([None, None, "内線", "メール", None, None])  # row 5
    ws.append(["営業部", "山田太郎", 1234, "yamada@example.jp", 0.95, "=C6+1"])
    ws.append([None, "佐藤花子", 1235, "sato@example.jp", 0.9, "=C7+1"])
    for cell in ("E6", "E7"):
        ws[cell].number_format = "0%"
    for merged in ("C4:D4", "A4:A5", "B4:B5", "E4:E5", "F4:F5", "A6:A7"):
        ws.merge_cells(merged)
    hidden = wb.create_sheet("秘密")
    hidden.append(["項目", "値"])
    hidden.append(["給与", "非公開"])
    hidden.sheet_state = "hidden"
    totals = wb.create_sheet("集計")
    totals.append(["項目", "金額"])
    totals.append(["売上", 1000.0])
    totals.append([])
    totals.append(["締め日", dt.datetime(2024, 4, 30)])
    path = tmp_path / "名簿.xlsx"
    wb.save(path)
    cache_formula_values(path, {"C6+1": "1235"})  # C7+1 was never calculated
    return path


def test_xlsx_rows_under_title_block_with_merged_headers(roster):
    header = "部署, 氏名, 連絡先/内線, 連絡先/メール, 出勤率, 内線+1"
    context = f"名簿 — 社員名簿 — 2024年度 社員名簿 作成日 2024-04-01 — {header}"
    assert xlsx_document(roster) == [
        (
            "部署:営業部\n氏名:山田太郎\n連絡先/内線:1234\n連絡先/メール:yamada@example.jp\n出勤率:95%\n内線+1:1235",
            "名簿.xlsx:社員名簿!r1",
            context,
        ),
        (
            "部署:営業部\n氏名:佐藤花子\n連絡先/内線:1235\n連絡先/メール:sato@example.jp\n出勤率:90%",
            "名簿.xlsx:社員名簿!r2",
            context,
        ),
        ("項目:売上\n金額:1000", "名簿.xlsx:集計!r1", "名簿 — 集計 — 項目, 金額"),
        ("項目:締め日\n金額:2024-04-30", "名簿.xlsx:集計!r2", "名簿 — 集計 — 項目, 金額"),
    ]


def test_xlsx_hidden_sheet_is_skipped_and_said(roster, caplog):
    with caplog.at_level("INFO", logger="app.formats.excel"):
        sources = [source for _, source, _ in xlsx_document(roster)]
    assert not any("秘密" in source for source in sources)
    assert "名簿.xlsx: hidden sheet '秘密' skipped" in caplog.text


def test_xlsx_chunks_one_per_row_with_stable_ids(roster):
    source = SourceFile("csv/名簿.xlsx", roster, "名簿.xlsx", "h")
    chunks = chunk_file(source, Settings())
    assert [c.metadata["source"] for c in chunks] == [
        "名簿.xlsx:社員名簿!r1",
        "名簿.xlsx:社員名簿!r2",
        "名簿.xlsx:集計!r1",
        "名簿.xlsx:集計!r2",
    ]
    assert chunks[2].metadata["context"] == "名簿 — 集計 — 項目, 金額"
    assert [c.id for c in chunks] == [c.id for c in chunk_file(source, Settings())]


def test_xlsx_limits(roster):
    with pytest.raises(DataSourceError, match=r"^名簿.xlsx: more than MAX_ROWS=3 data rows; skipped"):
        xlsx_document(roster, Limits(max_rows=3))
    with pytest.raises(
        DataSourceError,
        match=r"^名簿.xlsx: sheet 社員名簿 data row 1 has a cell of 17 characters, "
        r"more than MAX_CELL_CHARS=10",
    ):
        xlsx_document(roster, Limits(max_cell_chars=10))


def test_xlsx_without_data_rows_is_one_line(tmp_path):
    Workbook().save(tmp_path / "empty.xlsx")
    with pytest.raises(DataSourceError, match=r"^empty.xlsx: no data rows on any visible sheet \(an empty workbook\)$"):
        xlsx_document(tmp_path / "empty.xlsx")


def test_xlsx_sheet_without_header_names_columns(tmp_path):
    wb = Workbook()
    wb.active.append([1, 2])
    wb.active.append([3, 4])
    wb.save(tmp_path / "n.xlsx")
    assert xlsx_document(tmp_path / "n.xlsx") == [
        ("列1:1\n列2:2", "n.xlsx:Sheet!r1", "n — Sheet"),
        ("列1:3\n列2:4", "n.xlsx:Sheet!r2", "n — Sheet"),
    ]


@pytest.mark.parametrize(
    "value,number_format,expected",
    [
        (None, None, ""),
        (True, None, "TRUE"),
        (3.0, None, "3"),
        (2.5, None, "2.5"),
        (0.125, "0.0%", "12.5%"),
        (dt.datetime(2024, 4, 1), None, "2024-04-01"),
        (dt.datetime(2024, 4, 1, 9, 30), None, "2024-04-01 09:30"),
        (dt.time(9, 0), None, "09:00"),
        ("  複数\n行 ", None, "複数 行"),
    ],
)
def test_format_value(value, number_format, expected):
    assert format_value(value, number_format) == expected


def test_fill_merged_fills_across_and_down():
    rows = [["見出し", None, None], ["a", 1, None], [None, 2, None]]
    assert list(fill_merged(rows, [(1, 1, 3, 1), (1, 2, 1, 3)])) == [
        ["見出し", "見出し", "見出し"],
        ["a", 1, None],
        ["a", 2, None],
    ]


@pytest.mark.parametrize(
    "rows,expected",
    [
        ([["表題"], ["日付", "2024-04-01"], ["品名", "単価", "数量"], ["りんご", 100, 3]], 2),
        ([["表題", "表題", "表題"], ["品名", "単価", "数量"]], 1),  # a title merged across the table
        ([[1, 2], [3, 4]], None),
    ],
)
def test_find_header(rows, expected):
    assert find_header(rows) == expected


def merged_over_the_whole_sheet(path):
    """Issue 40, case 1: a 4.9 KB workbook whose one merged range covers the whole sheet (A1:XFD1048576),
    with a value in its last row, so the sheet's rows run to 1,048,576."""
    import zipfile

    from openpyxl import Workbook

    plain = path.with_suffix(".plain.xlsx")
    wb = Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["A2"], ws["B2"], ws["C1048576"] = "項目", "値", "a", 1, "z"
    wb.save(plain)
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                merge = b'<mergeCells count="1"><mergeCell ref="A1:XFD1048576"/></mergeCells>'
                data = data.replace(b"</sheetData>", b"</sheetData>" + merge)
            out.writestr(item, data)
    return path


def test_a_merged_range_over_the_whole_sheet_fills_no_blank_row_and_is_read_in_bounded_memory(tmp_path):
    """It took 307 s of CPU and 5.4 GB; now blank rows stay blank and a range fills at most 1,024
    columns. Read in a child process whose address space is capped at 1.5 GB (it failed there with
    MemoryError before)."""
    import json
    import resource
    import subprocess
    import sys

    path = merged_over_the_whole_sheet(tmp_path / "merged.xlsx")
    assert path.stat().st_size < 6000
    cap = 1536 * 2**20
    code = (
        "import json, sys; from pathlib import Path; from app.formats.excel import xlsx_document; "
        "units = xlsx_document(Path(sys.argv[1])); print(json.dumps([[s, len(t)] for t, s, _ in units]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)),
    )
    assert done.returncode == 0, done.stderr[-500:]
    units = json.loads(done.stdout)
    # one range over everything: no header can be told apart, so the three rows with values of their
    # own are data rows named 列1…; the million blank rows between are not filled
    assert [source for source, _ in units] == ["merged.xlsx:Sheet!r1", "merged.xlsx:Sheet!r2", "merged.xlsx:Sheet!r3"]
    assert all(chars < 10_000 for _, chars in units)  # at most 1,024 filled cells a row
