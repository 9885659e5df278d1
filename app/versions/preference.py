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
from app.versions.matching import MATCH, chunk_similarity, difference_note, matching_current, trigrams

__all__ = [
    "MATCH",
    "answer_version_notes",
    "asks_about_past",
    "asked_year",
    "chunk_similarity",
    "trigrams",
    "version_notes",
]

PAST_WORDS = re.compile(r"旧|以前|改定前|改訂前|過去|当時|前回|変更前|かつて|昔|previous|former|\bold\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?:年度?|(?!\d))")


def asked_year(query: str) -> int | None:
    """The year a question names (the first), era forms read: ``令和5年の手当`` → 2023; None without one."""
    m = _YEAR.search(canonical(query or ""))
    return int(m.group(1)) if m else None


def asks_about_past(query: str) -> bool:
    """Whether the question asks about a past version: a year, or 旧/以前/改定前/過去/当時 …"""
    return asked_year(query) is not None or bool(PAST_WORDS.search(query or ""))


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
    """The notes under an answer (app.versions.preference.version_notes): the sources shown that a later
    version supersedes (the past versions hidden from the model among them), which version is in force
    where the model read both and they differ, and, when the answer comes from a current version's
    passage whose hidden past version said otherwise, what it said (app.versions.matching.difference_note;
    not under an abstention)."""
    read = list(state.get("reranked_documents") or [])
    hidden = list(state.get("hidden_versions") or [])
    shown = set(state.get("cited_sources") or state.get("sources") or [])
    notes = version_notes([d for d in read if d.metadata.get("source") in shown] + hidden, read)
    answered_from = set(state.get("cited_sources") or [d.metadata.get("source") for d in read])
    for past in [] if state.get("abstained") else hidden:  # no answer: nothing it said to set against
        current = matching_current(past, read)
        if current is None or current.metadata.get("source") not in answered_from:
            continue
        note = difference_note(past, current)
        if note and note not in notes:
            notes.append(note)
    return notes
