"""Reading one environment variable: integers, numbers, flags, lists and choices.

Each reader takes the environment (a mapping) and the variable's name, returns the value or the
default when the variable is unset or blank, and raises ``ValueError`` naming the variable and the
value otherwise. The integers' defaults and minimums are kept in one table, :data:`INT_VARS`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence

# Numeric settings: env var -> (default, minimum allowed).
INT_VARS: dict[str, tuple[int, int]] = {
    "DB_PORT": (5432, 1),
    "CHUNK_SIZE": (500, 1),
    "CHUNK_OVERLAP": (100, 0),
    "SEARCH_K": (10, 1),
    "RERANK_TOP_K": (3, 1),
    "LLM_N_CTX": (2048, 256),
    "LLM_MAX_TOKENS": (300, 1),
    "RRF_K": (60, 0),
    "CONTEXT_MAX_CHARS": (0, 0),  # 0: whole chunks in the prompt (docs/answers.md, "Prompt length")
    "TOP_SOURCE_CHARS": (240, 0),  # the window of the top source's other chunks added to context [1] (0: off)
    "EVIDENCE_CHARS": (800, 40),  # PROMPT_STYLE=evidence: characters of evidence windows the LLM reads
    "LLM_TIMEOUT_S": (120, 1),  # LLM_BASE_URL: seconds per request before it is retried
    "LLM_MAX_RETRIES": (2, 0),  # LLM_BASE_URL: retries (exponential backoff) after a failed request
    "DB_POOL_SIZE": (5, 1),  # connections kept open per process (SQLAlchemy pool; overflow as many again)
    "DB_STATEMENT_TIMEOUT_MS": (60000, 0),  # longest one SQL statement may run (0: no limit)
    "INGEST_WORKERS": (1, 1),
    "EMBED_MAX_TOKENS": (
        0,
        8,
    ),  # 0 (unset): the embedding model family's own (app.config.model_profiles)  # processes that read, chunk and embed files in parallel during a sync
    # Graph search (app.graphrag; docs/graph.md)
    "GRAPH_MIN_CHUNKS": (2, 1),  # an entity joins the community graph when named in at least this many chunks
    "GRAPH_TOP_ENTITIES": (10, 1),  # local search: entities the question is mapped to
    "GRAPH_CONTEXT_TOKENS": (0, 0),  # local/global context budget in LLM tokens (0: what LLM_N_CTX leaves)
    "GRAPH_LEVEL": (0, 0),  # global search: community level (0: the coarsest)
    "GRAPH_MAP_MAX_BATCHES": (4, 1),  # global search: report batches mapped through the LLM, best ranks first
    "GRAPH_MAP_MAX_TOKENS": (400, 16),  # global search: tokens each map call may write (its key points as JSON)
    "GRAPH_MAP_CONCURRENCY": (4, 1),  # global search over LLM_BASE_URL: map calls at once (in process: 1)
    # Limits on what one file may make a sync do (README, "Limits"); a file past one fails with one line.
    "MAX_PDF_MB": (500, 1),  # largest PDF read
    "MAX_CSV_MB": (200, 1),  # largest CSV read
    "MAX_TEXT_MB": (50, 1),  # largest Markdown / text file read
    "MAX_ROWS": (1000000, 1),  # most data rows of one CSV
    "MAX_CELL_CHARS": (100000, 1),  # most characters in one CSV cell
    "MAX_READER_MB": (0, 0),  # address space of a reader process for a file over 1 MiB (0: 1/24 of the memory, ≥ 1024)
    "MAX_FILE_CHARS": (2000000, 1),  # most characters of text one file may yield (about 4,000 chunks of 500)
    "MAX_OFFICE_MB": (200, 1),  # largest Word / Excel / PowerPoint file read (.docx .xlsx .xlsm .xls .pptx)
    "MAX_IMAGE_MB": (50, 1),  # largest image read for OCR (.png .jpg .jpeg .tif .tiff)
    "MAX_ZIP_MB": (
        800,
        1,
    ),  # most uncompressed megabytes of the parts read from one Office file (unset: 4 × MAX_OFFICE_MB)
    "MAX_ZIP_ENTRIES": (20000, 1),  # most entries in one Office file's zip
    "OCR_DPI": (300, 72),  # resolution PDF pages without a text layer are rendered at for OCR
    "PARSE_TIMEOUT_S": (300, 1),  # wall-clock budget for reading one file (a PDF stops at the page past it)
    "INGEST_BATCH_CHUNKS": (256, 1),  # chunks embedded and staged per batch (memory stays flat)
    # The ingest queue (make ingest QUEUE=1, python -m app.worker; docs/scaling.md)
    "QUEUE_LEASE_S": (30, 5),  # a worker silent this long (no heartbeat) loses its job to another worker
    "QUEUE_MAX_ATTEMPTS": (3, 1),  # times a queued file is tried before it is marked failed
    "WORKER_CONCURRENCY": (1, 1),  # files one `python -m app.worker` reads at once
    "ANSWER_CACHE_TTL_S": (86400, 1),  # how long an earlier answer is given again to the same question
    "LLM_CONCURRENCY": (1, 1),  # answers generated at once (LLM_BASE_URL only: a server that batches)
    # Questions about tables (app.tables; issue 50)
    "TABLE_MEMORY_MB": (256, 16),  # DuckDB's memory_limit for one question's table
    "TABLE_THREADS": (1, 1),  # DuckDB's threads for one question's table
    "TABLE_RESULT_ROWS": (50, 1),  # most rows a table query returns (its LIMIT is capped to this)
    "TABLE_SQL_MAX_CHARS": (2000, 100),  # longest SQL the model may write (checked before parsing)
    "TABLE_SQL_RETRIES": (1, 0),  # times the model is asked again, told why, when its SQL fails
}
INT_MAX: dict[str, int] = {"DB_PORT": 65535}


def int_default(name: str) -> int:
    """The default of an integer variable (one place: :data:`INT_VARS`)."""
    return INT_VARS[name][0]


def integer(env: Mapping[str, str], name: str) -> int:
    """The integer value of ``name`` (or its default); ValueError if not a valid integer in range."""
    default, minimum = INT_VARS[name]
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if name in INT_MAX and value > INT_MAX[name]:
        raise ValueError(f"{name} must be <= {INT_MAX[name]}, got {value}")
    return value


def threads(env: Mapping[str, str], name: str = "LLM_N_THREADS") -> int:
    """A thread count: default all cores (llama-cpp-python's own default is half)."""
    raw = env.get(name, "").strip()
    if not raw:
        return os.cpu_count() or 1
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def number(env: Mapping[str, str], name: str, default: float, minimum: float, maximum: float) -> float:
    """The float value of ``name`` or ``default``; ValueError unless a finite number in range."""
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


def weights(env: Mapping[str, str], name: str, default: tuple[float, float]) -> tuple[float, float]:
    """Two non-negative numbers ``vector,keyword`` (not both 0), or ``default``."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        values = tuple(float(p.strip()) for p in raw.split(","))
    except ValueError:
        values = ()
    if len(values) != 2 or not all(math.isfinite(w) and w >= 0 for w in values) or not any(values):
        raise ValueError(f"{name} must be two non-negative numbers 'vector,keyword', not both 0, got {raw!r}")
    return values  # type: ignore[return-value]


def flag(env: Mapping[str, str], name: str) -> bool:
    """A yes/no variable: 1/true/yes/on or 0/false/no/off (unset: no); ValueError otherwise."""
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {raw!r}")


def flag_on(env: Mapping[str, str], name: str) -> bool:
    """A yes/no variable that is on unless set: 0/false/no/off turn it off; ValueError for other words."""
    return True if not env.get(name, "").strip() else flag(env, name)


def items(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A comma-separated list (blank items dropped)."""
    return tuple(item.strip() for item in env.get(name, "").split(",") if item.strip())


def text(env: Mapping[str, str], name: str, default: str = "") -> str:
    """A string variable, stripped; ``default`` when unset or blank."""
    return env.get(name, "").strip() or default


def ocr_langs(env: Mapping[str, str], name: str, default: str) -> str:
    """Tesseract language names joined by '+' (``jpn+jpn_vert+eng``); ValueError otherwise."""
    raw = env.get(name, "").strip() or default
    if not re.fullmatch(r"[A-Za-z_]+(\+[A-Za-z_]+)*", raw):
        raise ValueError(f"{name} must be Tesseract language names joined by '+' (e.g. jpn+eng), got {raw!r}")
    return raw


def one_of(name: str, value: object, choices: Sequence[str]) -> str:
    """``value`` stripped and lower-cased when it is one of ``choices``; otherwise ValueError
    ``<name> must be one of <choices>, got <value>`` (the one message for every choice)."""
    chosen = value.strip().lower() if isinstance(value, str) else value
    if chosen not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return chosen


def choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """A variable that takes one of ``choices`` (the first is the default); ValueError otherwise."""
    return one_of(name, env.get(name, "").strip().lower() or choices[0], choices)


def memory_mb() -> int:
    """The machine's physical memory in MB (0 where the system does not say)."""
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        return 0


def reader_mb_default() -> int:
    """MAX_READER_MB when unset: 1/24 of the machine's memory, at least 1024 (1 GB on a 24 GB machine:
    a reader past it fails in one line and the ingest stays under 1.5 GB however hostile the file)."""
    return max(1024, memory_mb() // 24)
