"""Local search (seed 001): from the question to entities, and from them to a token-budgeted context.

:func:`map_query_to_entities` takes the entities *named* in the question (their normalized name
occurs in it, longest first), then those whose description embedding is nearest the question
(oversampled ×2, as GraphRAG does). Measured on the sample set: fusing the two by RRF let
look-alike entities (ミナトクラウド for ミナトVPN) push the named one's chunks out. :class:`LocalContextBuilder` then spends the
token budget like GraphRAG's ``LocalSearchMixedContext``: community reports of those entities
(GRAPH_COMMUNITY_PROP, 15 %), the chunks that name them (GRAPH_TEXT_UNIT_PROP, 50 %), entities and
relationships the rest (relationships among the chosen entities first, then to outside entities
linked to several chosen ones, at most TOP_RELATIONSHIPS per entity). Tables are ``|``-delimited
with IDs, which keeps every line traceable; tokens are counted with the LLM's own tokenizer.
The chunks go to the LLM as numbered, citable contexts; the tables as the knowledge before them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.storage.graphrag_types import CommunityReport, ContextResult, Entity, Relationship, TextUnit

TOP_RELATIONSHIPS = 10  # per entity (GraphRAG's top_k_relationships)
DESCRIPTION_CHARS = 80  # an entity's description in the table
NO_ENTITIES_ANSWER = "資料に記載がありません（質問に関係するエンティティが見つかりません）"


def map_query_to_entities(named: Sequence[Entity], similar: Sequence[Entity], top_k: int) -> list[Entity]:
    """The ``top_k`` entities for a question: those it names first (a name in the question is the
    strongest sign there is), then those nearest it by meaning, in their order."""
    chosen = list({e.id: e for e in [*named, *similar]}.values())
    return chosen[:top_k]


def select_relationships(
    entities: Sequence[Entity], relationships: Sequence[Relationship], per_entity: int = TOP_RELATIONSHIPS
) -> list[Relationship]:
    """Relationships among ``entities`` first (heaviest first), then links to outside entities:
    those linked to more chosen entities first, then by weight; at most ``per_entity`` × len(entities)."""
    chosen = {e.id for e in entities}
    inside = sorted(
        (r for r in relationships if r.source in chosen and r.target in chosen), key=lambda r: (-(r.weight or 0), r.id)
    )
    outside = [r for r in relationships if (r.source in chosen) != (r.target in chosen)]
    links: dict[str, int] = {}
    for r in outside:
        other = r.target if r.source in chosen else r.source
        links[other] = links.get(other, 0) + 1
    outside.sort(key=lambda r: (-links[r.target if r.source in chosen else r.source], -(r.weight or 0), r.id))
    unique = list({r.id: r for r in [*inside, *outside]}.values())
    return unique[: per_entity * max(1, len(entities))]


def order_text_units(entities: Sequence[Entity], units: Sequence[TextUnit]) -> list[TextUnit]:
    """Chunks in entity order (those naming the first entity first), then by how many chosen
    entities they name, then chunk ID."""
    position = {e.id: i for i, e in enumerate(entities)}

    def key(unit: TextUnit):
        ranks = [position[e] for e in unit.entity_ids if e in position]
        return (min(ranks) if ranks else len(position), -len(ranks), unit.id)

    return sorted(units, key=key)


def order_reports(entities: Sequence[Entity], reports: Sequence[CommunityReport]) -> list[CommunityReport]:
    """Reports of the chosen entities' communities: those holding more of them first, then by rank."""
    chosen = {e.id for e in entities}
    return sorted(reports, key=lambda r: (-len(chosen & set(r.entity_ids)), -r.rank, r.id))


def _cell(text: object) -> str:
    return " ".join(str(text).replace("|", "/").split())


def _short(text: str | None, limit: int = DESCRIPTION_CHARS) -> str:
    text = _cell(text or "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Section:
    """One table of the context: a title line, a header, rows."""

    title: str
    header: str
    rows: list[str]

    def text(self) -> str:
        return "\n".join([f"-----{self.title}-----", self.header, *self.rows]) if self.rows else ""


def fill(
    title: str, header: str, rows: Sequence[str], count_tokens: Callable[[str], int], budget: int
) -> tuple[Section, int]:
    """A section with as many ``rows`` (in order) as fit ``budget`` tokens; (section, tokens used)."""
    section = Section(title, header, [])
    for row in rows:
        trial = Section(title, header, section.rows + [row])
        if count_tokens(trial.text()) > budget:
            break
        section = trial
    return section, count_tokens(section.text()) if section.rows else 0


@dataclass
class LocalContextBuilder:
    """Builds the local search context within ``max_tokens`` (seed 001's ``build_context``), with at
    most ``max_text_units`` chunks (a small model answers worse from many)."""

    count_tokens: Callable[[str], int]
    community_prop: float = 0.15
    text_unit_prop: float = 0.5
    max_text_units: int = 1000

    def build_context(
        self,
        query: str,
        entities: Sequence[Entity],
        relationships: Sequence[Relationship],
        text_units: Sequence[TextUnit] | None = None,
        max_tokens: int = 8000,
        reports: Sequence[CommunityReport] = (),
    ) -> ContextResult:
        """Reports, entity and relationship tables, and the text units, each within its share of
        ``max_tokens``; what a section does not use goes to the next (reports → entities and
        relationships → text units). Too long a context is cut, never refused (seed 001)."""
        count = self.count_tokens
        report_rows = [f"{r.id}|{_cell(r.title)}|{_short(r.summary, 240)}" for r in order_reports(entities, reports)]
        report_section, used_reports = fill(
            "Reports", "id|title|content", report_rows, count, int(max_tokens * self.community_prop)
        )
        degree = {e.id: int(e.attributes.get("degree", 0)) for e in entities}
        entity_rows = [f"{e.id}|{_cell(e.title)}|{_short(e.description)}|{degree[e.id]}" for e in entities]
        graph_budget = (
            int(max_tokens * (1 - self.community_prop - self.text_unit_prop))
            + int(max_tokens * self.community_prop)
            - used_reports
        )
        entity_section, used_entities = fill(
            "Entities", "id|entity|description|number of relationships", entity_rows, count, graph_budget
        )
        shown = {row.split("|", 1)[0] for row in entity_section.rows}
        titles = {e.id: e.title for e in entities}
        chosen_rel = select_relationships([e for e in entities if e.id in shown], relationships)
        rel_rows = [
            f"{r.id}|{_cell(titles.get(r.source, r.attributes.get('source_title', r.source)))}|"
            f"{_cell(titles.get(r.target, r.attributes.get('target_title', r.target)))}|"
            f"{_short(r.description)}|{r.weight:g}"
            for r in chosen_rel
        ]
        rel_section, used_rel = fill(
            "Relationships", "id|source|target|description|weight", rel_rows, count, graph_budget - used_entities
        )
        unit_budget = max_tokens - used_reports - used_entities - used_rel
        units, used_units = self.fit_units(
            order_text_units(entities, text_units or [])[: self.max_text_units], unit_budget
        )
        kept_rel = {row.split("|", 1)[0] for row in rel_section.rows}
        kept_reports = {row.split("|", 1)[0] for row in report_section.rows}
        text = "\n\n".join(s.text() for s in (report_section, entity_section, rel_section) if s.rows)
        return ContextResult(
            context_text=text,
            entities_used=[e for e in entities if e.id in shown],
            relationships_used=[r for r in chosen_rel if r.id in kept_rel],
            text_units_used=units,
            total_tokens=used_reports + used_entities + used_rel + used_units,
            reports_used=[r for r in reports if r.id in kept_reports],
            section_tokens={
                "reports": used_reports,
                "entities": used_entities,
                "relationships": used_rel,
                "text_units": used_units,
            },
        )

    def fit_units(self, units: Sequence[TextUnit], budget: int) -> tuple[list[TextUnit], int]:
        """The first ``units`` that fit ``budget`` tokens; the first that does not is cut to fit
        (when at least 40 characters of it fit), the rest dropped."""
        from dataclasses import replace

        kept: list[TextUnit] = []
        used = 0
        for unit in units:
            cost = self.count_tokens(unit.text)
            if used + cost <= budget:
                kept.append(unit)
                used += cost
                continue
            text = unit.text
            while len(text) > 40 and self.count_tokens(text) > budget - used:
                text = text[: int(len(text) * 0.8)]
            if len(text) > 40:
                kept.append(replace(unit, text=text))
                used += self.count_tokens(text)
            break
        return kept, used
