"""The check of the model's SQL (app.tables.statement): refusals with their exact line, and what runs."""

import pytest

from app.tables.errors import StatementRefusedError
from app.tables.statement import aggregated_column, check_statement

COLUMNS = ["製品名", "価格", "対象"]
MAX_ROWS, MAX_CHARS = 100, 2000


def check(sql: str) -> str:
    return check_statement(sql, "t", COLUMNS, MAX_ROWS, MAX_CHARS)


@pytest.mark.parametrize(
    "sql, message",
    [
        ("DROP TABLE t", "SQL refused: only one SELECT is allowed, not DROP"),
        ("COPY t TO '/tmp/x.csv'", "SQL refused: only one SELECT is allowed, not COPY"),
        ("ATTACH '/tmp/x.db' AS x", "SQL refused: only one SELECT is allowed, not ATTACH"),
        ("INSTALL httpfs", "SQL refused: only one SELECT is allowed, not INSTALL"),
        ("LOAD httpfs", "SQL refused: only one SELECT is allowed, not LOAD"),
        ("SET memory_limit='10GB'", "SQL refused: only one SELECT is allowed, not SET"),
        ("PRAGMA version", "SQL refused: only one SELECT is allowed, not PRAGMA"),
        ("SELECT * FROM t UNION SELECT * FROM t", "SQL refused: only one SELECT is allowed, not UNION"),
        ("SELECT * FROM read_csv('/etc/passwd')", "SQL refused: the function read_csv is not allowed"),
        ("SELECT * FROM glob('*')", "SQL refused: the function glob is not allowed"),
        ("SELECT getenv('HOME') FROM t", "SQL refused: the function getenv is not allowed"),
        ("SELECT current_setting('threads') FROM t", "SQL refused: the function current_setting is not allowed"),
        ("SELECT * FROM '/etc/passwd'", "SQL refused: only the table t may be read, not /etc/passwd"),
        ("SELECT * FROM main.t", "SQL refused: only the table t may be read, not main.t"),
        ("SELECT * FROM users", "SQL refused: only the table t may be read, not users"),
        (
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT * FROM r",
            "SQL refused: a recursive WITH is not allowed",
        ),
        ("WITH a AS (SELECT 価格 FROM t) SELECT * FROM a", "SQL refused: WITH is not allowed; use a subquery"),
        ("SELECT * FROM t a, t b", "SQL refused: joins are not allowed; the statement reads one table"),
        ("SELECT * FROM t CROSS JOIN t", "SQL refused: joins are not allowed; the statement reads one table"),
        ("SELECT 1 INTO x", "SQL refused: INTO (writing a table) is not allowed"),
        ("SELECT 1; SELECT 2", "SQL refused: one statement is allowed, found 2"),
        ("", "SQL refused: one statement is allowed, found 0"),
        ("SELECT 1", "SQL refused: the SELECT must name what it reads from t"),
        ("SELECT 在庫 FROM t", "SQL refused: no column 在庫 in the table"),
        ("SELECT u.価格 FROM t", "SQL refused: unknown table u in u.価格"),
        pytest.param(
            "SELECT '" + "x" * 10_000_000 + "' FROM t",
            "SQL refused: the statement is longer than 2000 characters",
            id="a 10 MB literal",
        ),
    ],
)
def test_check_statement_refuses_with_one_line(sql, message):
    with pytest.raises(StatementRefusedError) as refused:
        check(sql)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("SELECT 製品名, 価格 FROM t", "SELECT 製品名, 価格 FROM t LIMIT 100"),
        (
            "SELECT count(*) FROM t WHERE 対象 LIKE '%企業%'",
            "SELECT COUNT(*) FROM t WHERE 対象 LIKE '%企業%' LIMIT 100",
        ),
        (
            'SELECT "製品名" FROM t WHERE "価格" = (SELECT min("価格") FROM t)',
            'SELECT "製品名" FROM t WHERE "価格" = (SELECT MIN("価格") FROM t) LIMIT 100',
        ),
        ("SELECT 価格 AS p FROM t ORDER BY p DESC LIMIT 3", "SELECT 価格 AS p FROM t ORDER BY p DESC LIMIT 3"),
        ("SELECT * FROM t LIMIT 5000", "SELECT * FROM t LIMIT 100"),  # capped
        ("SELECT * FROM t LIMIT 10 + 1", "SELECT * FROM t LIMIT 100"),  # not a literal: replaced
        ("SELECT t.価格 FROM t", "SELECT t.価格 FROM t LIMIT 100"),
        ("SELECT round(avg(価格), 1) FROM t;", "SELECT ROUND(AVG(価格), 1) FROM t LIMIT 100"),
        ("SELECT * FROM 't'", 'SELECT * FROM "t" LIMIT 100'),  # a quoted identifier, never a file
        # AND and OR are functions to sqlglot (Connector): a condition on two columns is allowed
        (
            "SELECT 価格 FROM t WHERE 製品名 = 'A' AND 価格 > 1 OR 価格 < 0",
            "SELECT 価格 FROM t WHERE 製品名 = 'A' AND 価格 > 1 OR 価格 < 0 LIMIT 100",
        ),
    ],
)
def test_check_statement_renders_what_runs_with_a_row_limit(sql, expected):
    assert check(sql) == expected


@pytest.mark.parametrize(
    "sql, column",
    [
        ('SELECT AVG("価格") FROM t WHERE "製品名" = \'A\'', "価格"),  # the WHERE's column is not the one averaged
        ('SELECT ROUND(SUM("価格"), 1) FROM t', "価格"),
        ("SELECT COUNT(*) FROM t", None),
        ('SELECT "製品名" FROM t', None),
    ],
)
def test_aggregated_column_is_the_one_the_aggregate_reads(sql, column):
    assert aggregated_column(sql) == column
