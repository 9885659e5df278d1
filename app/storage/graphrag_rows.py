"""The graph's rows as the graph's objects: reading and writing them for a build and for search.

The tables and every SQL statement live in app.storage.graphrag_tables (the per-chunk writers too, which run
inside the chunk transactions of app.storage.chunks and app.storage.staging); this module turns rows
into dicts and :class:`CommunityReport` objects and back. Functions take an open SQLAlchemy connection
(or engine) and the collection's UUID.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.storage import graphrag_tables as graph_sql
from app.storage import tables
from app.storage.graphrag_tables import create as create
from app.storage.graphrag_tables import mark_dirty as mark_dirty
from app.storage.graphrag_tables import mark_written as mark_written
from app.storage.graphrag_tables import write_chunk_graphs as write_chunk_graphs
from app.storage.graphrag_types import ChunkGraph, CommunityReport
from app.storage.readers import principals_param, refresh_graph_readers
from app.storage.scope import Scope, scope_params
from app.storage.tables import vector_literal

# Re-exported above: the chunk writers' part of the graph (create, mark_*, write_chunk_graphs).
# The table names tests and the bench read:
MENTION = tables.MENTION_TABLE
PAIR = tables.PAIR_TABLE
ENTITY = tables.ENTITY_TABLE
RELATIONSHIP = tables.RELATIONSHIP_TABLE
COMMUNITY = tables.COMMUNITY_TABLE
REPORT = tables.REPORT_TABLE
STATE = tables.GRAPH_STATE_TABLE


def _text(statement: str):
    from sqlalchemy import text

    return text(statement)


def replace_chunk_graphs(conn, collection, graphs: Mapping[str, ChunkGraph]) -> None:
    """Replace the mentions and pairs of existing chunks (a re-extraction)."""
    ids = list(graphs)
    conn.execute(_text(graph_sql.SQL_DELETE_CHUNK_MENTIONS), {"ids": ids})
    conn.execute(_text(graph_sql.SQL_DELETE_CHUNK_PAIRS), {"ids": ids})
    write_chunk_graphs(conn, collection, graphs)


def clear_chunk_graphs(conn, collection) -> None:
    """Delete every mention and pair of the collection (before a full re-extraction)."""
    conn.execute(_text(graph_sql.SQL_DELETE_ALL_MENTIONS), {"collection": collection})
    conn.execute(_text(graph_sql.SQL_DELETE_ALL_PAIRS), {"collection": collection})


def chunk_pages(engine, collection, page_size: int = 500):
    """Yield the collection's chunks as lists of (id, text, metadata), ``page_size`` at a time."""
    after = ""
    while True:
        with engine.connect() as conn:
            rows = conn.execute(
                _text(graph_sql.SQL_CHUNK_PAGE), {"collection": collection, "after": after, "limit": page_size}
            ).all()
        if not rows:
            return
        yield [(r.id, r.document, r.cmetadata or {}) for r in rows]
        after = rows[-1].id


def state(conn, collection) -> dict | None:
    """The graph's state row (extractor, built_at, dirty, stats), or None before the first write."""
    row = conn.execute(_text(graph_sql.SQL_STATE), {"collection": collection}).mappings().first()
    return dict(row) if row else None


def read_build_inputs(conn, collection) -> tuple[list, list, list]:
    """(entity facts, entity sentences, pair weights) of the collection, for a build."""
    facts = [dict(r) for r in conn.execute(_text(graph_sql.SQL_ENTITY_FACTS), {"collection": collection}).mappings()]
    sentences = [
        dict(r) for r in conn.execute(_text(graph_sql.SQL_ENTITY_SENTENCES), {"collection": collection}).mappings()
    ]
    pairs = [dict(r) for r in conn.execute(_text(graph_sql.SQL_PAIR_WEIGHTS), {"collection": collection}).mappings()]
    return facts, sentences, pairs


def stored_embeddings(conn, collection, hashes: Sequence[str]) -> dict[str, list[float]]:
    """Entity vectors already stored for these description hashes (not embedded again)."""
    if not hashes:
        return {}
    rows = conn.execute(_text(graph_sql.SQL_STORED_EMBEDDINGS), {"collection": collection, "hashes": list(hashes)})
    return {h: json.loads(v) for h, v in rows}


def stored_reports(conn, collection) -> dict[str, dict]:
    """Reports already stored, by content hash (an LLM report is not written again for the same community)."""
    return {
        r.content_hash: {"title": r.title, "summary": r.summary, "findings": list(r.findings or []), "kind": r.kind}
        for r in conn.execute(_text(graph_sql.SQL_STORED_REPORTS), {"collection": collection})
    }


def vector_or_none(values: Sequence[float] | None) -> str | None:
    """pgvector's text form of ``values``, or None (no embedding)."""
    return None if values is None else vector_literal(values)


def analyze_when_grown(conn, entities: int) -> bool:
    """ANALYZE the tables the readers' refresh joins when the planner has never counted the entity table
    or it now holds more than twice the rows it thinks (a first build, a much larger corpus); the same
    transaction's new rows count. Returns whether it did: a small rebuild (one file changed) does not pay
    for it."""
    planned = conn.execute(_text(graph_sql.SQL_PLANNER_ENTITIES)).scalar()
    if planned is not None and planned >= 0 and entities <= 2 * planned + 1000:
        return False
    conn.execute(_text(graph_sql.SQL_ANALYZE_GRAPH))
    return True


def save_build(
    conn,
    collection,
    entities: Sequence[dict],
    relationships: Sequence[dict],
    communities: Sequence[dict],
    reports: Sequence[dict],
    extractor: str,
    stats: Mapping[str, Any],
) -> None:
    """Replace the derived tables with a new build and mark the graph current (caller's transaction)."""
    params = {"collection": collection}
    for statement in graph_sql.SQL_CLEAR:
        conn.execute(_text(statement), params)
    if entities:
        conn.execute(
            _text(graph_sql.SQL_INSERT_ENTITY),
            [{**params, **e, "embedding": vector_or_none(e.get("embedding"))} for e in entities],
        )
    if relationships:
        conn.execute(_text(graph_sql.SQL_INSERT_RELATIONSHIP), [{**params, **r} for r in relationships])
    if communities:
        conn.execute(_text(graph_sql.SQL_INSERT_COMMUNITY), [{**params, **c} for c in communities])
    if reports:
        conn.execute(
            _text(graph_sql.SQL_INSERT_REPORT),
            [{**params, **r, "findings": json.dumps(r["findings"], ensure_ascii=False)} for r in reports],
        )
    analyze_when_grown(conn, len(entities))
    refresh_graph_readers(conn, collection)
    conn.execute(
        _text(graph_sql.SQL_SAVE_STATE),
        {**params, "extractor": extractor, "stats": json.dumps(dict(stats), ensure_ascii=False)},
    )


def counts(conn, collection) -> dict[str, int]:
    """How many entities, relationships, communities, reports and entity ↔ chunk links are stored."""
    return dict(conn.execute(_text(graph_sql.SQL_COUNTS), {"collection": collection}).mappings().one())


def entities_by_vector(conn, collection, vector: Sequence[float], k: int, principals: Sequence[str]) -> list[dict]:
    """The ``k`` entities whose description embedding is nearest ``vector`` (HNSW), nearest first."""
    return [
        dict(r)
        for r in conn.execute(
            _text(graph_sql.SQL_ENTITIES_BY_VECTOR),
            {
                "collection": collection,
                "vector": vector_or_none(vector),
                "k": k,
                "principals": principals_param(principals),
            },
        ).mappings()
    ]


def entities_in_text(conn, collection, text: str, k: int, principals: Sequence[str]) -> list[dict]:
    """Entities whose key occurs in ``text`` (already normalized), longest first."""
    return [
        dict(r)
        for r in conn.execute(
            _text(graph_sql.SQL_ENTITIES_IN_TEXT),
            {"collection": collection, "text": text, "k": k, "principals": principals_param(principals)},
        ).mappings()
    ]


def entities_by_id(conn, collection, ids: Iterable[str], principals: Sequence[str]) -> list[dict]:
    """Entities by ID (any order)."""
    return [
        dict(r)
        for r in conn.execute(
            _text(graph_sql.SQL_ENTITIES_BY_ID),
            {"collection": collection, "ids": list(ids), "principals": principals_param(principals)},
        ).mappings()
    ]


def relationships_of(conn, collection, ids: Sequence[str], principals: Sequence[str]) -> list[dict]:
    """Relationships touching any of the entity ``ids``, heaviest first."""
    return [
        dict(r)
        for r in conn.execute(
            _text(graph_sql.SQL_RELATIONSHIPS_OF),
            {"collection": collection, "ids": list(ids), "principals": principals_param(principals)},
        ).mappings()
    ]


def text_units_of(
    conn, collection, keys: Sequence[str], principals: Sequence[str], scope: Scope | None = None
) -> list[dict]:
    """The chunks that name any of the entity ``keys`` (within ``scope`` when given: app.storage.scope):
    chunk_id, document, cmetadata, keys, n."""
    params = {"collection": collection, "keys": list(keys), "principals": principals_param(principals)}
    return [
        dict(r) for r in conn.execute(_text(graph_sql.SQL_TEXT_UNITS_OF), {**params, **scope_params(scope)}).mappings()
    ]


def _report(row) -> CommunityReport:
    return CommunityReport(
        id=row.id,
        level=row.level,
        title=row.title,
        summary=row.summary,
        rank=float(row.rank),
        findings=list(row.findings or []),
        chunk_ids=list(row.chunk_ids),
        document_ids=list(row.document_ids),
        entity_ids=list(row.entity_ids),
        kind=row.kind,
    )


def reports_by_id(conn, collection, ids: Sequence[str], principals: Sequence[str]) -> list[CommunityReport]:
    """Community reports by ID (any order)."""
    return [
        _report(r)
        for r in conn.execute(
            _text(graph_sql.SQL_REPORTS_BY_ID),
            {"collection": collection, "ids": list(ids), "principals": principals_param(principals)},
        )
    ]


def reports_at_level(conn, collection, level: int, min_rank: float, principals: Sequence[str]) -> list[CommunityReport]:
    """The reports of one level with rank >= ``min_rank``, best rank first."""
    return [
        _report(r)
        for r in conn.execute(
            _text(graph_sql.SQL_REPORTS_AT_LEVEL),
            {
                "collection": collection,
                "level": level,
                "min_rank": min_rank,
                "principals": principals_param(principals),
            },
        )
    ]


def report_levels(conn, collection, principals: Sequence[str]) -> dict[int, int]:
    """Level -> number of reports."""
    return {
        int(level): int(n)
        for level, n in conn.execute(
            _text(graph_sql.SQL_LEVELS), {"collection": collection, "principals": principals_param(principals)}
        )
    }


def corpus_size(conn, collection) -> dict[str, int]:
    """Pages (distinct source IDs: PDF pages, CSV rows, Markdown sections) and chunks of a collection."""
    return {
        k: int(v)
        for k, v in conn.execute(_text(graph_sql.SQL_CORPUS_SIZE), {"collection": collection}).mappings().one().items()
    }


def table_bytes(conn, collection) -> dict[str, int]:
    """Bytes of the collection's rows in each graph table."""
    row = conn.execute(_text(graph_sql.SQL_TABLE_BYTES), {"collection": collection}).one()
    return {name: int(n) for name, n in zip(graph_sql.TABLE_BYTES_NAMES, row)}


def chunk_documents(
    conn, ids: Sequence[str], principals: Sequence[str], scope: Scope | None = None
) -> dict[str, tuple[str, str]]:
    """Chunk ID -> (document ID, source ID) for the chunks that still exist (within ``scope`` when given)."""
    if not ids:
        return {}
    params = {"ids": list(ids), "principals": principals_param(principals), **scope_params(scope)}
    return {r[0]: (r[1], r[2]) for r in conn.execute(_text(graph_sql.SQL_DOCUMENT_OF_CHUNKS), params)}
