"""When two chunks are one passage's versions, and what a past version says otherwise: pure functions
over chunk texts and the ``source`` of retrieved ``Document``s (app.versions.preference moves past versions
below their current passage with them, app.versions.reading hides them from the model).

Two chunks match when they are the same piece of the same section (the source after ``#``: a Markdown,
Word or HTML heading's slug, its number dropped; the piece's ``chunk_index``) or their texts are alike (character trigrams, Jaccard at least ``MATCH``). What a past
version says otherwise is read from the texts, never from the model: the dates and numbers it states with
a unit the current passage also states, but with other values (``30,000円`` against ``50,000円``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from langchain_core.documents import Document

from app.text.normalize import canonical

__all__ = [
    "MATCH",
    "chunk_similarity",
    "difference_note",
    "matching_current",
    "same_passage",
    "section_name",
    "section_of",
    "trigrams",
    "value_tokens",
]

MATCH = 0.4  # two chunks alike enough (character trigrams, Jaccard) to be one passage's versions

# A number with its unit, as written: the unit pairs the values of two versions (an amount with an
# amount, a period with a period); dates first, so that a date's parts are not read as numbers.
_VALUE = re.compile(
    r"(?P<date>(?:(?:19|20)\d{2}|(?:令和|平成|昭和)(?:\d{1,2}|元))年\d{1,2}月(?:\d{1,2}日)?"
    r"|(?:19|20)\d{2}[-/.]\d{1,2}[-/.]\d{1,2})"
    r"|(?<![\d.,])(?P<number>\d+(?:,\d{3})*(?:\.\d+)?)\s?"
    r"(?P<unit>万円|円|万|％|%|営業日|日間|日|か月|ヶ月|カ月|箇月|週間|年間|年|時間|分|秒|人|名|回|件|歳|割|倍|点|個|台|MB|GB|KB|kB|MiB|GiB|KiB)?"
)
_NUMBERING = re.compile(r"^(?:\d+[-.]?)+-?|^第\d+[条章節項款]-?")  # a heading's number, as its slug writes it
MAX_VALUES = 3  # values named per version in one note; more are "…"


def trigrams(text: str) -> set[str]:
    """The character trigrams of ``text`` (whitespace dropped)."""
    flat = re.sub(r"\s+", "", text or "")
    return {flat[i : i + 3] for i in range(max(len(flat) - 2, 1))}


def chunk_similarity(a: str, b: str) -> float:
    """The Jaccard similarity of two texts' character trigrams (whitespace dropped)."""
    x, y = trigrams(a), trigrams(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def section_of(doc: Document) -> str | None:
    """The section a chunk's source names after ``#`` (``規程.md#資格取得奨励金`` → ``資格取得奨励金``);
    None for a source without one (a PDF page, a CSV row, a file with no heading)."""
    source = str(doc.metadata.get("source") or "")
    return source.split("#", 1)[1] if "#" in source else None


def section_name(section: str) -> str:
    """A section's slug without its number, which a revision shifts (``213-永遠のアップグレード人生`` →
    ``永遠のアップグレード人生``, ``第3条在宅勤務手当`` → ``在宅勤務手当``); the slug itself when nothing else is
    left (``第3条``)."""
    return _NUMBERING.sub("", section) or section


def same_passage(past: Document, current: Document) -> bool:
    """Whether two chunks are one passage's versions: the same piece of the same section (its
    ``chunk_index``: another piece of a long section says other things), or texts alike (character
    trigrams, Jaccard at least ``MATCH``)."""
    section, other = section_of(past), section_of(current)
    same_piece = past.metadata.get("chunk_index", 0) == current.metadata.get("chunk_index", 0)
    if section is not None and other is not None and section_name(section) == section_name(other) and same_piece:
        return True
    return chunk_similarity(past.page_content, current.page_content) >= MATCH


def matching_current(past: Document, candidates: Sequence[Document]) -> Document | None:
    """The chunk of ``past``'s current version among ``candidates`` that matches it (:func:`same_passage`):
    the one of the same section first, then the most alike, then the best ranked; None without one."""
    current = past.metadata.get("superseded_by")
    if not current:
        return None
    section = section_name(section_of(past) or "")
    best, best_key = None, None
    for rank, doc in enumerate(candidates):
        if doc.metadata.get("doc_id") != current or not same_passage(past, doc):
            continue
        key = (
            bool(section) and section_name(section_of(doc) or "") == section,
            chunk_similarity(past.page_content, doc.page_content),
            -rank,
        )
        if best_key is None or key > best_key:
            best, best_key = doc, key
    return best


def value_tokens(text: str) -> list[tuple[str, str, str]]:
    """The dates and numbers of ``text`` in order as ``(kind, key, surface)``: kind ``date`` or the unit
    (``円``, ``日``, ``%``; ``""`` for a bare number; ``万円`` is ``円``), the key in one form
    (app.text.normalize.canonical: ``30,000円`` and ``3万円`` → ``30000円``) and the surface as written
    (NFKC): ``"一資格につき30,000円"`` → ``[("円", "30000円", "30,000円")]``."""
    flat = unicodedata.normalize("NFKC", text or "")
    out = []
    for m in _VALUE.finditer(flat):
        surface = m.group(0).strip()
        if m.group("date"):
            out.append(("date", canonical(surface), surface))
            continue
        unit = m.group("unit") or ""
        kind = {"万円": "円", "万": "", "％": "%", "ヶ月": "か月", "カ月": "か月", "箇月": "か月"}.get(unit, unit)
        key = canonical(surface).replace("％", "%")
        out.append((kind, key, surface))
    return out


def _differing(ours: Sequence[tuple[str, str, str]], theirs: Sequence[tuple[str, str, str]]) -> list[str]:
    """The surfaces of ``ours`` whose kind ``theirs`` also states, but never with that key (in order, once)."""
    keys: dict[str, set[str]] = {}
    for kind, key, _ in theirs:
        keys.setdefault(kind, set()).add(key)
    out: list[str] = []
    for kind, key, surface in ours:
        if kind in keys and key not in keys[kind] and surface not in out:
            out.append(surface)
    return out


def _listed(values: Sequence[str]) -> str:
    shown = "、".join(values[:MAX_VALUES])
    return shown + ("…" if len(values) > MAX_VALUES else "")


def difference_note(past: Document, current: Document) -> str | None:
    """What the past version said otherwise in the passage the current one answers from, from the two
    chunks' texts: the dates and numbers of ``past`` that ``current`` states with the same unit but other
    values (``2023-04-01 版では 30,000円（docs/規程/人事規程_2023.md#…）。現行の 2024-04-01 版では
    50,000円です。``); None when they state the same ones."""
    ours, theirs = value_tokens(past.page_content), value_tokens(current.page_content)
    was, now = _differing(ours, theirs), _differing(theirs, ours)
    if not was or not now:
        return None
    when = past.metadata.get("effective")
    since = current.metadata.get("effective")
    return (
        f"{f'{when} 版' if when else '旧版'}では {_listed(was)}（{past.metadata.get('source', '')}）。"
        f"現行の{f' {since} 版' if since else '版'}では {_listed(now)}です。"
    )
