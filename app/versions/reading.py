"""Which versions the model reads, and what a hidden past version said otherwise: pure functions over the
retrieved ``Document``s and their version metadata (``doc_id``, ``superseded_by``, ``effective``; set by
app.retrieval.search.with_versions).

A chunk of a past version is **hidden** from the model when a chunk of its current version among the
candidates **matches** it (app.versions.matching: the same section, or texts alike by character trigrams),
unless the question asks about the past (:func:`reads_past`: 旧, 以前, 改定前 …, or a year or date on
which the past version was in force). Its place among the contexts goes to the matching current chunk
(when that one ranked lower) or to the next candidate that holds enough of the question (:func:`split_read`;
an unrelated chunk is passed over and the model reads fewer). The hidden chunk is still a
source, with its version note, and where the two versions state other numbers, amounts or dates, the
note says what the past version said (app.versions.matching.difference_note, app.versions.preference).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from langchain_core.documents import Document

from app.text.keywords import query_tokens, tokenize
from app.text.normalize import canonical
from app.versions.matching import matching_current
from app.versions.preference import PAST_WORDS, asked_year

__all__ = ["RELEVANT_SHARE", "asked_date", "question_share", "reads_past", "split_read"]

# Once a past chunk is hidden, a later candidate is read only when it holds at least this share of the question's
# keywords that the best chunk read holds: beside a short current passage, one unrelated chunk (an FAQ row about
# another fee, a helpdesk section) made the 1.5B model refuse (docs/evaluation.md, issue 51).
RELEVANT_SHARE = 0.5

_DATE = re.compile(r"((?:19|20)\d{2})年(\d{1,2})月(?:(\d{1,2})日)?")


def asked_date(query: str) -> date | None:
    """The day a question asks about: a date it names (``2024年3月1日``, ``令和6年3月1日``), the last day of
    a month (``2024年3月``) or of a year (``2023年``, ``2023年度``) it names; None without one."""
    text = canonical(query or "")
    m = _DATE.search(text)
    if m:
        year, month, day = int(m.group(1)), int(m.group(2)), m.group(3)
        try:
            if day:
                return date(year, month, int(day))
            following = date(year + month // 12, month % 12 + 1, 1)
            return date.fromordinal(following.toordinal() - 1)
        except ValueError:
            return None
    year = asked_year(query)
    return date(year, 12, 31) if year else None


def _day(value: object) -> date | None:
    try:
        return date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def reads_past(query: str, past: Document, current: Document) -> bool:
    """Whether the model reads ``past`` beside its current version ``current``: the question says 旧, 以前,
    改定前, 過去 … or names a day (:func:`asked_date`) on which ``past`` was in force (on or after its
    effective date, when known, and before ``current``'s; a current version of unknown date: read)."""
    if PAST_WORDS.search(query or ""):
        return True
    day = asked_date(query)
    if day is None:
        return False
    since, until = _day(past.metadata.get("effective")), _day(current.metadata.get("effective"))
    if until is None:
        return True
    return (since is None or since <= day) and day < until


def question_share(query: str, doc: Document) -> float:
    """Share of ``query``'s distinct keyword tokens (app.text.keywords bigrams) that ``doc``'s text holds: the
    question coverage of app.workflow.checks.coverage for one chunk; 1.0 for a question without tokens."""
    wanted = set(query_tokens(query))
    if not wanted:
        return 1.0
    return len(wanted & set(tokenize(doc.page_content))) / len(wanted)


def split_read(query: str, docs: Sequence[Document], top_k: int) -> tuple[list[Document], list[Document]]:
    """``(read, hidden)``: at most ``top_k`` chunks of ``docs`` (best first) the model reads, and the past
    versions' chunks hidden from it on the way. A past chunk is hidden when a chunk of its current version
    among ``docs`` matches it (:func:`matching_current`) and the question does not ask about it
    (:func:`reads_past`); the matching chunk takes its place when not read yet, else the next candidate
    does. Once a chunk is hidden, a chunk (a later candidate or a match) is read only when its
    :func:`question_share` is at least RELEVANT_SHARE of the best one read so far; the others are passed
    over, and the model may read fewer than ``top_k``. Without past versions among ``docs``: ``(docs[:top_k], [])``."""
    read: list[Document] = []
    hidden: list[Document] = []

    def relevant(doc: Document) -> bool:
        if not hidden or not read:
            return True
        return question_share(query, doc) >= RELEVANT_SHARE * max(question_share(query, r) for r in read)

    for doc in docs:
        if len(read) >= top_k:
            break
        if any(doc is r for r in read):
            continue
        match = matching_current(doc, docs)
        if match is not None and not reads_past(query, doc, match):
            hidden.append(doc)
            if not any(match is r for r in read) and relevant(match):
                read.append(match)
        elif relevant(doc):
            read.append(doc)
    return read, hidden
