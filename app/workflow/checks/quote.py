"""The quote that lets a person check an answer: the sentence of a context it was taken from.

The model writes the answer; the quote is found mechanically, never written by the model, so it is
always verbatim (up to whitespace): among the sentences (a CSV row's ``column:value`` lines count as
sentences) of the contexts given to the LLM, and each two neighbouring ones, the one holding the largest
share of the terms the answer adds to the question (app.text.keywords tokens, and each number with its
unit), one sentence before two, the question's terms breaking ties, and every number of the answer
stated in it or its context (app.text.normalize). A cited context is searched first. No span holding at
least half of those terms: no quote (the answer is then shown without one). Shown as
``根拠: 「…」[n]`` under the answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.text.keywords import KANJI, KATAKANA, query_tokens, sentence_spans, tokenize
from app.text.normalize import canonical
from app.workflow.checks.citations import without_citations
from app.workflow.checks.coverage import question_coverage
from app.workflow.checks.numbers import unsupported_numbers

MIN_SHARE = 0.5  # the quote holds at least this share of the answer's distinct terms
QUESTION_WEIGHT = 0.3  # the question's terms break ties between sentences holding the answer
MAX_QUOTE_CHARS = 200  # a longer sentence is cut (marked with …) around its best part


@dataclass(frozen=True)
class Quote:
    """A sentence of context ``number`` (1-based) that supports the answer, and how much of it."""

    number: int
    text: str
    share: float

    def line(self) -> str:
        """How it is shown under the answer."""
        return f"根拠: 「{self.text}」[{self.number}]"


# A number and the unit after it: a kanji or katakana (階, 日, 円, コア), not a particle, letter or sign.
_NUMBER_UNIT = re.compile(rf"[0-9]+[{KATAKANA}{KANJI}%％]")


def _terms(text: str) -> set[str]:
    """The keyword tokens of ``text`` (citations aside), its numbers and dates in one form first, and
    each number with the character after it (``3階``, ``25日``), so that ``3階`` is not quoted from
    ``3営業日``."""
    plain = canonical(without_citations(text or ""))
    return set(tokenize(plain)) | {m.lower() for m in _NUMBER_UNIT.findall(plain)}


def _numbers_stated(answer: str, sentence: str, context: str) -> bool:
    """Whether every number of ``answer`` is stated in ``sentence`` (or its whole context)."""
    return not unsupported_numbers(answer, [sentence]) or not unsupported_numbers(answer, [context])


def _cut(sentence: str, wanted: set[str]) -> str:
    """``sentence``, or its MAX_QUOTE_CHARS-long part with the most of ``wanted``, marked with …"""
    if len(sentence) <= MAX_QUOTE_CHARS:
        return sentence

    step = MAX_QUOTE_CHARS // 4
    starts = range(0, len(sentence) - MAX_QUOTE_CHARS + step, step)
    best = max(starts, key=lambda i: (len(wanted & set(tokenize(sentence[i : i + MAX_QUOTE_CHARS]))), -i))
    part = sentence[best : best + MAX_QUOTE_CHARS]
    return ("…" if best else "") + part + ("…" if best + MAX_QUOTE_CHARS < len(sentence) else "")


def _spans(context: str) -> list[tuple[str, set[str], int]]:
    """The sentences of ``context`` and each two neighbouring ones that fit MAX_QUOTE_CHARS, verbatim up
    to whitespace (what stands between them in ``context``, a line break or spaces, as one space), each
    with its terms and its number of sentences."""
    parts = [(context[start:end], start, end) for start, end in sentence_spans(context)]
    terms = [_terms(text) for text, _, _ in parts]
    pairs = [
        (a + (" " if b_start > a_end else "") + b, ta | tb, 2)  # only whitespace lies between two sentences
        for (a, _, a_end), (b, b_start, _), ta, tb in zip(parts, parts[1:], terms, terms[1:])
        if len(a) + len(b) < MAX_QUOTE_CHARS
    ]
    return [(text, t, 1) for (text, _, _), t in zip(parts, terms)] + pairs


def find_quote(answer: str, contexts: Sequence[str], query: str = "", cited: Sequence[int] = ()) -> Quote | None:
    """The sentence (or two neighbouring sentences, when together they hold more of the answer) of
    ``contexts`` that best supports ``answer`` (see the module docstring), or None. The answer's terms
    that the question already holds are left out of the count when the answer adds any."""
    asked = _terms(query)
    wanted = _terms(answer) - asked or _terms(answer)  # what the answer adds to the question
    if not wanted:
        return None
    order = [n for n in dict.fromkeys(cited) if 1 <= n <= len(contexts)]
    order += [n for n in range(1, len(contexts) + 1) if n not in order]
    best: tuple[float, int, int, int, str] | None = None
    for rank, number in enumerate(order):
        context = contexts[number - 1]
        for span, terms, size in _spans(context):
            share = len(wanted & terms) / len(wanted)
            if share < MIN_SHARE or not _numbers_stated(answer, span, context):
                continue
            # the answer's share decides, then one sentence before two; the question's terms break ties
            score = round(share, 6) + QUESTION_WEIGHT * (len(asked & terms) / len(asked) if asked else 0.0)
            key = (round(share, 6), -size, score, -rank, number, span)
            if best is None or key[:4] > best[:4]:
                best = key
    if best is None:
        return None
    return Quote(best[4], _cut(best[5], wanted), round(best[0], 3))


SHOWN_PREFIX = "資料の該当箇所: "
EVIDENCE_MIN_COVERAGE = 0.5  # share of the question's terms the passage must hold to be shown instead


def evidence_instead(query: str, contexts: Sequence[str], cited: Sequence[int], min_coverage: float) -> str | None:
    """When the model's answer fails a check: the cited passage (the first one if none is cited), cut around
    the question's terms and marked as a quote, ``資料の該当箇所: 「…」[n]``, if it holds at least
    ``min_coverage`` of the question's terms; None (refuse) when the evidence is weaker."""
    number = next((n for n in cited if 1 <= n <= len(contexts)), 1 if contexts else None)
    if number is None:
        return None
    passage = contexts[number - 1].strip()
    if not passage or question_coverage(query, [passage]) < min_coverage:
        return None
    return f"{SHOWN_PREFIX}「{_cut(passage, set(query_tokens(query)))}」[{number}]"
