"""The passages shown as soon as retrieval ends (「該当箇所」): for each of the top sources, the window of
whole sentences that holds the most of the question's terms, grown over the sentences after it (and then
before it) up to PASSAGE_CHARS — what answers follows what repeats the question — with the terms marked.

A person reading the right passage often has the answer before the model writes it; these are what
the page shows first, what MCP ``ask`` returns beside the answer, and what ``evaluate`` scores as
"the first passage shown". Pure functions of the question and the re-ranked chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from typing_extensions import TypedDict

from app.text.keywords import normalize_text, query_tokens, sentence_spans
from app.text.windows import PASSAGE_CHARS, widened

PASSAGE_SOURCES = 3  # sources shown


class Passage(TypedDict):
    """One shown passage: its source and document, the window's text, the question's terms in it as
    ``[start, end]`` offsets into ``text``, and, for a past version, the current one and its date."""

    source: str
    doc_id: str | None
    title: str
    text: str
    marks: list[list[int]]
    superseded_by: str | None
    effective: str | None


def normalized_with_map(text: str) -> tuple[str, list[int]]:
    """``normalize_text`` applied per character, with each output character's index in ``text`` (so a
    term found in the normalized text is marked in the original)."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        norm = normalize_text(ch)
        out.append(norm)
        where.extend([i] * len(norm))
    return "".join(out), where


def term_hits(text: str, terms: Sequence[str]) -> list[tuple[int, int, str]]:
    """Every occurrence of each term in ``text`` (compared normalized): ``(start, end, term)`` with
    offsets into ``text``, in order."""
    norm, where = normalized_with_map(text)
    hits = []
    for term in terms:
        at = norm.find(term)
        while at != -1:
            hits.append((where[at], where[at + len(term) - 1] + 1, term))
            at = norm.find(term, at + 1)
    return sorted(hits)


def merged(spans: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Overlapping or touching spans joined, in order: ``[(0, 2), (1, 3), (5, 6)]`` → ``[[0, 3], [5, 6]]``."""
    out: list[list[int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def best_window(text: str, terms: Sequence[str], width: int = PASSAGE_CHARS) -> tuple[tuple[int, int], int]:
    """``((start, end), score)``: the run of whole sentences of ``text``, at most ``width`` characters, holding
    the most distinct ``terms`` (the shortest, then the earliest, on a tie); a single sentence longer than ``width`` is cut
    to the ``width`` characters around its terms. The score is the number of distinct terms held."""
    hits = term_hits(text, terms)
    spans = sentence_spans(text) or [(0, len(text))]
    best, best_score = spans[0], -1
    for i, (start, _) in enumerate(spans):
        end = spans[i][1]
        for j in range(i, len(spans)):
            if j > i and spans[j][1] - start > width:
                break
            end = spans[j][1]
            score = len({t for s, e, t in hits if start <= s and e <= end})
            if score > best_score or (score == best_score and end - start < best[1] - best[0]):
                best, best_score = (start, end), score
    start, end = best
    if end - start > width:  # one long sentence: the width around its first terms
        inside = [s for s, e, _ in hits if start <= s and e <= end]
        first = inside[0] if inside else start
        start = max(start, min(first - width // 4, end - width))
        end = start + width
    return (start, end), max(best_score, 0)


def passage(doc: Document, query: str, width: int = PASSAGE_CHARS) -> tuple[Passage, int]:
    """The best window of one chunk, grown over the sentences around it (:func:`widened`), as a
    :class:`Passage`, and its score."""
    terms = query_tokens(query)
    window, score = best_window(doc.page_content, terms, width)
    start, end = widened(doc.page_content, window, width)
    text = doc.page_content[start:end]
    meta = doc.metadata
    marks = merged([(s, e) for s, e, _ in term_hits(text, terms)])
    return {
        "source": str(meta.get("source", "unknown")),
        "doc_id": meta.get("doc_id"),
        "title": str(meta.get("title") or ""),
        "text": text,
        "marks": marks,
        "superseded_by": meta.get("superseded_by"),
        "effective": meta.get("effective"),
    }, score


def passages(
    query: str, documents: Sequence[Document], n_sources: int = PASSAGE_SOURCES, width: int = PASSAGE_CHARS
) -> list[Passage]:
    """For each of the first ``n_sources`` sources among ``documents`` (ranked), the passage of its chunks
    that holds the most of the question's terms (its best-ranked chunk on a tie)."""
    best: dict[str, tuple[Passage, int]] = {}
    for doc in documents:
        source = str(doc.metadata.get("source", "unknown"))
        if source not in best and len(best) >= n_sources:
            continue
        found = passage(doc, query, width)
        if source not in best or found[1] > best[source][1]:
            best[source] = found
    return [found for found, _ in best.values()]


def for_json(shown: Sequence[Passage]) -> list[dict[str, Any]]:
    """Passages as plain dicts (what the page's ``sources`` event and MCP ``ask`` carry)."""
    return [dict(p) for p in shown]
