"""app.config.model_profiles: each embedding family's prefixes, length, pooling and size, from the model id."""

import pytest

from app.config import Settings
from app.config.model_profiles import EmbeddingProfile, embedding_profile


@pytest.mark.parametrize(
    "model, family, query, passage, max_tokens, pooling, dimension",
    [
        ("intfloat/multilingual-e5-small", "e5", "query: ", "passage: ", 512, "mean", 384),
        ("intfloat/multilingual-e5-large", "e5", "query: ", "passage: ", 512, "mean", 1024),
        ("models/e5-base", "e5", "query: ", "passage: ", 512, "mean", 768),
        ("cl-nagoya/ruri-v3-30m", "ruri-v3", "検索クエリ: ", "検索文書: ", 8192, "mean", 256),
        ("cl-nagoya/ruri-v3-70m", "ruri-v3", "検索クエリ: ", "検索文書: ", 8192, "mean", 384),
        ("cl-nagoya/ruri-v3-130m", "ruri-v3", "検索クエリ: ", "検索文書: ", 8192, "mean", 512),
        ("/srv/models/ruri-v3-310m", "ruri-v3", "検索クエリ: ", "検索文書: ", 8192, "mean", 768),
        ("BAAI/bge-m3", "bge-m3", "", "", 8192, "cls", 1024),
        ("sentence-transformers/all-MiniLM-L6-v2", "minilm", "", "", 256, "mean", 384),
        ("acme/some-embedder", "plain", "", "", 512, "mean", None),
    ],
)
def test_profile_from_the_model_id(model, family, query, passage, max_tokens, pooling, dimension):
    assert embedding_profile(model) == EmbeddingProfile(family, query, passage, max_tokens, pooling, dimension)


def test_variables_override_the_family():
    env = {"EMBED_MODEL": "cl-nagoya/ruri-v3-30m", "EMBED_QUERY_PREFIX": "", "EMBED_MAX_TOKENS": "1024"}
    assert Settings.from_env(env).models.embedding_profile() == EmbeddingProfile(
        "ruri-v3", "", "検索文書: ", 1024, "mean", 256
    )
    assert Settings.from_env({"EMBED_PASSAGE_PREFIX": "文書: "}).models.embedding_profile().passage_prefix == "文書: "
    with pytest.raises(ValueError, match="EMBED_MAX_TOKENS must be >= 8, got 2"):
        Settings.from_env({"EMBED_MAX_TOKENS": "2"})
