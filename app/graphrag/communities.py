"""Communities of the entity graph and their extractive reports (pure: no database, no model).

The graph: entities are nodes, relationships (entities named in one sentence) are edges weighted
by how many sentences name both. Like GraphRAG's fast indexing it is pruned before clustering:
entities named in fewer than ``min_chunks`` chunks and edges lighter than the ``edge_percentile``
percentile of the edge weights are left out (they still serve local search).

Communities come from networkx's Louvain method (``louvain_partitions``, seeded, so the same graph
gives the same communities). Each pass of Louvain merges the communities of the pass before,
which makes the passes a hierarchy: level 0 is the last (coarsest) pass, the highest level the
first (finest); a community's ``parent`` is the community of the level above it (coarser) that
holds its entities.

An extractive report needs no LLM: its title is its best-connected entities, its summary the
sentences that name the most of its entities (the most "central" sentences), its findings a
sentence about each leading entity, its rank (0-10) grows with the community's weighted degree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from app.metrics import percentile
from app.storage.graphrag_types import Community, CommunityReport

SEED = 42
MIN_COMMUNITY_SIZE = 2  # a lone entity is not a community worth a report
TITLE_ENTITIES = 3
SUMMARY_SENTENCES = 3
SUMMARY_MAX_CHARS = 360
FINDINGS = 5
FINDING_MAX_CHARS = 160


@dataclass
class EntityFacts:
    """What a report needs to know of one entity: its title and the sentences that name it, each
    with the chunk and document it is from."""

    id: str
    title: str
    sentences: list[tuple[str, str, str]] = field(default_factory=list)  # (sentence, chunk_id, document_id)


def build_graph(
    entity_chunks: Mapping[str, int],
    edges: Iterable[tuple[str, str, float]],
    min_chunks: int = 2,
    edge_percentile: float = 40.0,
):
    """The pruned, weighted entity graph (a networkx Graph).

    ``entity_chunks``: entity ID -> number of chunks naming it; ``edges``: (source, target, weight).
    Entities below ``min_chunks`` and edges below the ``edge_percentile`` percentile of the
    weights among kept entities are dropped; entities left without an edge are dropped too.
    """
    import networkx as nx

    kept = {e for e, n in entity_chunks.items() if n >= min_chunks}
    candidates = [(a, b, float(w)) for a, b, w in edges if a in kept and b in kept and a != b]
    floor = percentile([w for _, _, w in candidates], edge_percentile)
    graph = nx.Graph()  # edges in sorted order: Louvain's result depends on the order nodes were added
    graph.add_weighted_edges_from(sorted((min(a, b), max(a, b), w) for a, b, w in candidates if w >= floor))
    return graph


def detect_communities(graph, seed: int = SEED, max_levels: int = 3) -> list[Community]:
    """Hierarchical communities of ``graph`` (Louvain, at most ``max_levels`` levels, 0 coarsest).

    IDs are ``c<level>-<n>``, numbered by size (largest first, then by first entity ID) so they
    are stable for a given graph. Communities smaller than MIN_COMMUNITY_SIZE are left out.
    """
    import networkx as nx

    if graph.number_of_edges() == 0:
        return []
    passes = [list(p) for p in nx.community.louvain_partitions(graph, weight="weight", seed=seed)]
    passes = passes[-max_levels:]  # keep the coarsest levels
    strength = dict(graph.degree(weight="weight"))
    levels = list(reversed(passes))  # level 0: the coarsest pass
    communities: list[Community] = []
    owner: dict[tuple[int, str], str] = {}  # (level, entity) -> community ID
    for level, partition in enumerate(levels):
        groups = sorted(
            (sorted(group) for group in partition if len(group) >= MIN_COMMUNITY_SIZE), key=lambda g: (-len(g), g[0])
        )
        for number, members in enumerate(groups):
            cid = f"c{level}-{number}"
            parent = owner.get((level - 1, members[0])) if level else None
            communities.append(
                Community(
                    id=cid,
                    level=level,
                    entity_ids=members,
                    parent=parent,
                    size=len(members),
                    weight=round(sum(strength[m] for m in members), 6),
                )
            )
            for member in members:
                owner[(level, member)] = cid
    return communities


def community_ranks(communities: Sequence[Community]) -> dict[str, float]:
    """Rank 0-10 of each community: ``10 * log(1 + weight) / log(1 + max weight of its level)``."""
    best: dict[int, float] = {}
    for c in communities:
        best[c.level] = max(best.get(c.level, 0.0), c.weight)
    return {
        c.id: round(10.0 * math.log1p(c.weight) / math.log1p(best[c.level]), 2) if best[c.level] > 0 else 0.0
        for c in communities
    }


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with ``…`` when cut."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def central_sentences(
    members: Sequence[EntityFacts], limit: int = SUMMARY_SENTENCES, max_chars: int = SUMMARY_MAX_CHARS
) -> list[tuple[str, str, str]]:
    """The sentences that name the most member entities (ties: the earlier member, then the earlier
    sentence), distinct, at most ``limit`` and ``max_chars`` characters together."""
    titles = [m.title.lower() for m in members]
    seen: dict[str, tuple[int, int, int, tuple[str, str, str]]] = {}
    for rank, member in enumerate(members):
        for order, item in enumerate(member.sentences):
            sentence = item[0]
            if sentence in seen:
                continue
            lowered = sentence.lower()
            named = sum(title in lowered for title in titles)
            seen[sentence] = (-named, rank, order, item)
    chosen, used = [], 0
    for *_, item in sorted(seen.values(), key=lambda v: v[:3]):
        if len(chosen) >= limit:
            break
        if chosen and used + len(item[0]) > max_chars:
            continue
        chosen.append(item)
        used += len(item[0])
    return chosen


def extractive_report(
    community: Community, facts: Mapping[str, EntityFacts], degree: Mapping[str, float], rank: float
) -> CommunityReport:
    """A report written from the community's own sentences (no LLM).

    Members are ordered by weighted degree (then ID). Title: the first TITLE_ENTITIES titles
    joined by ``・``; summary: :func:`central_sentences`; findings: for each of the first FINDINGS
    members, ``title: its first sentence not already in the summary``.
    """
    members = sorted(
        (facts[e] for e in community.entity_ids if e in facts), key=lambda f: (-degree.get(f.id, 0.0), f.id)
    )
    title = "・".join(m.title for m in members[:TITLE_ENTITIES])
    if len(members) > TITLE_ENTITIES:
        title += f" ほか{len(members) - TITLE_ENTITIES}件"
    summary = central_sentences(members)
    used = {s for s, _, _ in summary}
    findings, sources = [], list(summary)
    for member in members[:FINDINGS]:
        other = next((item for item in member.sentences if item[0] not in used), None)
        if other is None:
            continue
        used.add(other[0])
        sources.append(other)
        findings.append(f"{member.title}: {clip(other[0], FINDING_MAX_CHARS)}")
    return CommunityReport(
        id=community.id,
        level=community.level,
        title=title,
        summary=" ".join(clip(s, SUMMARY_MAX_CHARS) for s, _, _ in summary),
        rank=rank,
        findings=findings,
        chunk_ids=list(dict.fromkeys(c for _, c, _ in sources)),
        document_ids=list(dict.fromkeys(d for _, _, d in sources)),
        entity_ids=[m.id for m in members],
        kind="extractive",
    )
