"""Typed cell values (app.tables.values): exact inputs and outputs."""

from datetime import date
from decimal import Decimal

import pytest

from app.tables.values import Cell, column_kind, column_unit, format_number, parse_cell, parse_date_cell, parse_number


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1,234", (Decimal(1234), "")),
        ("１，２３４", (Decimal(1234), "")),
        ("１２３円", (Decimal(123), "円")),
        ("1.5万", (Decimal(15000), "")),
        ("1.5万円", (Decimal(15000), "円")),
        ("3万2千", (Decimal(32000), "")),
        ("3万2千円", (Decimal(32000), "円")),
        ("1億2000万", (Decimal(120000000), "")),
        ("月額9800円（税別）", (Decimal(9800), "円")),
        ("一括1200000円（税別）", (Decimal(1200000), "円")),
        ("1ユーザーあたり月額500円（税別）", (Decimal(500), "円")),
        ("23人", (Decimal(23), "人")),
        ("-5%", (Decimal(-5), "%")),
        ("▲5%", (Decimal(-5), "%")),
        ("12.50", (Decimal("12.5"), "")),
        ("  42 ", (Decimal(42), "")),
        ("3営業日", (Decimal(3), "営業日")),
        ("¥1,000", (Decimal(1000), "")),
    ],
)
def test_parse_number_reads_one_number_with_its_unit(text, expected):
    assert parse_number(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ミナト勤怠",
        "従業員300名以下の中小企業",  # a number inside a sentence
        "10〜20人",  # two numbers
        "2.0.1",  # a version
        "12:30",  # a time
        "03-1234-5678",  # a telephone number
        "第3条",
        "A-100",  # a product code
        "No.5",
        "三万円",  # kanji numerals alone are not read
    ],
)
def test_parse_number_refuses_text_that_is_no_single_number(text):
    assert parse_number(text) is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2024/4/1", date(2024, 4, 1)),
        ("2024-04-01", date(2024, 4, 1)),
        ("2024年4月1日", date(2024, 4, 1)),
        ("２０２４年４月１日", date(2024, 4, 1)),
        ("令和6年4月1日", date(2024, 4, 1)),
        ("R6.4.1", date(2024, 4, 1)),
        ("平成31年4月30日", date(2019, 4, 30)),
        ("令和元年5月1日", date(2019, 5, 1)),
        ("2024-04-01 09:30", date(2024, 4, 1)),
        ("2024年4月1日（月）", date(2024, 4, 1)),
        ("2024/2/30", None),  # no such day
        ("2024/4", None),  # a month, not a date
        ("4月1日", None),  # no year
        ("Sサイズ", None),
        ("9800", None),
    ],
)
def test_parse_date_cell_reads_western_and_era_forms(text, expected):
    assert parse_date_cell(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", Cell("", "empty")),
        ("   ", Cell("", "empty")),
        ("2024-04-01", Cell("2024-04-01", "date", date(2024, 4, 1))),
        ("20240401", Cell("20240401", "number", Decimal(20240401))),
        ("月額9800円（税別）", Cell("月額9800円（税別）", "number", Decimal(9800), "円")),
        ("ミナトBI", Cell("ミナトBI", "text")),
    ],
)
def test_parse_cell_keeps_the_text_and_the_typed_value(text, expected):
    assert parse_cell(text) == expected


@pytest.mark.parametrize(
    "texts, kind, unit",
    [
        (["100円", "200円", "未定"], "number", "円"),
        (["100円", "未定", "要相談"], "text", "円"),
        (["100", "2024-04-01", "text"], "text", ""),  # a three-way tie
        (["2024/4/1", "R6.5.1", ""], "date", ""),
        (["", "", ""], "text", ""),
        (["5人", "3%", "7%"], "number", "%"),
    ],
)
def test_column_kind_and_unit_follow_most_cells(texts, kind, unit):
    cells = [parse_cell(t) for t in texts]
    assert (column_kind(cells), column_unit(cells)) == (kind, unit)


@pytest.mark.parametrize(
    "value, expected",
    [
        (9800.0, "9,800"),
        (Decimal(1200000), "1,200,000"),
        (3.5, "3.5"),
        (Decimal("12345.60"), "12,345.6"),
        (-5, "-5"),
        (2 / 3, "0.6666666667"),
        (7, "7"),
    ],
)
def test_format_number_writes_an_answers_number(value, expected):
    assert format_number(value) == expected
