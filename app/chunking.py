"""Text chunking (§4.6, §6): pure functions, no I/O.

``split_text`` cuts text into pieces of at most ``chunk_size`` characters. It
prefers to cut, in this order, at a paragraph break, at the end of a sentence
(。！？!? or a full stop followed by a space), at a word boundary (whitespace,
、 or ，), and only if none lies in the second half of the window, at exactly
``chunk_size`` characters. Japanese has no spaces between words, so "extend
forward to the next space" (what the spec describes for Latin text) would turn a
whole page into one chunk; we never exceed ``chunk_size`` instead.
"""

from __future__ import annotations

import re

# Boundary classes in order of preference; each pattern matches the text that
# ends a piece (the cut goes right after the match).
_PARAGRAPH = re.compile(r"\n[ \t\u3000]*\n")
_SENTENCE = re.compile(r"[。！？!?]+[」』）)]?|\.(?=\s)|\n")
_WORD = re.compile(r"[ \t\u3000、，,]+")
_BOUNDARIES = (_PARAGRAPH, _SENTENCE, _WORD)
_PARAGRAPH_SPLIT = re.compile(r"\n[ \t\u3000]*\n")


def _find_cut(text: str, start: int, end: int, chunk_size: int) -> int:
    """Return the best cut position in ``(start + chunk_size // 2, end]``, or ``end``.

    A boundary made of whitespace that begins exactly at ``end`` counts too
    (cutting there loses nothing: the whitespace is stripped).
    """
    lo = start + chunk_size // 2
    stop = min(end + 1, len(text))
    for pattern in _BOUNDARIES:
        best = -1
        for match in pattern.finditer(text, lo, stop):
            if match.end() <= end:
                best = match.end()
            elif text[match.start()].isspace():
                best = match.start()
        if best > lo:
            return best
    return end


def _snap_start(text: str, pos: int, end: int) -> int:
    """Move an overlap start forward to the first sentence (else word) start before ``end``.

    So the overlap repeats whole sentences or words, never a fragment, when it can.
    """
    for pattern in (_SENTENCE, _WORD):
        for match in pattern.finditer(text, pos, end):
            if match.end() < end:
                return match.end()
            break
    return pos


def split_text(text: str | None, chunk_size: int = 500, overlap: int = 100) -> list[str]:
    """Split ``text`` into chunks of at most ``chunk_size`` characters with ``overlap``.

    Returns ``[]`` for None, empty or whitespace-only text, and the stripped text
    as one chunk when it fits. Consecutive chunks share about ``overlap``
    characters; an overlap of ``chunk_size // 2`` or more is clamped to
    ``chunk_size // 2`` so the split always advances.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if overlap < 0:
        raise ValueError(f"overlap must be >= 0, got {overlap}")
    if text is None or not text.strip():
        return []
    if len(text) <= chunk_size:
        return [text.strip()]
    overlap = min(overlap, chunk_size // 2)
    chunks: list[str] = []
    start, n = 0, len(text)
    while start < n:
        end = min(start + chunk_size, n)
        if end < n:
            end = _find_cut(text, start, end, chunk_size)
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= n:
            break
        next_start = max(end - overlap, start + 1)
        if overlap:
            next_start = _snap_start(text, next_start, end)
        start = max(next_start, start + 1)
    return chunks


def split_paragraphs(text: str | None) -> list[str]:
    """Split at blank lines; strip each paragraph and drop empty ones."""
    if not text:
        return []
    return [p.strip() for p in _PARAGRAPH_SPLIT.split(text) if p.strip()]


def split_by_structure(text: str | None, chunk_size: int | None = None, overlap: int = 100) -> list[str]:
    """Split into paragraphs (blank-line separated); split long ones with :func:`split_text`.

    With ``chunk_size=None`` the paragraphs are returned as they are.
    """
    paragraphs = split_paragraphs(text)
    if chunk_size is None:
        return paragraphs
    chunks: list[str] = []
    for paragraph in paragraphs:
        if len(paragraph) <= chunk_size:
            chunks.append(paragraph)
        else:
            chunks.extend(split_text(paragraph, chunk_size, overlap))
    return chunks


def csv_splitter(chunk_size: int, chunk_overlap: int):
    """LangChain's RecursiveCharacterTextSplitter with Japanese sentence and clause separators."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=min(chunk_overlap, chunk_size // 2),
        separators=["\n\n", "\n", "。", "、", " ", ""],
        keep_separator="end",
    )
