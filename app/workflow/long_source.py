"""Long sources read whole enough: the sentence window of the top source's other chunks that best answers
the question, added to context [1] (TOP_SOURCE_CHARS; pure functions, the source's chunks handed in).

A PDF page, an HTML page or a long section is cut into several chunks, and only the best-matching one is
re-ranked into the prompt; the sentence that answers often sits in another chunk of the same source
(issue 39). The other chunks are read in order, the text consecutive chunks share kept once, and cut
into windows of whole sentences (one per sentence: it and its neighbours, as many as fit); each is scored
as the evidence windows are (app.workflow.evidence.windows: the question's terms, and the embedder when
one is given) and the best one is added after the chosen chunk, marked by :data:`SEPARATOR`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from langchain_core.documents import Document

from app.text.chunks import table_of
from app.text.windows import sentence_windows
from app.workflow.evidence.windows import DENSE_WEIGHT, TERM_WEIGHT, term_scores

MAX_EMBEDDED = 48  # windows of one source embedded per question, at most
NEAREST_CHUNKS = 1  # the source's other chunk whose windows are read: the nearest the question by stored vector
SEPARATOR = "\n…"  # between the chosen chunk and the window from elsewhere in its source
MIN_OVERLAP = 10  # characters the end of one chunk and the start of the next must share to count as overlap


def overlap(before: str, after: str, min_chars: int = MIN_OVERLAP) -> int:
    """The length of the longest end of ``before`` that ``after`` starts with (the chunker's overlap), at
    least ``min_chars`` long; 0 when there is none."""
    for k in range(min(len(before), len(after)), min_chars - 1, -1):
        if before.endswith(after[:k]):
            return k
    return 0


def other_text(shown: Collection[str], siblings: Sequence[Mapping]) -> list[str]:
    """The text of the source's chunks other than those ``shown`` (already in the prompt), in
    ``chunk_index`` order, as runs of consecutive chunks: the text two chunks share kept once, the part a
    neighbour shares with a shown chunk left out. Chunks joined where they overlapped continue each other;
    others are joined by a line break. ``[]`` when the source has no other chunk."""
    texts = [str(c["text"]).strip() for c in sorted(siblings, key=lambda c: int(c.get("chunk_index") or 0))]
    skipped = {t.strip() for t in shown}
    runs: list[str] = []
    current = ""
    for i, text in enumerate(texts):
        if text in skipped:  # a run ends where a shown chunk stands
            runs.append(current)
            current = ""
            continue
        shared = overlap(texts[i - 1], text) if i else 0
        tail = overlap(text, texts[i + 1]) if i + 1 < len(texts) and texts[i + 1] in skipped else 0
        part = text[shared : len(text) - tail]
        if part.strip():
            current = current + ("" if shared or not current else "\n") + part
    return [run.strip() for run in runs + [current] if run.strip()]


def best_window_elsewhere(
    query: str,
    chosen_text: str,
    siblings: Sequence[Mapping],
    max_chars: int,
    embeddings=None,
    also_shown: Collection[str] = (),
) -> str | None:
    """The window of whole sentences (at most ``max_chars`` characters) from the source's other chunks
    (``siblings``: its stored chunks, ``{"text", "chunk_index"}``; those equal to ``chosen_text`` or to one
    of ``also_shown``, its chunks the prompt holds already, are skipped) that best matches ``query``: the most question terms (app.text.keywords bigrams, weighted by
    idf over the windows), plus the embedder's similarity when ``embeddings`` is given; of equal ones, the
    window whose own sentence holds the most, then the earlier. None when the source has no other chunk,
    no sentence fits ``max_chars``, (without an embedder) no window holds a question term, or (with one)
    the best window is no nearer the question than ``chosen_text`` itself: the window is added only
    where the chosen chunk looks like the wrong part of its page."""
    if max_chars <= 0:
        return None
    shown = [chosen_text, *also_shown]
    if not other_text(shown, siblings):  # a source of one chunk (most): nothing to embed
        return None
    question = embeddings.embed_query(query) if embeddings is not None else None
    if question is not None:
        siblings = nearest_chunks(question, shown, siblings)
    found = sentence_windows(other_text(shown, siblings), max_chars)
    if not found:
        return None
    windows = [w for w, _ in found]
    terms = term_scores(query, [w.text for w in windows])
    centres = term_scores(query, [sentence for _, sentence in found])
    scores = [TERM_WEIGHT * t for t in terms]
    cosines: list[float] = []
    if question is not None:  # a paraphrased question shares few terms: the windows are embedded
        cosines = similarities(question, [chosen_text] + [w.text for w in windows[:MAX_EMBEDDED]], embeddings)
        high = max(terms) or 1.0
        scores = [t / high * DENSE_WEIGHT for t in terms]
        for i, d in enumerate(spread(cosines[1:])):
            scores[i] += d
    best = min(range(len(windows)), key=lambda i: (-scores[i], -centres[i], windows[i].candidate, windows[i].start))
    if embeddings is None and terms[best] <= 0:
        return None
    if cosines and (best + 1 >= len(cosines) or cosines[best + 1] <= cosines[0]):
        return None  # the chosen chunk is nearer the question than anything else of its source: nothing to add
    return windows[best].text


def similarities(question: Sequence[float], texts: Sequence[str], embeddings) -> list[float]:
    """The cosine of the question's vector and each text's (the embedder's vectors are normalized)."""
    return [_dot(question, v) for v in embeddings.embed_documents(list(texts))]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def nearest_chunks(question: Sequence[float], shown: Collection[str], siblings: Sequence[Mapping]) -> list[Mapping]:
    """The :data:`NEAREST_CHUNKS` chunks of ``siblings`` not ``shown`` whose stored vectors (``"vector"``, of
    the same size as ``question``) are nearest the question, with the shown ones (for the overlap), in their
    order; ``siblings`` as they are when they carry no vectors. Only these chunks' windows are embedded:
    every window of a long page cost 0.68 s before the first token (median, 25 windows, 2 cores), those of
    the nearest chunk 0.25 s."""
    skipped = {t.strip() for t in shown}
    others = [c for c in siblings if str(c["text"]).strip() not in skipped]
    if not others or any(len(c.get("vector") or ()) != len(question) for c in others):
        return list(siblings)
    near = sorted(others, key=lambda c: -_dot(question, c["vector"]))[:NEAREST_CHUNKS]
    return [c for c in siblings if str(c["text"]).strip() in skipped or any(c is n for n in near)]


def spread(values: Sequence[float]) -> list[float]:
    """``values`` scaled to 0–1 among themselves (all 0 when they are equal or there is one)."""
    if not values:
        return []
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 0.0 for v in values]


def same_document(siblings: Sequence[Mapping], doc_id: str) -> list[Mapping]:
    """The chunks of ``siblings`` from document ``doc_id`` (all of them when ``doc_id`` is empty): two
    files of one name in different folders give one source ID, and only the chosen one's file is read."""
    return [c for c in siblings if not doc_id or not c.get("doc_id") or c.get("doc_id") == doc_id]


def top_source_window(
    query: str,
    docs: Sequence[Document],
    read_source: Callable[[str], Sequence[Mapping]],
    max_chars: int,
    embeddings=None,
) -> str | None:
    """The :func:`best_window_elsewhere` of the first of ``docs`` (the re-ranked chunks), its source read
    with ``read_source`` (its stored chunks as the asker may read them), the chunks of it the other docs
    show skipped; None without docs, for a table row (CSV, Excel: one chunk a row) or a document without
    a source. Errors of ``read_source`` propagate."""
    if not docs:
        return None
    top = docs[0]
    source = str(top.metadata.get("source") or "")
    if not source or table_of(source) is not None:
        return None
    siblings = same_document(read_source(source), str(top.metadata.get("doc_id") or ""))
    shown = [d.page_content for d in docs[1:] if d.metadata.get("source") == source]
    return best_window_elsewhere(query, top.page_content, siblings, max_chars, embeddings, shown)


def with_window(text: str, window: str | None) -> str:
    """Context [1] with the window from elsewhere in its source after it (``text`` when there is none)."""
    return f"{text.rstrip()}{SEPARATOR}{window}" if window else text
