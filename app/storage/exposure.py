"""What the query role can see, asked of PostgreSQL itself (issue 49, row 4; scripts/access_attacks.py):
the tables it may SELECT (from the catalogue, not from a list in the code), how many rows each shows a
transaction without principals, every row's text as some principals read it, and whether it may
SELECT a table outright. Reads only; each transaction ends with a rollback."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.storage.readers import QUERY_ROLE, reading
from app.storage.tables import quote

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# Every relation outside the system schemas the role may SELECT (a grant on one column counts): its
# schema and name, each quoted by :func:`~app.storage.tables.quote` before a template below names it.
SQL_SELECTABLE = (
    "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND n.nspname NOT LIKE 'pg_toast%' AND has_any_column_privilege(:role, c.oid, 'SELECT') ORDER BY 1, 2"
)
SQL_COUNT_ROWS = "SELECT count(*) FROM {table}"
SQL_ROWS_TEXT = "SELECT CAST(to_jsonb(t) - 'embedding' AS text) FROM {table} t"
SQL_MAY_SELECT = "SELECT has_table_privilege(CAST(:role AS name), CAST(:table AS text), 'SELECT')"
SQL_AS_ROLE = "SELECT set_config('role', :role, true)"
SQL_SET_PRINCIPALS = "SELECT set_config('rag.principals', :principals, true)"
NO_PRINCIPALS = (None, "{}")  # rag.principals never set in the transaction, or set to no principal


Table = tuple[str, str]  # (schema, name), as the catalogue has them


def selectable_tables(engine: Engine) -> list[Table]:
    """Every table or view the query role may SELECT, as (schema, name)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        return [(schema, name) for schema, name in conn.execute(text(SQL_SELECTABLE), {"role": QUERY_ROLE})]


def _of(template: str, table: Table) -> str:
    """``template`` naming ``table``, its schema and name quoted."""
    return template.format(table=f"{quote(table[0])}.{quote(table[1])}")


def may_select(engine: Engine, table: str) -> bool:
    """Whether the query role may SELECT ``table`` (a table name) directly."""
    from sqlalchemy import text

    with engine.connect() as conn:
        return bool(conn.execute(text(SQL_MAY_SELECT), {"role": QUERY_ROLE, "table": table}).scalar())


def rows_without_principals(engine: Engine, tables: Sequence[Table]) -> dict[Table, int]:
    """For each of ``tables`` (names from :func:`selectable_tables`), the most rows a transaction of the
    query role shows without principals: with ``rag.principals`` unset, and set to the empty set."""
    from sqlalchemy import text

    seen = dict.fromkeys(tables, 0)
    for principals in NO_PRINCIPALS:
        with engine.connect() as conn:
            conn.execute(text(SQL_AS_ROLE), {"role": QUERY_ROLE})
            if principals is not None:
                conn.execute(text(SQL_SET_PRINCIPALS), {"principals": principals})
            for table in tables:
                seen[table] = max(seen[table], conn.execute(text(_of(SQL_COUNT_ROWS, table))).scalar())
            conn.rollback()
    return seen


def rows_text(engine: Engine, principals: Sequence[str], tables: Sequence[Table]) -> dict[Table, str]:
    """For each of ``tables`` (names from :func:`selectable_tables`), every row ``principals`` read there
    (app.storage.readers.reading), as JSON without vectors, one string."""
    from sqlalchemy import text

    with reading(engine, principals) as conn:
        return {table: "\n".join(conn.execute(text(_of(SQL_ROWS_TEXT, table))).scalars()) for table in tables}
