"""Bulk loading and maintenance for measurements (``make bench``, its own ``DB_NAME`` + ``_bench``; the
app's commands never run these): empty the chunk tables, COPY synthetic rows in, rebuild the vector
and keyword indexes, read their sizes, and run the searches against exact (index-free) scans.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.storage.chunks import SQL_CREATE_HNSW, SQL_UPSERT_DOCUMENT
from app.storage.engine import SQL_NO_TIMEOUT, lift_statement_timeout
from app.storage.keywords import SQL_CREATE_KEYWORD_GIN, SQL_KEYWORD_SEARCH, keyword_search_params
from app.storage.readers import ALL_ROWS, readers_predicate, reading
from app.storage.tables import EMBEDDING_TABLE, HNSW_INDEX, KEYWORD_GIN_INDEX, KEYWORD_TABLE, sql, vector_literal
from app.text.chunks import row_source

SQL_TRUNCATE = sql(
    "TRUNCATE {keywords}, {chunks}, {documents}, {table_rows}, {table_index}, {term_stats}, {collection_stats}, "
    "{mentions}, {pairs}, {entities}, {relationships}, {communities}, {reports}, {graph_state}, {page_words}"
)
SQL_DROP_INDEXES = (sql("DROP INDEX IF EXISTS {hnsw_index}"), sql("DROP INDEX IF EXISTS {keyword_gin_index}"))
SQL_COPY_EMBEDDINGS = sql(
    "COPY {chunks} (id, collection_id, embedding, document, cmetadata) FROM STDIN WITH (FORMAT BINARY)"
)
# the keyword rows of bulk-loaded chunks, from the tokens they carry in their metadata
SQL_FILL_KEYWORDS = sql(
    "INSERT INTO {keywords} (id, collection_id, tsv, dl) "
    "SELECT id, collection_id, to_tsvector('simple', cmetadata->>'tokens'), "
    "coalesce(array_length(string_to_array(cmetadata->>'tokens', ' '), 1), 0) FROM {chunks} "
    "WHERE collection_id = :collection"
)
SQL_INDEX_BUILD_MEMORY = "SET LOCAL maintenance_work_mem = '1GB'"
# VACUUM ANALYZE after a load: until the BM25 statistics tables are analyzed, the planner reads a term's
# df with a scan of every term (measured: 30 ms per keyword search at 10k chunks, 100-140 ms at 100k,
# until autovacuum came by); nor does autovacuum run while searches are timed.
SQL_VACUUM_ANALYZE = tuple(
    sql("VACUUM ANALYZE " + table) for table in ("{chunks}", "{keywords}", "{term_stats}", "{collection_stats}")
)
SQL_SIZES = (
    "SELECT pg_total_relation_size(CAST(:chunks AS regclass)), pg_total_relation_size(CAST(:keywords AS regclass)), "
    "pg_relation_size(CAST(:hnsw AS regclass)), pg_relation_size(CAST(:gin AS regclass))"
)
SQL_NEAREST = sql(  # exact when index scans are off; otherwise the planner uses HNSW
    "SELECT id FROM {chunks} WHERE collection_id = :collection ORDER BY embedding <=> CAST(:vector AS vector) LIMIT :k"
)
SQL_NO_INDEX_SCANS = (
    "SET LOCAL enable_indexscan = off",
    "SET LOCAL enable_bitmapscan = off",
    "SET LOCAL enable_indexonlyscan = off",
)


def reset(engine: Any) -> None:
    """Empty the chunk, keyword, document and graph tables and drop the vector and keyword indexes."""
    from sqlalchemy import text

    with engine.begin() as conn:
        lift_statement_timeout(conn)
        conn.execute(text(SQL_TRUNCATE))
        for statement in SQL_DROP_INDEXES:
            conn.execute(text(statement))


def bulk_load(engine: Any, collection, ids, vectors, documents, tokens, doc_id: str | None = None) -> None:
    """COPY rows in binary (vectors as pgvector values); then fill the keyword table in SQL.

    With ``doc_id`` the rows belong to one stored document of origin ``api`` (so a sync of a data
    folder into the same collection keeps them), sources ``<doc_id>:r1``, ``:r2``, …
    """
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Jsonb
    from sqlalchemy import text

    raw = engine.raw_connection()
    try:
        conn = raw.driver_connection
        register_vector(conn)
        conn.execute(SQL_NO_TIMEOUT)  # a bulk load is as long as it is: never cut by DB_STATEMENT_TIMEOUT_MS
        with conn.cursor() as cur, cur.copy(SQL_COPY_EMBEDDINGS) as copy:
            copy.set_types(["varchar", "uuid", "vector", "varchar", "jsonb"])
            for i, row in enumerate(zip(ids, [collection] * len(ids), vectors, documents, tokens), start=1):
                meta = {"tokens": row[4]}
                if doc_id:
                    meta.update(doc_id=doc_id, file=doc_id, source=row_source(doc_id, i), chunk_index=0)
                copy.write_row([row[0], row[1], row[2], row[3], Jsonb(meta)])
        conn.commit()
    finally:
        raw.close()
    with engine.begin() as c:
        lift_statement_timeout(c)
        c.execute(text(SQL_FILL_KEYWORDS), {"collection": collection})
        if doc_id:
            c.execute(
                text(SQL_UPSERT_DOCUMENT),
                {
                    "collection": collection,
                    "doc": doc_id,
                    "file": doc_id,
                    "hash": "synthetic",
                    "settings": "document",
                    "chunks": len(ids),
                    "origin": "api",
                },
            )


def build_indexes(engine: Any) -> dict[str, float]:
    """(Re)create the HNSW and GIN indexes after a bulk load, then VACUUM ANALYZE; return build seconds."""
    import time

    from sqlalchemy import text

    timings = {}
    with engine.begin() as conn:
        lift_statement_timeout(conn)
        conn.execute(text(SQL_INDEX_BUILD_MEMORY))
        for name, statement in (("hnsw", SQL_CREATE_HNSW), ("gin", SQL_CREATE_KEYWORD_GIN)):
            start = time.perf_counter()
            conn.execute(text(statement))
            timings[name] = time.perf_counter() - start
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("SET statement_timeout = 0"))  # VACUUM runs outside a transaction: no SET LOCAL
        try:
            for statement in SQL_VACUUM_ANALYZE:
                conn.execute(text(statement))
        finally:
            conn.execute(text("RESET statement_timeout"))  # the pooled connection's own limit again
    return timings


def sizes(engine: Any) -> dict[str, int]:
    """Bytes on disk: chunk table (with indexes), keyword table, HNSW index, GIN index."""
    from sqlalchemy import text

    names = {"chunks": EMBEDDING_TABLE, "keywords": KEYWORD_TABLE, "hnsw": HNSW_INDEX, "gin": KEYWORD_GIN_INDEX}
    with engine.connect() as conn:
        table, keywords, hnsw, gin = conn.execute(text(SQL_SIZES), names).one()
    return {"chunks_table": table, "keyword_table": keywords, "hnsw_index": hnsw, "gin_index": gin}


def nearest_ids(engine: Any, collection, vector: Sequence[float], k: int, exact: bool = False) -> list[str]:
    """Top-k chunk ids by cosine distance in plain SQL: through the HNSW index, or exact (index scans off)."""
    from sqlalchemy import text

    with engine.begin() as conn:
        if exact:
            for statement in SQL_NO_INDEX_SCANS:
                conn.execute(text(statement))
        params = {"collection": collection, "vector": vector_literal(vector), "k": k}
        return list(conn.execute(text(SQL_NEAREST), params).scalars())


def exact_keyword_ids(engine: Any, collection, terms: Sequence[str], k: int) -> list[str]:
    """The BM25 keyword query with index scans disabled (a sequential scan), for comparison: read as
    ALL_ROWS (every row), as the search reads (the statistics are given to a reading transaction only)."""
    from sqlalchemy import text

    with reading(engine, ALL_ROWS) as conn:
        for statement in SQL_NO_INDEX_SCANS:
            conn.execute(text(statement))
        params = keyword_search_params(conn, collection, terms, k, ALL_ROWS)
        return [r[0] for r in conn.execute(text(SQL_KEYWORD_SEARCH), params)] if params else []


# --- readers (the filtered-search benchmark, bench.access) -------------------------------------
SQL_ADD_READER = sql(
    "UPDATE {chunks} SET readers = array_append(readers, CAST(:principal AS text)) "
    "WHERE collection_id = :collection AND id = ANY(CAST(:ids AS varchar[])) "
    "AND NOT readers @> ARRAY[CAST(:principal AS text)]"
)
# the readers' predicate of app.storage.vectors, exact when index scans are off
SQL_NEAREST_READABLE = sql(
    "SELECT id FROM {chunks} WHERE collection_id = :collection AND " + readers_predicate() + " "
    "ORDER BY embedding <=> CAST(:vector AS vector) LIMIT :k"
)


def add_reader(engine: Any, collection, ids: Sequence[str], principal: str) -> int:
    """Let ``principal`` read these chunks of the collection too (one UPDATE, bound parameters);
    returns the rows changed. Bulk-loaded rows start as ``{admin}``."""
    from sqlalchemy import text

    params = {"collection": collection, "ids": [str(i) for i in ids], "principal": principal}
    with engine.begin() as conn:
        return conn.execute(text(SQL_ADD_READER), params).rowcount or 0


def exact_filtered_ids(
    engine: Any, collection, vector: Sequence[float], k: int, principals: Sequence[str]
) -> list[str]:
    """Top-k ids by cosine distance among the chunks ``principals`` may read, with index scans off
    (a sequential scan and a sort: the exact answer the filtered HNSW search is measured against)."""
    from sqlalchemy import text

    with engine.begin() as conn:
        for statement in SQL_NO_INDEX_SCANS:
            conn.execute(text(statement))
        params = {"collection": collection, "vector": vector_literal(vector), "k": k, "principals": list(principals)}
        return list(conn.execute(text(SQL_NEAREST_READABLE), params).scalars())
