"""app.storage without a database: every SQL statement of the app lives there, migrations are numbered
and written to be re-run, statement templates take names from one place.

Applying the migrations to a real PostgreSQL (twice, and from an older version) is in
tests/integration/test_migrations.py."""

import ast
import re
from pathlib import Path

import pytest

from app.storage import schema, tables

APP = Path(__file__).resolve().parents[1] / "app"
STORAGE = APP / "storage"
# A statement: a SQL verb at the start of a string, followed by what that verb needs next. Upper case,
# as every statement of the app is written: prose ("Select the file", "update the index") is not SQL.
SQL_STATEMENT = re.compile(
    r"^\s*(SELECT\s+\S|INSERT\s+INTO|UPDATE\s+\S+\s+(\S+\s+)?SET|DELETE\s+FROM|CREATE\s+(OR\s+REPLACE\s+|UNIQUE\s+)?"
    r"(TABLE|INDEX|EXTENSION|FUNCTION|TRIGGER|ROLE|DATABASE)|ALTER\s+(TABLE|ROLE|DATABASE)|DROP\s+(TABLE|INDEX|TRIGGER)"
    r"|TRUNCATE\s|WITH\s+\w+\s+AS\s*\(|ANALYZE\s|VACUUM\s|COPY\s+\S+\s+\()"
)


def docstring_nodes(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def sql_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant in ``path`` that starts like a SQL statement, docstrings
    left out (comments are not in the syntax tree). Adjacent literals count as one string."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = docstring_nodes(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and SQL_STATEMENT.match(node.value)
    ]


@pytest.mark.parametrize(
    "text,is_sql",
    [
        ("SELECT 1", True),
        ("  SELECT id FROM t", True),
        ("ANALYZE {term_stats}", True),
        ("INSERT INTO t VALUES (1)", True),
        ("UPDATE {staging} s SET run = :run", True),
        ("DELETE FROM t", True),
        ("CREATE INDEX IF NOT EXISTS i ON t (c)", True),
        ("CREATE OR REPLACE FUNCTION f()", True),
        ("WITH q AS (SELECT 1) SELECT * FROM q", True),
        ("Select the file to ingest", False),  # prose: a verb without what a statement needs next
        ("update the index when files change", False),
        ("create a new collection", False),
        ("Delete this document?", False),
    ],
)
def test_sql_statement_pattern(text, is_sql):
    assert bool(SQL_STATEMENT.match(text)) is is_sql


def test_sql_strings_skips_docstrings_and_finds_statements(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        '"""SELECT 1 in a module docstring."""\n'
        "def f():\n"
        '    """DELETE FROM t in a docstring."""\n'
        '    return "DELETE FROM t WHERE id = :id"  # SELECT in a comment\n',
        encoding="utf-8",
    )
    assert sql_strings(source) == [(4, "DELETE FROM t WHERE id = :id")]


def test_no_sql_outside_the_storage_package():
    found = [
        f"{path.relative_to(APP.parent)}:{line}: {text[:60]!r}"
        for path in sorted(APP.rglob("*.py"))
        if STORAGE not in path.parents
        for line, text in sql_strings(path)
    ]
    assert found == []


def test_storage_has_the_sql():
    """The scan above would pass on an empty app: it does find the statements where they are."""
    assert len([s for p in STORAGE.glob("*.py") for s in sql_strings(p)]) > 50


def test_storage_builds_no_sql_with_f_strings():
    """Statements are templates filled by tables.sql() with quoted names; values are bound, never formatted in."""
    found = [
        f"{path.name}:{node.lineno}"
        for path in sorted(STORAGE.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.JoinedStr)
        and any(isinstance(part, ast.Constant) and SQL_STATEMENT.match(part.value) for part in node.values)
    ]
    assert found == []


def test_migrations_are_numbered_in_order_and_the_last_is_the_schema_version():
    versions = [m.version for m in schema.MIGRATIONS]
    assert versions == sorted(set(versions)) and versions[0] >= 1
    assert schema.SCHEMA_VERSION == versions[-1] == 18  # what stores made by earlier releases recorded


def test_pending_migrations_by_stored_version():
    assert [m.version for m in schema.pending(0)] == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
    assert [m.version for m in schema.pending(3)] == [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
    assert schema.pending(schema.SCHEMA_VERSION) == []


RERUNNABLE = re.compile(
    r"^(CREATE (TABLE|INDEX) IF NOT EXISTS|CREATE OR REPLACE (FUNCTION|AGGREGATE)|ALTER TABLE \S+ ADD COLUMN IF NOT EXISTS"
    r"|ALTER TABLE \S+ (ENABLE|DISABLE) ROW LEVEL SECURITY|DROP (TRIGGER|POLICY|FUNCTION) IF EXISTS|UPDATE |INSERT INTO |TRUNCATE "
    r"|DO \$\$ BEGIN IF to_regrole\('[^']+'\) IS NOT NULL THEN REVOKE )"  # a grant taken back, where the role exists
)


@pytest.mark.parametrize("migration", schema.MIGRATIONS, ids=lambda m: f"v{m.version}")
def test_every_migration_statement_is_written_to_be_re_run(migration):
    """DDL only in its re-runnable forms; a CREATE TRIGGER only right after its DROP TRIGGER IF EXISTS;
    data statements are recomputations (checked for real in tests/integration/test_migrations.py)."""
    statements = migration.statements + migration.upgrade
    for i, statement in enumerate(statements):
        if statement.startswith(("CREATE TRIGGER", "CREATE POLICY")):
            kind, name = statement.split()[1:3]
            assert statements[i - 1].startswith(f"DROP {kind} IF EXISTS {name} "), statement
        else:
            assert RERUNNABLE.match(statement), statement


def test_apply_migrations_runs_upgrade_statements_only_for_an_existing_store(mocker):
    fresh, upgraded = mocker.MagicMock(), mocker.MagicMock()
    assert schema.apply_migrations(fresh, 0) == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
    assert schema.apply_migrations(upgraded, 3) == [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]

    def ran(conn) -> list[str]:
        return [str(c.args[0]) for c in conn.execute.call_args_list]

    mark_unextracted = schema.graphrag_tables.SQL_MARK_UNEXTRACTED
    assert mark_unextracted not in ran(fresh)
    assert mark_unextracted in ran(upgraded)
    assert schema.keywords.SQL_REBUILD_STATS[0] in ran(fresh)  # a store from before versions: statistics built
    assert schema.keywords.SQL_REBUILD_STATS[0] not in ran(upgraded)
    # CSV and Excel documents stored before migration 13 are read again for their tables; a new store has none
    assert schema.table_rows.UPGRADE_STATEMENTS[0] not in ran(fresh)
    assert schema.table_rows.UPGRADE_STATEMENTS[0] in ran(upgraded)
    # and Word, PowerPoint and HTML documents before migration 15, for the tables inside them
    assert schema.table_rows.ANCHOR_UPGRADE[0] not in ran(fresh)
    assert schema.table_rows.ANCHOR_UPGRADE[0] in ran(upgraded)


def test_sql_fills_names_quoted_from_one_place():
    assert tables.sql("SELECT id FROM {chunks} WHERE x = :x") == 'SELECT id FROM "langchain_pg_embedding" WHERE x = :x'
    assert tables.sql("CAST(:v AS vector({embed_dim})) '{{}}'") == "CAST(:v AS vector(384)) '{}'"
    with pytest.raises(KeyError):
        tables.sql("SELECT 1 FROM {no_such_table}")
    assert tables.quote('we"ird') == '"we""ird"'


def test_vector_literal():
    assert tables.vector_literal([0.5, 1, -0.25]) == "[0.5,1.0,-0.25]"
