"""The readers' predicate and the query role's grants as pure values (the real walls: tests/integration/
test_query_role.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.storage import keywords, readers, schema
from app.storage.tables import NAMES, quote

STORAGE = Path(readers.__file__).parent


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("", "readers && CAST(:principals AS text[])"),
        ("e", "e.readers && CAST(:principals AS text[])"),
        ("d_2", "d_2.readers && CAST(:principals AS text[])"),
    ],
)
def test_readers_predicate_renders_the_applications_test(alias, expected):
    assert readers.readers_predicate(alias) == expected


@pytest.mark.parametrize(
    ("alias", "message"),
    [
        ("e; DELETE FROM x", "a table alias is a lower-case SQL name, got 'e; DELETE FROM x'"),
        ("E", "a table alias is a lower-case SQL name, got 'E'"),
        ("1e", "a table alias is a lower-case SQL name, got '1e'"),
        ("e.x", "a table alias is a lower-case SQL name, got 'e.x'"),
    ],
)
def test_readers_predicate_refuses_what_is_not_a_name(alias, message):
    with pytest.raises(ValueError) as raised:
        readers.readers_predicate(alias)
    assert str(raised.value) == message


def test_no_statement_of_app_storage_types_the_predicate_out():
    typed = [
        f"{path.name}:{number}"
        for path in sorted(STORAGE.glob("*.py"))
        if path.name != "readers.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "readers && CAST(:principals" in line
    ]
    assert typed == []


def test_positional_writes_bound_names_as_places():
    statement = "SELECT x FROM t WHERE a = :a AND b = CAST(:b AS text[]) AND c::text = :a LIMIT :a2"
    assert keywords.positional(statement, ("a", "b", "a2")) == (
        "SELECT x FROM t WHERE a = $1 AND b = CAST($2 AS text[]) AND c::text = $1 LIMIT $3"
    )


def test_positional_refuses_a_name_without_a_place():
    with pytest.raises(ValueError) as raised:
        keywords.positional("SELECT :a, :c", ("a",))
    assert str(raised.value) == "bound names without a place: ['c']"


def test_the_definer_functions_run_the_statements_that_test_the_readers():
    candidates, stats = keywords.DEFINER_FUNCTIONS
    assert "SECURITY DEFINER SET search_path FROM CURRENT" in candidates
    names = ("collection", "tsquery", "cap", "principals", "scope_folders", "scope_formats", "scope_since")
    assert keywords.positional(keywords.SQL_KEYWORD_CANDIDATES, names) in candidates
    assert "scope_folders text[], scope_formats text[], scope_since date) RETURNS TABLE" in candidates
    # the scope is tested on each candidate's chunk before the cap, and joins nothing when empty
    assert 'CAST($7 AS date) IS NULL) OR EXISTS (SELECT 1 FROM "langchain_pg_embedding" e WHERE e.id = k.id' in (
        candidates
    )
    assert candidates.index("starts_with(e.cmetadata->>'doc_id'") < candidates.index("LIMIT $3")
    assert "k.readers && CAST($4 AS text[]) AND k.readers && (SELECT" in candidates
    assert keywords.positional(keywords.SQL_TERM_STATS_OF, ("collection", "terms", "principals")) in stats


def test_the_query_role_may_select_only_tables_under_a_policy():
    policies = {
        statement.split(" ON ")[1].split()[0]
        for migration in schema.MIGRATIONS
        for statement in migration.statements
        if statement.startswith("CREATE POLICY")
    }
    assert {quote(NAMES[t]) for t in readers.QUERY_ROLE_TABLES} <= policies
    assert not set(readers.QUERY_ROLE_TABLES) & set(readers.QUERY_ROLE_REVOKED)
    granted = readers.SQL_GRANT_SELECT.removeprefix("GRANT SELECT ON ").removesuffix(' TO "rag_query"').split(", ")
    assert granted == [quote(NAMES[t]) for t in readers.QUERY_ROLE_TABLES]
    assert readers.SQL_REVOKE_SELECT == (
        'REVOKE SELECT ON "rag_keyword_index", "rag_term_stats", "rag_collection_stats", "rag_graph_pair", '
        '"rag_graph_community", "langchain_pg_collection", "rag_meta" FROM "rag_query"'
    )
