"""A worker of the ingest queue (``python -m app.worker``, on any machine with the data folder mounted and
``DATABASE_URL`` set): it takes a job, checks that its own copy of the file has the queued bytes and
that its settings make the same chunks, then reads, OCRs, chunks, embeds and stages the file in
PostgreSQL (:func:`app.ingestion.staging.stage_file`, as a one-machine sync does). Switching the
document over stays with the writer that queued it.

A try that fails is recorded with its one-line reason and given back to the queue (procrastinate
retries it, here or on another worker); after ``QUEUE_MAX_ATTEMPTS`` tries (a worker's death counts:
another worker takes its job back once its heartbeat is ``QUEUE_LEASE_S`` old) the job fails for good.
A worker whose settings would stage other chunks gives the job back uncounted and stops. The worker's
life (heartbeat, dead workers' jobs, reconnecting) is :mod:`app.ingestion.queue_runner`.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app import storage
from app.config import Settings
from app.embeddings import get_embeddings
from app.errors import DataSourceError
from app.formats.limits import file_hash
from app.formats.page_words import pages_to_json
from app.ingestion.datadir import SourceFile, link_refusal
from app.ingestion.queue import RETRY_WAIT_S, TASK_NAME, QueuedFile, queue_name
from app.ingestion.staging import FATAL_ERRORS, StageRun, describe_failure, generation, stage_file
from app.ingestion.sync import settings_hash
from app.storage import queue as queue_store

log = logging.getLogger(__name__)


class TryAgain(Exception):
    """A try of a queued file failed (its reason is recorded): the job goes back to the queue."""


class GiveUp(Exception):
    """A queued file failed its last try: the job fails for good."""


class Misfit(DataSourceError):
    """This worker cannot read the queue's files at all (other chunk settings, no data folder): it
    gives the job back uncounted and stops, rather than failing every file in turn."""


@dataclass
class WorkerContext:
    """What the worker's jobs share: the settings, this machine's data folder, the worker's name
    (``host:pid``) and the embedding model, loaded on the first job."""

    settings: Settings
    data_dir: Path
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    misfit: str = ""  # why this worker stopped taking jobs (app.ingestion.queue_runner stops it)
    stop: Any = None  # the running worker's stop(), set by app.ingestion.queue_runner (thread-safe)

    @property
    def engine(self) -> Any:
        """The store's engine (one per process, checked with one query)."""
        return storage.get_engine(self.settings)

    def embeddings(self) -> Any:
        """The embedding model (loaded once per process)."""
        return get_embeddings(self.settings)


def check_fit(job: QueuedFile, ctx: WorkerContext) -> None:
    """Misfit (one line) when this worker would stage ``job``'s file differently from what the writer
    waits for (the settings digest, or the generation: the graph extractor too), or has no data folder."""
    if settings_hash(ctx.settings) != job.key or generation_of(job, ctx.settings) != job.generation:
        raise Misfit(
            f"{job.doc_id}: this worker's settings (embedding model, chunk size, OCR, graph extractor) differ from "
            "the ingest's; refused, and this worker stops"
        )
    if not ctx.data_dir.is_dir():
        raise Misfit(f"this worker's data folder {ctx.data_dir} is not there (is the share mounted?); it stops")


def generation_of(job: QueuedFile, settings: Settings) -> str:
    """The generation this worker's staged rows of ``job``'s file would carry."""
    return generation(SourceFile(job.doc_id, Path(job.path), job.name, job.content_hash), job.key, settings)


def local_source(job: QueuedFile, ctx: WorkerContext) -> SourceFile:
    """The job's file on this machine, after the checks that it is the file queued: present under the
    data folder, not a link the policy refuses, and the same bytes. DataSourceError (one line) otherwise."""
    path = job.local_path(ctx.data_dir)
    refused = link_refusal(path, ctx.data_dir, ctx.settings.ingest.follow_external_links)
    if refused:
        raise DataSourceError(refused)
    if not path.is_file():
        raise DataSourceError(f"{job.doc_id}: not found under this worker's data folder {ctx.data_dir}; refused")
    try:
        digest = file_hash(path)
    except OSError as exc:
        raise DataSourceError(f"{job.doc_id}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})") from None
    if digest != job.content_hash:
        raise DataSourceError(
            f"{job.doc_id}: this worker's copy differs from the file queued (SHA-256 {digest[:12]}…, "
            f"queued {job.content_hash[:12]}…); refused"
        )
    return SourceFile(job.doc_id, path, job.name, job.content_hash)


def run_job(job_id: int, args: dict, ctx: WorkerContext) -> str:
    """Stage one queued file; what happened, in a word (``staged``, ``skipped``). TryAgain or GiveUp
    when it failed (the one-line reason recorded when the database allows); a lost database, a missing
    model or anything unforeseen is a failed try too (TryAgain: procrastinate ends the job after
    QUEUE_MAX_ATTEMPTS + 1 of them). A worker that does not fit the queue (:func:`check_fit`) gives the
    job back without counting a try and stops."""
    job = QueuedFile.from_args(args)
    try:
        check_fit(job, ctx)
    except Misfit as exc:  # given back uncounted (by our count), and this worker stops
        log.warning("%s", exc)
        ctx.misfit = str(exc)
        if ctx.stop is not None:
            ctx.stop()
        raise TryAgain(str(exc)) from None
    try:
        return _stage_job(job_id, job, ctx)
    except (TryAgain, GiveUp):
        raise
    except Exception as exc:
        raise TryAgain(f"{job.doc_id}: {exc.__class__.__name__}: {(str(exc).splitlines() or [''])[0]}") from exc


def _stage_job(job_id: int, job: QueuedFile, ctx: WorkerContext) -> str:
    """:func:`run_job`'s work, once the job's arguments are read."""
    settings, engine = ctx.settings, ctx.engine
    collection = settings.retrieval.collection_name
    tries = queue_store.begin_queued(engine, collection, job.doc_id, job.generation, job_id, ctx.name)
    if tries is None:  # switched over already, or queued again with other bytes
        log.info("%s: no longer queued with these bytes; nothing to do", job.doc_id)
        return "skipped"
    limit = settings.ingest.queue_max_attempts
    if tries > limit:  # every try before this one ended with its worker's death
        _failed(ctx, job, job_id, f"{job.doc_id}: the worker reading it died {tries - 1} times; given up", final=True)
    try:
        source = local_source(job, ctx)
        staged = stage_file(source, StageRun(settings, ctx.embeddings(), engine, job.key, f"job-{job_id}"))
    except FATAL_ERRORS:
        raise
    except Exception as exc:
        _failed(ctx, job, job_id, describe_failure(job.doc_id, exc), final=tries >= limit)
    counts = {name: getattr(staged, name) for name in ("chunks", "embedded", "truncated", "token_limit")}
    words = pages_to_json(staged.page_words) if staged.page_words else None
    queue_store.finish_queued(engine, collection, job.doc_id, job.generation, job_id, {**counts, "page_words": words})
    log.info("%s: staged %d chunks (%d embedded)", job.doc_id, staged.chunks, staged.embedded)
    return "staged"


def _failed(ctx: WorkerContext, job: QueuedFile, job_id: int, reason: str, final: bool) -> None:
    """Record a failed try's reason and raise GiveUp (``final``) or TryAgain."""
    queue_store.fail_queued(
        ctx.engine, ctx.settings.retrieval.collection_name, job.doc_id, job.generation, job_id, reason
    )
    log.warning("%s%s", reason, "" if final else " (to be tried again)")
    raise (GiveUp if final else TryAgain)(reason)


def register(app: Any, ctx: WorkerContext) -> None:
    """The queue's one task on ``app``, retried on TryAgain (procrastinate's retry strategy)."""
    from procrastinate import RetryStrategy

    retry = RetryStrategy(
        max_attempts=ctx.settings.ingest.queue_max_attempts + 1, wait=RETRY_WAIT_S, retry_exceptions={TryAgain}
    )

    @app.task(name=TASK_NAME, queue=queue_name(ctx.settings), retry=retry, pass_context=True)
    def stage_queued_file(context, file: dict) -> str:
        return run_job(context.job.id, file, ctx)
