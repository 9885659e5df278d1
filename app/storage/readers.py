"""Who may read each row, enforced twice inside PostgreSQL.

Every chunk, document, graph entity, relationship and community report has ``readers text[]``: the
principals that may read it (group names, ``user:NAME``, always ``admin``; a GIN index on the chunks'
and documents'). A new row is ``{admin}`` until a sync gives it its readers (deny by default).

1. **The application's predicate**: every read statement of app.storage carries
   ``readers && CAST(:principals AS text[])`` in its own WHERE clause (:func:`readers_predicate` writes it).
2. **Row-level security**: a SELECT policy on the same tables with the same test against the
   principals set for the transaction (:data:`SQL_AS_READER`: ``set_config('rag.principals', …, true)``).
   Reads run as the query role ``rag_query`` (``set_config('role', 'rag_query', true)``), which owns
   nothing and cannot bypass RLS, so the policies bind the application's own queries; writers run as
   the owner and are not filtered. The embedded server's superuser creates the role
   (app.storage.provision); on a DATABASE_URL server the schema's writer creates it when it may, else
   says which two statements an administrator runs. Without the role, the first wall stands alone.

The query role may SELECT only tables with such a policy (QUERY_ROLE_TABLES; migration 11): without
principals it reads no row of any table. The keyword rows and the BM25 statistics, whose tokens spell the
text, it reads through two functions that run as the schema's owner and apply both walls in their own
statement (app.storage.keywords); what only the writer or the login needs it may not read at all.

Derived rows carry the **intersection** of their sources' readers (:data:`SQL_REFRESH_GRAPH_READERS`):
an entity is readable by the principals common to every chunk naming it, a relationship by those
common to its two entities, a report by those common to all of its entities. Conservative: a user
in two groups whose documents both name an entity does not see that entity unless one group reads
every chunk naming it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from app.storage.tables import NAMES, sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)

QUERY_ROLE = NAMES["query_role"]
ALL_ROWS = ("admin",)  # principals every row's readers hold: counts that name no document
# the tables whose rows carry readers, each with a SELECT policy
RLS_TABLES = ("chunks", "documents", "entities", "relationships", "reports")
# What the query role may SELECT: tables under a readers' policy only (migration 11). Nothing of users,
# tokens, the audit, kept answers or feedback; a mention's policy is its chunk's readers, the graph
# state's is ALL_ROWS (its statistics count every row).
# tables: issue 50; page words (their document's readers, app.storage.page_words): issue 52
QUERY_ROLE_TABLES = (*RLS_TABLES, "mentions", "graph_state", "table_index", "table_rows", "page_words")
# What it could SELECT before migration 11 and may not any more: the keyword rows and statistics (their
# tokens spell the text; read through app.storage.keywords' definer functions), pairs and communities
# (read by the graph's build, as the owner), the collections and the schema version (read as the login).
QUERY_ROLE_REVOKED = ("keywords", "term_stats", "collection_stats", "pairs", "communities", "collections", "meta")

# --- schema (migration 6, app.storage.schema) ------------------------------------------------
SQL_ADD_READERS = tuple(
    sql("ALTER TABLE {" + table + "} ADD COLUMN IF NOT EXISTS readers text[] NOT NULL DEFAULT '{{admin}}'")
    for table in RLS_TABLES
)
SQL_READERS_INDEXES = (
    sql("CREATE INDEX IF NOT EXISTS {chunk_readers_index} ON {chunks} USING gin (readers)"),
    sql("CREATE INDEX IF NOT EXISTS {document_readers_index} ON {documents} USING gin (readers)"),
)
# The principals of this transaction as text[] ('{}' when unset: nothing is readable).
SQL_PRINCIPALS_FUNCTION = sql(
    "CREATE OR REPLACE FUNCTION {principals_function}() RETURNS text[] LANGUAGE sql STABLE AS "
    "$$ SELECT coalesce(CAST(nullif(current_setting('rag.principals', true), '') AS text[]), '{{}}') $$"
)
SQL_INTERSECT_FUNCTION = sql(
    "CREATE OR REPLACE FUNCTION {intersect_function}(a text[], b text[]) RETURNS text[] LANGUAGE sql IMMUTABLE AS "
    "$$ SELECT CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a "
    "ELSE ARRAY(SELECT x FROM (SELECT unnest(a) INTERSECT SELECT unnest(b)) s(x) ORDER BY x) END $$"
)
SQL_INTERSECT_AGGREGATE = sql(
    "CREATE OR REPLACE AGGREGATE {intersect_aggregate}(text[]) (SFUNC = {intersect_function}, STYPE = text[])"
)
SQL_POLICIES = tuple(
    statement
    for table in RLS_TABLES
    for statement in (
        sql("ALTER TABLE {" + table + "} ENABLE ROW LEVEL SECURITY"),
        sql("DROP POLICY IF EXISTS {readers_policy} ON {" + table + "}"),
        sql("CREATE POLICY {readers_policy} ON {" + table + "} FOR SELECT USING (readers && {principals_function}())"),
    )
)
# --- migration 10: the keyword rows carry their chunk's readers -------------------------------
# so BM25's candidates are filtered without reading the chunk table (a join that took half the keyword
# search's time at 50k chunks). A keyword row written after its chunk takes the chunk's readers (a
# row trigger: one primary-key lookup); giving a document readers sets its keyword rows' too.
KEYWORD_READERS_STATEMENTS = (
    sql("ALTER TABLE {keywords} ADD COLUMN IF NOT EXISTS readers text[] NOT NULL DEFAULT '{{admin}}'"),
    sql(
        "CREATE OR REPLACE FUNCTION {keyword_readers_function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "NEW.readers := coalesce((SELECT c.readers FROM {chunks} c WHERE c.id = NEW.id), '{{admin}}'); "
        "RETURN NEW; END $$"
    ),
    sql("DROP TRIGGER IF EXISTS {keyword_readers_trigger} ON {keywords}"),
    sql(
        "CREATE TRIGGER {keyword_readers_trigger} BEFORE INSERT OR UPDATE OF id ON {keywords} "
        "FOR EACH ROW EXECUTE FUNCTION {keyword_readers_function}()"
    ),
    # a chunk's readers reach its keyword rows in the same statement that changes them
    # (SQL_SET_KEYWORD_READERS): a row trigger on the chunk table fired the keyword statistics'
    # statement trigger once per chunk (100,000 chunks given readers took more than 15 minutes)
    sql("DROP TRIGGER IF EXISTS {chunk_readers_trigger} ON {chunks}"),
    # No row-level policy here: under one, PostgreSQL may not use the GIN index before the policy's
    # filter (``@@`` is not leakproof), and the search becomes a scan of every row (51 ms instead of
    # 7 ms at 50k chunks). The statement's own predicate filters the candidates; the text returned
    # comes from the chunk table, whose policy still holds. (Migration 11: the query role reads these rows
    # only through a function that tests the readers, app.storage.keywords.DEFINER_FUNCTIONS.)
    sql("DROP POLICY IF EXISTS {readers_policy} ON {keywords}"),
    sql("ALTER TABLE {keywords} DISABLE ROW LEVEL SECURITY"),
)
KEYWORD_READERS_UPGRADE = (
    sql(
        "UPDATE {keywords} k SET readers = c.readers FROM {chunks} c WHERE c.id = k.id "
        "AND k.readers IS DISTINCT FROM c.readers"
    ),
)

# --- migration 11: the query role reads no row that its principals may not ---------------------
# A mention holds the sentence naming its entity: it is readable where its chunk is. The policy asks the
# chunk table (whose own policy applies inside too) rather than a copied readers column: a mention is
# written with its chunk and deleted with it, so there is nothing to keep in step.
SQL_MENTION_POLICY = (
    sql("ALTER TABLE {mentions} ENABLE ROW LEVEL SECURITY"),
    sql("DROP POLICY IF EXISTS {readers_policy} ON {mentions}"),
    sql(
        "CREATE POLICY {readers_policy} ON {mentions} FOR SELECT USING (EXISTS (SELECT 1 FROM {chunks} c "
        "WHERE c.id = {mentions}.chunk_id AND c.readers && {principals_function}()))"
    ),
)
# The graph's state holds its build's statistics, which count every row: its readers are ALL_ROWS.
SQL_STATE_POLICY = (
    sql("ALTER TABLE {graph_state} ENABLE ROW LEVEL SECURITY"),
    sql("DROP POLICY IF EXISTS {readers_policy} ON {graph_state}"),
    sql(
        "CREATE POLICY {readers_policy} ON {graph_state} FOR SELECT USING ('{{"
        + ",".join(ALL_ROWS)
        + "}}' && {principals_function}())"
    ),
)
SQL_REVOKE_SELECT = sql(
    "REVOKE SELECT ON " + ", ".join("{" + t + "}" for t in QUERY_ROLE_REVOKED) + " FROM {query_role}"
)
# A store whose query role was granted the older list; a server without the role has nothing to revoke.
SQL_REVOKE_OLD_GRANTS = (
    sql("DO $$ BEGIN IF to_regrole('{query_role}') IS NOT NULL THEN ") + SQL_REVOKE_SELECT + "; END IF; END $$"
)
QUERY_ROLE_STATEMENTS = (*SQL_MENTION_POLICY, *SQL_STATE_POLICY, SQL_REVOKE_OLD_GRANTS)

# Rows stored before readers existed are the admin's until the next sync gives them theirs.
MIGRATION_STATEMENTS = (
    *SQL_ADD_READERS,
    *SQL_READERS_INDEXES,
    SQL_PRINCIPALS_FUNCTION,
    SQL_INTERSECT_FUNCTION,
    SQL_INTERSECT_AGGREGATE,
    *SQL_POLICIES,
)

# --- the query role --------------------------------------------------------------------------
SQL_ROLE_EXISTS = "SELECT to_regrole(:role) IS NOT NULL"
SQL_IS_MEMBER = "SELECT pg_has_role(current_user, CAST(:role AS name), 'MEMBER')"
SQL_CREATE_ROLE = sql("CREATE ROLE {query_role} NOLOGIN NOINHERIT")
SQL_GRANT_ROLE = sql("GRANT {query_role} TO CURRENT_USER")
SQL_GRANT_SELECT = sql("GRANT SELECT ON " + ", ".join("{" + t + "}" for t in QUERY_ROLE_TABLES) + " TO {query_role}")

# --- each read transaction -------------------------------------------------------------------
# The caller's principals for this transaction, and the query role when the login may take it.
SQL_AS_READER = (
    "SELECT set_config('rag.principals', CAST(CAST(:principals AS text[]) AS text), true), "
    "CASE WHEN to_regrole(:role) IS NOT NULL AND pg_has_role(current_user, CAST(:role AS name), 'MEMBER') "
    "THEN set_config('role', :role, true) END"
)
_ALIAS = re.compile(r"[a-z_][a-z0-9_]*")


def readers_predicate(alias: str = "") -> str:
    """The application's predicate (the first wall) on the rows of the table aliased ``alias`` (none: an
    unaliased table): ``<alias>.readers && CAST(:principals AS text[])``, the caller's principals bound as
    ``:principals`` (:func:`principals_param`). ValueError for an alias that is not a plain lower-case name
    (it is written into SQL)."""
    if alias and not _ALIAS.fullmatch(alias):
        raise ValueError(f"a table alias is a lower-case SQL name, got {alias!r}")
    return (alias + "." if alias else "") + "readers && CAST(:principals AS text[])"


# --- writes ------------------------------------------------------------------------------------
_DOC_CHUNKS = (
    "collection_id = :collection AND (cmetadata->>'doc_id' = :doc "
    "OR (cmetadata->>'doc_id' IS NULL AND cmetadata->>'file' = :file))"
)
SQL_SET_DOCUMENT_READERS = sql(
    "UPDATE {documents} SET readers = CAST(:readers AS text[]) WHERE collection_id = :collection AND doc_id = :doc "
    "AND readers IS DISTINCT FROM CAST(:readers AS text[])"
)
SQL_SET_CHUNK_READERS = sql(
    "UPDATE {chunks} SET readers = CAST(:readers AS text[]) WHERE "
    + _DOC_CHUNKS
    + " AND readers IS DISTINCT FROM CAST(:readers AS text[])"
)
SQL_SET_KEYWORD_READERS = sql(
    "UPDATE {keywords} k SET readers = c.readers FROM {chunks} c WHERE c.id = k.id AND "
    + _DOC_CHUNKS.replace("collection_id", "c.collection_id").replace("cmetadata", "c.cmetadata")
    + " AND k.readers IS DISTINCT FROM c.readers"
)
SQL_STORED_READERS = sql("SELECT doc_id, source_file, readers FROM {documents} WHERE collection_id = :collection")
SQL_REFRESH_GRAPH_READERS = (
    sql(
        "UPDATE {entities} g SET readers = r.readers FROM (SELECT m.entity, "
        "{intersect_aggregate}(e.readers) AS readers FROM {mentions} m JOIN {chunks} e ON e.id = m.chunk_id "
        "WHERE m.collection_id = :collection GROUP BY m.entity) r "
        "WHERE g.collection_id = :collection AND g.key = r.entity AND g.readers IS DISTINCT FROM r.readers"
    ),
    sql(
        "UPDATE {relationships} r SET readers = {intersect_function}(a.readers, b.readers) "
        "FROM {entities} a, {entities} b WHERE r.collection_id = :collection AND a.collection_id = :collection "
        "AND b.collection_id = :collection AND a.id = r.source AND b.id = r.target "
        "AND r.readers IS DISTINCT FROM {intersect_function}(a.readers, b.readers)"
    ),
    sql(
        "UPDATE {reports} p SET readers = x.readers FROM (SELECT p2.id, {intersect_aggregate}(g.readers) AS readers "
        "FROM {reports} p2 JOIN {entities} g ON g.collection_id = p2.collection_id AND g.id = ANY(p2.entity_ids) "
        "WHERE p2.collection_id = :collection GROUP BY p2.id) x "
        "WHERE p.collection_id = :collection AND p.id = x.id AND p.readers IS DISTINCT FROM x.readers"
    ),
)


def principals_param(principals: Sequence[str]) -> list[str]:
    """The bound value of ``:principals``: a list of strings (ValueError for anything else, or none)."""
    values = [principals] if isinstance(principals, str) else list(principals)
    if not values or not all(isinstance(p, str) and p for p in values):
        raise ValueError(f"principals must be non-empty strings, got {principals!r}")
    return values


@contextmanager
def reading(engine: Engine, principals: Sequence[str]) -> Iterator[Connection]:
    """A connection whose transaction reads as ``principals``: set for the row-level security
    policies, and as the query role when the login may take it. Ends with a rollback (reads only)."""
    from sqlalchemy import text

    params = principals_param(principals)
    with engine.connect() as conn:
        conn.execute(text(SQL_AS_READER), {"principals": params, "role": QUERY_ROLE})
        yield conn


def ensure_query_role(conn: Connection) -> str | None:
    """Write path, the owner's transaction: the query role exists, this login may take it, and it may
    SELECT the tables under a readers' policy (QUERY_ROLE_TABLES) and no other of the store's. Returns None, or the one line saying why the second wall is missing
    (the caller warns; the application's predicate still holds)."""
    from sqlalchemy import text

    role = {"role": QUERY_ROLE}
    try:
        with conn.begin_nested():
            if not conn.execute(text(SQL_ROLE_EXISTS), role).scalar():
                conn.execute(text(SQL_CREATE_ROLE))
            if not conn.execute(text(SQL_IS_MEMBER), role).scalar():
                conn.execute(text(SQL_GRANT_ROLE))
            conn.execute(text(SQL_GRANT_SELECT))
            conn.execute(text(SQL_REVOKE_SELECT))  # a grant of every table (an administrator's) narrowed again
    except Exception as exc:  # InsufficientPrivilege: a login that may not create or grant roles
        from app.storage.engine import first_line

        return (
            f"row-level security has no query role ({first_line(exc)}): ask an administrator to run "
            f"CREATE ROLE {QUERY_ROLE} NOLOGIN NOINHERIT; GRANT {QUERY_ROLE} TO <this database user>; "
            "then `python -m app.db init` (the application's own filter still applies)"
        )
    return None


def set_document_readers(conn: Connection, collection, doc_id: str, source_file: str, readers: Sequence[str]) -> int:
    """Give one document and its chunks these readers (the caller's transaction); returns the rows changed."""
    from sqlalchemy import text

    params = {"collection": collection, "doc": doc_id, "file": source_file, "readers": list(readers)}
    changed = conn.execute(text(SQL_SET_DOCUMENT_READERS), params).rowcount or 0
    changed += conn.execute(text(SQL_SET_CHUNK_READERS), params).rowcount or 0
    conn.execute(text(SQL_SET_KEYWORD_READERS), params)  # its keyword rows (written before or after its chunks)
    return changed


def refresh_graph_readers(conn: Connection, collection) -> None:
    """Derived rows' readers from their sources' (the caller's transaction): entities, relationships, reports."""
    from sqlalchemy import text

    for statement in SQL_REFRESH_GRAPH_READERS:
        conn.execute(text(statement), {"collection": collection})
