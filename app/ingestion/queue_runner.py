"""A queue worker's life (``python -m app.worker``): wait for the queue, run procrastinate's worker on the
collection's queue, keep its heartbeat and give back the jobs of dead workers, connect again when the
database goes away, stop when this worker does not fit the queue (:mod:`app.ingestion.queue_worker`
does each job).

The heartbeat is kept here as well as by procrastinate: in 3.10 its own heartbeat task stops for good
after one failed update (procrastinate issue #1597), and a worker whose heartbeat stops would see
its jobs given to others while it still runs them. A heartbeat that fails here ends the run, and
:func:`serve` connects again with a new worker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from app import storage
from app.errors import DatabaseUnavailableError
from app.ingestion.queue import heartbeat_s, queue_app, queue_name, worker_options
from app.ingestion.queue_worker import Misfit, WorkerContext, register
from app.storage import queue as queue_store

log = logging.getLogger("app.ingestion.queue_worker")  # one logger for the worker's lines

RECONNECT_MAX_S = 30  # the longest wait between two tries to reach a database that went away


async def requeue_stalled(app: Any, ctx: WorkerContext) -> int:
    """Give back to the queue the jobs of workers whose heartbeat is ``QUEUE_LEASE_S`` old (killed,
    frozen, cut off); how many. One worker sweeps at a time (a PostgreSQL advisory lock), so a job is
    never given back twice, once to a live worker; a job that changed meanwhile is left alone."""
    settings = ctx.settings
    with queue_store.sweeping(ctx.engine) as mine:
        if not mine:
            return 0
        lease = settings.ingest.queue_lease_s
        stalled = await app.job_manager.get_stalled_jobs(queue=queue_name(settings), seconds_since_heartbeat=lease)
        given = 0
        for job in stalled:
            try:
                await app.job_manager.retry_job(job)
            except Exception as exc:  # it finished or was given back meanwhile
                log.info("job %s was not given back (%s)", job.id, exc)
                continue
            given += 1
            doc_id = job.task_kwargs.get("file", {}).get("doc_id")
            log.warning("job %s (%s) lost its worker; queued again", job.id, doc_id)
        return given


async def _keep_alive(app: Any, worker: Any, ctx: WorkerContext) -> None:
    """Beside the worker: its heartbeat every quarter lease and the sweep for dead workers' jobs every
    half; raises (ending the run) when the database is gone."""
    interval = heartbeat_s(ctx.settings.ingest.queue_lease_s)
    beats = 0
    while True:
        await asyncio.sleep(interval)
        if worker.worker_id is not None:
            await app.job_manager.update_heartbeat(worker.worker_id)
        beats += 1
        if beats % 2 == 0:
            await requeue_stalled(app, ctx)


async def serve_once(ctx: WorkerContext, concurrency: int, once: bool) -> None:
    """Run the worker until it is stopped (or, with ``once``, until no job is ready); the exception of
    a lost database, from the worker or from its heartbeat."""
    from procrastinate.worker import Worker

    settings = ctx.settings
    lease = settings.ingest.queue_lease_s
    app = queue_app(ctx.engine, asynchronous=True, lease_s=lease)
    register(app, ctx)
    async with app.open_async():
        await requeue_stalled(app, ctx)
        worker = Worker(
            app,
            queues=[queue_name(settings)],
            name=ctx.name,
            concurrency=concurrency,
            wait=not once,
            delete_jobs="successful",
            **worker_options(lease),
        )
        ctx.stop = worker.stop
        running = asyncio.create_task(worker.run())
        alive = asyncio.create_task(_keep_alive(app, worker, ctx))
        await asyncio.wait({running, alive}, return_when=asyncio.FIRST_COMPLETED)
        if alive.done():  # the heartbeat failed: stop taking jobs, let the running ones end
            worker.stop()
            await asyncio.gather(running, return_exceptions=True)
            alive.result()
        alive.cancel()
        running.result()


def wait_for_queue(ctx: WorkerContext, once: bool, poll_s: float = 2.0) -> bool:
    """Wait until the database has the ingest queue (the first ``make ingest QUEUE=1`` makes it; one
    line says so); False at once with ``once``, when there is none."""
    told = False
    while not queue_store.queue_ready(ctx.engine):
        if once:
            log.warning("no ingest queue in this database yet: nothing to do")
            return False
        if not told:
            log.warning("no ingest queue in this database yet; waiting for `make ingest QUEUE=1`")
            told = True
        time.sleep(poll_s)
    return True


def serve(ctx: WorkerContext, concurrency: int = 1, once: bool = False) -> None:
    """:func:`serve_once`, connecting again (waiting up to RECONNECT_MAX_S between tries, one line each
    time) whenever the database goes away. Misfit (one line) when this worker stopped because it does
    not fit the queue (other chunk settings, no data folder)."""
    if not ctx.data_dir.is_dir():
        raise Misfit(f"this worker's data folder {ctx.data_dir} is not there (is the share mounted?)")
    delay = 1.0
    while True:
        try:
            if not wait_for_queue(ctx, once):
                return
            asyncio.run(serve_once(ctx, concurrency, once))
        except Exception as exc:
            if ctx.misfit or not database_gone(exc):
                raise
            log.warning("the database is unreachable (%s); trying again in %.0f s", root_line(exc), delay)
            time.sleep(delay)
            delay = min(RECONNECT_MAX_S, delay * 2)
            continue
        if ctx.misfit:
            raise Misfit(ctx.misfit)
        return


def root_line(exc: BaseException) -> str:
    """The first line of the innermost cause (procrastinate's "Database error." wraps psycopg's reason)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]


def database_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says the database went away (procrastinate's connector, psycopg, SQLAlchemy)."""
    from procrastinate.exceptions import ConnectorException
    from psycopg import OperationalError

    if isinstance(exc, (ConnectorException, OperationalError, DatabaseUnavailableError)):
        return True
    return storage.database_error(exc) is not None
