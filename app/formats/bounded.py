"""Reading a large file under a hard budget: in a child process whose address space is capped at
``MAX_READER_MB`` and which is ended from outside at ``PARSE_TIMEOUT_S``, so no reader can take the
machine or ignore the time limit (trafilatura cannot be stopped from inside; openpyxl, python-docx and
pypdf check the time only between steps). The file fails with one line; the sync goes on.

A file up to :data:`IN_PROCESS_BYTES` is read in the sync's own process (well under a second, and
a fresh interpreter costs about 0.4 s a file); the checks inside each reader still bound it.
"""

from __future__ import annotations

import logging
import multiprocessing
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.errors import DataSourceError
from app.formats.limits import display_name

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h): a signal for this process when its parent dies
IN_PROCESS_BYTES = 1 << 20  # files up to 1 MiB are read here; larger ones in a bounded child


def kill_with_parent() -> None:
    """Linux: have the kernel send this process SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG);
    elsewhere, or when libc cannot be loaded, nothing (a worker's watchdog thread still ends it; a
    reader child then finishes its one file on its own)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import ctypes.util
    import signal

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _read_in_child(read: Callable[..., Any], path: str, settings: Any, max_mb: int, conn) -> None:
    """The child's work: cap the address space, read, send back the document, progress or the error."""
    kill_with_parent()  # a sync that is killed takes its reader with it
    try:
        limit = max_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        document = read(Path(path), settings, lambda done, total: conn.send(("page", done, total)))
        conn.send(("ok", document))
    except MemoryError:
        conn.send(("memory", ""))
    except DataSourceError as exc:  # a library that swallowed its MemoryError fails in other words
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out_of_memory = "MemoryError" in str(exc) or peak >= 0.6 * max_mb * 2**20
        conn.send(("memory" if out_of_memory else "error", str(exc)))
    except BaseException as exc:  # the parent turns it into this file's one-line failure
        conn.send(("error", f"{display_name(Path(path))}: unreadable ({exc.__class__.__name__}: {exc})"))
    finally:
        conn.close()


def read_bounded(
    read: Callable[..., Any], path: Path, settings: Any, on_page: Callable[[int, int], None] | None = None
) -> Any:
    """``read(path, settings, on_page)`` in a child process under ``settings.ingest.max_reader_mb`` of
    address space, ended at ``settings.ingest.parse_timeout_s``; ``on_page(done, total)`` is relayed as the child reports pages. DataSourceError (one
    line) when it runs over either, or fails."""
    name = display_name(path)
    seconds, max_mb = float(settings.ingest.parse_timeout_s), settings.ingest.max_reader_mb
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this process's threads
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_read_in_child, args=(read, str(path), settings, max_mb, sender), name="file-reader")
    child.start()
    sender.close()
    end = time.monotonic() + seconds
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0 or not receiver.poll(left):
                raise DataSourceError(  # worded as the readers' own deadline (app.formats.limits.Deadline)
                    f"{name}: reading took longer than PARSE_TIMEOUT_S={seconds:g} s (stopped from outside); "
                    "skipped (raise PARSE_TIMEOUT_S to read it)"
                )
            kind, *value = receiver.recv()
            if kind == "page":
                if on_page is not None:
                    on_page(*value)
                continue
            break
    except EOFError:  # it died: most often an allocation that failed under the cap, before it could say so
        child.join(5)
        log.info("%s: the reader process ended with exit code %s", name, child.exitcode)
        raise DataSourceError(
            f"{name}: its reader stopped without an answer (more than MAX_READER_MB={max_mb} of memory?); "
            "skipped (raise MAX_READER_MB to read it)"
        ) from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receiver.close()
    if kind == "ok":
        return value[0]
    if kind == "memory":
        raise DataSourceError(
            f"{name}: needed more than MAX_READER_MB={max_mb} of memory; skipped (raise MAX_READER_MB to read it)"
        )
    raise DataSourceError(value[0])
