"""The keyword index and BM25 in SQL: one tsvector row per chunk, exact per-collection statistics, the query.

Rows are deleted with their chunk (``ON DELETE CASCADE``), so the keyword and vector indexes cannot
drift apart. Tokens come from app.text.keywords (NFKC, bigrams); context tokens (document title, heading,
CSV file and header) carry weight A, body tokens D; ``dl`` is the number of tokens (BM25's document
length). Document frequencies and lengths per collection are kept exact by statement-level triggers
(set-based, with transition tables): every writer, a cascade delete included, updates them in its own
transaction. Scoring: ``idf · tf·(k1+1) / (tf + k1·(1−b+b·dl/avgdl))`` over the candidates the GIN
index returns. The query role reads the rows and the statistics only through two functions that test
the readers themselves (:data:`DEFINER_FUNCTIONS`, migration 11).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from app.storage.collection import collection_id
from app.storage.readers import principals_param, readers_predicate, reading
from app.storage.scope import PARAM_NAMES as SCOPE_PARAMS
from app.storage.scope import Scope, scope_is_empty, scope_params, scope_predicate
from app.storage.tables import sql
from app.text import keywords as tokens

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# BM25 scores at most this many candidates, the best by ts_rank (length-normalized) over the
# candidate terms: unnesting every matching tsvector is what costs at 100k chunks.
CANDIDATE_CAP = 200

# --- schema (app.storage.schema applies these) ---------------------------------------------
SQL_CREATE_KEYWORD_TABLE = sql(
    "CREATE TABLE IF NOT EXISTS {keywords} ("
    " id varchar PRIMARY KEY REFERENCES {chunks}(id) ON DELETE CASCADE,"
    " collection_id uuid NOT NULL, tsv tsvector NOT NULL, dl integer NOT NULL DEFAULT 0)"
)
SQL_ADD_KEYWORD_DL = sql("ALTER TABLE {keywords} ADD COLUMN IF NOT EXISTS dl integer NOT NULL DEFAULT 0")
# fastupdate off: new rows go straight into the index instead of a pending list that
# every search must scan (and that makes the planner avoid the index until VACUUM).
SQL_CREATE_KEYWORD_GIN = sql(
    "CREATE INDEX IF NOT EXISTS {keyword_gin_index} ON {keywords} USING gin (tsv) WITH (fastupdate = off)"
)
SQL_CREATE_KEYWORD_COLLECTION = sql(
    "CREATE INDEX IF NOT EXISTS {keyword_collection_index} ON {keywords} (collection_id)"
)
SQL_CREATE_TERM_STATS = sql(
    "CREATE TABLE IF NOT EXISTS {term_stats} (collection_id uuid NOT NULL, term text NOT NULL, "
    "df integer NOT NULL, PRIMARY KEY (collection_id, term))"
)
SQL_CREATE_COLLECTION_STATS = sql(
    "CREATE TABLE IF NOT EXISTS {collection_stats} (collection_id uuid PRIMARY KEY, n bigint NOT NULL, "
    "total_len bigint NOT NULL)"
)
_ADD_STATS = (
    "INSERT INTO {term_stats} (collection_id, term, df) SELECT r.collection_id, t.term, count(*) "
    "FROM new_rows r, unnest(tsvector_to_array(r.tsv)) AS t(term) GROUP BY 1, 2 "
    "ON CONFLICT (collection_id, term) DO UPDATE SET df = {term_stats}.df + EXCLUDED.df; "
    "INSERT INTO {collection_stats} (collection_id, n, total_len) "
    "SELECT collection_id, count(*), sum(dl) FROM new_rows GROUP BY 1 "
    "ON CONFLICT (collection_id) DO UPDATE SET n = {collection_stats}.n + EXCLUDED.n, "
    "total_len = {collection_stats}.total_len + EXCLUDED.total_len;"
)
# Terms whose last rows go are deleted first, the others' df lowered: both joins on (collection, term)
# alone. (Deleting the rows left at df <= 0 afterwards made the planner, expecting one such row, loop
# over every removed term for each of them: 583 s to delete 20,000 chunks.)
_OLD_TERMS = (
    "(SELECT r.collection_id, t.term, count(*) AS c FROM old_rows r, unnest(tsvector_to_array(r.tsv)) AS t(term) "
    "GROUP BY 1, 2) d WHERE s.collection_id = d.collection_id AND s.term = d.term"
)
_REMOVE_STATS = (
    "DELETE FROM {term_stats} s USING " + _OLD_TERMS + " AND s.df <= d.c; "
    "UPDATE {term_stats} s SET df = s.df - d.c FROM " + _OLD_TERMS + "; "
    "UPDATE {collection_stats} c SET n = c.n - d.n, total_len = c.total_len - d.len "
    "FROM (SELECT collection_id, count(*) AS n, sum(dl) AS len FROM old_rows GROUP BY 1) d "
    "WHERE c.collection_id = d.collection_id;"
)
SQL_CREATE_STATS_FUNCTION = sql(
    "CREATE OR REPLACE FUNCTION {keyword_stats_function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "IF TG_OP IN ('DELETE', 'UPDATE') THEN " + _REMOVE_STATS + " END IF; "
    "IF TG_OP IN ('INSERT', 'UPDATE') THEN " + _ADD_STATS + " END IF; "
    "RETURN NULL; END $$"
)
SQL_STATS_TRIGGERS = tuple(
    sql(statement)
    for statement in (
        "DROP TRIGGER IF EXISTS {keyword_stats_insert_trigger} ON {keywords}",
        "CREATE TRIGGER {keyword_stats_insert_trigger} AFTER INSERT ON {keywords} REFERENCING NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION {keyword_stats_function}()",
        "DROP TRIGGER IF EXISTS {keyword_stats_delete_trigger} ON {keywords}",
        "CREATE TRIGGER {keyword_stats_delete_trigger} AFTER DELETE ON {keywords} REFERENCING OLD TABLE AS old_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION {keyword_stats_function}()",
        "DROP TRIGGER IF EXISTS {keyword_stats_update_trigger} ON {keywords}",
        "CREATE TRIGGER {keyword_stats_update_trigger} AFTER UPDATE ON {keywords} "
        "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION {keyword_stats_function}()",
    )
)
# From an older schema: lengths from the stored tsvectors, then the statistics from scratch.
SQL_REBUILD_STATS = tuple(
    sql(statement)
    for statement in (
        "UPDATE {keywords} k SET dl = (SELECT coalesce(sum(coalesce(cardinality(u.positions), 1)), 0) "
        "FROM unnest(k.tsv) u) WHERE dl = 0",
        "TRUNCATE {term_stats}, {collection_stats}",
        "INSERT INTO {term_stats} (collection_id, term, df) SELECT k.collection_id, t.term, count(*) "
        "FROM {keywords} k, unnest(tsvector_to_array(k.tsv)) AS t(term) GROUP BY 1, 2",
        "INSERT INTO {collection_stats} (collection_id, n, total_len) SELECT collection_id, count(*), sum(dl) "
        "FROM {keywords} GROUP BY 1",
    )
)

# --- rows ------------------------------------------------------------------------------------
SQL_MISSING_KEYWORD_ROWS = sql(
    "SELECT e.id, e.collection_id, e.document, e.cmetadata FROM {chunks} e "
    "WHERE NOT EXISTS (SELECT 1 FROM {keywords} k WHERE k.id = e.id)"
)
# One statement for all the rows (arrays): the statistics triggers fire once. Row by row (executemany),
# each row's firing updated the same statistics rows (the collection's, the header's terms) again in one
# transaction, each update walking the versions the earlier ones left: quadratic (measured: 7.8 s for
# 1,000 rows, 155 s for 4,000).
SQL_UPSERT_KEYWORDS = sql(
    "INSERT INTO {keywords} (id, collection_id, tsv, dl) "
    "SELECT r.id, r.collection_id, "
    "setweight(to_tsvector('simple', r.context), 'A') || to_tsvector('simple', r.tokens), r.dl "
    "FROM unnest(CAST(:ids AS varchar[]), CAST(:collections AS uuid[]), CAST(:contexts AS text[]), "
    "CAST(:tokens AS text[]), CAST(:dls AS integer[])) AS r(id, collection_id, context, tokens, dl) "
    "ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, tsv = EXCLUDED.tsv, dl = EXCLUDED.dl"
)

# --- queries -----------------------------------------------------------------------------
# After a large write: until PostgreSQL has statistics on the new terms, reading a query's dfs may
# scan every term (measured in make bench: 30 ms per keyword search at 10k chunks, 100-140 ms at
# 100k, until autovacuum came by). An owner analyzes; anyone else gets a warning, not an error.
SQL_ANALYZE_KEYWORD_STATS = sql("ANALYZE {term_stats}, {collection_stats}")
# --- the query role's reads (migration 11) ---------------------------------------------------
# The query role may not SELECT the keyword rows or the statistics: their tokens, with positions, spell
# the text (``'kx':28 '4471':29``). It reads them through two functions that run as the schema's owner
# (SECURITY DEFINER) and return only what both walls let through, tested in their own statement: the
# principals the caller binds and the transaction's (app.storage.readers), and a login that may read
# the chunk table at all. A row-level policy instead would cost the GIN index: under one, PostgreSQL
# tests the policy before the non-leakproof ``@@`` and every search becomes a scan (51 ms instead of
# 7 ms at 50k chunks).
_ADMITTED = (
    "CAST(:principals AS text[]) && (SELECT {principals_function}()) "
    "AND (SELECT has_table_privilege(session_user, '{chunks}', 'SELECT'))"
)
# Candidates come from the GIN index (run by EXECUTE: planned for each call's tsquery and scope); the
# readers' tests come after ``@@`` in the plan, on the rows the index returns. The question's scope
# (app.storage.scope) is tested here, on each candidate's chunk, so that the cap is spent on rows the
# scope keeps; an empty scope is a constant true in the call's plan and joins no chunk (migration 16).
SQL_KEYWORD_CANDIDATES = sql(
    "SELECT k.id, k.tsv, k.dl FROM {keywords} k "
    "WHERE k.collection_id = :collection AND k.tsv @@ to_tsquery('simple', :tsquery) AND "
    + readers_predicate("k")
    + " AND k.readers && (SELECT {principals_function}()) AND "
    + _ADMITTED
    + " AND ("
    + scope_is_empty()
    + " OR EXISTS (SELECT 1 FROM {chunks} e WHERE e.id = k.id AND "
    + scope_predicate("e")
    + ")) ORDER BY ts_rank(k.tsv, to_tsquery('simple', :tsquery), 1) DESC LIMIT :cap"
)
CANDIDATE_ARGUMENTS = (
    "collection uuid, tsquery text, cap integer, principals text[], "
    "scope_folders text[], scope_formats text[], scope_since date"
)
CANDIDATE_NAMES = ("collection", "tsquery", "cap", "principals", *SCOPE_PARAMS)
# Migration 16 gave the candidates' function the scope's arguments: the old signature goes first.
SQL_DROP_OLD_CANDIDATES = sql("DROP FUNCTION IF EXISTS {keyword_candidates_function}(uuid, text, integer, text[])")
# The statistics of the terms named only: per-term document frequencies count every chunk (BM25's idf),
# so a caller learns the frequency of a term it names, never the list of terms (docs/security.md).
SQL_TERM_STATS_OF = sql(
    "SELECT c.n, c.total_len, t.term, coalesce(s.df, 0) FROM {collection_stats} c "
    "CROSS JOIN unnest(CAST(:terms AS text[])) AS t(term) "
    "LEFT JOIN {term_stats} s ON s.collection_id = c.collection_id AND s.term = t.term "
    "WHERE c.collection_id = :collection AND " + _ADMITTED
)


def positional(statement: str, names: Sequence[str]) -> str:
    """``statement`` with each bound name ``:name`` written ``$i`` (its place in ``names``, from 1), for a
    function's EXECUTE; ValueError when another bound name is left."""
    index = {name: i for i, name in enumerate(names, start=1)}
    out = re.sub(r"(?<![:\w]):(\w+)", lambda m: f"${index[m[1]]}" if m[1] in index else m[0], statement)
    left = re.findall(r"(?<![:\w]):(\w+)", out)
    if left:
        raise ValueError(f"bound names without a place: {sorted(set(left))}")
    return out


def definer_function(name: str, arguments: str, returns: str, statement: str, names: Sequence[str]) -> str:
    """``CREATE OR REPLACE FUNCTION`` ``name`` (a field of app.storage.tables), run as its owner, returning
    ``statement``'s rows for the values of its ``arguments`` (``names`` in order); its search path is the
    creating session's, so its tables are the ones they were when it was made."""
    return (
        sql("CREATE OR REPLACE FUNCTION {" + name + "}(" + arguments + ") RETURNS TABLE (" + returns + ") ")
        + "LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $fn$ BEGIN RETURN QUERY "
        + "EXECUTE $q$"
        + positional(statement, names)
        + "$q$ USING "
        + ", ".join(names)
        + "; END $fn$"
    )


DEFINER_FUNCTIONS = (
    definer_function(
        "keyword_candidates_function",
        CANDIDATE_ARGUMENTS,
        "id varchar, tsv tsvector, dl integer",
        SQL_KEYWORD_CANDIDATES,
        CANDIDATE_NAMES,
    ),
    definer_function(
        "term_stats_function",
        "collection uuid, terms text[], principals text[]",
        "n bigint, total_len bigint, term text, df integer",
        SQL_TERM_STATS_OF,
        ("collection", "terms", "principals"),
    ),
)
SQL_TERM_STATS = sql(
    "SELECT n, total_len, term, df FROM "
    "{term_stats_function}(CAST(:collection AS uuid), CAST(:terms AS text[]), CAST(:principals AS text[]))"
)
# Each candidate's term frequencies come from its tsvector's positions, a context (weight A)
# occurrence counting twice; BM25 with the idf values computed from the statistics.
SQL_KEYWORD_SEARCH = sql(
    "WITH q AS (SELECT * FROM unnest(CAST(:terms AS text[]), CAST(:idfs AS float8[])) AS q(term, idf)), "
    "cand AS (SELECT k.id, k.tsv, k.dl FROM {keyword_candidates_function}(CAST(:collection AS uuid), "
    "CAST(:tsquery AS text), CAST(:cap AS integer), CAST(:principals AS text[]), CAST(:scope_folders AS text[]), "
    "CAST(:scope_formats AS text[]), CAST(:scope_since AS date)) k), "
    "scored AS (SELECT c.id, sum(q.idf * f.tf * (:k1 + 1) / (f.tf + :k1 * (1 - :b + :b * c.dl / :avgdl))) AS score "
    "FROM cand c CROSS JOIN LATERAL (SELECT u.lexeme, coalesce(cardinality(u.positions), 1) "
    "+ coalesce(cardinality(array_positions(u.weights, 'A')), 0) AS tf FROM unnest(c.tsv) u) f "
    "JOIN q ON q.term = f.lexeme GROUP BY c.id ORDER BY score DESC, c.id LIMIT :k) "
    "SELECT e.id, e.document, e.cmetadata, s.score FROM scored s JOIN {chunks} e ON e.id = s.id AND "
    + readers_predicate("e")
    + " AND "
    + scope_predicate("e")
    + " ORDER BY s.score DESC, e.id"
)


def keyword_row(chunk_id: str, collection, body: str, context: str = "") -> dict:
    """Bound values of one keyword row: body and context tokens and the token count."""
    body_tokens, context_tokens = tokens.tokenize(body), tokens.tokenize(context)
    return {
        "id": chunk_id,
        "collection": collection,
        "tokens": " ".join(body_tokens),
        "context": " ".join(context_tokens),
        "dl": len(body_tokens) + len(context_tokens),
    }


def upsert_keywords(conn, rows: Sequence[Mapping]) -> None:
    """Write keyword rows (:func:`keyword_row` values) in one statement (SQL_UPSERT_KEYWORDS)."""
    from sqlalchemy import text

    if rows:
        conn.execute(
            text(SQL_UPSERT_KEYWORDS),
            {
                "ids": [r["id"] for r in rows],
                "collections": [str(r["collection"]) for r in rows],
                "contexts": [r["context"] for r in rows],
                "tokens": [r["tokens"] for r in rows],
                "dls": [r["dl"] for r in rows],
            },
        )


def backfill_keywords(conn) -> int:
    """Index chunks stored without a keyword row (before the index existed, or by another writer)."""
    from sqlalchemy import text

    rows = conn.execute(text(SQL_MISSING_KEYWORD_ROWS)).all()
    upsert_keywords(
        conn, [keyword_row(r.id, r.collection_id, r.document, (r.cmetadata or {}).get("context", "")) for r in rows]
    )
    return len(rows)


def keyword_search(
    engine: Engine,
    collection_name: str,
    terms: Sequence[str],
    k: int,
    principals: Sequence[str],
    budget: int | None = None,
    scope: Scope | None = None,
) -> list[tuple]:
    """Rows ``(id, document, cmetadata, score)`` for the query ``terms`` among the chunks ``principals``
    may read (within ``scope`` when given: app.storage.scope), best BM25 score first (the statistics count
    every chunk: docs/security.md).

    Terms found in more than a tenth of the chunks, or beyond the postings budget, score but do
    not select candidates (app.text.keywords.candidate_terms), which keeps long Japanese queries fast.
    """
    from sqlalchemy import text

    terms = list(dict.fromkeys(terms))
    if not terms:
        return []
    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with reading(engine, principals) as conn:
        params = keyword_search_params(conn, collection, terms, k, principals, budget, scope)
        return [tuple(r) for r in conn.execute(text(SQL_KEYWORD_SEARCH), params)] if params else []


def keyword_search_params(
    conn,
    collection,
    terms: Sequence[str],
    k: int,
    principals: Sequence[str],
    budget: int | None = None,
    scope: Scope | None = None,
) -> dict | None:
    """Bound values for SQL_KEYWORD_SEARCH, read as ``principals`` (in a :func:`app.storage.readers.reading`
    transaction: the statistics are given to its principals only): idf per term from the statistics,
    candidate terms (within ``budget`` postings, default app.text.keywords.CANDIDATE_POSTINGS), average
    length, the ``scope``'s values (app.storage.scope); None when no term occurs in the collection, or the transaction reads as nobody."""
    from sqlalchemy import text

    bound = {"terms": list(terms), "collection": collection, "principals": principals_param(principals)}
    stats = conn.execute(text(SQL_TERM_STATS), bound).all()
    if not stats or not stats[0][0]:
        return None
    n, total = int(stats[0][0]), int(stats[0][1])
    dfs = {term: int(df) for _, _, term, df in stats}
    chosen = tokens.candidate_terms(terms, dfs, n, budget=tokens.CANDIDATE_POSTINGS if budget is None else budget)
    if not chosen:
        return None
    return {
        "terms": list(terms),
        "idfs": [tokens.bm25_idf(n, dfs[t]) for t in terms],
        "tsquery": tokens.to_tsquery_terms(chosen),
        "collection": collection,
        "k": k,
        "k1": tokens.K1,
        "b": tokens.B,
        "avgdl": max(total / n, 1.0),
        "cap": max(CANDIDATE_CAP, k),
        "principals": bound["principals"],
        **scope_params(scope),
    }


def analyze_keyword_stats(engine: Engine) -> None:
    """Refresh the planner's statistics of the BM25 statistics tables (after a large sync)."""
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text(SQL_ANALYZE_KEYWORD_STATS))
