"""The graph's searches over the store: local context and global map-reduce (what the workflow calls).

:class:`GraphSearch` is cheap to make; it reads the graph tables on the connection pool it is given
and uses the models it is given (the embedding model for entity search; the LLM and its tokenizer
for budgets and the map-reduce). It raises GraphNotReadyError, with what to run, when the graph of
the collection has not been built.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

from app import storage
from app.config import Settings
from app.errors import GraphNotReadyError
from app.graphrag.global_search import (
    REDUCE_MAX_TOKENS,
    RETRY_TEMPERATURE,
    GlobalSearch,
    MapProcessor,
    ReduceProcessor,
    Stopped,
    check_stopped,
    never,
)
from app.graphrag.index import normalize
from app.graphrag.local_search import LocalContextBuilder, map_query_to_entities
from app.graphrag.router import route
from app.llm import generate, is_chat_model, with_options
from app.storage import graphrag_rows
from app.storage.graphrag_types import (
    CommunityReport,
    ContextResult,
    Entity,
    GlobalSearchResult,
    Relationship,
    TextUnit,
)
from app.storage.scope import Scope
from app.storage.scores import RELEVANCE_SCORE_KEY

PROMPT_RESERVE = 200  # tokens kept for the instructions and the question around a graph context
RELATIONSHIP_ROWS = 500  # relationships read per local search (heaviest first)


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate for servers whose tokenizer we cannot call: one token per
    non-ASCII character, one per four ASCII characters (Qwen2.5 and Llama tokenizers write
    Japanese at about one character per token)."""
    ascii_chars = sum(ch.isascii() for ch in text)
    return (len(text) - ascii_chars) + (ascii_chars + 3) // 4


def entity_from_row(row: dict) -> Entity:
    """An Entity from a ``rag_graph_entity`` row."""
    return Entity(
        id=row["id"],
        title=row["title"],
        description=row["description"],
        rank=float(row["degree"]),
        attributes={
            "key": row["key"],
            "kind": row["kind"],
            "degree": row["degree"],
            "chunks": row["chunks"],
            "communities": list(row["communities"] or []),
            "similarity": float(row.get("similarity") or 0.0),
        },
    )


def relationship_from_row(row: dict) -> Relationship:
    """A Relationship from a ``rag_graph_relationship`` row."""
    return Relationship(
        id=row["id"],
        source=row["source"],
        target=row["target"],
        description=row["description"],
        weight=float(row["weight"]),
        attributes={"chunks": row["chunks"]},
    )


def report_document(report: CommunityReport) -> Document:
    """A community report as a LangChain Document (RagStore.search with mode ``global``)."""
    return Document(
        page_content=report.content(),
        id=report.id,
        metadata={
            "source": f"community:{report.id}",
            "report_id": report.id,
            "level": report.level,
            "rank": report.rank,
            "document_ids": report.document_ids,
            "chunk_ids": report.chunk_ids,
            "entity_ids": report.entity_ids,
            "relevance_score": report.rank,
        },
    )


def graph_documents(
    graph: GraphSearch, query: str, mode: str, top_k: int, chunk_search: Callable[[str, str, int], list[Document]]
) -> list[Document]:
    """RagStore.search for ``local`` (the chunks naming the question's entities, in the graph's order;
    score 1/rank), ``global`` (community reports, best rank first) and ``auto`` (the router's choice,
    which may be a chunk search: ``chunk_search(query, mode, top_k)``)."""
    chosen = route(mode, query, graph_ready=graph.is_ready() if mode == "auto" else True).mode
    if chosen == "global" and mode == "auto" and isinstance(graph.scope, Scope) and graph.scope:
        chosen = "hybrid"  # community reports span every folder: a narrowed question needs passages
    if chosen == "local":
        docs = graph.local(query, max_text_units=top_k).documents
        return [
            Document(
                page_content=d.page_content, id=d.id, metadata={**d.metadata, RELEVANCE_SCORE_KEY: round(1 / rank, 6)}
            )
            for rank, d in enumerate(docs, start=1)
        ]
    if chosen == "global":
        return [report_document(r) for r in graph.reports()][:top_k]
    return chunk_search(query, chosen, top_k)


def text_unit_document(unit: TextUnit, metadata: dict) -> Document:
    """A text unit as the chunk Document it is, with the entities that brought it."""
    return Document(page_content=unit.text, id=unit.id, metadata={**metadata, "graph_entities": unit.entity_ids})


@dataclass
class LocalResult:
    """A local search: the context, and its text units as Documents (for citation and sources)."""

    context: ContextResult
    documents: list[Document]
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class GraphSearch:
    """Local and global search over the collection's graph, as ``principals`` (a required keyword)."""

    settings: Settings
    engine: Any
    embeddings: Any = None  # the store's embedding model (entity search by meaning)
    llm: Any = None  # needed by global search only
    count_tokens: Callable[[str], int] | None = None  # the LLM's tokenizer; an estimate without one
    sleep: Callable[[float], None] = time.sleep
    # who asks: only graph rows all of whose sources they may read; required (keyword) so that a
    # forgotten argument fails instead of reading everything (FULL_ACCESS is full access, on purpose)
    principals: tuple[str, ...] = field(kw_only=True)
    # the question's scope (app.storage.scope): local search's chunks and the sources named are within it
    # (in SQL), and so are its entities and relationships (those the chunks in scope name); community
    # reports span many documents: a scoped question reads none, and global search refuses a scope
    scope: Scope | None = field(default=None, kw_only=True)

    def reading(self):
        """A connection reading as :attr:`principals` (app.storage.readers.reading)."""
        return storage.reading(self.engine, self.principals)

    @property
    def tokens(self) -> Callable[[str], int]:
        return self.count_tokens or estimate_tokens

    def budget(self, answer_tokens: int) -> int:
        """Context tokens: GRAPH_CONTEXT_TOKENS, else what the LLM's window leaves for them."""
        room = self.settings.llm.n_ctx - answer_tokens - PROMPT_RESERVE
        return max(128, min(self.settings.graph.context_tokens or room, room))

    def collection(self):
        """The collection's UUID; GraphNotReadyError when its graph was never built."""
        collection = storage.collection_id(self.engine, self.settings.retrieval.collection_name)
        if collection is None:
            raise GraphNotReadyError(
                "Local/global search not initialized: nothing has been ingested yet; run `make ingest`"
            )
        with self.engine.connect() as conn:
            state = graphrag_rows.state(conn, collection)
        if not state or state["built_at"] is None:
            raise GraphNotReadyError(
                f"graph search not initialized: the graph of collection '{self.settings.retrieval.collection_name}' has not "
                "been built; run `make graph` (or `make ingest` with GRAPH_EXTRACTOR=fast)"
            )
        return collection

    def is_ready(self) -> bool:
        """True when the collection's graph has been built (auto routes to it only then)."""
        try:
            self.collection()
        except GraphNotReadyError:
            return False
        return True

    def sources_of(self, chunk_ids: list[str]) -> list[str]:
        """The source IDs (``file.pdf:p3``) of the chunks that still exist, in order, without repeats."""
        with self.reading() as conn:
            found = graphrag_rows.chunk_documents(conn, chunk_ids, self.principals, self.scope)
        return list(dict.fromkeys(found[c][1] for c in chunk_ids if c in found and found[c][1]))

    # --- local -------------------------------------------------------------------------

    def entities_for(self, conn, collection, query: str) -> list[Entity]:
        """The question's entities: named in it, or near it by meaning (when an embedder is given)."""
        k = self.settings.graph.top_entities
        named = [
            entity_from_row(r)
            for r in graphrag_rows.entities_in_text(conn, collection, normalize(query), k, self.principals)
        ]
        similar = []
        if self.embeddings is not None:
            vector = self.embeddings.embed_query(query)
            similar = [
                entity_from_row(r)
                for r in graphrag_rows.entities_by_vector(conn, collection, vector, 2 * k, self.principals)
            ]
        return map_query_to_entities(named, similar, k)

    def local(self, query: str, max_text_units: int | None = None) -> LocalResult:
        """Entities, relationships, text units (at most ``max_text_units``, default RERANK_TOP_K) and
        reports for ``query`` within the token budget. No entity found: an empty context (the
        workflow answers that none is relevant)."""
        clock = time.perf_counter
        start = clock()
        collection = self.collection()
        with self.reading() as conn:
            entities = self.entities_for(conn, collection, query)
            t_entities = clock()
            ids = [e.id for e in entities]
            relationships = [
                relationship_from_row(r)
                for r in graphrag_rows.relationships_of(conn, collection, ids, self.principals)[:RELATIONSHIP_ROWS]
            ]
            others = {r.source for r in relationships} | {r.target for r in relationships}
            titles = {
                row["id"]: row["title"]
                for row in graphrag_rows.entities_by_id(conn, collection, others - set(ids), self.principals)
            }
            for r in relationships:
                r.attributes["source_title"] = titles.get(r.source, r.source)
                r.attributes["target_title"] = titles.get(r.target, r.target)
            key_of = {e.attributes["key"]: e.id for e in entities}
            rows = graphrag_rows.text_units_of(conn, collection, list(key_of), self.principals, self.scope)
            units = [
                TextUnit(
                    id=r["chunk_id"],
                    text=r["document"],
                    entity_ids=[key_of[k] for k in r["keys"]],
                    source=(r["cmetadata"] or {}).get("source", ""),
                    document_id=(r["cmetadata"] or {}).get("doc_id", ""),
                )
                for r in rows
            ]
            metadata = {r["chunk_id"]: dict(r["cmetadata"] or {}) for r in rows}
            community_ids = {e.attributes["communities"][-1] for e in entities if e.attributes["communities"]}
            reports = graphrag_rows.reports_by_id(conn, collection, sorted(community_ids), self.principals)
        if self.scope:
            entities, relationships = named_within(entities, relationships, units)
            reports = []
        t_read = clock()
        builder = LocalContextBuilder(
            self.tokens,
            self.settings.graph.community_prop,
            self.settings.graph.text_unit_prop,
            max_text_units=max_text_units or self.settings.retrieval.rerank_top_k,
        )
        context = builder.build_context(
            query, entities, relationships, units, max_tokens=self.budget(self.settings.llm.max_tokens), reports=reports
        )
        documents = [text_unit_document(u, metadata[u.id]) for u in context.text_units_used]
        return LocalResult(
            context,
            documents,
            {"entities": t_entities - start, "graph_read": t_read - t_entities, "context": clock() - t_read},
        )

    # --- global ------------------------------------------------------------------------

    def reports(self, level: int | None = None, min_rank: float | None = None) -> list[CommunityReport]:
        """The reports global search reads: GRAPH_LEVEL (or the finest level there is, when the
        graph has fewer), rank >= GRAPH_MIN_RANK, best first."""
        collection = self.collection()
        level = self.settings.graph.level if level is None else level
        with self.reading() as conn:
            levels = graphrag_rows.report_levels(conn, collection, self.principals)
            if levels and level not in levels:
                level = max(levels)
            return graphrag_rows.reports_at_level(
                conn, collection, level, self.settings.graph.min_rank if min_rank is None else min_rank, self.principals
            )

    def llm_call(self, max_tokens: int, stopped: Stopped | None = None) -> Callable[[str, str, int], str]:
        """``call(system, prompt, attempt)`` on the LLM, with no answer stop sequences and
        ``max_tokens``; each retry ``attempt`` adds RETRY_TEMPERATURE. With ``stopped``, the answer is
        streamed and stops at its next piece once the asker has gone (a map call takes seconds)."""
        base = with_options(self.llm, ["<|im_end|>", "<|endoftext|>", "</s>"], max_tokens)
        on_piece = None if stopped is None else (lambda piece: check_stopped(stopped))

        def call(system: str, prompt: str, attempt: int) -> str:
            model = base
            if attempt and hasattr(base, "temperature"):
                model = base.model_copy(update={"temperature": RETRY_TEMPERATURE * attempt})
            return generate(prompt, llm=model, system=system, on_token=on_piece)

        return call

    def map_concurrency(self) -> int:
        """One map call at a time for a llama.cpp model in this process (not re-entrant),
        GRAPH_MAP_CONCURRENCY for a server."""
        return self.settings.graph.map_concurrency if is_chat_model(self.llm) else 1

    def global_search(self, query: str, stopped: Stopped | None = None) -> GlobalSearchResult:
        """Map-reduce over the community reports (app.graphrag.global_search); ``stopped`` (has the
        asker gone?) is asked between the model calls and at each piece they write."""
        if self.llm is None:
            raise GraphNotReadyError("global search needs the LLM (it maps and reduces the community reports)")
        start = time.perf_counter()
        reports = self.reports()
        t_read = time.perf_counter() - start
        map_tokens = self.settings.graph.map_max_tokens  # GRAPH_MAP_MAX_TOKENS (MAP_MAX_TOKENS by default)
        mapper = MapProcessor(
            self.llm_call(map_tokens, stopped), self.tokens, concurrency=self.map_concurrency(), sleep=self.sleep
        )
        reducer = ReduceProcessor(
            self.llm_call(REDUCE_MAX_TOKENS, stopped), self.tokens, self.budget(REDUCE_MAX_TOKENS)
        )
        result = GlobalSearch(mapper, reducer, self.budget(map_tokens), self.settings.graph.map_max_batches).search(
            query, reports, stopped or never
        )
        result.timings["read_reports"] = t_read
        return result

    # --- for make docs ------------------------------------------------------------------

    def counts(self) -> dict[str, Any]:
        """Stored graph counts and state (zeros before the first build)."""
        collection = storage.collection_id(self.engine, self.settings.retrieval.collection_name)
        if collection is None:
            return {}
        with self.reading() as conn:
            state = graphrag_rows.state(conn, collection) or {}
            return {
                **graphrag_rows.counts(conn, collection),
                "built_at": state.get("built_at"),
                "dirty": state.get("dirty"),
                "extractor": state.get("extractor"),
                "stats": state.get("stats") or {},
            }


def named_within(
    entities: list[Entity], relationships: list[Relationship], units: list[TextUnit]
) -> tuple[list[Entity], list[Relationship]]:
    """A scoped local search's entities and relationships: those the text units in scope name (an
    entity's description and a relationship's may come from chunks outside it), in their order."""
    named = {entity_id for unit in units for entity_id in unit.entity_ids}
    kept = [e for e in entities if e.id in named]
    return kept, [r for r in relationships if r.source in named and r.target in named]
