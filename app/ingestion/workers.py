"""The ingest's files staged one at a time in this process, or in worker processes
(``INGEST_WORKERS``/``--workers``) that die with their parent, and the progress bar counting
chunks (and OCR'd pages)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from app import storage
from app.config import Settings
from app.embeddings import get_embeddings
from app.formats.bounded import kill_with_parent as _kill_with_parent
from app.ingestion.datadir import SourceFile
from app.ingestion.staging import FATAL_ERRORS, StagedFile, StageRun, describe_failure, stage_file

# Parallel ingest: how often the progress bar reads what the workers staged; a worker's death.
PROGRESS_POLL_S = 1.0
WORKER_DIED = "the ingest worker died (it was killed, or ran out of memory); run the sync again"


def _stage_safely(
    source: SourceFile,
    stage: StageRun,
    on_batch: Callable[[int], None] | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> StagedFile | str:
    """:func:`stage_file`, or the one-line reason it failed; a lost database or a missing model raises."""
    try:
        return stage_file(source, stage, on_batch, on_page)
    except FATAL_ERRORS:
        raise
    except Exception as exc:
        return describe_failure(source.doc_id, exc)


def stage_all(work: Sequence[tuple[SourceFile, str]], stage: StageRun, workers: int, bar: Progress):
    """Yield ((source, kind), StagedFile or the one-line failure) for each work item: in this process,
    one at a time, or with ``workers`` > 1 in that many worker processes (:func:`_stage_in_workers`), as they
    finish. Switching documents over stays with the caller, the one holder of the writer lock."""
    if workers <= 1 or len(work) <= 1:
        for item in work:
            bar.reading(item[0].doc_id)
            yield item, _stage_with_bar(item[0], stage, bar)
        return
    yield from _stage_in_workers(work, stage, workers, bar)


def _stage_with_bar(source: SourceFile, stage: StageRun, bar: Progress) -> StagedFile | str:
    """:func:`_stage_safely` in this process, its staged chunks and OCR'd pages shown on ``bar``."""
    doc_id = source.doc_id
    return _stage_safely(source, stage, lambda n: bar.add(doc_id, n), bar.ocr_page)


def _stage_in_workers(work: Sequence[tuple[SourceFile, str]], stage: StageRun, workers: int, bar: Progress):
    """:func:`stage_all` with ``workers`` spawned processes, each with its own model, connection and
    ``llm_n_threads / workers`` threads; a worker stages its file's batches itself and sends back only
    a StagedFile, so no process holds a whole file's vectors. A worker that dies (killed, out of
    memory) fails the files in flight with one line each (their staged batches stay for the next
    sync); a new pool takes the files not started yet, and should it die too, this process does."""
    settings = stage.settings
    in_workers = replace(stage, settings=settings.changed(llm={"n_threads": max(1, settings.llm.n_threads // workers)}))
    pending = list(work)
    for _ in range(2):
        lost, pending = yield from _pool_round(pending, in_workers, workers, bar)
        for item in lost:
            yield item, f"{item[0].doc_id}: {WORKER_DIED}"
        if not pending:
            return
    for item in pending:
        bar.reading(item[0].doc_id)
        yield item, _stage_with_bar(item[0], stage, bar)


def _pool_round(items: Sequence[tuple[SourceFile, str]], stage: StageRun, workers: int, bar: Progress):
    """Stage ``items`` in one pool of spawned worker processes, one file per worker at a time (so the
    files in flight are known), yielding ((source, kind), result) as each finishes and showing the
    staged chunks on ``bar`` meanwhile. Returns (the items in flight when a worker died, the items
    not started then); both are empty when every item went through."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    queue, running, lost = deque(items), {}, []
    with ProcessPoolExecutor(
        max_workers=min(workers, len(items)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_start,
        initargs=(os.getpid(),),
    ) as pool:
        try:
            broken = False
            while running or (queue and not broken):
                # a worker is sent the settings, key and run only: it opens its own model and connection
                sent = (stage.settings, stage.key, stage.run)
                broken = broken or not _submit(pool, queue, running, workers, sent, bar)
                done, _ = wait(running, timeout=PROGRESS_POLL_S, return_when=FIRST_COMPLETED)
                in_flight = [item[0].doc_id for item in running.values()]
                bar.poll(stage.engine, stage.settings.retrieval.collection_name, stage.run, in_flight)
                for future in done:
                    item = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:  # this worker, or another one, died: the pool stops
                        lost.append(item)
                        broken = True
                        continue
                    except FATAL_ERRORS:
                        raise
                    except Exception as exc:
                        result = describe_failure(item[0].doc_id, exc)
                    if isinstance(result, StagedFile):
                        bar.reach(item[0].doc_id, result.chunks)
                    yield item, result
        finally:
            for future in running:
                future.cancel()
    return lost, list(queue)


def _submit(pool: Any, queue: Any, running: dict, workers: int, args: tuple, bar: Progress) -> bool:
    """Give idle workers the next files of ``queue`` (moved to ``running``: future -> item); False
    when the pool is broken (a worker died), so nothing more goes in."""
    from concurrent.futures.process import BrokenProcessPool

    while queue and len(running) < workers:
        try:
            future = pool.submit(_stage_in_worker, queue[0][0], *args)
        except BrokenProcessPool:
            return False
        running[future] = queue.popleft()
        bar.reading(running[future][0].doc_id)
    return True


def _stage_in_worker(source: SourceFile, settings: Settings, key: str, run: str) -> StagedFile | str:
    """Worker process: :func:`_stage_safely` with its own embedding model and connection (loaded once
    per worker)."""
    return _stage_safely(source, StageRun(settings, get_embeddings(settings), storage.get_engine(settings), key, run))


def _worker_start(parent: int) -> None:
    """Initializer of an ingest worker process: it must not outlive the process that started it (a
    killed sync would leave it running, with its model in memory). On Linux the kernel kills it when
    its parent dies (PR_SET_PDEATHSIG); everywhere a watchdog thread ends it within a second of
    finding itself orphaned."""
    _kill_with_parent()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="ingest-parent-watchdog", daemon=True).start()


def _watch_parent(parent: int, interval_s: float = 1.0) -> None:
    """End this process at once when its parent is gone (it was adopted by another process)."""
    while True:
        time.sleep(interval_s)
        if os.getppid() != parent:
            os._exit(1)


class Progress:
    """The ingest's progress bar (tqdm): chunks done (staged, whether embedded now or reused), files
    started, the file being read and, while a scan is OCR'd, its page (``OCR page 3/12``, a postfix:
    a page takes seconds, its chunks come only once every page is read); does nothing when disabled."""

    def __init__(self, files: int, enabled: bool):
        self.files, self.started, self.shown = files, 0, {}
        self.bar = None
        if enabled and files:
            from tqdm import tqdm

            self.bar = tqdm(unit=" chunks", desc="Ingesting", dynamic_ncols=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info) -> None:
        if self.bar is not None:
            self.bar.close()

    def reading(self, doc_id: str) -> None:
        """A file is being read (the Nth of the sync)."""
        self.started += 1
        if self.bar is not None:
            self.bar.set_description_str(f"Ingesting {doc_id} (file {self.started}/{self.files})", refresh=False)
            self.bar.set_postfix_str("", refresh=False)

    def ocr_page(self, done: int, total: int) -> None:
        """Page ``done`` of the ``total`` pages OCR'd in the file being read is read."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"OCR page {done}/{total}" if done < total else "", refresh=True)

    def jobs(self, done: int, failed: int, running: Mapping[str, int]) -> None:
        """A queued ingest's jobs: files done and failed, and how many each machine runs now."""
        if self.bar is not None:
            machines = ", ".join(f"{host} ×{n}" for host, n in sorted(running.items()))
            where = f" on {machines}" if machines else ""
            self.bar.set_postfix_str(f"jobs: {done} done, {failed} failed, {sum(running.values())} running{where}")

    def add(self, doc_id: str, chunks: int) -> None:
        """``chunks`` more chunks of ``doc_id`` are done."""
        self.reach(doc_id, self.shown.get(doc_id, 0) + chunks)

    def reach(self, doc_id: str, chunks: int) -> None:
        """At least ``chunks`` chunks of ``doc_id`` are done."""
        delta = chunks - self.shown.get(doc_id, 0)
        if delta > 0:
            self.shown[doc_id] = chunks
            if self.bar is not None:
                self.bar.update(delta)

    def poll(self, engine: Any, collection_name: str, run: str, doc_ids: Sequence[str]) -> None:
        """Show what worker processes staged so far of ``doc_ids`` (read from the staging table)."""
        if self.bar is None or not doc_ids:
            return

        staged = storage.staged_progress(engine, collection_name, run)
        for doc_id in doc_ids:
            self.reach(doc_id, staged.get(doc_id, 0))
