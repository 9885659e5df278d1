"""Evaluation metrics (§4.10): pure functions, no I/O.

Keyword matching is fair to Japanese: both the answer and the keyword are
NFKC-normalized (full-width ＡＢＣ１２３ → ABC123, half-width ｶﾅ → カナ), case-folded
and stripped of whitespace before the containment test, so "９時" matches "9時"
and "API キー" matches "APIキー".
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from app.text.normalize import contains


def normalize(text: str | None) -> str:
    """NFKC-normalize, case-fold and drop all whitespace (for keyword matching)."""
    if not text:
        return ""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(folded.split())


def _source_of(item: Any) -> str | None:
    """The source ID of a search result: a str, a dict with 'source', or a Document."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        return item.get("source")
    metadata = getattr(item, "metadata", None)
    return metadata.get("source") if isinstance(metadata, dict) else None


def retrieval_at_k(results: Iterable[Any] | None, expected_source: str) -> bool:
    """True if ``expected_source`` is among the results' source IDs (exact match)."""
    return any(_source_of(item) == expected_source for item in (results or []))


def found_keywords(answer: str | None, expected_keywords: Sequence[str] | None) -> list[str]:
    """The keywords that occur in ``answer`` (app.text.normalize.contains: after normalization, with dates,
    digits, thousands separators, ranges and counted kanji numerals in one form, so "2002-07-19" is
    found in "2002年7月19日" and "1,200円" in "1200円"; a keyword number is not found inside a longer
    number: "12" is not in "2012"); blank keywords are never found."""
    return [k for k in (expected_keywords or []) if normalize(k) and contains(answer, k)]


def faithfulness(answer: str | None, expected_keywords: Sequence[str] | None) -> float:
    """Share of expected keywords found in the answer, 0.0–1.0; 1.0 when there are none."""
    if not expected_keywords:
        return 1.0
    return len(found_keywords(answer, expected_keywords)) / len(expected_keywords)


def coverage(answer: str | None, expected_keywords: Sequence[str] | None) -> float:
    """Overview questions: the share of the keywords expected across the corpus that the answer
    holds, 0.0–1.0 (the same count as :func:`faithfulness`, named for what it measures there)."""
    return faithfulness(answer, expected_keywords)


def source_recall(sources: Sequence[str] | None, expected_files: Sequence[str] | None) -> float:
    """Share of ``expected_files`` (``faq.csv``) that some source (``faq.csv:r2``, ``guide.md#vpn``)
    comes from; 1.0 when none is expected."""
    if not expected_files:
        return 1.0
    files = {str(s).split("#", 1)[0].rsplit(":", 1)[0] for s in sources or []}
    return sum(f in files for f in expected_files) / len(expected_files)


def exact_match(answer: str | None, expected_keywords: Sequence[str] | None) -> bool:
    """True if every expected keyword is in the answer; True when there are none."""
    if not expected_keywords:
        return True
    return len(found_keywords(answer, expected_keywords)) == len(expected_keywords)


def measure_latency(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """Call ``func(*args, **kwargs)``; return (its result, elapsed seconds)."""
    start = time.perf_counter()
    result = func(*args, **kwargs)
    return result, time.perf_counter() - start


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean; 0.0 for no values."""
    return sum(values) / len(values) if values else 0.0
