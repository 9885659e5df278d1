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

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence

# BM25 (Robertson/Sparck Jones; the parameters of Lucene, Tantivy and pg_textsearch).
K1 = 1.2
B = 0.75
# A term in more than this share of the chunks (a bigram like サー or ーバ) still scores,
# but does not select candidates: it would make every chunk a candidate.
FREQUENT_SHARE = 0.1
MIN_CANDIDATE_TERMS = 3
# At most this many postings (the sum of the candidate terms' document frequencies) select
# candidates, rarest terms first: ranking every match is what costs at 100k chunks. Bigger
# terms still score. On a corpus of a few thousand chunks the budget never binds.
CANDIDATE_POSTINGS = 4000

KATAKANA = "\u30a0-\u30ff"  # character-class ranges, for patterns that need kana and kanji apart
KANJI = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々"
_JA = f"\u3040-\u309f{KATAKANA}{KANJI}〆ヵヶ"
_TOKEN_RUNS = re.compile(rf"[a-z0-9]+|[{_JA}]+")
# Bigrams made only of grammar (particles, copula, polite endings): they match everything.
STOP_BIGRAMS = frozenset(
    {
        "です",
        "ます",
        "まし",
        "した",
        "すか",
        "ませ",
        "せん",
        "いま",
        "てい",
        "ので",
        "から",
        "まで",
        "には",
        "では",
        "とは",
        "への",
        "との",
        "での",
        "もの",
        "こと",
        "くだ",
        "ださ",
        "さい",
        "して",
        "する",
        "され",
        "れて",
        "ある",
        "あり",
        "りま",
        "おり",
        "どう",
        "どの",
        "どれ",
        "なに",
        "教え",
        "えて",
        "てく",
    }
)


def normalize_text(text: str) -> str:
    """NFKC-normalize and lower-case (how tokens, entity names and questions are compared)."""
    return unicodedata.normalize("NFKC", text).lower()


_SENTENCE_END = re.compile(r"(?<=[。！？!?])|\n+")


def sentences(text: str) -> list[str]:
    """``text`` split after 。！？!? and at line breaks; empty pieces dropped, each stripped."""
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece and piece.strip()]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets in ``text`` of its :func:`sentences`, in order."""
    spans, at = [], 0
    for sentence in sentences(text):
        start = text.index(sentence, at)  # each is a stripped piece of ``text``, found after the one before
        spans.append((start, start + len(sentence)))
        at = start + len(sentence)
    return spans


def _bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a Japanese run (the run itself if one character)."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


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
    return to_tsquery_terms(query_tokens(text))


def to_tsquery_terms(terms: Sequence[str]) -> str:
    """An OR tsquery over ``terms`` (tokens from :func:`tokenize`: letters, digits, kana, kanji)."""
    return " | ".join(f"'{term}'" for term in terms)


def bm25_idf(n: int, df: int) -> float:
    """BM25's idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (never negative)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def bm25_term_score(tf: float, idf: float, dl: float, avgdl: float, k1: float = K1, b: float = B) -> float:
    """One term's BM25 contribution (the SQL in app.db computes the same; tests compare the two)."""
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def candidate_terms(
    terms: Sequence[str],
    dfs: Mapping[str, int],
    n: int,
    share: float = FREQUENT_SHARE,
    keep: int = MIN_CANDIDATE_TERMS,
    budget: int = CANDIDATE_POSTINGS,
) -> list[str]:
    """The query terms that select candidates, in query order.

    Those in at most ``share`` of the ``n`` chunks (if every term is that frequent, the ``keep``
    rarest; terms found nowhere never select), then, rarest first, as many as fit in ``budget``
    postings (the sum of their document frequencies); the rarest one always selects.
    """
    present = [t for t in terms if dfs.get(t, 0) > 0]
    by_rarity = sorted(present, key=lambda t: (dfs[t], present.index(t)))
    eligible = [t for t in by_rarity if dfs[t] <= share * n] or by_rarity[:keep]
    chosen, postings = set(), 0
    for term in eligible:
        if chosen and postings + dfs[term] > budget:
            break
        chosen.add(term)
        postings += dfs[term]
    return [t for t in present if t in chosen]
