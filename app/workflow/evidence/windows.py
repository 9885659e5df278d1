"""Evidence first: the sentence windows from all SEARCH_K candidates that best answer the question.

A window is a sentence with its neighbours, cut verbatim from a candidate chunk; a short chunk (a
CSV or Excel row with its ``column:value`` lines, a one-paragraph section) is one window whole.
Each window is scored by

* its **terms**: the BM25 weight (idf over all windows) of the question's keyword tokens it holds,
  read with its chunk's context line (file, heading path, a table's header), over the weight of all
  of them;
* the **embedder**: the cosine of the question and the window (e5's ``query:``/``passage:``), for the
  best DENSE_CANDIDATES windows by the other two parts, scaled to 0–1 among them;
* the **rank** of its chunk among the candidates (the first stage's fusion, or the re-ranker's order).

The best windows are taken until ``budget`` characters are used; windows of one chunk that touch are
merged into one passage. Each passage keeps its source ID and is numbered in the prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from langchain_core.documents import Document

from app.text.keywords import query_tokens, tokenize
from app.text.windows import Window, candidate_windows, unit_spans

TERM_WEIGHT = 1.0
DENSE_WEIGHT = 0.5
RANK_WEIGHT = 0.5
RANK_K = 2  # rank prior: (RANK_K + 1) / (RANK_K + 1 + rank), 1.0 for the first candidate
DENSE_CANDIDATES = 16  # windows embedded per question (the rest keep their term and rank score)
PER_CHUNK = 2  # passages taken from one chunk at most


def term_scores(query: str, texts: Sequence[str]) -> list[float]:
    """For each text, the BM25 idf weight (over ``texts``) of the question's tokens it holds, over the
    weight of all of them (0–1); all 0 when the question has no token."""
    wanted = query_tokens(query)
    held = [set(tokenize(t)) & set(wanted) for t in texts]
    n = len(texts)
    idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t in wanted for df in [sum(t in h for h in held)]}
    total = sum(idf.values())
    return [sum(idf[t] for t in h) / total if total else 0.0 for h in held]


def rank_prior(rank: int) -> float:
    """1.0 for the first candidate, falling as (RANK_K + 1) / (RANK_K + 1 + rank)."""
    return (RANK_K + 1) / (RANK_K + 1 + rank)


def dense_scores(query: str, texts: Sequence[str], embeddings) -> list[float]:
    """Cosine of the question and each text, scaled to 0–1 among ``texts`` (all 0 for one text or equal ones)."""
    if not texts:
        return []
    q = embeddings.embed_query(query)
    cosines = [sum(a * b for a, b in zip(q, v)) for v in embeddings.embed_documents(list(texts))]
    low, high = min(cosines), max(cosines)
    return [(c - low) / (high - low) if high > low else 0.0 for c in cosines]


def score_windows(query: str, documents: Sequence[Document], embeddings=None) -> list[Window]:
    """The windows of ``documents`` with their scores (see the module docstring), best first."""
    windows = candidate_windows(documents)
    if not windows:
        return []
    contexts = [str(d.metadata.get("context") or "") for d in documents]
    terms = term_scores(query, [f"{contexts[w.candidate]}\n{w.text}" for w in windows])
    scores = [TERM_WEIGHT * t + RANK_WEIGHT * rank_prior(w.candidate) for w, t in zip(windows, terms)]
    if embeddings is not None:
        top = sorted(range(len(windows)), key=lambda i: -scores[i])[:DENSE_CANDIDATES]
        for i, d in zip(top, dense_scores(query, [windows[i].text for i in top], embeddings)):
            scores[i] += DENSE_WEIGHT * d
    order = sorted(range(len(windows)), key=lambda i: (-scores[i], windows[i].candidate, windows[i].start))
    return [replace(windows[i], score=round(scores[i], 6)) for i in order]


def merge(chosen: Window, other: Window, documents: Sequence[Document]) -> Window | None:
    """One passage for two windows of the same chunk that overlap or touch, or None."""
    if chosen.candidate != other.candidate or other.start > chosen.end or other.end < chosen.start:
        return None
    text = documents[chosen.candidate].page_content
    spans = unit_spans(text)
    start, end = min(chosen.start, other.start), max(chosen.end, other.end)
    return replace(chosen, text=text[spans[start][0] : spans[end - 1][1]], start=start, end=end)


def select_evidence(query: str, documents: Sequence[Document], budget: int, embeddings=None) -> list[Window]:
    """The passages the model reads, best first, at most ``budget`` characters in all (the best window is
    always taken, cut to ``budget`` if it alone is longer)."""
    chosen: list[Window] = []
    used = 0
    for window in score_windows(query, documents, embeddings):
        for i, passage in enumerate(chosen):
            merged = merge(passage, window, documents)
            if merged is not None:
                if used - len(passage.text) + len(merged.text) <= budget:
                    used += len(merged.text) - len(passage.text)
                    chosen[i] = merged
                break
        else:
            if sum(p.candidate == window.candidate for p in chosen) >= PER_CHUNK:
                continue
            if not chosen:
                window = replace(window, text=window.text[:budget])
            elif used + len(window.text) > budget:
                continue
            chosen.append(window)
            used += len(window.text)
        if used >= budget:
            break
    return chosen
