"""The settings of questions answered by computing over a table (app.tables; issue 50): read like the
other groups (app.config.groups)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from app.config import read

TABLE_TIMEOUT_S_DEFAULT = 5.0


@dataclass(frozen=True)
class TableSettings:
    """Whether a question about a table is answered by a query, and the limits of that query."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "TABLE_ANSWERS",
        "TABLE_TIMEOUT_S",
        "TABLE_MEMORY_MB",
        "TABLE_THREADS",
        "TABLE_RESULT_ROWS",
        "TABLE_SQL_MAX_CHARS",
        "TABLE_SQL_RETRIES",
    )
    answers: bool = True  # TABLE_ANSWERS=0: every question takes the text path
    timeout_s: float = TABLE_TIMEOUT_S_DEFAULT  # the query is interrupted after this many seconds
    memory_mb: int = read.int_default("TABLE_MEMORY_MB")
    threads: int = read.int_default("TABLE_THREADS")
    result_rows: int = read.int_default("TABLE_RESULT_ROWS")
    sql_max_chars: int = read.int_default("TABLE_SQL_MAX_CHARS")
    sql_retries: int = read.int_default("TABLE_SQL_RETRIES")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TableSettings:
        """The group from ``env`` (ValueError naming a bad variable)."""
        return cls(
            answers=read.flag_on(env, "TABLE_ANSWERS"),
            timeout_s=read.number(env, "TABLE_TIMEOUT_S", TABLE_TIMEOUT_S_DEFAULT, 0.1, 600.0),
            memory_mb=read.integer(env, "TABLE_MEMORY_MB"),
            threads=read.integer(env, "TABLE_THREADS"),
            result_rows=read.integer(env, "TABLE_RESULT_ROWS"),
            sql_max_chars=read.integer(env, "TABLE_SQL_MAX_CHARS"),
            sql_retries=read.integer(env, "TABLE_SQL_RETRIES"),
        )
