"""The graph's data model (seeds 001 and 004), as plain dataclasses.

IDs are strings: entities and relationships get stable IDs derived from their names
(``e-…``, ``r-…``), communities ``c<level>-<n>``, reports the ID of their community, text
units the chunk IDs of the store; traceability always ends at chunk and document IDs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Mention:
    """One entity found in one chunk: its key (normalized name), the name as written, its kind
    (``latin``, ``proper``, ``noun`` or an LLM's type), how often, and the first sentence naming it."""

    key: str
    title: str
    kind: str
    count: int = 1
    sentence: str = ""


@dataclass
class ChunkGraph:
    """What the extractor found in one chunk: its mentions (by key) and the entity pairs named in
    one sentence, with how many sentences named both (``(a, b)`` with ``a < b``)."""

    mentions: dict[str, Mention] = field(default_factory=dict)
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.mentions)


@dataclass
class Entity:
    """An entity of the corpus (seed 001)."""

    id: str
    title: str
    description: str | None = None
    rank: float | None = None
    text_unit_ids: list[str] = field(default_factory=list)
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class Relationship:
    """Two entities named together, weighted by how many sentences name both (seed 001)."""

    id: str
    source: str  # Entity ID
    target: str  # Entity ID
    description: str | None = None
    weight: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class TextUnit:
    """A chunk of the store as the graph sees it (seed 001)."""

    id: str
    text: str
    entity_ids: list[str] = field(default_factory=list)
    relationship_ids: list[str] = field(default_factory=list)
    source: str = ""
    document_id: str = ""


@dataclass
class Community:
    """A group of entities found by community detection; level 0 is the coarsest."""

    id: str
    level: int
    entity_ids: list[str]
    parent: str | None = None
    size: int = 0
    weight: float = 0.0  # the sum of its entities' weighted degrees


@dataclass
class CommunityReport:
    """What a community is about: extractive by default (GRAPH_REPORTS=llm: written by the LLM)."""

    id: str  # the community's ID
    level: int
    title: str
    summary: str
    rank: float  # 0-10, larger communities with better connected entities rank higher
    findings: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    document_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)
    kind: str = "extractive"

    def content(self) -> str:
        """The report as the LLM reads it: title, summary, findings."""
        lines = [f"# {self.title}", self.summary]
        lines += [f"- {finding}" for finding in self.findings]
        return "\n".join(line for line in lines if line)


@dataclass
class ContextResult:
    """The local search context (seed 001): the text given to the LLM and what it was made of."""

    context_text: str
    entities_used: list[Entity]
    relationships_used: list[Relationship]
    text_units_used: list[TextUnit]
    total_tokens: int
    reports_used: list[CommunityReport] = field(default_factory=list)
    section_tokens: dict[str, int] = field(default_factory=dict)


@dataclass
class KeyPoint:
    """One point of a map answer (seed 004), scored 0-100, with the reports it came from."""

    description: str
    score: int
    report_ids: list[str] = field(default_factory=list)
    source_metadata: dict[str, Any] = field(default_factory=dict)  # document_ids, chunk_ids, entity_ids


@dataclass
class MapResult:
    """The key points of one batch of community reports (seed 004); ``error`` when it failed for good."""

    batch_id: int
    key_points: list[KeyPoint]
    context_tokens: int
    processing_time: float
    attempts: int = 1
    error: str | None = None


@dataclass
class TraceabilityInfo:
    """Where a global answer came from: reports, documents, chunks and entities (seed 004)."""

    report_ids: list[str] = field(default_factory=list)
    document_ids: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)


@dataclass
class GlobalSearchResult:
    """A global search answer with its map results and traceability (seed 004)."""

    response: str
    response_type: str
    map_results: list[MapResult]
    traceability: TraceabilityInfo
    total_tokens: int
    processing_time: float
    timings: dict[str, float] = field(default_factory=dict)
    reports_considered: int = 0
    reports_left_out: int = 0
