"""The check of the model's SQL before anything runs: pure, with sqlglot (DuckDB dialect).

A statement passes only if it is, after :func:`check_statement`:

* at most ``max_chars`` characters (checked before parsing: a 10 MB literal is never parsed);
* ONE statement, and a SELECT (no DROP, COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, UNION …);
* without WITH (a recursive one could run forever), joins (the table with itself included),
  INTO;
* reading only the table named ``table`` (no schema, no other table, no file: ``FROM '/etc/passwd'``
  is read by sqlglot as the identifier and refused unless it is the table's name);
* naming only the table's columns (or aliases the statement defines); a double-quoted value compared
  with that names no column (``LIKE "%都市%"``) is read as the string it is meant to be;
* calling only the functions of :data:`ALLOWED_FUNCTIONS` (an allowlist: ``read_csv``, ``glob``,
  ``getenv``, ``current_setting`` and every function not listed are refused);
* with a row limit: no LIMIT gets ``LIMIT max_rows``, a larger (or non-literal) one is capped.

What runs is sqlglot's rendering of the checked tree, never the text the model wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlglot import exp, parse
from sqlglot.errors import SqlglotError

from app.tables.errors import StatementRefusedError

__all__ = ["ALLOWED_FUNCTIONS", "aggregated_column", "check_statement", "is_aggregate", "source_statement"]

_NAMES = (
    # aggregates
    "Count",
    "CountIf",
    "Sum",
    "Avg",
    "Min",
    "Max",
    "ArgMin",
    "ArgMax",
    "Median",
    "Stddev",
    # numbers
    "Round",
    "Abs",
    "Floor",
    "Ceil",
    "Greatest",
    "Least",
    # nulls, types, conditions
    "Coalesce",
    "Nullif",
    "Cast",
    "TryCast",
    "Case",
    "If",
    # text
    "Lower",
    "Upper",
    "Length",
    "Substring",
    "Trim",
    "Concat",
    "StrPosition",
    "Contains",
    "StartsWith",
    "Replace",
    "Left",
    "Right",
    # dates
    "Year",
    "Month",
    "Day",
    "Extract",
    "DateTrunc",
    "TimestampTrunc",
    "DateDiff",
    "CurrentDate",
    # windows
    "RowNumber",
)
# sqlglot's classes of the functions a statement may call (a name this sqlglot lacks is skipped)
ALLOWED_FUNCTIONS: tuple[type[exp.Func], ...] = tuple(getattr(exp, name) for name in _NAMES if hasattr(exp, name))


def _refuse(reason: str) -> StatementRefusedError:
    return StatementRefusedError(f"SQL refused: {reason}")


def _parse_one(sql: str) -> exp.Expression:
    """The one statement of ``sql``; refused when it does not parse or holds more than one."""
    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # "falling back to parsing as a Command"
    try:
        statements = [s for s in parse(sql, read="duckdb") if s is not None]
    except SqlglotError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _refuse(f"it does not parse ({first})") from exc
    if len(statements) != 1:
        raise _refuse(f"one statement is allowed, found {len(statements)}")
    return statements[0]


def _check_tables(tree: exp.Expression, table: str) -> set[str]:
    """Every table the statement reads is ``table`` itself; returns the names it may be qualified by."""
    names = {table}
    for node in tree.find_all(exp.Table):
        if not isinstance(node.this, exp.Identifier) or node.args.get("db") or node.args.get("catalog"):
            raise _refuse(f"only the table {table} may be read, not {node.sql(dialect='duckdb')}")
        if node.name != table:
            raise _refuse(f"only the table {table} may be read, not {node.name}")
        if node.alias:
            names.add(node.alias)
    return names


def _quoted_strings(tree: exp.Expression, columns: Sequence[str]) -> None:
    """A double-quoted value compared with (``LIKE "%都市%"``, ``= "富山市"``) that names no column is
    the string the model meant (SQLite reads it so; DuckDB as a column): made a string literal."""
    known = set(columns) | {a.alias for a in tree.find_all(exp.Alias) if a.alias}
    for condition in list(tree.find_all(exp.EQ, exp.NEQ, exp.Like, exp.ILike)):
        value = condition.expression
        if isinstance(value, exp.Column) and not value.table and value.name not in known:
            value.replace(exp.Literal.string(value.name))


def _check_columns(tree: exp.Expression, columns: Sequence[str], qualifiers: set[str]) -> None:
    """Every column named is one of ``columns`` or an alias the statement defines."""
    known = set(columns) | {a.alias for a in tree.find_all(exp.Alias) if a.alias}
    for column in tree.find_all(exp.Column):
        if column.table and column.table not in qualifiers:
            raise _refuse(f"unknown table {column.table} in {column.sql(dialect='duckdb')}")
        if isinstance(column.this, exp.Star):
            continue
        if column.name not in known:
            raise _refuse(f"no column {column.name} in the table")


def _check_functions(tree: exp.Expression) -> None:
    """Only the allowlisted functions are called."""
    for node in tree.find_all(exp.Func):
        # AND and OR are Func subclasses in sqlglot (Connector): operators, not functions
        if not isinstance(node, (*ALLOWED_FUNCTIONS, exp.Connector)):
            name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
            raise _refuse(f"the function {name.lower()} is not allowed")


def _cap_limit(tree: exp.Select, max_rows: int) -> None:
    """Give the statement a LIMIT of at most ``max_rows``."""
    limit = tree.args.get("limit")
    value = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(value, exp.Literal) and value.is_int and int(value.this) <= max_rows:
        return
    tree.limit(max_rows, copy=False)


def check_statement(sql: str, table: str, columns: Sequence[str], max_rows: int, max_chars: int) -> str:
    """The statement to run for the model's ``sql``: one SELECT over ``table``'s ``columns`` with
    allowed functions and a LIMIT of at most ``max_rows``, rendered by sqlglot (DuckDB). Raises
    StatementRefusedError, one line starting ``SQL refused:``, for anything else."""
    if len(sql) > max_chars:
        raise _refuse(f"the statement is longer than {max_chars} characters")
    tree = _parse_one(sql)
    if not isinstance(tree, exp.Select):
        word = sql.strip().split(None, 1)[0].upper()
        if isinstance(tree, (exp.Union, exp.Intersect, exp.Except)):
            word = type(tree).__name__.upper()
        raise _refuse(f"only one SELECT is allowed, not {word}")
    if tree.args.get("into") is not None or any(True for _ in tree.find_all(exp.Into)):
        raise _refuse("INTO (writing a table) is not allowed")
    if not tree.expressions or tree.find(exp.From) is None:
        raise _refuse(f"the SELECT must name what it reads from {table}")
    with_ = tree.args.get("with") or tree.args.get("with_")
    if with_ is not None or any(True for _ in tree.find_all(exp.With)):
        recursive = any(w.args.get("recursive") for w in tree.find_all(exp.With))
        raise _refuse("a recursive WITH is not allowed" if recursive else "WITH is not allowed; use a subquery")
    if any(True for _ in tree.find_all(exp.Join)):
        raise _refuse("joins are not allowed; the statement reads one table")
    _check_functions(tree)  # first: read_csv('/etc/passwd') is named as the function it is
    qualifiers = _check_tables(tree, table)
    _quoted_strings(tree, columns)
    _check_columns(tree, columns, qualifiers)
    _cap_limit(tree, max_rows)
    return tree.sql(dialect="duckdb")


def is_aggregate(sql: str) -> bool:
    """Whether a checked statement computes over rows (an aggregate or GROUP BY at its top) rather than
    returning rows."""
    tree = _parse_one(sql)
    return tree.args.get("group") is not None or any(e.find(exp.AggFunc) for e in tree.expressions)


def aggregated_column(sql: str) -> str | None:
    """The column the first projected aggregate of a checked statement reads (``AVG("value")`` → ``value``),
    whatever its WHERE names; None for ``COUNT(*)`` or no aggregate."""
    tree = _parse_one(sql)
    for projected in tree.expressions:
        aggregate = projected.find(exp.AggFunc)
        if aggregate is not None:
            column = aggregate.find(exp.Column)
            return column.name if column is not None else None
    return None


def source_statement(sql: str, row_column: str, max_rows: int) -> str | None:
    """The statement that finds the rows a checked statement used, by their ``row_column``: the rows
    it returns (its projection with ``row_column`` added), or for an aggregate the rows its WHERE keeps
    (at most ``max_rows``); None for a DISTINCT or grouped statement (no row stands for a result)."""
    tree = _parse_one(sql)
    if tree.args.get("distinct") is not None or tree.args.get("group") is not None:
        return None
    row = exp.column(row_column, quoted=True)
    if is_aggregate(sql):
        where = tree.args.get("where")
        rows = exp.select(row).from_(tree.args["from_"].this.copy())
        if where is not None:
            rows = rows.where(where.this.copy())
        return rows.limit(max_rows).sql(dialect="duckdb")
    return tree.select(row, copy=False).sql(dialect="duckdb")
