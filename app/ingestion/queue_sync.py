"""The writer's side of a queued ingest (``make ingest QUEUE=1``): every file to read becomes one job of
the collection's queue, and the sync waits, switching each document over as a worker on any machine
stages it (:func:`stage_queued` yields what :func:`app.ingestion.workers.stage_all` yields, so the
sync's one writer loop does not change).

Interrupting the wait (Ctrl-C) leaves the queue as it is: the workers go on, and the next ``make
ingest`` finds the files queued, running or staged under the same bytes and settings, and waits for
them instead of queueing them again.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from app.formats.page_words import pages_from_json
from app.ingestion.datadir import SourceFile
from app.ingestion.queue import TASK_NAME, QueuedFile, queue_app, queue_name, relative_bytes
from app.ingestion.staging import StagedFile, StageRun, generation
from app.ingestion.workers import Progress
from app.storage import queue as queue_store

log = logging.getLogger(__name__)

POLL_S = 1.0  # how often the writer reads the queued files' outcomes
IDLE_WARNING_S = 60.0  # no file taken or staged for this long: one line says to start a worker
WAITING, STAGED, FAILED, LOST = "waiting", "staged", "failed", "lost"
LIVE_JOBS = ("todo", "doing")


def outcome(row: dict | None) -> str:
    """What a queued file's row (app.storage.queue.queued_states) says, for the waiting writer: its
    chunks are ``staged``; its job ``failed`` for good; a job is ``waiting`` for a worker or running;
    or the file has no live job (never queued, its job cancelled or gone): ``lost``, to queue again."""
    if row is None:
        return LOST
    if row["state"] == "staged":
        return STAGED
    if row["job_status"] in LIVE_JOBS:
        return WAITING
    if row["job_status"] == "failed":
        return FAILED
    return LOST


def queued_file(source: SourceFile, data_dir: Path, key: str, gen: str) -> QueuedFile:
    """The job's description of ``source``."""
    rel = relative_bytes(source.path, data_dir)
    return QueuedFile(
        doc_id=source.doc_id,
        path=rel.decode("utf-8", "replace"),
        path_hex=rel.hex(),
        name=source.name,
        content_hash=source.content_hash,
        key=key,
        generation=gen,
    )


def running_by_machine(rows: Sequence[dict]) -> Counter:
    """How many files each machine runs now (a worker is named ``host:pid``): rows whose worker is
    alive (a killed worker's row says running until another worker gives its job back)."""
    return Counter(
        (row["worker"] or "?").rsplit(":", 1)[0] for row in rows if row["state"] == "running" and row.get("alive")
    )


def stage_queued(
    work: Sequence[tuple[SourceFile, str]], stage: StageRun, bar: Progress, data_dir: Path, poll_s: float = POLL_S
) -> Iterator[tuple[tuple[SourceFile, str], StagedFile | str]]:
    """Queue one job per file of ``work`` (files already queued, running or staged with the same bytes
    and settings are not queued again), then yield ((source, kind), StagedFile or the one-line failure)
    as workers stage them: a staged file's rows are claimed for ``stage.run``, ready for the switch."""
    engine, settings = stage.engine, stage.settings
    collection = settings.retrieval.collection_name
    queue_store.ensure_queue_schema(engine)
    pending = {item[0].doc_id: (item, generation(item[0], stage.key, settings)) for item in work}
    lease_s = settings.ingest.queue_lease_s
    rows = _rows(engine, collection, pending, lease_s)
    _enqueue(engine, settings, [pending[d] for d in pending if outcome(rows.get(d)) in (LOST, FAILED)], stage, data_dir)
    done = failed = 0
    idle = IdleWatch(IDLE_WARNING_S)
    while pending:
        rows = _rows(engine, collection, pending, lease_s)
        lost = []
        for doc_id, (item, gen) in list(pending.items()):
            row = rows.get(doc_id)
            state = outcome(row)
            if state == LOST:
                lost.append((item, gen))
            if state not in (STAGED, FAILED):
                continue
            del pending[doc_id]
            if state == FAILED:
                failed += 1
                yield item, row["error"] or f"{doc_id}: the queued job failed"
                continue
            done += 1
            bar.reach(doc_id, row["chunks"] or 0)
            yield item, _claimed(engine, collection, stage.run, doc_id, gen, row)
            queue_store.forget_queued(engine, collection, doc_id, gen)
        if lost:
            _enqueue(engine, settings, lost, stage, data_dir)
        running = running_by_machine(list(rows.values()))
        bar.jobs(done, failed, running)
        if idle.quiet(done + failed, sum(running.values())):
            log.warning(
                "no worker has taken a file for %.0f s: start `python -m app.worker` on a machine with the data "
                "folder (Ctrl-C leaves the %d files queued)",
                idle.seconds,
                len(pending),
            )
        if pending:
            time.sleep(poll_s)


class IdleWatch:
    """Whether a queued ingest has seen no progress (nothing finished, nothing running) for ``seconds``:
    True once per such stretch (a clock may be given, for tests)."""

    def __init__(self, seconds: float, clock=time.monotonic):
        self.seconds, self.clock = seconds, clock
        self.since, self.last, self.told = clock(), (0, 0), False

    def quiet(self, finished: int, running: int) -> bool:
        """Record the counts now; True when this is the moment to say so."""
        now = self.clock()
        if (finished, running) != self.last or running:
            self.since, self.last, self.told = now, (finished, running), False
            return False
        if self.told or now - self.since < self.seconds:
            return False
        self.told = True
        return True


def _rows(engine, collection: str, pending: dict, lease_s: float) -> dict[str, dict]:
    """The queued-file rows of the pending documents, of the generation the writer waits for."""
    rows = queue_store.queued_states(engine, collection, list(pending), lease_s)
    return {row["doc_id"]: row for row in rows if row["generation"] == pending[row["doc_id"]][1]}


def _claimed(engine, collection: str, run: str, doc_id: str, gen: str, row: dict) -> StagedFile | str:
    """Claim a staged file's rows for the writer's run: its StagedFile, or the one-line reason the
    staged rows are not all there."""
    found = queue_store.claim_generation(engine, collection, doc_id, gen, run)
    if found != row["chunks"]:
        return f"{doc_id}: {found} chunks staged, {row['chunks']} expected; run the sync again"
    return StagedFile(
        chunks=row["chunks"],
        embedded=row["embedded"],
        truncated=row["truncated"],
        token_limit=row["token_limit"],
        page_words=pages_from_json(row["page_words"]),
    )


def _enqueue(engine, settings, items: Sequence, stage: StageRun, data_dir: Path) -> None:
    """Record ``items`` ((source, kind), generation) as queued, then defer one job each (in one batch)."""
    if not items:
        return
    collection = settings.retrieval.collection_name
    files = [queued_file(item[0], data_dir, stage.key, gen) for item, gen in items]
    queue_store.record_queued(engine, collection, [(f.doc_id, f.generation) for f in files])
    app = queue_app(engine)
    with app.open():
        deferrer = app.configure_task(TASK_NAME, queue=queue_name(settings))
        ids = deferrer.batch_defer(*({"file": f.to_args()} for f in files))
    queue_store.set_jobs(engine, collection, [(f.doc_id, f.generation, job) for f, job in zip(files, ids)])
    log.info("queued %d files on %s", len(files), queue_name(settings))
