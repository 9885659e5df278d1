"""Which version a question asks about, and the notes shown with an answer read from a past version:
pure functions over questions and retrieved ``Document`` metadata (``superseded_by``, ``effective``).

A question asks about the past when it names a year (``2023年``, ``令和5年度``, ``2023``: the version
in force that year is wanted) or says 旧, 以前, 改定前, 改訂前, 過去, 当時, 前回, 変更前 (any past version
may answer: retrieval keeps its own order).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from langchain_core.documents import Document

from app.text.normalize import canonical, numbers

__all__ = ["MATCH", "asks_about_past", "asked_year", "chunk_similarity", "version_notes"]

PAST_WORDS = re.compile(r"旧|以前|改定前|改訂前|過去|当時|前回|変更前|かつて|昔|previous|former|\bold\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?:年度?|(?!\d))")
MATCH = 0.4  # two chunks alike enough (character trigrams, Jaccard) to be one passage's versions


def asked_year(query: str) -> int | None:
    """The year a question names (the first), era forms read: ``令和5年の手当`` → 2023; None without one."""
    m = _YEAR.search(canonical(query or ""))
    return int(m.group(1)) if m else None


def asks_about_past(query: str) -> bool:
    """Whether the question asks about a past version: a year, or 旧/以前/改定前/過去/当時 …"""
    return asked_year(query) is not None or bool(PAST_WORDS.search(query or ""))


def trigrams(text: str) -> set[str]:
    """The character trigrams of ``text`` (whitespace dropped)."""
    flat = re.sub(r"\s+", "", text or "")
    return {flat[i : i + 3] for i in range(max(len(flat) - 2, 1))}


def chunk_similarity(a: str, b: str) -> float:
    """The Jaccard similarity of two texts' character trigrams (whitespace dropped)."""
    x, y = trigrams(a), trigrams(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def _when(doc: Document) -> str:
    effective = doc.metadata.get("effective")
    return f"{effective} 時点の" if effective else ""


def version_notes(shown: Sequence[Document], read: Sequence[Document] = ()) -> list[str]:
    """One line per source in ``shown`` (the sources an answer shows, best first) that a later version
    supersedes, naming the version in force; and, when a past version among ``read`` (what the model
    read) states other numbers than its current version's matching passage among them, which is in force."""
    notes: list[str] = []
    seen: set[str] = set()
    for doc in shown:
        current, source = doc.metadata.get("superseded_by"), doc.metadata.get("source", "")
        if current and source not in seen:
            seen.add(source)
            notes.append(f"{source} は {_when(doc)}旧版です。現行版は {current} です。")
    for past in read:
        current = past.metadata.get("superseded_by")
        if not current:
            continue
        matches = [d for d in read if d.metadata.get("doc_id") == current]
        best = max(matches, key=lambda d: chunk_similarity(d.page_content, past.page_content), default=None)
        if best is None or chunk_similarity(best.page_content, past.page_content) < MATCH:
            continue
        if numbers(best.page_content) != numbers(past.page_content):
            line = (
                f"現行版 {current}（{best.metadata.get('effective') or '日付不明'}）と旧版 "
                f"{past.metadata.get('doc_id', past.metadata.get('source', ''))}（{past.metadata.get('effective') or '日付不明'}）"
                f"で記載が異なります。適用されるのは現行版 {best.metadata.get('source', current)} の記載です。"
            )
            if line not in notes:
                notes.append(line)
    return notes


def in_force_on(effective: str | None, year: int) -> bool:
    """Whether a version effective on ``effective`` (ISO date) was already in force during ``year``."""
    if not effective:
        return False
    try:
        return date.fromisoformat(str(effective)) <= date(year, 12, 31)
    except ValueError:
        return False


def source_versions(state: Mapping) -> list[dict]:
    """Each of the state's sources with its document's version, as the retrieved chunks carry it
    (app.retrieval.search.current_first): ``{"source", "doc_id", "effective", "superseded_by"}``."""
    by_source: dict[str, Any] = {}
    for doc in [*(state.get("reranked_documents") or []), *(state.get("documents") or [])]:
        by_source.setdefault(str(doc.metadata.get("source", "unknown")), doc.metadata)
    return [
        {
            "source": source,
            "doc_id": by_source.get(source, {}).get("doc_id"),
            "effective": by_source.get(source, {}).get("effective"),
            "superseded_by": by_source.get(source, {}).get("superseded_by"),
        }
        for source in state.get("sources") or []
    ]


def answer_version_notes(state: Mapping) -> list[str]:
    """The notes under an answer that read a past version (app.versions.preference.version_notes): the
    sources shown that a later version supersedes, and which version is in force where they differ."""
    read = list(state.get("reranked_documents") or [])
    shown = set(state.get("cited_sources") or state.get("sources") or [])
    return version_notes([d for d in read if d.metadata.get("source") in shown], read)
