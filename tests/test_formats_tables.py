"""app.formats.tables: a Word, slide or HTML table's rows as ``column:value`` lines, exact values."""

from __future__ import annotations

from app.formats.tables import cell_text, grid_text, row_lines


def test_a_cell_is_one_line_without_nul():
    assert cell_text(" 東京\n本社\x00 ") == "東京 本社"


def test_row_lines_name_a_value_past_the_header_or_under_an_empty_header():
    assert row_lines(["拠点", ""], ["東京", "03-1111", "予備"]) == "拠点:東京\n列2:03-1111\n列3:予備"


def test_a_value_merged_across_columns_under_a_merged_header_is_said_once():
    assert row_lines(["料金", "料金"], ["500円", "500円"]) == "料金:500円"


def test_a_grid_is_its_header_and_rows_and_a_one_column_grid_its_cells():
    assert grid_text([["拠点", "電話"], ["東京", "03"], ["", ""], ["大阪", ""]]) == "拠点:東京\n電話:03\n\n拠点:大阪"
    assert grid_text([["見出し"], ["本文"]]) == "見出し\n本文"
    assert grid_text([["a", "", "b"]]) == "a | b"
    assert grid_text([["", ""]]) == ""
