"""Tables stored as tables (issue 50): each CSV file's and each sheet's header and rows, with their
document's readers.

``rag_table`` holds one row per table (its document, sheet, columns with kind, unit and a few sample
texts, row count, readers); ``rag_table_row`` one row per data row (its number in the citation and its
cells as ``[[text, value], …]`` JSON: a number, an ISO date or null). Both reference their document:
a document deleted takes its tables with it (ON DELETE CASCADE, in the deleting transaction); a
document switched over replaces its tables in the switch's transaction (:func:`replace_tables`);
a document given other readers gives them to its tables in the same statement (a trigger on
``rag_document``). Reads carry the readers' predicate in their own SQL and run under row-level
security as the query role (app.storage.readers.reading).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from app.storage.collection import collection_id
from app.storage.readers import principals_param, readers_predicate, reading
from app.storage.scope import TABLE_DOC_ID, Scope, scope_params, scope_predicate
from app.storage.tables import sql
from app.text.chunks import row_source

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

SAMPLES = 3  # distinct sample texts kept per column (the model's prompt shows them)
ROW_BATCH = 5000  # rows written per statement

# --- schema (migration 13, app.storage.schema) ------------------------------------------------
MIGRATION_STATEMENTS = (
    sql(
        "CREATE TABLE IF NOT EXISTS {table_index} (id bigserial PRIMARY KEY, collection_id uuid NOT NULL, "
        "doc_id text NOT NULL, source_file text NOT NULL, sheet text NOT NULL DEFAULT '', columns jsonb NOT NULL, "
        "row_count integer NOT NULL, readers text[] NOT NULL DEFAULT '{{admin}}', "
        "UNIQUE (collection_id, doc_id, sheet), FOREIGN KEY (collection_id, doc_id) "
        "REFERENCES {documents} (collection_id, doc_id) ON DELETE CASCADE)"
    ),
    sql(
        "CREATE TABLE IF NOT EXISTS {table_rows} (table_id bigint NOT NULL REFERENCES {table_index} (id) "
        "ON DELETE CASCADE, n integer NOT NULL, cells jsonb NOT NULL, readers text[] NOT NULL DEFAULT '{{admin}}', "
        "PRIMARY KEY (table_id, n))"
    ),
    sql("CREATE INDEX IF NOT EXISTS {table_readers_index} ON {table_index} USING gin (readers)"),
    *(
        statement
        for table in ("table_index", "table_rows")
        for statement in (
            sql("ALTER TABLE {" + table + "} ENABLE ROW LEVEL SECURITY"),
            sql("DROP POLICY IF EXISTS {readers_policy} ON {" + table + "}"),
            sql(
                "CREATE POLICY {readers_policy} ON {" + table + "} FOR SELECT "
                "USING (readers && {principals_function}())"
            ),
        )
    ),
    # a document's readers reach its tables and their rows in the statement that changes them
    sql(
        "CREATE OR REPLACE FUNCTION {table_readers_function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "UPDATE {table_index} SET readers = NEW.readers WHERE collection_id = NEW.collection_id "
        "AND doc_id = NEW.doc_id AND readers IS DISTINCT FROM NEW.readers; "
        "UPDATE {table_rows} r SET readers = NEW.readers FROM {table_index} t WHERE t.id = r.table_id "
        "AND t.collection_id = NEW.collection_id AND t.doc_id = NEW.doc_id AND r.readers IS DISTINCT FROM NEW.readers; "
        "RETURN NULL; END $$"
    ),
    sql("DROP TRIGGER IF EXISTS {table_readers_trigger} ON {documents}"),
    sql(
        "CREATE TRIGGER {table_readers_trigger} AFTER UPDATE OF readers ON {documents} FOR EACH ROW "
        "WHEN (OLD.readers IS DISTINCT FROM NEW.readers) EXECUTE FUNCTION {table_readers_function}()"
    ),
)
# CSV and Excel documents stored before are read again by the next sync (their vectors are reused)
UPGRADE_STATEMENTS = (
    sql("UPDATE {documents} SET settings_hash = '' WHERE lower(source_file) ~ '[.](csv|xlsx|xlsm|xls)$'"),
)
# --- migration 15: tables in Word, PowerPoint and HTML documents, cited by their section or slide ------
ANCHOR_STATEMENTS = (sql("ALTER TABLE {table_index} ADD COLUMN IF NOT EXISTS anchor text NOT NULL DEFAULT ''"),)
ANCHOR_UPGRADE = (
    sql("UPDATE {documents} SET settings_hash = '' WHERE lower(source_file) ~ '[.](docx|pptx|html|htm)$'"),
)

# --- writes ----------------------------------------------------------------------------------
SQL_DELETE_TABLES = sql("DELETE FROM {table_index} WHERE collection_id = :collection AND doc_id = :doc")
SQL_INSERT_TABLE = sql(
    "INSERT INTO {table_index} (collection_id, doc_id, source_file, sheet, columns, row_count, readers, anchor) "
    "VALUES (:collection, :doc, :file, :sheet, CAST(:columns AS jsonb), :rows, CAST(:readers AS text[]), :anchor) "
    "RETURNING id"
)
SQL_INSERT_ROWS = sql(
    "INSERT INTO {table_rows} (table_id, n, cells, readers) SELECT :table, r.n, r.cells, CAST(:readers AS text[]) "
    "FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS r(n integer, cells jsonb)"
)

# --- reads (the readers' predicate and the question's scope in each statement) ---------------------
SQL_READABLE_TABLES = sql(
    "SELECT id, doc_id, source_file, sheet, columns, row_count, anchor FROM {table_index} t "
    "WHERE collection_id = :collection AND "
    + readers_predicate()
    + " AND "
    + scope_predicate("t", TABLE_DOC_ID)
    + " ORDER BY source_file, sheet"
)
SQL_TABLE_ROWS = sql(
    "SELECT r.n, r.cells FROM {table_rows} r JOIN {table_index} t ON t.id = r.table_id "
    "WHERE t.id = :table AND t.collection_id = :collection AND "
    + readers_predicate("t")
    + " AND "
    + readers_predicate("r")
    + " AND "
    + scope_predicate("t", TABLE_DOC_ID)
    + " ORDER BY r.n"
)


@dataclass(frozen=True)
class StoredTable:
    """A stored table as a reader may see it: its ID, document, file, sheet, columns
    (``[{"name", "kind", "unit", "samples"}, …]``), row count, and the source ID its rows are cited by
    when they have none of their own (a table in a Word section or on a slide; ``""``)."""

    id: int
    doc_id: str
    source_file: str
    sheet: str
    columns: list[dict]
    row_count: int
    anchor: str = ""

    def cite(self, n: int) -> str:
        """A row's citation, as its text unit's: ``file.xlsx:Sheet!r12``, ``faq.csv:r2``; a document's
        table row is cited by the section or slide that holds it (``報告.docx#料金``, ``説明.pptx:s3``)."""
        if self.anchor:
            return self.anchor
        return row_source(self.source_file, n, self.sheet)


def _json_value(value: Any) -> Any:
    """A cell's typed value in JSON: an int or a float, an ISO date, or None."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and abs(value) < 2**53 else float(value)
    if isinstance(value, date):
        return value.isoformat()
    return None


def _columns_json(table) -> str:
    """A table's columns with kind, unit and up to :data:`SAMPLES` distinct sample texts."""
    columns = []
    for index, (name, kind, unit) in enumerate(zip(table.columns, table.kinds, table.units)):
        samples = list(dict.fromkeys(c[index].text for _, c in table.rows if c[index].text))[:SAMPLES]
        columns.append({"name": name, "kind": kind, "unit": unit, "samples": samples})
    return json.dumps(columns, ensure_ascii=False)


def replace_tables(
    conn: Connection, collection, doc_id: str, source_file: str, tables: Sequence, readers: Sequence[str]
) -> int:
    """Replace a document's stored tables by ``tables`` (app.tables.extract.SourceTable) readable by
    ``readers``, in the caller's transaction (the document's switch); returns the rows written."""
    from sqlalchemy import text

    conn.execute(text(SQL_DELETE_TABLES), {"collection": collection, "doc": doc_id})
    written = 0
    for table in tables:
        table_id = conn.execute(
            text(SQL_INSERT_TABLE),
            {
                "collection": collection,
                "doc": doc_id,
                "file": source_file,
                "sheet": table.sheet,
                "columns": _columns_json(table),
                "rows": len(table.rows),
                "readers": list(readers),
                "anchor": getattr(table, "anchor", ""),
            },
        ).scalar_one()
        for start in range(0, len(table.rows), ROW_BATCH):
            batch = [
                {"n": n, "cells": [[c.text, _json_value(c.value)] for c in cells]}
                for n, cells in table.rows[start : start + ROW_BATCH]
            ]
            rows = json.dumps(batch, ensure_ascii=False)
            conn.execute(text(SQL_INSERT_ROWS), {"table": table_id, "rows": rows, "readers": list(readers)})
            written += len(batch)
    return written


def readable_tables(
    engine: Engine, collection_name: str, principals: Sequence[str], scope: Scope | None = None
) -> list[StoredTable]:
    """The tables ``principals`` may read whose document is within ``scope`` (app.storage.scope; None: any),
    their names and columns only, by file and sheet."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with reading(engine, principals) as conn:
        rows = conn.execute(
            text(SQL_READABLE_TABLES),
            {"collection": collection, "principals": principals_param(principals), **scope_params(scope)},
        ).all()
    return [StoredTable(int(r[0]), r[1], r[2], r[3], list(r[4]), int(r[5]), r[6] or "") for r in rows]


def table_rows(
    engine: Engine, collection_name: str, table_id: int, principals: Sequence[str], scope: Scope | None = None
) -> list[tuple[int, list[list]]]:
    """The rows of one table that ``principals`` may read, as ``(n, [[text, value], …])`` in order
    (none when they may not read the table, or its document is outside ``scope``)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    params = {
        "collection": collection,
        "table": int(table_id),
        "principals": principals_param(principals),
        **scope_params(scope),
    }
    with reading(engine, principals) as conn:
        return [(int(n), list(cells)) for n, cells in conn.execute(text(SQL_TABLE_ROWS), params)]
