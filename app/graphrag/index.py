"""Building the graph from what is stored (``make graph``, and after a sync that changed anything).

The per-chunk links (entity ↔ chunk, entity pairs per sentence) are written with the chunks
(app.storage.chunks.replace_document). A build turns them into the derived tables in one transaction:

1. when the stored links come from another extractor (GRAPH_EXTRACTOR changed, or a store made
   before the graph existed), every stored chunk is extracted again first;
2. entities: one per normalized name, described by the first sentences that name it (in the order
   of their chunks' text hashes, so a renamed file changes no description); those named in at least GRAPH_MIN_CHUNKS chunks are embedded (name + the start of the
   description; a text embedded before is reused), the others are found by name;
3. relationships: entity pairs named in one sentence, weighted by how many sentences;
4. communities: hierarchical Louvain on the pruned graph (app.graphrag.communities);
5. reports: extractive, or written by the LLM with GRAPH_REPORTS=llm (reused while the
   community's content is unchanged).

Timings and counts of each step are kept in ``rag_graph_state.stats`` (``make docs`` shows them).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app import storage
from app.config import Settings
from app.graphrag.communities import (
    EntityFacts,
    build_graph,
    clip,
    community_ranks,
    detect_communities,
    extractive_report,
)
from app.graphrag.extract import EXTRACTOR_VERSION, chunk_extractor
from app.graphrag.reports import LLMReportWriter
from app.storage import graphrag_rows
from app.storage.engine import lift_statement_timeout
from app.storage.graphrag_types import ChunkGraph, Community, CommunityReport
from app.text.keywords import normalize_text as normalize

log = logging.getLogger(__name__)

DESCRIPTION_SENTENCES = 3
DESCRIPTION_CHARS = 300
EDGE_PERCENTILE = 40.0  # GraphRAG's fast indexing prunes edges below this percentile of weight
EMBED_BATCH = 64
REEXTRACT_PAGE = 500


@dataclass
class BuildReport:
    """What a build did: counts and seconds per step."""

    entities: int = 0
    relationships: int = 0
    communities: int = 0
    reports: int = 0
    links: int = 0
    chunks_extracted: int = 0
    entities_embedded: int = 0
    reports_written_by_llm: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for the CLI."""
        took = sum(self.seconds.values())
        extracted = f"{self.chunks_extracted} chunks extracted, " if self.chunks_extracted else ""
        return (
            f"{extracted}{self.entities} entities, {self.relationships} relationships, "
            f"{self.communities} communities, {self.reports} reports; embedded {self.entities_embedded} "
            f"entity descriptions ({took:.1f} s)"
        )


def entity_id(key: str) -> str:
    """A stable entity ID from its normalized name."""
    return "e-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]


def relationship_id(source: str, target: str) -> str:
    """A stable relationship ID from its two entity IDs (in order)."""
    return "r-" + hashlib.sha1(f"{source}|{target}".encode()).hexdigest()[:12]


def extractor_name(settings: Settings) -> str:
    """What built the links: ``fast/<version>`` or ``llm/<model file>``; a change re-extracts."""

    if settings.graph.extractor == "llm":
        return f"llm/{settings.llm.server_model}"
    return f"fast/{EXTRACTOR_VERSION}"


def describe(sentences: Sequence[str]) -> str:
    """An entity's description: its first distinct sentences (as given), at most DESCRIPTION_CHARS characters."""
    chosen, used = [], 0
    for sentence in dict.fromkeys(s for s in sentences if s):
        if len(chosen) >= DESCRIPTION_SENTENCES or (chosen and used + len(sentence) > DESCRIPTION_CHARS):
            break
        chosen.append(sentence)
        used += len(sentence)
    return clip(" ".join(chosen), DESCRIPTION_CHARS)


def relationship_description(a: EntityFacts, b: EntityFacts, weight: int) -> str:
    """A sentence naming both entities (from either's sentences), else a plain statement."""
    for first, second in ((a, b), (b, a)):
        for sentence, _, _ in first.sentences:
            if normalize(second.title) in normalize(sentence):
                return clip(sentence, DESCRIPTION_CHARS)
    return f"{a.title} と {b.title} が同じ文に現れる（{weight} 回）"


EMBED_DESCRIPTION_CHARS = 80  # of the description, embedded with the name (e5's cost grows with length)


def embedding_text(title: str, description: str) -> str:
    """What is embedded for an entity: its name and the start of its description."""
    return f"{title}: {clip(description, EMBED_DESCRIPTION_CHARS)}" if description else title


def text_hash(text: str, model: str) -> str:
    """The key under which an entity vector is reused: the text and the model."""
    return hashlib.sha256(f"{model}\n{text}".encode()).hexdigest()[:32]


@dataclass
class GraphInputs:
    """The stored links, shaped for a build."""

    facts: dict[str, dict]  # key -> {title, kind, mentions, chunks}
    entity_facts: dict[str, EntityFacts]  # entity ID -> sentences
    pairs: list[dict]  # {source, target, weight, chunks} (keys)


def shape_inputs(facts: Sequence[dict], sentences: Sequence[dict], pairs: Sequence[dict]) -> GraphInputs:
    """Group the rows read by :func:`app.storage.graphrag_rows.read_build_inputs`."""
    by_key = {f["entity"]: f for f in facts}
    entity_facts = {entity_id(k): EntityFacts(entity_id(k), f["title"]) for k, f in by_key.items()}
    for row in sentences:
        eid = entity_id(row["entity"])
        if eid in entity_facts and row["sentence"]:
            entity_facts[eid].sentences.append((row["sentence"], row["chunk_id"], row["doc_id"] or ""))
    return GraphInputs(by_key, entity_facts, list(pairs))


def derive(
    inputs: GraphInputs, min_chunks: int, seed: int = 42
) -> tuple[list[dict], list[dict], list[Community], dict[str, float]]:
    """Entities, relationships, communities and ranks from the links (pure)."""
    relationships = []
    degree: dict[str, int] = {}
    for pair in inputs.pairs:
        a, b = entity_id(pair["source"]), entity_id(pair["target"])
        if a not in inputs.entity_facts or b not in inputs.entity_facts:
            continue
        weight = int(pair["weight"])
        relationships.append(
            {
                "id": relationship_id(a, b),
                "source": a,
                "target": b,
                "weight": float(weight),
                "chunks": int(pair["chunks"]),
                "description": relationship_description(inputs.entity_facts[a], inputs.entity_facts[b], weight),
            }
        )
        degree[a], degree[b] = degree.get(a, 0) + 1, degree.get(b, 0) + 1
    graph = build_graph(
        {entity_id(k): int(f["chunks"]) for k, f in inputs.facts.items()},
        [(r["source"], r["target"], r["weight"]) for r in relationships],
        min_chunks=min_chunks,
        edge_percentile=EDGE_PERCENTILE,
    )
    communities = detect_communities(graph, seed=seed)
    member_of: dict[str, list[str]] = {}
    for c in sorted(communities, key=lambda c: c.level):
        for e in c.entity_ids:
            member_of.setdefault(e, []).append(c.id)
    entities = []
    for key, f in inputs.facts.items():
        eid = entity_id(key)
        facts = inputs.entity_facts[eid]
        entities.append(
            {
                "id": eid,
                "key": key,
                "title": f["title"],
                "kind": f["kind"],
                "description": describe([s for s, _, _ in facts.sentences]),
                "mentions": int(f["mentions"]),
                "chunks": int(f["chunks"]),
                "degree": float(degree.get(eid, 0)),
                "communities": member_of.get(eid, []),
            }
        )
    strength = dict(graph.degree(weight="weight"))
    return entities, relationships, communities, strength


def report_hash(community: Community, inputs: GraphInputs) -> str:
    """What an LLM report depends on: the community's entities and their sentences."""
    parts = [
        f"{e}:{'|'.join(s for s, _, _ in inputs.entity_facts[e].sentences[:3])}"
        for e in community.entity_ids
        if e in inputs.entity_facts
    ]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]


def write_reports(
    communities: Sequence[Community],
    inputs: GraphInputs,
    strength: dict[str, float],
    llm_report: Callable[[CommunityReport], CommunityReport | None] | None,
    stored: dict[str, dict],
) -> tuple[list[dict], int]:
    """Report rows for ``communities`` (extractive; with ``llm_report``, rewritten by the LLM unless
    a stored LLM report has the same content hash). Returns (rows, LLM reports written now)."""
    ranks = community_ranks(communities)
    rows, written = [], 0
    for community in communities:
        report = extractive_report(community, inputs.entity_facts, strength, ranks[community.id])
        digest = report_hash(community, inputs)
        if llm_report is not None:
            old = stored.get(digest)
            if old and old["kind"] == "llm":
                report.title, report.summary, report.findings, report.kind = (
                    old["title"],
                    old["summary"],
                    old["findings"],
                    "llm",
                )
            else:
                better = llm_report(report)
                if better is not None:
                    report, written = better, written + 1
        rows.append(
            {
                "id": report.id,
                "level": report.level,
                "title": report.title,
                "summary": report.summary,
                "findings": report.findings,
                "rank": report.rank,
                "kind": report.kind,
                "chunk_ids": report.chunk_ids,
                "document_ids": report.document_ids,
                "entity_ids": report.entity_ids,
                "content_hash": digest,
            }
        )
    return rows, written


def embed_entities(
    entities: list[dict], embeddings: Any, known: Callable[[list[str]], dict], model: str, min_chunks: int = 1
) -> int:
    """Give each entity named in at least ``min_chunks`` chunks its vector (``embedding``,
    ``embed_hash``): reused by hash, the rest embedded in batches. The others (most are named once)
    get none: local search finds them by name. Returns how many were embedded."""
    chosen = [e for e in entities if e["chunks"] >= min_chunks]
    texts = {e["id"]: embedding_text(e["title"], e["description"]) for e in chosen}
    for e in entities:
        e["embed_hash"], e["embedding"] = None, None
    for e in chosen:
        e["embed_hash"] = text_hash(texts[e["id"]], model)
    vectors = known([e["embed_hash"] for e in chosen])
    missing = list({e["embed_hash"]: e for e in chosen if e["embed_hash"] not in vectors}.values())
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start : start + EMBED_BATCH]
        for e, vector in zip(batch, embeddings.embed_documents([texts[e["id"]] for e in batch])):
            vectors[e["embed_hash"]] = vector
    for e in chosen:
        e["embedding"] = vectors[e["embed_hash"]]
    return len(missing)


def reextract(conn, engine, collection, extract: Callable[[str, dict], ChunkGraph]) -> int:
    """Extract the links of every stored chunk again (inside the build's transaction ``conn``)."""
    graphrag_rows.clear_chunk_graphs(conn, collection)
    done = 0
    for page in graphrag_rows.chunk_pages(engine, collection, REEXTRACT_PAGE):
        graphs = {chunk_id: extract(text, metadata) for chunk_id, text, metadata in page}
        graphrag_rows.write_chunk_graphs(conn, collection, {k: g for k, g in graphs.items() if g})
        done += len(page)
    return done


def build(
    engine: Any,
    settings: Settings,
    embeddings: Any,
    llm: Any = None,
    force_extract: bool = False,
    extract: Callable[[str, dict], ChunkGraph] | None = None,
) -> BuildReport:
    """Rebuild the collection's graph from its stored links, in one transaction (the caller holds
    the writer lock). Re-extracts every chunk first when the links come from another extractor or
    ``force_extract``. ``llm`` writes the reports with GRAPH_REPORTS=llm."""

    report = BuildReport()
    collection = storage.collection_id(engine, settings.retrieval.collection_name)
    if collection is None:
        return report
    name = extractor_name(settings)
    clock = time.perf_counter
    with engine.begin() as conn:
        lift_statement_timeout(conn)  # a build rewrites the collection's graph in one transaction
        current = graphrag_rows.state(conn, collection)
        start = clock()
        if force_extract or current is None or current["extractor"] != name:
            report.chunks_extracted = reextract(conn, engine, collection, extract or chunk_extractor(settings, llm))
        report.seconds["extract"] = clock() - start
        start = clock()
        inputs = shape_inputs(*graphrag_rows.read_build_inputs(conn, collection))
        entities, relationships, communities, strength = derive(inputs, settings.graph.min_chunks)
        report.seconds["graph"] = clock() - start
        start = clock()
        llm_report = None
        if settings.graph.reports == "llm" and llm is not None:
            llm_report = LLMReportWriter(llm).write
        reports, report.reports_written_by_llm = write_reports(
            communities, inputs, strength, llm_report, graphrag_rows.stored_reports(conn, collection)
        )
        report.seconds["reports"] = clock() - start
        start = clock()
        report.entities_embedded = embed_entities(
            entities,
            embeddings,
            lambda hashes: graphrag_rows.stored_embeddings(conn, collection, hashes),
            settings.models.embed_model,
            settings.graph.min_chunks,
        )
        report.seconds["embed"] = clock() - start
        start = clock()
        report.entities, report.relationships = len(entities), len(relationships)
        report.communities, report.reports = len(communities), len(reports)
        report.links = sum(len(f.sentences) for f in inputs.entity_facts.values())
        stats = {
            "entities": report.entities,
            "relationships": report.relationships,
            "communities": report.communities,
            "reports": report.reports,
            "links": report.links,
            "levels": len({c.level for c in communities}),
            "seconds": report.seconds,
        }
        graphrag_rows.save_build(
            conn,
            collection,
            entities,
            relationships,
            [
                {
                    "id": c.id,
                    "level": c.level,
                    "parent": c.parent,
                    "size": c.size,
                    "weight": c.weight,
                    "entity_ids": c.entity_ids,
                }
                for c in communities
            ],
            reports,
            name,
            stats,
        )
        report.seconds["write"] = clock() - start
    return report


def needs_build(engine: Any, settings: Settings) -> bool:
    """True when the graph is missing, out of date (chunks changed) or made by another extractor."""
    collection = storage.collection_id(engine, settings.retrieval.collection_name)
    if collection is None:
        return False
    with engine.connect() as conn:
        current = graphrag_rows.state(conn, collection)
    return (
        current is None
        or current["dirty"]
        or current["built_at"] is None
        or current["extractor"] != extractor_name(settings)
    )
