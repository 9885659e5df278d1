"""The DuckDB runner (app.tables.runner): real DuckDB in memory, locked down, with its limits."""

from datetime import date
from decimal import Decimal

import pytest

from app.config import TableSettings
from app.tables.errors import QueryFailedError, QueryTimeoutError
from app.tables.runner import ROW_COLUMN, TableData, run_query
from app.tables.statement import check_statement

PRODUCTS = TableData(
    columns=["製品名", "価格", "発売日"],
    kinds=["text", "number", "date"],
    rows=[
        (1, ["会計", Decimal(9800), date(2024, 4, 1)]),
        (2, ["経費", Decimal(500), "2023-10-01"]),
        (3, ["BI", Decimal(48000), None]),
        (4, ["ゲートウェイ", None, "not a date"]),
    ],
)
SETTINGS = TableSettings(timeout_s=1.0)


def test_run_query_computes_over_typed_columns():
    sql = check_statement("SELECT count(*), min(価格), max(発売日), sum(価格) FROM t", "t", PRODUCTS.columns, 50, 2000)
    assert run_query(sql, PRODUCTS, SETTINGS).rows == [(4, 500.0, date(2024, 4, 1), 58300.0)]


def test_run_query_returns_names_and_the_row_numbers_column():
    result = run_query(f"SELECT 製品名, {ROW_COLUMN} FROM t WHERE 価格 < 10000 ORDER BY 価格", PRODUCTS, SETTINGS)
    assert result.columns == ["製品名", ROW_COLUMN]
    assert result.rows == [("経費", 2), ("会計", 1)]


def test_run_query_caps_the_rows_fetched():
    assert len(run_query("SELECT * FROM t", PRODUCTS, SETTINGS, max_rows=2).rows) == 2


def test_a_recursive_query_that_never_ends_is_interrupted():
    forever = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    with pytest.raises(QueryTimeoutError, match=r"^the table query ran past TABLE_TIMEOUT_S=0.5 s$"):
        run_query(forever, PRODUCTS, TableSettings(timeout_s=0.5))


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "the table query failed (Permission Error: Cannot access file"),
        ("COPY t TO '/tmp/table_leak.csv'", "the table query failed (Permission Error: Cannot access file"),
        ("ATTACH '/tmp/table_leak.db'", "the table query failed (Permission Error: Cannot access file"),
        ("INSTALL httpfs", "the table query failed (Permission Error: Cannot access directory"),
        ("LOAD httpfs", "the table query failed (Permission Error: Loading external extensions is disabled"),
        (
            "SET memory_limit = '8GB'",
            'the table query failed (Invalid Input Error: Cannot change configuration option "memory_limit"',
        ),
        (
            "SET enable_external_access = true",
            "the table query failed (Invalid Input Error: Cannot change configuration",
        ),
    ],
)
def test_the_connection_itself_refuses_files_extensions_and_settings(sql, message, tmp_path):
    """The second wall: what the statement check refuses, DuckDB refuses too."""
    with pytest.raises(QueryFailedError) as failed:
        run_query(sql, PRODUCTS, SETTINGS)
    assert str(failed.value).startswith(message)


def test_a_200000_row_table_loads_and_is_counted():
    rows = [(n, [f"社員{n}", Decimal(n % 1000), None]) for n in range(1, 200_001)]
    big = TableData(["氏名", "点数", "入社日"], ["text", "number", "date"], rows)
    result = run_query("SELECT count(*), sum(点数) FROM t WHERE 点数 >= 500", big, SETTINGS)
    assert result.rows == [(100_000, float(sum(range(500, 1000)) * 200))]
