"""The metadata keys a search writes its scores under, in one place: every stage that ranks chunks
(vector, keyword, fused, graph, the re-ranker) and everything that reads a score name them from here."""

from __future__ import annotations

RELEVANCE_SCORE_KEY = "relevance_score"  # the first stage's score (vector, BM25, fused or graph) in a chunk's metadata
RERANK_SCORE_KEY = "rerank_score"  # the cross-encoder's score in a re-ranked chunk's metadata
