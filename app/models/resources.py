"""One small cache for heavy resources (database engine, models, compiled graph), keyed by the
settings that decide them: a change of settings gets a new resource, never a stale one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

_cache: dict[tuple[str, Hashable], Any] = {}
_lock = threading.Lock()


def cached(kind: str, key: Hashable, factory: Callable[[], Any]) -> Any:
    """The resource of ``kind`` for ``key``, made by ``factory()`` on first use (once per process)."""
    with _lock:
        if (kind, key) in _cache:
            return _cache[(kind, key)]
    value = factory()  # outside the lock: loading a model must not block other kinds
    with _lock:
        return _cache.setdefault((kind, key), value)


def clear(kind: str | None = None) -> None:
    """Forget cached resources (all, or one kind); they are made again on next use."""
    with _lock:
        for entry in [e for e in _cache if kind is None or e[0] == kind]:
            del _cache[entry]
