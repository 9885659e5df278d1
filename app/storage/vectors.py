"""Vectors of any size, per collection: the embedding columns, their HNSW indexes, the nearest chunks.

A store starts with the size of the first embedding model that writes to it: ``vector(384)`` for
multilingual-e5-small, ``vector(768)`` for ruri-v3-310m, one HNSW index over the column. When a
collection with another size is written (another ``EMBED_MODEL`` in the same database), the write
path makes the columns take any size (``vector``) and gives each size its own partial HNSW index over
``CAST(embedding AS vector(N)) WHERE vector_dims(embedding) = N`` (pgvector indexes only vectors of
one size). Existing rows stay as they are: nothing is embedded again.

The nearest-chunk query of a one-size store is the plain one (its index); once the column takes any
size, the query names the size of the question's vector so the planner uses that size's index, and a
statistics object on ``vector_dims(embedding)`` tells the planner how many rows each size has.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from app.errors import StoreNotReadyError
from app.storage.collection import collection_id
from app.storage.readers import principals_param, readers_predicate, reading
from app.storage.scope import Scope, scope_params, scope_predicate
from app.storage.tables import (
    EMBEDDING_TABLE,
    ENTITY_HNSW_INDEX,
    ENTITY_TABLE,
    HNSW_INDEX,
    STAGING_TABLE,
    quote,
    sql,
    sql_for_size,
    vector_literal,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

MAX_INDEXED_SIZE = 2000  # pgvector's HNSW limit for ``vector``
# The tables with an embedding column, and the index each has while the column has one size.
VECTOR_TABLES: tuple[tuple[str, str | None], ...] = (
    (EMBEDDING_TABLE, HNSW_INDEX),
    (STAGING_TABLE, None),  # batches in flight: never searched
    (ENTITY_TABLE, ENTITY_HNSW_INDEX),
)
SQL_COLUMN_TYPE = (
    "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
    "WHERE a.attrelid = CAST(:table AS regclass) AND a.attname = 'embedding'"
)
SQL_ANY_SIZE = "ALTER TABLE {table} ALTER COLUMN embedding TYPE vector"
SQL_DROP_INDEX = "DROP INDEX IF EXISTS {index}"
SQL_SIZED_INDEX = (
    "CREATE INDEX IF NOT EXISTS {index} ON {table} USING hnsw ((CAST(embedding AS vector({size}))) "
    "vector_cosine_ops) WITH (m = 16, ef_construction = 200) WHERE vector_dims(embedding) = {size}"
)
# A column of one size: its plain HNSW index (no size test, which would only blur the row estimate).
SQL_NEAREST_CHUNKS_ONE_SIZE = (
    "SELECT id, document, cmetadata, embedding <=> CAST(:vector AS vector({size})) AS distance FROM {chunks} e "
    "WHERE collection_id = :collection AND " + readers_predicate() + "{filter} ORDER BY distance LIMIT :k"
)
# A column of any size: the partial index of the question's size (its predicate must be in the query).
SQL_NEAREST_CHUNKS = (
    "SELECT id, document, cmetadata, CAST(embedding AS vector({size})) <=> CAST(:vector AS vector({size})) "
    "AS distance FROM {chunks} e WHERE collection_id = :collection AND vector_dims(embedding) = {size} "
    "AND " + readers_predicate() + "{filter} ORDER BY distance LIMIT :k"
)
# How many rows have each size, for the planner's estimate of the size test (ANALYZE fills it).
SQL_SIZE_STATISTICS = sql(
    "CREATE STATISTICS IF NOT EXISTS {embedding_size_statistics} ON (vector_dims(embedding)) FROM {chunks}"
)
SQL_ANALYZE_CHUNKS = sql("ANALYZE {chunks}")
SQL_COLLECTION_SIZE = sql("SELECT vector_dims(embedding) FROM {chunks} WHERE collection_id = :collection LIMIT 1")


def check_size(size: int) -> int:
    """``size`` as an int, or ValueError with one line (the HNSW index takes 1 to 2,000 dimensions)."""
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_INDEXED_SIZE:
        raise ValueError(f"embedding size must be 1 to {MAX_INDEXED_SIZE} dimensions for an HNSW index, got {size!r}")
    return size


def column_size(conn: Connection, table: str) -> int | None:
    """N of a ``vector(N)`` column; None when it takes any size (``vector``)."""
    from sqlalchemy import text

    kind = conn.execute(text(SQL_COLUMN_TYPE), {"table": table}).scalar() or "vector"
    return int(kind[len("vector(") : -1]) if kind.startswith("vector(") else None


def sized_index(table: str, size: int) -> str:
    """The name of the partial HNSW index over ``table``'s ``size``-dimensional vectors."""
    return f"{table}_hnsw_{check_size(size)}"


def sized_index_sql(table: str, size: int) -> str:
    """The statement creating :func:`sized_index` (names quoted, the size an int)."""
    return SQL_SIZED_INDEX.format(index=quote(sized_index(table, size)), table=quote(table), size=check_size(size))


def fit_size(conn: Connection, size: int) -> list[str]:
    """Write paths, under the writer lock: make every embedding column take ``size``-dimensional vectors.
    A column of that size already: nothing. A column of another size: it takes any size from now on,
    its plain index gives way to one partial index per size. Returns the statements run."""
    from sqlalchemy import text

    check_size(size)
    run: list[str] = []
    for table, plain_index in VECTOR_TABLES:
        fixed = column_size(conn, table)
        if fixed == size:
            continue
        statements = []
        if fixed is not None:  # a second size: any size from now on; the first keeps an index of its own
            statements += [SQL_DROP_INDEX.format(index=quote(plain_index))] if plain_index else []
            statements.append(SQL_ANY_SIZE.format(table=quote(table)))
            statements += [sized_index_sql(table, fixed)] if plain_index else []
        statements += [sized_index_sql(table, size)] if plain_index else []
        if fixed is not None and table == EMBEDDING_TABLE:
            statements += [SQL_SIZE_STATISTICS, SQL_ANALYZE_CHUNKS]
        for statement in statements:
            conn.execute(text(statement))
        run += statements
    return run


METADATA_FILTER = " AND cmetadata @> CAST(:metadata AS jsonb)"
# The question's scope (app.storage.scope): one text for every scope, so one cached plan; an empty scope
# passes every row.
SCOPE_FILTER = " AND " + scope_predicate("e")


def nearest_query(conn: Connection, collection_name: str, size: int, metadata: bool = False) -> str:
    """The nearest-chunk statement for a ``size``-dimensional question: the one-size form on a column
    of that size, the any-size form on a column of any size, the scope's test in both (:data:`SCOPE_FILTER`);
    with ``metadata``, the filter on the chunks' metadata too. StoreNotReadyError when the column holds
    another size only."""
    column = column_size(conn, EMBEDDING_TABLE)
    if column is not None and column != size:
        raise other_size(collection_name, column, size)
    template = SQL_NEAREST_CHUNKS_ONE_SIZE if column is not None else SQL_NEAREST_CHUNKS
    return sql_for_size(template.replace("{filter}", (METADATA_FILTER if metadata else "") + SCOPE_FILTER), size)


def other_size(collection_name: str, stored: int, size: int) -> StoreNotReadyError:
    """The one line for a collection embedded by a model of another size."""
    return StoreNotReadyError(
        f"the collection '{collection_name}' holds {stored}-dimensional vectors and the embedding model makes "
        f"{size}: run `make ingest` to embed it again with this model (or set EMBED_MODEL back)"
    )


def nearest_chunks(
    engine: Engine,
    collection_name: str,
    vector: Sequence[float],
    k: int,
    principals: Sequence[str],
    metadata: Mapping[str, object] | None = None,
    scope: Scope | None = None,
) -> list[tuple]:
    """Rows ``(id, document, cmetadata, distance)``: the ``k`` chunks of the collection that
    ``principals`` may read (and whose metadata holds ``metadata``'s pairs, when given; within ``scope``,
    when given: app.storage.scope) nearest to
    ``vector`` by cosine distance, through the HNSW index of its size (pgvector's iterative scan keeps
    going past rows the filter drops, so a filter still gives ``k`` rows). StoreNotReadyError with one
    line when the collection does not exist, or holds vectors of another size (another embedding
    model made them)."""
    from sqlalchemy import text

    size = check_size(len(vector))
    collection = collection_id(engine, collection_name)
    if collection is None:
        raise StoreNotReadyError(f"the collection '{collection_name}' does not exist; run `make ingest` first")
    params = {
        "collection": collection,
        "vector": vector_literal(vector),
        "k": k,
        "principals": principals_param(principals),
        **scope_params(scope),
    }
    if metadata:
        params["metadata"] = json.dumps(dict(metadata), ensure_ascii=False)
    with reading(engine, principals) as conn:
        rows = [
            tuple(r) for r in conn.execute(text(nearest_query(conn, collection_name, size, bool(metadata))), params)
        ]
        if not rows:
            stored = conn.execute(text(SQL_COLLECTION_SIZE), {"collection": collection}).scalar()
            if stored is not None and stored != size:
                raise other_size(collection_name, stored, size)
    return rows
