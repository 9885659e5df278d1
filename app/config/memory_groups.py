"""The settings of what the product remembers between questions (docs/configuration.md, "Remembered
answers, feedback and versions"): read like the other groups (app.config.groups)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from app.config import read


@dataclass(frozen=True)
class MemorySettings:
    """What the product remembers between questions: earlier answers (given again to the same question
    over the same documents), the askers' feedback, and which version of a document is in force."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "ANSWER_CACHE",
        "ANSWER_CACHE_TTL_S",
        "FEEDBACK",
        "VERSION_FAMILIES",
        "VERSIONS_FILE",
    )
    answer_cache: bool = True  # ANSWER_CACHE=0: every question is answered anew
    answer_cache_ttl_s: int = read.int_default("ANSWER_CACHE_TTL_S")
    feedback: bool = True  # FEEDBACK=0: no 👍/👎 on the page, no MCP feedback tool
    version_families: bool = True  # VERSION_FAMILIES=0: every file an independent document
    versions_file: Path | None = None  # VERSIONS_FILE; None: <DATA_DIR>/versions.toml

    def versions_file_in(self, data_dir: Path) -> Path:
        """The versions override file for ``data_dir``: VERSIONS_FILE, or ``<data_dir>/versions.toml``."""
        return self.versions_file if self.versions_file is not None else Path(data_dir) / "versions.toml"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> MemorySettings:
        """The group from ``env`` (ValueError naming a bad variable); the switches are on unless set to 0."""
        versions_file = env.get("VERSIONS_FILE", "").strip()
        return cls(
            answer_cache=read.flag_on(env, "ANSWER_CACHE"),
            answer_cache_ttl_s=read.integer(env, "ANSWER_CACHE_TTL_S"),
            feedback=read.flag_on(env, "FEEDBACK"),
            version_families=read.flag_on(env, "VERSION_FAMILIES"),
            versions_file=Path(versions_file) if versions_file else None,
        )
