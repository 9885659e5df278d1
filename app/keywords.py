"""Japanese-aware tokenization for the PostgreSQL keyword index (pure functions).

PostgreSQL's built-in text search configurations split on spaces, so a Japanese
sentence becomes one useless lexeme. We tokenize in the app and store the tokens
as a ``tsvector`` (space-separated, parsed with the ``simple`` configuration):

* text is NFKC-normalized and lower-cased first (full-width ＡＢＣ１２３ → abc123);
* runs of Latin letters and digits become whole words (``e3010``, ``iso``, ``27001``);
* runs of Japanese (kana, kanji) become overlapping character bigrams
  (``受付時間`` → ``受付 付時 時間``); a one-character run stays a unigram.

Bigrams need no dictionary, never miss an unknown product name, and match
partial words; the trade-off (noise from common bigrams such as ``です``) is
reduced by a short stop list and handled by ranking.
"""
from __future__ import annotations

import re
import unicodedata

_JA = "\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヵヶ"
_TOKEN_RUNS = re.compile(rf"[a-z0-9]+|[{_JA}]+")
# Bigrams made only of grammar (particles, copula, polite endings): they match everything.
STOP_BIGRAMS = frozenset({
    "です", "ます", "まし", "した", "すか", "ませ", "せん", "いま", "てい", "ので", "から", "まで",
    "には", "では", "とは", "への", "との", "での", "もの", "こと", "くだ", "ださ", "さい", "して",
    "する", "され", "れて", "ある", "あり", "りま", "おり", "どう", "どの", "どれ", "なに", "教え",
    "えて", "てく",
})


def normalize_text(text: str) -> str:
    """NFKC-normalize and lower-case."""
    return unicodedata.normalize("NFKC", text).lower()


def _bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a Japanese run (the run itself if one character)."""
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def tokenize(text: str | None) -> list[str]:
    """Tokens of ``text`` for the keyword index, in order, repeats kept (they weight ranking)."""
    if not text:
        return []
    tokens: list[str] = []
    for run in _TOKEN_RUNS.findall(normalize_text(text)):
        if run[0].isascii():
            tokens.append(run)
        else:
            tokens.extend(b for b in _bigrams(run) if b not in STOP_BIGRAMS)
    return tokens


def query_tokens(text: str | None) -> list[str]:
    """Distinct tokens of a query, in order of first appearance."""
    return list(dict.fromkeys(tokenize(text)))


def to_document(text: str | None) -> str:
    """The space-joined token string stored with ``to_tsvector('simple', …)``."""
    return " ".join(tokenize(text))


def to_tsquery(text: str | None) -> str:
    """An OR tsquery over the query's tokens (``'受付' | '時間'``); '' if there are none."""
    return " | ".join(f"'{token}'" for token in query_tokens(text))
