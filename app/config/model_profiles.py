"""Embedding model profiles: how each family wants its text (query/passage prefixes), how much it
reads (maximum tokens), how it pools, and the size of its vectors where the published model fixes it.

The profile is chosen from the model id (a hub id or a folder name); EMBED_QUERY_PREFIX,
EMBED_PASSAGE_PREFIX and EMBED_MAX_TOKENS override it (an empty prefix is a prefix too: none).
The pooling is the one the family was trained with; a sentence-transformers folder carries its own
and is loaded as it is, so the profile's pooling documents it (README, "Embedding models").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class EmbeddingProfile:
    """What one embedding family needs."""

    family: str
    query_prefix: str = ""
    passage_prefix: str = ""
    max_tokens: int = 512
    pooling: str = "mean"
    dimension: int | None = None  # None: read from the model when it loads


E5 = EmbeddingProfile("e5", "query: ", "passage: ", 512, "mean")
RURI_V3 = EmbeddingProfile("ruri-v3", "検索クエリ: ", "検索文書: ", 8192, "mean")
BGE_M3 = EmbeddingProfile("bge-m3", "", "", 8192, "cls", 1024)
MINILM = EmbeddingProfile("minilm", "", "", 256, "mean", 384)
PLAIN = EmbeddingProfile("plain")

# (pattern on the model id, profile, the published sizes by the id's size part)
_FAMILIES: tuple[tuple[re.Pattern[str], EmbeddingProfile, dict[str, int]], ...] = (
    (
        re.compile(r"(^|/)(multilingual-)?e5-(?P<size>small|base|large)", re.IGNORECASE),
        E5,
        {"small": 384, "base": 768, "large": 1024},
    ),
    (
        re.compile(r"(^|/)ruri-v3-(?P<size>30m|70m|130m|310m)", re.IGNORECASE),
        RURI_V3,
        {"30m": 256, "70m": 384, "130m": 512, "310m": 768},
    ),
    (re.compile(r"(^|/)ruri-v3", re.IGNORECASE), RURI_V3, {}),
    (re.compile(r"(^|/)bge-m3", re.IGNORECASE), BGE_M3, {}),
    (re.compile(r"(^|/)(all-)?minilm", re.IGNORECASE), MINILM, {}),
)


def embedding_profile(
    model: str, query_prefix: str | None = None, passage_prefix: str | None = None, max_tokens: int | None = None
) -> EmbeddingProfile:
    """The profile of ``model`` (by its id), with any override given (None: the family's own)."""
    profile = PLAIN
    for pattern, family, sizes in _FAMILIES:
        found = pattern.search(model)
        if found:
            size = found.groupdict().get("size")
            profile = replace(family, dimension=sizes.get(size.lower(), family.dimension) if size else family.dimension)
            break
    overrides = {
        name: value
        for name, value in (
            ("query_prefix", query_prefix),
            ("passage_prefix", passage_prefix),
            ("max_tokens", max_tokens),
        )
        if value is not None
    }
    return replace(profile, **overrides) if overrides else profile
