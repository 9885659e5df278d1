"""DuckDB in memory over the rows one asker may read: loaded, locked down, queried under a time limit.

:func:`run_query` gets rows PostgreSQL has already filtered by the asker's readers (app.storage.table_rows);
nothing else is in the database. The connection is opened with ``enable_external_access=false`` (no
file, no network, no extension install or load), ``memory_limit`` and ``threads`` from the settings
(app.config.TableSettings), and ``lock_configuration=true``: no statement may change a setting. A timer thread interrupts the connection after ``TABLE_TIMEOUT_S``; at most ``TABLE_RESULT_ROWS``
rows are fetched. The statement is expected to have passed :func:`app.tables.statement.check_statement`
already: the lock-down is the second wall, not the first.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from app.tables.errors import QueryFailedError, QueryTimeoutError

__all__ = ["ROW_COLUMN", "TABLE_NAME", "QueryResult", "TableData", "run_query"]

TABLE_NAME = "t"  # the name the model's SELECT reads
ROW_COLUMN = "__row"  # each row's number in its sheet or file (for citations); the model never names it
_DUCK_TYPES = {"number": "DOUBLE", "date": "DATE", "text": "VARCHAR"}


@dataclass(frozen=True)
class TableData:
    """One table as the runner loads it: column names and kinds (``number``, ``date``, ``text``), and
    rows as ``(row number, [typed value per column])`` — numbers as Decimal/float/int, dates as
    ``date`` or ISO text, text as str; None for a cell that has no value of its column's kind."""

    columns: Sequence[str]
    kinds: Sequence[str]
    rows: Sequence[tuple[int, Sequence[Any]]]


@dataclass(frozen=True)
class QueryResult:
    """What a statement returned: its column names and rows (at most the settings' result rows)."""

    columns: list[str]
    rows: list[tuple]


def _typed(value: Any, kind: str) -> Any:
    """A cell's value as DuckDB's column of ``kind`` takes it."""
    if value is None:
        return None
    if kind == "number":
        return float(value) if isinstance(value, (int, float, Decimal)) else None
    if kind == "date":
        if isinstance(value, date):
            return value
        try:
            return date.fromisoformat(str(value))
        except ValueError:
            return None
    return str(value)


def _frame(data: TableData):
    """The rows as a pandas DataFrame with one column per table column and the row numbers."""
    import pandas as pd

    columns: dict[str, list] = {name: [] for name in data.columns}
    numbers = []
    for number, values in data.rows:
        numbers.append(int(number))
        for index, (name, kind) in enumerate(zip(data.columns, data.kinds)):
            columns[name].append(_typed(values[index] if index < len(values) else None, kind))
    frame = pd.DataFrame({**{name: pd.Series(values, dtype=object) for name, values in columns.items()}})
    frame[ROW_COLUMN] = pd.Series(numbers, dtype="int64")
    return frame


def _connect(settings):
    """An in-memory DuckDB with no external access and the settings' memory and threads."""
    import duckdb

    return duckdb.connect(
        ":memory:",
        config={
            "enable_external_access": False,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "memory_limit": f"{int(settings.memory_mb)}MB",
            "threads": int(settings.threads),
            "lock_configuration": True,  # last: no statement may change any of the above
        },
    )


def _load(con, data: TableData) -> None:
    """Create the table ``t`` with typed columns from ``data`` (DuckDB's relational API over a
    DataFrame: the names are the headers as quoted identifiers, no value is written into SQL text)."""
    from app.storage.tables import quote

    columns = ", ".join(
        f"CAST({quote(name)} AS {_DUCK_TYPES.get(kind, 'VARCHAR')}) AS {quote(name)}"
        for name, kind in zip(data.columns, data.kinds)
    )
    con.from_df(_frame(data)).project(f"{columns}, {ROW_COLUMN}" if columns else ROW_COLUMN).create(TABLE_NAME)


def run_query(sql: str, data: TableData, settings, max_rows: int | None = None) -> QueryResult:
    """Run the checked ``sql`` over ``data`` in a fresh, locked-down in-memory DuckDB (``settings``:
    app.config.TableSettings); at most ``max_rows`` (default the settings' result rows) rows come back.
    QueryTimeoutError when it runs past the settings' timeout; QueryFailedError when DuckDB refuses it."""
    import duckdb

    limit = max_rows or settings.result_rows
    con = _connect(settings)
    try:
        _load(con, data)
        timer = threading.Timer(settings.timeout_s, con.interrupt)
        timer.daemon = True
        timer.start()
        try:
            cursor = con.execute(sql)
            rows = cursor.fetchmany(limit)
            names = [d[0] for d in cursor.description or ()]
        except duckdb.InterruptException as exc:
            raise QueryTimeoutError(f"the table query ran past TABLE_TIMEOUT_S={settings.timeout_s:g} s") from exc
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise QueryFailedError(f"the table query failed ({first})") from exc
        finally:
            timer.cancel()
        return QueryResult(names, [tuple(row) for row in rows])
    finally:
        con.close()
