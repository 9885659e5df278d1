"""What the query role can read (issue 49, migration 11), asked of PostgreSQL itself rather than of a
list in the code: every table the role may SELECT returns no row to a transaction without principals
and nothing of a document to principals that may not read it; the keyword rows and statistics, whose
tokens spell the text, it may not SELECT at all and gets only through two functions that test the
readers in their own statement, against the caller's principals and the transaction's."""

from __future__ import annotations

import pytest
from sqlalchemy import exc, text

from app import storage
from app.storage import readers
from app.storage.tables import NAMES

pytestmark = pytest.mark.integration

ROLE = readers.QUERY_ROLE
SECRETS = ("KX-4471", "賞与規程")  # the accounting document's words (its numbers may occur in any row's JSON)
# Every relation outside the system schemas the role may SELECT (a grant on one column counts).
SQL_SELECTABLE = (
    "SELECT CAST(CAST(c.oid AS regclass) AS text) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND n.nspname NOT LIKE 'pg_toast%' AND has_any_column_privilege(:role, c.oid, 'SELECT') ORDER BY 1"
)
# Every function the role may run as another role (SECURITY DEFINER) outside the system schemas.
SQL_DEFINERS = (
    "SELECT CAST(CAST(p.oid AS regprocedure) AS text) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND has_function_privilege(:role, p.oid, 'EXECUTE') ORDER BY 1"
)
SQL_CANDIDATES = (
    "SELECT id, CAST(tsv AS text) FROM rag_keyword_candidates(CAST(:c AS uuid), :q, 10, CAST(:p AS text[]), "
    "CAST(:folders AS text[]), CAST(:formats AS text[]), CAST(:since AS date))"
)
SQL_STATS = "SELECT term, df FROM rag_term_stats_of(CAST(:c AS uuid), CAST(:terms AS text[]), CAST(:p AS text[]))"
NOBODY = (None, "{}")  # rag.principals never set, or set to no principal
NO_SCOPE = {"folders": [], "formats": [], "since": None}  # a question's scope (app.storage.scope): none


def selectable(engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text(SQL_SELECTABLE), {"role": ROLE}).scalars())


def as_nobody(conn, principals: str | None) -> None:
    """This transaction as the query role, with no principals (unset, or the empty set)."""
    conn.execute(text("SELECT set_config('role', :role, true)"), {"role": ROLE})
    if principals is not None:
        conn.execute(text("SELECT set_config('rag.principals', :p, true)"), {"p": principals})


def rows_as_text(conn, table: str) -> str:
    """Every row of ``table`` as JSON (vectors left out), one string."""
    rows = conn.execute(text(f"SELECT CAST(to_jsonb(t) - 'embedding' AS text) FROM {table} t")).scalars()
    return "\n".join(rows)


@pytest.fixture(scope="module", autouse=True)
def kept_words(acl, engine):
    """Words kept for a page of the accounting document (as the sync keeps a scan's, app.storage.page_words),
    holding its secret: the page-words table has a row its checks below can find."""
    from app.formats.page_words import PageWords
    from app.storage.page_words import replace_page_words

    collection = storage.collection_id(engine, acl.settings.retrieval.collection_name)
    doc = next(
        d["doc_id"]
        for d in storage.list_documents(engine, acl.settings.retrieval.collection_name, ("admin",))
        if "賞与規程" in d["doc_id"]
    )
    with engine.begin() as conn:
        replace_page_words(conn, collection, doc, {1: PageWords(100, 50, (("管理番号はKX-4471", 1, 2, 3, 4, 0),))})


def test_every_table_the_query_role_may_select_shows_no_row_without_principals(acl, engine):
    tables = selectable(engine)
    assert set(tables) >= {NAMES[t] for t in readers.QUERY_ROLE_TABLES}
    never = (*readers.QUERY_ROLE_REVOKED, "answers", "feedback", "users", "tokens", "audit", "staging")
    assert not set(tables) & {NAMES[t] for t in never}
    with storage.reading(engine, readers.ALL_ROWS) as conn:  # each holds rows: its check below can fail
        assert {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar() > 0 for t in tables} == dict.fromkeys(
            tables, True
        )
    for principals in NOBODY:
        with engine.connect() as conn:
            as_nobody(conn, principals)
            counts = {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar() for t in tables}
        assert counts == dict.fromkeys(tables, 0), principals


def test_no_table_the_query_role_may_select_shows_bob_a_word_of_accounting(acl, engine):
    tables = selectable(engine)
    with storage.reading(engine, acl.principals["bob"]) as conn:
        seen = {t: [s for s in SECRETS if s in rows_as_text(conn, t)] for t in tables}
    assert seen == {t: [] for t in tables}
    with storage.reading(engine, acl.principals["alice"]) as conn:
        sentences = rows_as_text(conn, NAMES["mentions"])  # the fault row 4 named: a mention's sentence
    assert "KX-4471" in sentences


def test_keyword_rows_and_statistics_come_only_through_functions_that_test_the_readers(acl, engine):
    assert selectable(engine) and NAMES["keywords"] not in selectable(engine)
    with engine.connect() as conn:
        definers = list(conn.execute(text(SQL_DEFINERS), {"role": ROLE}).scalars())
        as_nobody(conn, None)
        with pytest.raises(exc.ProgrammingError, match="permission denied"):
            conn.execute(text("SELECT tsv FROM rag_keyword_index"))
    assert definers == [
        "rag_keyword_candidates(uuid,text,integer,text[],text[],text[],date)",
        "rag_term_stats_of(uuid,text[],text[])",
    ]
    collection = storage.collection_id(engine, acl.settings.retrieval.collection_name)
    bob, alice = (list(acl.principals[who]) for who in ("bob", "alice"))

    def candidates(reader, asked, scope=NO_SCOPE) -> list:
        with storage.reading(engine, reader) as conn:
            return conn.execute(text(SQL_CANDIDATES), {"c": collection, "q": "4471", "p": asked, **scope}).all()

    [(_, tokens)] = candidates(alice, alice)
    assert "'4471'" in tokens and "'kx'" in tokens
    # a scope narrows the candidates inside the function: the folder's, the format's
    assert candidates(alice, alice, {**NO_SCOPE, "folders": ["docs/経理/"]}) == [(_, tokens)]
    assert candidates(alice, alice, {**NO_SCOPE, "folders": ["docs/営業/"]}) == []
    assert candidates(alice, alice, {**NO_SCOPE, "formats": ["pdf"]}) == []
    # bob; alice's transaction asking as bob (the statement's wall); bob's asking as alice (the transaction's)
    assert candidates(bob, bob) == candidates(alice, bob) == candidates(bob, alice) == []
    for principals in NOBODY:
        with engine.connect() as conn:
            as_nobody(conn, principals)
            found = conn.execute(text(SQL_CANDIDATES), {"c": collection, "q": "4471", "p": alice, **NO_SCOPE}).all()
            assert found == []
            assert conn.execute(text(SQL_STATS), {"c": collection, "terms": ["4471"], "p": alice}).all() == []
    with storage.reading(engine, bob) as conn:  # the frequency of a term named, never the list of terms
        assert conn.execute(text(SQL_STATS), {"c": collection, "terms": ["4471", "zz"], "p": bob}).all() == [
            ("4471", 1),
            ("zz", 0),
        ]
