"""Which mode a server is in, decided on every request: permissions, single-team, or locked.

* **permissions**: an access file exists (or ACCESS_FROM_FS): every request names who asks;
* **single-team**: no access file, and every stored document is ``everyone``'s: whoever the server
  lets in reads every document (on loopback, without naming themselves);
* **locked**: no access file, but documents with restricted readers are stored (the file was moved
  away, deleted, or its folder unmounted): only group ``admin`` is served, everyone else gets one line
  saying why. Never single-team mode by accident: the stored readers say permissions were meant.

Once this process has seen permissions or the lock, a missing access file keeps it locked until the
file is back, even when a sync (``--watch``) meanwhile gave every document to everyone: going back to
single-team mode on purpose takes a restart. The page and the MCP server (HTTP and stdio) ask the same
:class:`AccessGate`; the lock, and every change while serving, is logged once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.config import Settings

log = logging.getLogger(__name__)

PERMISSIONS = "permissions"
SINGLE_TEAM = "single-team"
LOCKED = "locked"


def access_mode(permissions_on: bool, restricted_stored: Callable[[], bool], were_restricted: bool) -> str:
    """The mode for an access file that is there or not (``permissions_on``), documents with restricted
    readers stored or not (asked only when it matters), and whether this process saw restrictions before."""
    if permissions_on:
        return PERMISSIONS
    if were_restricted or restricted_stored():
        return LOCKED
    return SINGLE_TEAM


def locked_line(access_file: str) -> str:
    """The line a locked server logs and gives every refused caller (the access file's name, not its path)."""
    return (
        f"the access file {Path(access_file).name} is missing but documents with restricted readers are stored: "
        "only group admin is served until it is back"
    )


def mode_line(mode: str, access_file: str) -> str:
    """The log line saying a server is now in ``mode``."""
    if mode == LOCKED:
        return (
            f"locked: {access_file} is missing but documents with restricted readers are stored; "
            "only group admin is served until it is back"
        )
    if mode == PERMISSIONS:
        return f"permissions: {access_file} is in force; every request names who asks"
    return (
        f"single-team mode: no access file ({access_file}) and no restricted document; "
        "whoever gets in reads every document"
    )


class AccessGate:
    """The mode of one server, asked on every request (:meth:`mode`); thread-safe."""

    def __init__(self, permissions_on: Callable[[], bool], restricted_stored: Callable[[], bool], access_file: str):
        self._permissions_on = permissions_on
        self._restricted_stored = restricted_stored
        self.access_file = access_file
        self._lock = threading.Lock()
        self._restricted = False  # permissions or the lock seen by this process
        self._last: str | None = None

    def mode(self) -> str:
        """The mode now (an error reaching the database propagates: the caller refuses with 503)."""
        mode = access_mode(self._permissions_on(), self._restricted_stored, self._restricted)
        with self._lock:
            self._restricted = self._restricted or mode != SINGLE_TEAM
            previous, self._last = self._last, mode
        # the start lines say single-team or permissions; the lock, and every later change, is logged here
        if mode != previous and (previous is not None or mode == LOCKED):
            log.log(logging.WARNING if mode == LOCKED else logging.INFO, "%s", mode_line(mode, self.access_file))
        return mode

    def locked_line(self) -> str:
        """What a refused caller reads while the server is locked."""
        return locked_line(self.access_file)


def access_gate(settings: Settings, data_dir: Path, engine: Callable[[], Any]) -> AccessGate:
    """The gate of a server over ``data_dir`` and the collection of ``settings``, the database reached
    through ``engine()``."""
    from app.permissions.principals import EVERYONE
    from app.permissions.readers import permissions_on
    from app.storage.restricted import restricted_documents_stored

    collection = settings.retrieval.collection_name
    return AccessGate(
        lambda: permissions_on(settings, data_dir),
        lambda: restricted_documents_stored(engine(), collection, EVERYONE),
        str(settings.access.file_in(data_dir)),
    )
