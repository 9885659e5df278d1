"""Settings and constants: the only package that reads the environment.

The settings come in groups (:mod:`app.config.groups`, :mod:`app.config.model_groups`): ``settings.db``, ``.models``, ``.llm``,
``.retrieval``, ``.answers``, ``.graph``, ``.servers``, ``.ingest``. A command reads them once
(:func:`get_settings`) and passes them down; no other module touches ``os.environ``. Every value is
validated here, and a bad one raises ``ValueError`` naming the variable and the value.
:mod:`app.config.read` parses values, :mod:`app.config.urls` handles URLs and their secrets.

Imports nothing of the app but :mod:`app.errors`: the model sets and the embedding families' profiles
it reads defaults from are its own pure tables (:mod:`app.config.model_sets`,
:mod:`app.config.model_profiles`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import quote, unquote, urlsplit

from app.config.groups import (
    ABSTAIN_MIN_COVERAGE_DEFAULT,
    ABSTAIN_MIN_SIMILARITY_DEFAULT,
    ABSTAIN_MIN_SUPPORT_DEFAULT,
    COLLECTION_NAME,
    DEFAULT_HYBRID_WEIGHTS,
    DEFAULT_RRF_K,
    GRAPH_EXTRACTORS,
    GRAPH_REPORT_KINDS,
    OCR_LANGS_DEFAULT,
    PROMPT_STYLES,
    SEARCH_MODES,
    AccessSettings,
    AnswerSettings,
    DatabaseSettings,
    GraphSettings,
    RetrievalSettings,
    ServerSettings,
)
from app.config.ingest_groups import IngestSettings
from app.config.memory_groups import MemorySettings
from app.config.model_groups import (
    EMBED_MODEL_DEFAULT,
    EMBED_SERVER_PREFIXES,
    LLM_MODEL_PATH_DEFAULT,
    RERANKER_MODEL_DEFAULT,
    LLMSettings,
    ModelSettings,
)
from app.config.read import one_of
from app.config.table_groups import TableSettings
from app.config.urls import mask_url, split_userinfo

__all__ = [
    "ABSTAIN_MIN_COVERAGE_DEFAULT",
    "ABSTAIN_MIN_SUPPORT_DEFAULT",
    "ABSTAIN_MIN_SIMILARITY_DEFAULT",
    "ASK_MODES",
    "COLLECTION_NAME",
    "DEFAULT_HYBRID_WEIGHTS",
    "DEFAULT_RRF_K",
    "EMBED_DIM",
    "EMBED_MODEL_DEFAULT",
    "EMBED_SERVER_PREFIXES",
    "GRAPH_EXTRACTORS",
    "GRAPH_REPORT_KINDS",
    "LLM_MODEL_PATH_DEFAULT",
    "OCR_LANGS_DEFAULT",
    "PROMPT_STYLES",
    "RERANKER_MODEL_DEFAULT",
    "SEARCH_MODES",
    "AnswerSettings",
    "DatabaseSettings",
    "GraphSettings",
    "IngestSettings",
    "MemorySettings",
    "LLMSettings",
    "ModelSettings",
    "RetrievalSettings",
    "AccessSettings",
    "ServerSettings",
    "Settings",
    "TableSettings",
    "get_connection_string",
    "get_db_config",
    "get_settings",
    "mask_url",
    "one_of",
    "split_userinfo",
    "validate_mode",
    "variables",
]

EMBED_DIM = 384
# What `make ask MODE=…` takes: the search modes, the graph's local and global search, and auto (app.graphrag.router).
ASK_MODES = SEARCH_MODES + ("local", "global", "auto")


class _Declared(Mapping):
    """The environment as one group may read it: asking for a variable the group does not list in
    its ``VARIABLES`` is a programming error (RuntimeError), so the list cannot fall behind."""

    def __init__(self, env: Mapping[str, str], group: type) -> None:
        self.env, self.group, self.names = env, group.__name__, frozenset(group.VARIABLES)

    def __getitem__(self, name: str) -> str:
        """The variable's value (KeyError when unset); RuntimeError when the group does not list it."""
        if name not in self.names:
            raise RuntimeError(f"{self.group} reads {name}, which its VARIABLES do not list")
        return self.env[name]

    def __iter__(self) -> Iterator[str]:
        """The listed variables that are set."""
        return (name for name in self.names if name in self.env)

    def __len__(self) -> int:
        """How many listed variables are set."""
        return sum(1 for _ in self)


@dataclass(frozen=True)
class Settings:
    """All configuration, in groups, resolved and validated once from the environment."""

    GROUPS: ClassVar[dict[str, type]] = {
        "db": DatabaseSettings,
        "models": ModelSettings,
        "llm": LLMSettings,
        "retrieval": RetrievalSettings,
        "answers": AnswerSettings,
        "graph": GraphSettings,
        "servers": ServerSettings,
        "access": AccessSettings,
        "ingest": IngestSettings,
        "memory": MemorySettings,
        "tables": TableSettings,
    }
    db: DatabaseSettings = field(default_factory=DatabaseSettings)
    models: ModelSettings = field(default_factory=ModelSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    answers: AnswerSettings = field(default_factory=AnswerSettings)
    graph: GraphSettings = field(default_factory=GraphSettings)
    servers: ServerSettings = field(default_factory=ServerSettings)
    access: AccessSettings = field(default_factory=AccessSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    tables: TableSettings = field(default_factory=TableSettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``env`` (default ``os.environ``), validating every value."""
        env = os.environ if env is None else env
        models = ModelSettings.from_env(_Declared(env, ModelSettings))
        return cls(
            db=DatabaseSettings.from_env(_Declared(env, DatabaseSettings)),
            models=models,
            llm=LLMSettings.from_env(_Declared(env, LLMSettings)),
            retrieval=RetrievalSettings.from_env(_Declared(env, RetrievalSettings)),
            answers=AnswerSettings.from_env(_Declared(env, AnswerSettings), models.embed_model),
            graph=GraphSettings.from_env(_Declared(env, GraphSettings)),
            servers=ServerSettings.from_env(_Declared(env, ServerSettings)),
            access=AccessSettings.from_env(_Declared(env, AccessSettings)),
            ingest=IngestSettings.from_env(_Declared(env, IngestSettings)),
            memory=MemorySettings.from_env(_Declared(env, MemorySettings)),
            tables=TableSettings.from_env(_Declared(env, TableSettings)),
        )

    def changed(self, **groups: Mapping[str, Any]) -> Settings:
        """A copy with some fields of some groups replaced: ``settings.changed(db={"name": "x"})``."""
        return dataclasses.replace(
            self, **{name: dataclasses.replace(getattr(self, name), **values) for name, values in groups.items()}
        )


def variables() -> tuple[str, ...]:
    """Every environment variable the settings read, group by group."""
    return tuple(name for group in Settings.GROUPS.values() for name in group.VARIABLES)


def get_settings() -> Settings:
    """Settings read from the current environment (a command calls this once and passes them on)."""
    return Settings.from_env()


def validate_mode(mode: object, default: str | None = "hybrid", allowed: Sequence[str] = ASK_MODES) -> str:
    """The one check of a search or ask mode (``--mode``, MCP tools, ``RagStore.search``, the workflow):
    ``mode`` (``default`` when None or empty) if it is in ``allowed``, normalized; ValueError otherwise."""
    if default is not None and (mode is None or mode == ""):
        mode = default
    return one_of("mode", mode, allowed)


def get_db_config(settings: Settings | None = None) -> dict:
    """Return the DB connection settings as a dict (§4.1), with defaults where unset.

    ``host`` is ``localhost`` when DB_HOST is unset, and ``embedded`` is then True:
    the app uses its private PostgreSQL instead of connecting to a server.
    """
    db = (settings or get_settings()).db
    if db.url:
        parts = urlsplit(db.url)
        return {
            "host": parts.hostname or "localhost",
            "port": parts.port or 5432,
            "user": unquote(parts.username or ""),
            "password": unquote(parts.password or ""),
            "dbname": unquote(parts.path.lstrip("/")),
            "embedded": False,
        }
    return {
        "host": db.host or "localhost",
        "port": db.port,
        "user": db.user,
        "password": db.password,
        "dbname": db.name,
        "embedded": db.embedded,
    }


def get_connection_string(settings: Settings | None = None) -> str:
    """Return the SQLAlchemy/psycopg3 URL ``postgresql+psycopg://user:pass@host:port/dbname``
    (DATABASE_URL's, as given, when set)."""
    s = settings or get_settings()
    if s.db.url:
        return s.db.url
    cfg = get_db_config(s)
    user = quote(cfg["user"], safe="")
    password = quote(cfg["password"], safe="")
    return f"postgresql+psycopg://{user}:{password}@{cfg['host']}:{cfg['port']}/{cfg['dbname']}"


# The spec's module constants (``config.CHUNK_SIZE`` …): variable -> (group, field).
_CONSTANT_FIELDS = {
    "EMBED_MODEL": ("models", "embed_model"),
    "RERANKER_MODEL": ("models", "reranker_model"),
    "LLM_MODEL_PATH": ("llm", "model_path"),
    "CHUNK_SIZE": ("ingest", "chunk_size"),
    "CHUNK_OVERLAP": ("ingest", "chunk_overlap"),
    "SEARCH_K": ("retrieval", "search_k"),
    "RERANK_TOP_K": ("retrieval", "rerank_top_k"),
    "SEARCH_MODE": ("retrieval", "search_mode"),
}


def __getattr__(name: str):
    """Expose the spec's constants (``config.CHUNK_SIZE`` ...) read from the environment on access."""
    if name in _CONSTANT_FIELDS:
        group, attr = _CONSTANT_FIELDS[name]
        return getattr(getattr(get_settings(), group), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
