"""How much of the question the contexts cover, and which context an answer was taken from
(pure functions over the keyword tokens of :mod:`app.text.keywords`)."""

from __future__ import annotations

from collections.abc import Sequence

from app.text.keywords import query_tokens, tokenize
from app.workflow.checks.citations import CITATION


def question_coverage(query: str, contexts: Sequence[str]) -> float:
    """Share of the question's keyword tokens (app.text.keywords bigrams) that occur in at least one context.

    A question about something no retrieved chunk mentions (``退職金`` when no
    document has the word) scores low; a paraphrased question scores low too,
    which is why the threshold that uses it is set low (README, "Abstention").
    1.0 for a question without tokens.
    """
    wanted = set(query_tokens(query))
    if not wanted:
        return 1.0
    found = set().union(*(tokenize(c) for c in contexts)) if contexts else set()
    return len(wanted & found) / len(wanted)


def best_matching_context(answer: str, contexts: Sequence[str], min_share: float = 0.5) -> int | None:
    """The number (1-based) of the context that shares the most keyword tokens with ``answer``, if it holds
    at least ``min_share`` of the answer's distinct tokens; None otherwise (or for an empty answer).

    Used when the model cites nothing: small models often copy the sentence
    they answer from, and this finds where it came from.
    """
    tokens = set(tokenize(CITATION.sub(" ", answer or "")))
    if not tokens or not contexts:
        return None
    shares = [len(tokens & set(tokenize(c))) / len(tokens) for c in contexts]
    best = max(range(len(contexts)), key=lambda i: (shares[i], -i))
    return best + 1 if shares[best] >= min_share else None


def cited_coverage(query: str, contexts: Sequence[str], cited: Sequence[int]) -> float | None:
    """The question coverage (:func:`question_coverage`) of the best of the ``cited`` contexts (1-based):
    how much of the question the passage an answer names shares with it; None when none is cited."""
    shares = [question_coverage(query, [contexts[n - 1]]) for n in cited if 1 <= n <= len(contexts)]
    return max(shares) if shares else None


def best_covering_context(query: str, contexts: Sequence[str]) -> tuple[int, float] | None:
    """``(number, coverage)`` of the context (1-based) that holds the most of the question; None without
    contexts. Ties go to the first."""
    if not contexts:
        return None
    shares = [question_coverage(query, [c]) for c in contexts]
    best = max(range(len(shares)), key=lambda i: (shares[i], -i))
    return best + 1, shares[best]
