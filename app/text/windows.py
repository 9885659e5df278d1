"""Sentence windows, cut in one place: a sentence with its neighbours, verbatim from a text. The evidence
stage (app.workflow.evidence.windows) scores :func:`candidate_windows`, the long-source step
(app.workflow.long_source) picks among :func:`sentence_windows`, and the passages shown first
(app.workflow.passages) grow a window over whole sentences with :func:`widened`; all three cut at
:func:`app.text.keywords.sentence_spans`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.text.keywords import sentence_spans

WHOLE_CHUNK_CHARS = 320  # a chunk this short is one window (a table row keeps its header lines)
NEIGHBOURS = 1  # sentences on each side of the one a window is centred on
PASSAGE_CHARS = 240  # a passage shown first: at most this many characters (whole sentences; one longer sentence is cut)
# the spans tried around each sentence, widest first: (sentences before, sentences after)
WIDTHS = ((1, 1), (0, 1), (1, 0), (0, 0))


@dataclass(frozen=True)
class Window:
    """A verbatim passage of candidate ``candidate`` (0-based rank): its units ``start``–``end`` (exclusive)."""

    source: str
    text: str
    candidate: int
    start: int
    end: int
    score: float = 0.0


def unit_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of ``text``'s sentences (app.text.keywords.sentences), found in order; the whole
    text as one unit when it is at most WHOLE_CHUNK_CHARS long."""
    stripped = text.strip()
    if not stripped:
        return []
    if len(stripped) <= WHOLE_CHUNK_CHARS:
        start = text.index(stripped)
        return [(start, start + len(stripped))]
    return sentence_spans(text)


def candidate_windows(documents: Sequence[Any]) -> list[Window]:
    """Every window of every candidate (unscored): one per unit, with NEIGHBOURS units each side."""
    windows = []
    for rank, doc in enumerate(documents):
        text, source = doc.page_content, str(doc.metadata.get("source", "unknown"))
        spans = unit_spans(text)
        for i in range(len(spans)):
            lo, hi = max(0, i - NEIGHBOURS), min(len(spans), i + NEIGHBOURS + 1)
            windows.append(Window(source, text[spans[lo][0] : spans[hi - 1][1]], rank, lo, hi))
    return windows


def sentence_windows(runs: Sequence[str], max_chars: int) -> list[tuple[Window, str]]:
    """One window per sentence of ``runs``, with that sentence: the sentence with a neighbour on each side,
    else the next one, else the one before, else alone — the widest that is at most ``max_chars``
    characters (a sentence longer than that gives none; a window two sentences give is kept once, with
    the first). ``candidate`` is the run's index, ``start``/``end`` its sentences."""
    windows: dict[tuple[int, int, int], tuple[Window, str]] = {}
    for run_index, run in enumerate(runs):
        spans = sentence_spans(run)
        for i, (start, end) in enumerate(spans):
            for before, after in WIDTHS:
                lo, hi = max(0, i - before), min(len(spans), i + after + 1)
                text = run[spans[lo][0] : spans[hi - 1][1]]
                if len(text) <= max_chars:
                    windows.setdefault((run_index, lo, hi), (Window("", text, run_index, lo, hi), run[start:end]))
                    break
    return list(windows.values())


def widened(text: str, window: tuple[int, int], width: int = PASSAGE_CHARS) -> tuple[int, int]:
    """The window grown by whole sentences up to ``width`` characters: first the sentences after it (what
    answers a line that repeats the question: a row's 回答 cell after its 質問, a rule after its heading
    sentence), then those before it. A window already ``width`` long, or longer, is kept."""
    start, end = window
    spans = sentence_spans(text) or [(0, len(text))]
    for s, e in spans:  # forward, in order
        if s >= end and e - start <= width:
            end = e
        elif s >= end:
            break
    for s, e in reversed(spans):  # backward, nearest first
        if e <= start and end - s <= width:
            start = s
        elif e <= start:
            break
    return start, end
