"""What people met when they asked: each answer's timings as the asker saw them (:class:`AnswerClock`),
the outcome written with its audit row (:func:`answer_usage`), and the administrator's summary per day
(:func:`summarize`, pure over the audit rows of app.storage.usage) with its lines for the command line.

A refusal is an answer that abstained: 資料に記載がありません, or an answer withdrawn by a check (a
number or words no document states, a restated question, …). The 👎 share of a day is the share of
that day's answers that someone flagged 👎. Times run from the start of the answer's turn (after any
wait in line): to the passages shown first, to the first streamed token, to the whole answer; an
earlier answer given again has its lookup's time for all three.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

SLOWEST_SHOWN = 5
CITED_SHOWN = 10


@dataclass
class AnswerClock:
    """Seconds from the start of an answer's turn to its passages and to its first token, taken by
    wrapping the callbacks the workflow calls (the asker's own, or none)."""

    started: float = field(default_factory=time.perf_counter)
    passages_s: float | None = None
    first_token_s: float | None = None

    def elapsed(self) -> float:
        """Seconds since the turn started."""
        return time.perf_counter() - self.started

    def on_passages(self, then: Callable[[list[dict]], None] | None) -> Callable[[list[dict]], None]:
        """A passages callback that notes the first call's time, then calls ``then`` (if any)."""

        def noted(shown: list[dict]) -> None:
            if self.passages_s is None:
                self.passages_s = self.elapsed()
            if then is not None:
                then(shown)

        return noted

    def on_token(self, then: Callable[[str], None] | None) -> Callable[[str], None]:
        """A token callback that notes the first piece's time, then calls ``then`` (if any)."""

        def noted(piece: str) -> None:
            if self.first_token_s is None:
                self.first_token_s = self.elapsed()
            if then is not None:
                then(piece)

        return noted


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


def answer_usage(result: Mapping[str, Any], clock: AnswerClock | None = None, cached_s: float | None = None) -> dict:
    """An answer's audit columns (app.storage.users.AUDIT_ANSWER_FIELDS): its kept ID, why it abstained
    (None: it answered), whether it was given again (``cached_s``: the lookup's seconds, used for all three
    times), its cited sources and its milliseconds to the passages, the first token and the end."""
    if cached_s is not None:
        passages = first = total = cached_s
    else:
        clock = clock or AnswerClock()
        passages, first, total = clock.passages_s, clock.first_token_s, clock.elapsed()
    return {
        "answer_id": result.get("answer_id"),
        "abstained": result.get("abstained") or None,
        "cached": cached_s is not None,
        "cited": [str(s) for s in result.get("cited_sources") or []],
        "passages_ms": _ms(passages),
        "first_token_ms": _ms(first),
        "total_ms": _ms(total),
    }


@dataclass(frozen=True)
class Day:
    """One day's answers (or the window's, with ``day`` None): how many, how many abstained, how many
    were flagged 👎, and the median milliseconds to the passages and to the first token."""

    day: date | None
    questions: int
    refusals: int
    flagged: int
    passages_ms: int | None
    first_token_ms: int | None

    @property
    def flagged_share(self) -> float | None:
        """The share of the answers flagged 👎 (None without answers)."""
        return self.flagged / self.questions if self.questions else None


@dataclass(frozen=True)
class SlowAnswer:
    """One of the slowest answers: when, where, its times, and its question (None unless stored)."""

    at: datetime
    surface: str
    total_ms: int
    first_token_ms: int | None
    question: str | None


@dataclass(frozen=True)
class Usage:
    """The summary of a window of days: ``days`` (every day, oldest first, empty ones too), ``total``,
    the slowest answers, the documents most cited (document, answers citing it) and never cited."""

    days: tuple[Day, ...]
    total: Day
    slowest: tuple[SlowAnswer, ...]
    most_cited: tuple[tuple[str, int], ...]
    never_cited: tuple[str, ...]


def document_of(source: str, doc_ids: Iterable[str]) -> str:
    """The stored document a source belongs to: the document whose ID, or whose file name (a source is
    named by its file's name: ``faq.csv:r2`` of ``csv/faq.csv``), is the source itself or is followed in it
    by ``:`` (page, row, slide), ``#`` (section) or ``!`` (sheet), the longest such name winning; the source
    itself when none is (a document since removed) or when two documents of one name both are (not ours
    to choose)."""
    found: dict[int, set[str]] = {}
    for doc_id in doc_ids:
        for name in dict.fromkeys((doc_id, doc_id.rsplit("/", 1)[-1])):
            if source == name or (source.startswith(name) and source[len(name)] in ":#!"):
                found.setdefault(len(name), set()).add(doc_id)
    if not found:
        return source
    best = found[max(found)]
    return next(iter(best)) if len(best) == 1 else source


def _median(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present)) if present else None


def _day_of(rows: Sequence[Mapping[str, Any]], day: date | None, flagged_ids: set[str]) -> Day:
    return Day(
        day=day,
        questions=len(rows),
        refusals=sum(1 for r in rows if r.get("abstained")),
        flagged=sum(1 for r in rows if r.get("answer_id") and r["answer_id"] in flagged_ids),
        passages_ms=_median(r.get("passages_ms") for r in rows),
        first_token_ms=_median(r.get("first_token_ms") for r in rows),
    )


def summarize(
    rows: Sequence[Mapping[str, Any]],
    flagged_ids: Iterable[str],
    doc_ids: Iterable[str],
    today: date,
    days: int,
    tz: tzinfo | None = None,
    slowest: int = SLOWEST_SHOWN,
    cited: int = CITED_SHOWN,
) -> Usage:
    """The summary of the answers' audit rows (at, surface, answer_id, abstained, cited, passages_ms,
    first_token_ms, total_ms, question) over the ``days`` days ending ``today`` (days in ``tz``; None: the
    machine's): per day and in all, the slowest answers (ties: the earlier first), the stored documents
    (``doc_ids``) most cited, by how many answers, and never cited. ``flagged_ids``: answers flagged 👎."""
    flagged = set(flagged_ids)
    docs = sorted(set(doc_ids))
    first = today - timedelta(days=days - 1)
    kept = [r for r in rows if first <= r["at"].astimezone(tz).date() <= today]
    by_day: dict[date, list[Mapping[str, Any]]] = {first + timedelta(days=i): [] for i in range(days)}
    for row in kept:
        by_day[row["at"].astimezone(tz).date()].append(row)
    timed = [r for r in kept if r.get("total_ms") is not None]
    timed.sort(key=lambda r: (-r["total_ms"], r["at"]))
    counts = Counter(d for r in kept for d in {document_of(s, docs) for s in r.get("cited") or []})
    return Usage(
        days=tuple(_day_of(day_rows, day, flagged) for day, day_rows in by_day.items()),
        total=_day_of(kept, None, flagged),
        slowest=tuple(
            SlowAnswer(r["at"], r.get("surface") or "", r["total_ms"], r.get("first_token_ms"), r.get("question"))
            for r in timed[:slowest]
        ),
        most_cited=tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:cited]),
        never_cited=tuple(d for d in docs if d not in counts),
    )


def share_text(share: float | None) -> str:
    """A share as the page and the command line show it: ``33%``, ``-`` without answers."""
    return "-" if share is None else f"{round(share * 100)}%"


def ms_text(ms: int | None) -> str:
    """Milliseconds as shown: ``1,234 ms``, ``-`` when unknown."""
    return "-" if ms is None else f"{ms:,} ms"


DAY_COLUMNS = ("日付", "質問", "回答なし", "👎", "👎の割合", "出典まで（中央値）", "最初の文字まで（中央値）")


def day_cells(day: Day) -> tuple[str, ...]:
    """One row of the per-day table (:data:`DAY_COLUMNS`); the window's total is named 合計."""
    return (
        "合計" if day.day is None else day.day.isoformat(),
        str(day.questions),
        str(day.refusals),
        str(day.flagged),
        share_text(day.flagged_share),
        ms_text(day.passages_ms),
        ms_text(day.first_token_ms),
    )


def summary_lines(
    usage: Usage, flagged_questions: Sequence[Mapping[str, Any]], show_questions: bool, tz: tzinfo | None = None
) -> list[str]:
    """The summary as tab-separated lines for the command line: the days with answers (newest first) and
    the total, the slowest answers (times in ``tz``; None: the machine's), the most and never cited
    documents, the most flagged questions (their text only when ``show_questions``: AUDIT_LOG_QUESTIONS)."""
    lines = ["\t".join(DAY_COLUMNS)]
    lines += ["\t".join(day_cells(d)) for d in reversed(usage.days) if d.questions]
    lines.append("\t".join(day_cells(usage.total)))
    lines.append("")
    lines.append("slowest answers:")
    for slow in usage.slowest:
        question = f"\t{slow.question}" if slow.question else ""
        lines.append(
            f"  {slow.at.astimezone(tz):%Y-%m-%d %H:%M}\t{slow.surface}\t{ms_text(slow.total_ms)}"
            f"\tfirst token {ms_text(slow.first_token_ms)}{question}"
        )
    lines.append("most cited documents:")
    lines += [f"  {count}\t{doc}" for doc, count in usage.most_cited]
    lines.append(f"never cited ({len(usage.never_cited)}):")
    lines += [f"  {doc}" for doc in usage.never_cited]
    lines.append("most flagged questions:")
    for row in flagged_questions:
        text = row["question"] if show_questions else "(question not stored: AUDIT_LOG_QUESTIONS=0)"
        lines.append(f"  👎 {row['flagged']}\t👍 {row['helpful']}\t{text}")
    return lines
