"""The settings, one group per part of the product: each group lists the variables it reads and
builds itself from the environment (docs/configuration.md has the same groups).

A group reads only the variables in its ``VARIABLES``: :meth:`app.config.Settings.from_env` gives it
a view of the environment that refuses any other name, so the list cannot drift from the code (the
unit tests clear exactly these variables).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from app.config import read, urls
from app.config.model_groups import EMBED_MODEL_DEFAULT
from app.config.urls import shown

COLLECTION_NAME = "documents"
# Tesseract's models for scanned pages (Debian: tesseract-ocr-jpn, tesseract-ocr-jpn-vert; eng comes with tesseract-ocr)
OCR_LANGS_DEFAULT = "jpn+jpn_vert+eng"
SEARCH_MODES = ("hybrid", "vector", "keyword")
GRAPH_EXTRACTORS = ("fast", "llm", "off")  # fast: a morphological analyzer, no LLM; llm: JSON from the LLM
GRAPH_REPORT_KINDS = ("extractive", "llm")
# app.workflow.prompts / app.workflow.evidence: numbered contexts with citations, §4.9's template, or evidence windows
# from all SEARCH_K candidates answered as "answer[n]" under a grammar (docs/answers.md)
PROMPT_STYLES = ("cited", "spec", "evidence")
# Abstain (資料に記載がありません) without asking the LLM when the best cosine similarity between the
# question and a candidate chunk is lower. `make tune` on both tuning sets (sample and real) with
# multilingual-e5-small: the highest value that refuses no answerable question (docs/answers.md).
ABSTAIN_MIN_SIMILARITY_DEFAULT = 0.82
# Abstain without asking the LLM when fewer of the question's keyword tokens than this share occur in
# the chunks (read with their context lines) given to the LLM. `make tune` on both tuning sets: the highest
# value that refuses no answerable question (sample tuning 0.28, real tuning 0.15: paraphrased questions
# share few tokens), the lower of the two.
ABSTAIN_MIN_COVERAGE_DEFAULT = 0.15
ABSTAIN_MIN_SUPPORT_DEFAULT = (
    0.5  # app.workflow.checks.support: withdraw an answer most of whose own words no document states
)
# Hybrid fusion defaults (docs/search.md): plain RRF, k=60, equal weights. `make tune` chose them on
# data/tuning_questions.json with multilingual-e5-small and BM25; on the real tuning set (data/real/)
# they tie for the best Retrieval@3 and @10 (k=5 1:1 wins on MRR by one rank).
DEFAULT_RRF_K = read.int_default("RRF_K")
DEFAULT_HYBRID_WEIGHTS = (1.0, 1.0)


@dataclass(frozen=True)
class DatabaseSettings:
    """PostgreSQL: the private embedded server under ``pgdata_dir``, or one named by DB_HOST or
    DATABASE_URL."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "DB_HOST",
        "DB_PORT",
        "DB_USER",
        "DB_PASSWORD",
        "DB_PASSWORD_FILE",
        "DB_NAME",
        "PGDATA_DIR",
        "DATABASE_URL",
        "DB_POOL_SIZE",
        "DB_STATEMENT_TIMEOUT_MS",
    )
    host: str | None = None  # None: start the embedded PostgreSQL under pgdata_dir
    port: int = read.int_default("DB_PORT")
    user: str = "rag"
    password: str = ""  # server mode only (the embedded database makes and keeps its own)
    name: str = "rag"
    pgdata_dir: Path = Path(".pgdata")
    url: str | None = None  # DATABASE_URL (a libpq URI, rewritten for psycopg 3) instead of DB_*
    pool_size: int = read.int_default("DB_POOL_SIZE")
    statement_timeout_ms: int = read.int_default("DB_STATEMENT_TIMEOUT_MS")

    def __repr__(self) -> str:
        """Shown with the password and the URL (which may hold one) masked."""
        return shown(self, frozenset({"password", "url"}))

    @property
    def embedded(self) -> bool:
        """True when neither DB_HOST nor DATABASE_URL is set and the private PostgreSQL is used."""
        return self.host is None and self.url is None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DatabaseSettings:
        """The group from ``env`` (ValueError naming a bad variable)."""
        host = env.get("DB_HOST", "").strip() or None
        database_url = urls.database_url(env, host)
        return cls(
            host=host,
            port=read.integer(env, "DB_PORT"),
            user=env.get("DB_USER") or "rag",
            password=urls.db_password(env, host) if database_url is None else "",
            name=env.get("DB_NAME") or "rag",
            pgdata_dir=Path(env.get("PGDATA_DIR") or ".pgdata"),
            url=database_url,
            pool_size=read.integer(env, "DB_POOL_SIZE"),
            statement_timeout_ms=read.integer(env, "DB_STATEMENT_TIMEOUT_MS"),
        )


@dataclass(frozen=True)
class RetrievalSettings:
    """Finding the chunks: how many candidates, how many the LLM reads, and how the two searches fuse."""

    VARIABLES: ClassVar[tuple[str, ...]] = ("SEARCH_K", "RERANK_TOP_K", "SEARCH_MODE", "RRF_K", "HYBRID_WEIGHTS")
    search_k: int = read.int_default("SEARCH_K")
    rerank_top_k: int = read.int_default("RERANK_TOP_K")
    search_mode: str = SEARCH_MODES[0]
    rrf_k: int = DEFAULT_RRF_K
    hybrid_weights: tuple[float, float] = DEFAULT_HYBRID_WEIGHTS
    collection_name: str = COLLECTION_NAME  # not a variable: evaluate and the tests use their own

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RetrievalSettings:
        """The group from ``env`` (ValueError naming a bad variable)."""
        return cls(
            search_k=read.integer(env, "SEARCH_K"),
            rerank_top_k=read.integer(env, "RERANK_TOP_K"),
            search_mode=read.choice(env, "SEARCH_MODE", SEARCH_MODES),
            rrf_k=read.integer(env, "RRF_K"),
            hybrid_weights=read.weights(env, "HYBRID_WEIGHTS", DEFAULT_HYBRID_WEIGHTS),
        )


@dataclass(frozen=True)
class AnswerSettings:
    """Writing the answer: the prompt, how much context it holds, and when to refuse without the LLM."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "PROMPT_STYLE",
        "CONTEXT_MAX_CHARS",
        "TOP_SOURCE_CHARS",
        "EVIDENCE_CHARS",
        "ABSTAIN_MIN_COVERAGE",
        "ABSTAIN_MIN_SIMILARITY",
        "ABSTAIN_MIN_RERANK",
        "ABSTAIN_MIN_SUPPORT",
    )
    prompt_style: str = PROMPT_STYLES[0]
    context_max_chars: int = read.int_default("CONTEXT_MAX_CHARS")
    top_source_chars: int = read.int_default("TOP_SOURCE_CHARS")
    evidence_chars: int = read.int_default("EVIDENCE_CHARS")
    abstain_min_coverage: float = ABSTAIN_MIN_COVERAGE_DEFAULT
    abstain_min_similarity: float = ABSTAIN_MIN_SIMILARITY_DEFAULT
    abstain_min_rerank: float = 0.0  # ABSTAIN_MIN_RERANK: the cross-encoder's best score below which to refuse
    abstain_min_support: float = ABSTAIN_MIN_SUPPORT_DEFAULT  # share of an answer's own terms the documents state

    @classmethod
    def from_env(cls, env: Mapping[str, str], embed_model: str = EMBED_MODEL_DEFAULT) -> AnswerSettings:
        """The group from ``env``. ABSTAIN_MIN_SIMILARITY's default is calibrated for the default
        embedder only (cosines are not comparable across models), so it is off (0) for ``embed_model``
        of any other name."""
        similarity = ABSTAIN_MIN_SIMILARITY_DEFAULT if embed_model == EMBED_MODEL_DEFAULT else 0.0
        return cls(
            prompt_style=read.choice(env, "PROMPT_STYLE", PROMPT_STYLES),
            context_max_chars=read.integer(env, "CONTEXT_MAX_CHARS"),
            top_source_chars=read.integer(env, "TOP_SOURCE_CHARS"),
            evidence_chars=read.integer(env, "EVIDENCE_CHARS"),
            abstain_min_coverage=read.number(env, "ABSTAIN_MIN_COVERAGE", ABSTAIN_MIN_COVERAGE_DEFAULT, 0.0, 1.0),
            abstain_min_similarity=read.number(env, "ABSTAIN_MIN_SIMILARITY", similarity, -1.0, 1.0),
            abstain_min_rerank=read.number(env, "ABSTAIN_MIN_RERANK", 0.0, 0.0, 1.0),
            abstain_min_support=read.number(env, "ABSTAIN_MIN_SUPPORT", ABSTAIN_MIN_SUPPORT_DEFAULT, 0.0, 1.0),
        )


@dataclass(frozen=True)
class GraphSettings:
    """Graph search (app.graphrag): how entities are extracted, and local/global search budgets."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "GRAPH_EXTRACTOR",
        "GRAPH_REPORTS",
        "GRAPH_MIN_CHUNKS",
        "GRAPH_TOP_ENTITIES",
        "GRAPH_CONTEXT_TOKENS",
        "GRAPH_COMMUNITY_PROP",
        "GRAPH_TEXT_UNIT_PROP",
        "GRAPH_MIN_RANK",
        "GRAPH_LEVEL",
        "GRAPH_MAP_MAX_BATCHES",
        "GRAPH_MAP_MAX_TOKENS",
        "GRAPH_MAP_CONCURRENCY",
    )
    extractor: str = GRAPH_EXTRACTORS[0]
    reports: str = GRAPH_REPORT_KINDS[0]
    min_chunks: int = read.int_default("GRAPH_MIN_CHUNKS")
    top_entities: int = read.int_default("GRAPH_TOP_ENTITIES")
    context_tokens: int = read.int_default("GRAPH_CONTEXT_TOKENS")
    community_prop: float = 0.15  # GraphRAG's local search defaults: community reports 15 %,
    text_unit_prop: float = 0.5  # text units 50 %, entities and relationships the rest
    min_rank: float = 0.0
    level: int = read.int_default("GRAPH_LEVEL")
    map_max_batches: int = read.int_default("GRAPH_MAP_MAX_BATCHES")
    map_max_tokens: int = read.int_default("GRAPH_MAP_MAX_TOKENS")
    map_concurrency: int = read.int_default("GRAPH_MAP_CONCURRENCY")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GraphSettings:
        """The group from ``env`` (ValueError naming a bad variable or a bad pair)."""
        group = cls(
            extractor=read.choice(env, "GRAPH_EXTRACTOR", GRAPH_EXTRACTORS),
            reports=read.choice(env, "GRAPH_REPORTS", GRAPH_REPORT_KINDS),
            min_chunks=read.integer(env, "GRAPH_MIN_CHUNKS"),
            top_entities=read.integer(env, "GRAPH_TOP_ENTITIES"),
            context_tokens=read.integer(env, "GRAPH_CONTEXT_TOKENS"),
            community_prop=read.number(env, "GRAPH_COMMUNITY_PROP", 0.15, 0.0, 1.0),
            text_unit_prop=read.number(env, "GRAPH_TEXT_UNIT_PROP", 0.5, 0.0, 1.0),
            min_rank=read.number(env, "GRAPH_MIN_RANK", 0.0, 0.0, 10.0),
            level=read.integer(env, "GRAPH_LEVEL"),
            map_max_batches=read.integer(env, "GRAPH_MAP_MAX_BATCHES"),
            map_max_tokens=read.integer(env, "GRAPH_MAP_MAX_TOKENS"),
            map_concurrency=read.integer(env, "GRAPH_MAP_CONCURRENCY"),
        )
        if group.community_prop + group.text_unit_prop > 1.0:
            raise ValueError(
                f"GRAPH_COMMUNITY_PROP + GRAPH_TEXT_UNIT_PROP must be at most 1, got "
                f"{group.community_prop:g} + {group.text_unit_prop:g}"
            )
        return group


FOLLOWUP_REWRITES = ("rules", "llm")  # the first is the default


@dataclass(frozen=True)
class ServerSettings:
    """Network surfaces (docs/security.md): the MCP server's bearer token and the accepted
    Host/Origin headers."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "MCP_TOKEN",
        "MCP_TOKEN_FILE",
        "WEB_TOKEN",
        "FOLLOWUP_REWRITE",
        "ALLOWED_HOSTS",
        "ALLOWED_ORIGINS",
    )
    mcp_token: str = ""  # MCP_TOKEN; empty: generated once into mcp_token_file
    mcp_token_file: Path = Path(".secrets/mcp_token")  # MCP_TOKEN_FILE (0600)
    web_token: str = ""  # WEB_TOKEN: the shared secret the web page needs beyond loopback
    followup_rewrite: str = "rules"  # FOLLOWUP_REWRITE: how the page makes a follow-up stand alone (rules | llm)
    allowed_hosts: tuple[str, ...] = ()  # ALLOWED_HOSTS: Host names accepted besides the bound address
    allowed_origins: tuple[str, ...] = ()  # ALLOWED_ORIGINS: browser Origins accepted (none by default)

    def __repr__(self) -> str:
        """Shown with the token masked."""
        return shown(self, frozenset({"mcp_token", "web_token"}))

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ServerSettings:
        """The group from ``env``."""
        return cls(
            mcp_token=env.get("MCP_TOKEN", "").strip(),
            mcp_token_file=Path(env.get("MCP_TOKEN_FILE") or ".secrets/mcp_token"),
            web_token=env.get("WEB_TOKEN", "").strip(),
            followup_rewrite=read.choice(env, "FOLLOWUP_REWRITE", FOLLOWUP_REWRITES),
            allowed_hosts=read.items(env, "ALLOWED_HOSTS"),
            allowed_origins=read.items(env, "ALLOWED_ORIGINS"),
        )


AUDIT_RETENTION_DAYS_DEFAULT = 90


@dataclass(frozen=True)
class AccessSettings:
    """Who may read what (docs/security.md): the access file, the file share's own permissions, the
    identity a reverse proxy vouches for, the MCP stdio user, the page's public address and the audit log."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "ACCESS_FILE",
        "ACCESS_FROM_FS",
        "AUTH_USER_HEADER",
        "AUTH_GROUPS_HEADER",
        "AUTH_PROXY_SECRET",
        "AUTH_PROXY_SECRET_HEADER",
        "MCP_AS_USER",
        "PUBLIC_URL",
        "AUDIT_LOG",
        "AUDIT_LOG_QUESTIONS",
        "AUDIT_RETENTION_DAYS",
    )
    access_file: Path | None = None  # ACCESS_FILE; None: <DATA_DIR>/access.toml
    from_fs: bool = False  # ACCESS_FROM_FS: readers from the files' POSIX owner group, mode and ACL
    user_header: str = ""  # AUTH_USER_HEADER: the header a signing-in proxy puts the user name in
    groups_header: str = ""  # AUTH_GROUPS_HEADER: … and the user's groups (comma-separated)
    proxy_secret: str = ""  # AUTH_PROXY_SECRET: the header values count only with this secret
    proxy_secret_header: str = "X-Auth-Proxy-Secret"  # AUTH_PROXY_SECRET_HEADER: where the proxy sends it
    mcp_as_user: str = ""  # MCP_AS_USER: who asks over MCP stdio ("": full access)
    public_url: str = ""  # PUBLIC_URL: the address colleagues open (a TLS proxy in front)
    audit: bool = False  # AUDIT_LOG: who asked, when, which sources were shown
    audit_questions: bool = False  # AUDIT_LOG_QUESTIONS: the question text too
    audit_retention_days: int = AUDIT_RETENTION_DAYS_DEFAULT  # AUDIT_RETENTION_DAYS

    def __repr__(self) -> str:
        """Shown with the proxy secret masked."""
        return shown(self, frozenset({"proxy_secret"}))

    def file_in(self, data_dir: Path) -> Path:
        """The access file for ``data_dir``: ACCESS_FILE, or ``<data_dir>/access.toml``."""
        return self.access_file if self.access_file is not None else Path(data_dir) / "access.toml"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AccessSettings:
        """The group from ``env`` (ValueError naming a bad variable)."""
        days = env.get("AUDIT_RETENTION_DAYS", "").strip() or str(AUDIT_RETENTION_DAYS_DEFAULT)
        if not days.isdigit() or int(days) < 1:
            raise ValueError(f"AUDIT_RETENTION_DAYS must be a whole number of days, at least 1, got {days!r}")
        public = env.get("PUBLIC_URL", "").strip().rstrip("/")
        if public and not public.lower().startswith(("http://", "https://")):
            raise ValueError(f"PUBLIC_URL must start with http:// or https://, got {public!r}")
        access_file = env.get("ACCESS_FILE", "").strip()
        return cls(
            access_file=Path(access_file) if access_file else None,
            from_fs=read.flag(env, "ACCESS_FROM_FS"),
            user_header=read.text(env, "AUTH_USER_HEADER"),
            groups_header=read.text(env, "AUTH_GROUPS_HEADER"),
            proxy_secret=read.text(env, "AUTH_PROXY_SECRET"),
            proxy_secret_header=read.text(env, "AUTH_PROXY_SECRET_HEADER", "X-Auth-Proxy-Secret"),
            mcp_as_user=read.text(env, "MCP_AS_USER"),
            public_url=public,
            audit=read.flag(env, "AUDIT_LOG"),
            audit_questions=read.flag(env, "AUDIT_LOG_QUESTIONS"),
            audit_retention_days=int(days),
        )
