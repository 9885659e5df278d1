"""Schema migrations on a real PostgreSQL + pgvector, in a database of their own: re-running them
changes nothing, an older store is upgraded in place (its chunks kept), a current one is left alone."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.documents import Document
from sqlalchemy import create_engine, event, text

from app.config import Settings
from app.storage import chunks, schema, tables
from app.storage import engine as storage_engine
from tests.integration.conftest import HashEmbeddings, drop_when_left

COLLECTION = "documents"
GRAPH_TABLES = (
    tables.MENTION_TABLE,
    tables.PAIR_TABLE,
    tables.ENTITY_TABLE,
    tables.RELATIONSHIP_TABLE,
    tables.COMMUNITY_TABLE,
    tables.REPORT_TABLE,
    tables.GRAPH_STATE_TABLE,
)
OURS = (
    tables.KEYWORD_TABLE,
    tables.TERM_STATS_TABLE,
    tables.COLLECTION_STATS_TABLE,
    tables.DOCUMENT_TABLE,
    tables.STAGING_TABLE,
    tables.META_TABLE,
    tables.MENTION_TABLE,
    tables.PAIR_TABLE,
    tables.ENTITY_TABLE,
    tables.RELATIONSHIP_TABLE,
    tables.COMMUNITY_TABLE,
    tables.REPORT_TABLE,
    tables.GRAPH_STATE_TABLE,
    tables.EMBEDDING_TABLE,
)
# What a migration could change: the catalog of every table, and the rows of the derived ones.
CATALOG = (
    "SELECT 'column', c.relname || '.' || a.attname, format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull "
    "|| ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '') FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    "WHERE c.relname = ANY(:tables) AND a.attnum > 0 AND NOT a.attisdropped "
    "UNION ALL SELECT 'index', indexname, indexdef FROM pg_indexes WHERE tablename = ANY(:tables) "
    "UNION ALL SELECT 'trigger', t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "WHERE c.relname = ANY(:tables) AND NOT t.tgisinternal "
    "UNION ALL SELECT 'constraint', conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = ANY(SELECT oid FROM pg_class WHERE relname = ANY(:tables)) "
    "UNION ALL SELECT 'function', proname, pg_get_functiondef(oid) FROM pg_proc WHERE proname = :function "
    "ORDER BY 1, 2"
)
ROWS = {
    "stats": "SELECT term, df FROM rag_term_stats ORDER BY 1",
    "collection_stats": "SELECT n, total_len FROM rag_collection_stats",
    "keywords": "SELECT id, tsv::text, dl FROM rag_keyword_index ORDER BY 1",
    "documents": "SELECT doc_id, origin, chunks FROM rag_document ORDER BY 1",
    "graph_state": "SELECT extractor, dirty FROM rag_graph_state",
    "meta": "SELECT key, value FROM rag_meta ORDER BY 1",
}


@pytest.fixture
def own_engine(integration_env):
    """An engine on a new database of its own on the embedded server (dropped afterwards)."""
    settings = Settings.from_env().changed(db={"name": f"rag_m{uuid.uuid4().hex[:8]}"})
    engine = create_engine(storage_engine.resolve_connection_string(settings))
    yield engine
    engine.dispose()
    admin = create_engine(
        storage_engine.resolve_connection_string(settings.changed(db={"name": "postgres"})),
        isolation_level="AUTOCOMMIT",
    )
    drop_when_left(admin, settings.db.name)  # FORCE cannot end autovacuum's backend: again until it has left
    admin.dispose()


def snapshot(engine, rows=tuple(ROWS)) -> dict:
    """The catalog of the store's tables and the rows of ``rows`` (names in ROWS)."""
    with engine.connect() as conn:
        found = {
            "catalog": conn.execute(
                text(CATALOG), {"tables": list(OURS), "function": tables.NAMES["keyword_stats_function"]}
            ).all()
        }
        for name in rows:
            found[name] = conn.execute(text(ROWS[name])).all()
    return found


def store_with_a_document(engine) -> None:
    """The schema, and one document of three chunks (keyword rows, statistics, a document row)."""
    embeddings = HashEmbeddings()
    schema.create_schema(engine, embeddings, COLLECTION)
    texts = ["就業規則の第一条：目的。", "第二条：勤務時間は九時から。", "第三条：休日は土日とする。"]
    docs = [
        Document(id=f"c{i}", page_content=t, metadata={"doc_id": "rules", "file": "rules.csv", "context": "就業規則"})
        for i, t in enumerate(texts)
    ]
    doc = {"doc_id": "rules", "source_file": "rules.csv", "content_hash": "h", "settings_hash": "s"}
    chunks.replace_document(engine, COLLECTION, doc, docs, embeddings.embed_documents(texts))


def test_migrations_applied_again_change_nothing(own_engine):
    store_with_a_document(own_engine)
    before = snapshot(own_engine)
    assert (
        before["stats"]
        and before["collection_stats"][0][0] == 3
        and before["meta"] == [("schema_version", str(schema.SCHEMA_VERSION))]
    )
    for previous in (0, 0, 1, 1):  # every statement twice more, then with the upgrade statements too
        with own_engine.begin() as conn:
            assert schema.apply_migrations(conn, previous) == [m.version for m in schema.MIGRATIONS]
        assert snapshot(own_engine) == before


def test_an_older_store_is_upgraded_in_place(own_engine):
    """A store at version 3 (no graph tables, no staging table) gets them; its chunks and statistics stay."""
    store_with_a_document(own_engine)
    with own_engine.begin() as conn:
        for table in GRAPH_TABLES + (tables.STAGING_TABLE,):
            conn.execute(text(f"DROP TABLE {tables.quote(table)}"))
        conn.execute(text("UPDATE rag_meta SET value = '3' WHERE key = 'schema_version'"))
    data = ("stats", "collection_stats", "keywords", "documents")
    kept = snapshot(own_engine, data)
    assert schema.schema_version(own_engine) == 3
    schema.create_schema(own_engine, HashEmbeddings(), COLLECTION)
    after = snapshot(own_engine)
    assert schema.schema_version(own_engine) == schema.SCHEMA_VERSION
    assert {k: after[k] for k in data} == {k: kept[k] for k in data}
    assert after["graph_state"] == [("", True)]  # its chunks were stored before the graph: extracted once
    with own_engine.connect() as conn:
        assert conn.execute(text("SELECT to_regclass('rag_staging')")).scalar() is not None
    schema.check_schema(own_engine, COLLECTION)


def test_a_current_store_opens_without_any_migration(own_engine):
    store_with_a_document(own_engine)
    statements = []
    event.listen(own_engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    schema.create_schema(own_engine, HashEmbeddings(), COLLECTION)
    schema.check_schema(own_engine, COLLECTION)
    migrations = {s for m in schema.MIGRATIONS for s in m.statements + m.upgrade}
    assert statements and not migrations & set(statements)


def test_keyword_rows_carry_their_chunk_s_readers_through_every_change(own_engine):
    from app.storage import readers
    from app.storage.collection import collection_id

    store_with_a_document(own_engine)
    differing = text(
        "SELECT count(*) FROM rag_keyword_index k JOIN langchain_pg_embedding c ON c.id = k.id "
        "WHERE k.readers IS DISTINCT FROM c.readers"
    )
    with own_engine.begin() as conn:
        assert conn.execute(differing).scalar() == 0
        collection = collection_id(own_engine, COLLECTION)
        readers.set_document_readers(conn, collection, "rules", "rules.csv", ["admin", "経理"])
        assert conn.execute(differing).scalar() == 0
        assert conn.execute(text("SELECT DISTINCT readers FROM rag_keyword_index")).all() == [(["admin", "経理"],)]
        # a keyword row written after its chunk takes the chunk's readers
        conn.execute(text("DELETE FROM rag_keyword_index WHERE id = 'c1'"))
        conn.execute(
            text(
                "INSERT INTO rag_keyword_index (id, collection_id, tsv, dl) "
                "VALUES ('c1', :c, to_tsvector('simple', '第二 条'), 2)"
            ),
            {"c": collection},
        )
        assert conn.execute(text("SELECT readers FROM rag_keyword_index WHERE id = 'c1'")).scalar() == ["admin", "経理"]


def test_an_older_store_s_query_role_loses_the_tables_that_spell_the_text(own_engine):
    """A store at version 10, its query role granted the keyword rows, statistics and the rest: the
    upgrade takes them back, puts the mentions under their chunks' policy and keyword search still works."""
    from app.storage import keywords, readers

    store_with_a_document(own_engine)
    revoked = [tables.NAMES[t] for t in readers.QUERY_ROLE_REVOKED]
    with own_engine.begin() as conn:
        conn.execute(text(f"GRANT SELECT ON {', '.join(map(tables.quote, revoked))} TO rag_query"))
        conn.execute(text("DROP POLICY rag_readers ON rag_graph_mention"))
        conn.execute(text("DROP FUNCTION rag_keyword_candidates, rag_term_stats_of"))
        conn.execute(text("UPDATE rag_meta SET value = '10' WHERE key = 'schema_version'"))
    schema.create_schema(own_engine, HashEmbeddings(), COLLECTION)
    with own_engine.connect() as conn:
        may = {
            t: conn.execute(text("SELECT has_table_privilege('rag_query', :t, 'SELECT')"), {"t": t}).scalar()
            for t in revoked
        }
        policies = conn.execute(text("SELECT tablename FROM pg_policies WHERE tablename = 'rag_graph_mention'")).all()
    assert may == dict.fromkeys(revoked, False) and policies == [("rag_graph_mention",)]
    found = keywords.keyword_search(own_engine, COLLECTION, ["就業"], 5, readers.ALL_ROWS)
    assert sorted(row[0] for row in found) == ["c0", "c1", "c2"]


def test_a_store_at_15_gets_the_keyword_candidates_of_a_scope_and_loses_the_old_signature(own_engine):
    """Migration 16: the candidates' function takes the question's scope; the four-argument one goes
    (a definer function left behind would be one more way in for the query role)."""
    from app.storage import keywords, readers
    from app.storage.scope import Scope

    store_with_a_document(own_engine)
    with own_engine.begin() as conn:
        conn.execute(text("DROP FUNCTION rag_keyword_candidates"))
        conn.execute(
            text(
                "CREATE FUNCTION rag_keyword_candidates(collection uuid, tsquery text, cap integer, principals text[]) "
                "RETURNS TABLE (id varchar, tsv tsvector, dl integer) LANGUAGE sql SECURITY DEFINER "
                "AS $$ SELECT CAST(NULL AS varchar), CAST(NULL AS tsvector), 0 WHERE false $$"
            )
        )
        conn.execute(text("UPDATE rag_meta SET value = '15' WHERE key = 'schema_version'"))
    schema.create_schema(own_engine, HashEmbeddings(), COLLECTION)
    with own_engine.connect() as conn:
        signatures = conn.execute(
            text("SELECT CAST(CAST(oid AS regprocedure) AS text) FROM pg_proc WHERE proname = 'rag_keyword_candidates'")
        ).scalars()
        assert list(signatures) == ["rag_keyword_candidates(uuid,text,integer,text[],text[],text[],date)"]
    assert schema.schema_version(own_engine) == schema.SCHEMA_VERSION
    found = keywords.keyword_search(own_engine, COLLECTION, ["就業"], 5, readers.ALL_ROWS)
    assert sorted(row[0] for row in found) == ["c0", "c1", "c2"]
    elsewhere = Scope(folders=("no/such/folder",))
    assert keywords.keyword_search(own_engine, COLLECTION, ["就業"], 5, readers.ALL_ROWS, scope=elsewhere) == []
