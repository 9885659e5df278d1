"""The ingest queue, shared by the writer that queues files (:mod:`app.ingestion.queue_sync`) and the
workers that read them (:mod:`app.ingestion.queue_worker`): a procrastinate app on the store's own
PostgreSQL, its one task, and what a job says about its file.

procrastinate (not a queue of our own) gives the leases, retries, locks and worker heartbeats; the
store keeps each queued file's outcome beside it (:mod:`app.storage.queue`). One queue per collection,
so workers of one store never take another's files.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.config import Settings
from app.storage.queue import queue_conninfo

TASK_NAME = "rag.ingest.stage_file"
RETRY_WAIT_S = 2  # a failed try waits this long before another worker (or this one) takes it again
POOL_TIMEOUT_S = 10  # a worker waits at most this long for a connection before it says the database is unreachable
JOB_POLL_MAX_S = 5.0  # procrastinate's own fetch_job_polling_interval


@dataclass(frozen=True)
class QueuedFile:
    """What one job says about its file: the document ID, the path relative to the data folder (as the
    writer's file system spells it, ``path_hex`` its exact bytes), the file name stored with its chunks,
    the SHA-256 of its bytes, the settings digest and the generation its staged batches carry."""

    doc_id: str
    path: str
    path_hex: str
    name: str
    content_hash: str
    key: str
    generation: str

    def to_args(self) -> dict:
        """The job's JSON arguments."""
        return asdict(self)

    @classmethod
    def from_args(cls, args: dict) -> QueuedFile:
        """A job's arguments back (KeyError for a job of another shape)."""
        return cls(**{name: str(args[name]) for name in cls.__dataclass_fields__})

    def local_path(self, data_dir: Path) -> Path:
        """The file under this machine's data folder (the same relative bytes)."""
        return Path(os.fsdecode(os.path.join(os.fsencode(data_dir), bytes.fromhex(self.path_hex))))


def relative_bytes(path: Path, data_dir: Path) -> bytes:
    """``path`` relative to ``data_dir``, as bytes (a name need not be UTF-8)."""
    return os.path.relpath(os.fsencode(path), os.fsencode(data_dir))


def queue_name(settings: Settings) -> str:
    """The collection's queue: a short digest of its name (a queue's name goes into a NOTIFY channel,
    63 bytes at most, and the collection's name is the user's)."""
    digest = hashlib.sha256(settings.retrieval.collection_name.encode()).hexdigest()[:12]
    return f"rag_ingest_{digest}"


def connect_timeout_s(lease_s: float) -> float:
    """How long a worker waits for a connection before it says the database is unreachable:
    POOL_TIMEOUT_S, or its lease (QUEUE_LEASE_S) when that is shorter, since by then its jobs are
    another worker's anyway."""
    return min(POOL_TIMEOUT_S, lease_s)


def heartbeat_s(lease_s: float) -> float:
    """A worker's heartbeat: a quarter of its lease, 1 s at least."""
    return max(1.0, lease_s / 4)


def job_poll_s(lease_s: float) -> float:
    """How often a worker looks for jobs that fell due without a NOTIFY (one queued again after a lost
    worker or a failed try): at its heartbeat's pace, and at procrastinate's own 5 s at most."""
    return min(JOB_POLL_MAX_S, heartbeat_s(lease_s))


def worker_options(lease_s: float) -> dict[str, float]:
    """The paces a procrastinate ``Worker`` takes from the lease: its heartbeat, when another worker
    may take its jobs, and how often it looks for jobs that fell due."""
    return {
        "update_heartbeat_interval": heartbeat_s(lease_s),
        "stalled_worker_timeout": lease_s,
        "fetch_job_polling_interval": job_poll_s(lease_s),
    }


def queue_app(engine: Any, asynchronous: bool = False, lease_s: float | None = None):
    """A procrastinate app on ``engine``'s database: the async connector for a worker (its connection
    wait from ``lease_s``, :func:`connect_timeout_s`), the sync one for the writer that defers jobs."""
    import procrastinate

    conninfo = queue_conninfo(engine)
    if asynchronous:
        timeout = POOL_TIMEOUT_S if lease_s is None else connect_timeout_s(lease_s)
        return procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo, timeout=timeout))
    return procrastinate.App(connector=procrastinate.SyncPsycopgConnector(conninfo=conninfo))
