"""A queue worker's checks and tries (app.ingestion.queue_worker): the file it is given must be the file
queued, a failed try is recorded and given back, the last one fails the job, a death counts as a try.
The queue's own rows are stood in for here; tests/integration/test_queue.py runs it all for real."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.config import Settings
from app.errors import DataSourceError
from app.formats.limits import file_hash
from app.ingestion import queue_worker
from app.ingestion.queue import QueuedFile
from app.ingestion.queue_worker import (
    GiveUp,
    Misfit,
    TryAgain,
    WorkerContext,
    check_fit,
    generation_of,
    local_source,
    run_job,
)
from app.ingestion.sync import settings_hash


def job_for(data, settings: Settings, text: str = "質問,回答\n有給,20日\n") -> QueuedFile:
    (data / "csv").mkdir(parents=True, exist_ok=True)
    path = data / "csv" / "faq.csv"
    path.write_text(text, encoding="utf-8")
    rel = b"csv/faq.csv"
    job = QueuedFile("csv/faq.csv", rel.decode(), rel.hex(), "faq.csv", file_hash(path), settings_hash(settings), "")
    return replace(job, generation=generation_of(job, settings))  # as the writer computes it


def test_the_file_queued_is_the_file_read(tmp_path):
    settings = Settings()
    job = job_for(tmp_path / "writer", settings)
    mine = tmp_path / "mnt" / "share"
    job_for(mine, settings)
    source = local_source(job, WorkerContext(settings, mine, name="m:1"))
    assert (source.doc_id, source.path, source.name) == ("csv/faq.csv", mine / "csv" / "faq.csv", "faq.csv")


def test_another_copy_a_missing_file_or_other_settings_are_refused_in_one_line(tmp_path):
    settings = Settings()
    job = job_for(tmp_path / "writer", settings)
    stale = tmp_path / "stale"
    job_for(stale, settings, "質問,回答\n有給,10日\n")
    with pytest.raises(DataSourceError) as refused:
        local_source(job, WorkerContext(settings, stale, name="m:1"))
    assert str(refused.value).startswith("csv/faq.csv: this worker's copy differs from the file queued (SHA-256 ")
    assert str(refused.value).endswith("…); refused") and "\n" not in str(refused.value)
    with pytest.raises(DataSourceError, match=r"^csv/faq.csv: not found under this worker's data folder .*; refused$"):
        local_source(job, WorkerContext(settings, tmp_path / "empty", name="m:1"))
    check_fit(job, WorkerContext(settings, tmp_path / "writer", name="m:1"))  # it fits


@pytest.mark.parametrize(
    "changed",
    [{"ingest": {"chunk_size": 300}}, {"graph": {"extractor": "off"}}, {"models": {"embed_model": "other/e5"}}],
)
def test_a_worker_that_would_stage_other_chunks_does_not_fit(tmp_path, changed):
    settings = Settings().changed(graph={"extractor": "fast"})
    job = job_for(tmp_path / "writer", settings)
    with pytest.raises(Misfit, match=r"^csv/faq.csv: this worker's settings \(embedding model, chunk size, OCR, graph"):
        check_fit(job, WorkerContext(settings.changed(**changed), tmp_path / "writer", name="m:1"))
    with pytest.raises(Misfit, match="data folder .* is not there"):
        check_fit(job, WorkerContext(settings, tmp_path / "unmounted", name="m:1"))


class Rows:
    """The queue's rows for one file, as app.storage.queue keeps them."""

    def __init__(self, tries: int = 0, queued: bool = True):
        self.tries, self.queued, self.failed, self.finished = tries, queued, [], None

    def begin(self, engine, collection, doc, gen, job, worker):
        if not self.queued:
            return None
        self.tries += 1
        return self.tries

    def fail(self, engine, collection, doc, gen, job, error):
        self.failed.append(error)

    def finish(self, engine, collection, doc, gen, job, staged):
        self.finished = staged


@pytest.fixture
def rows(monkeypatch):
    def with_rows(tries=0, queued=True, staged=None):
        found = Rows(tries, queued)
        monkeypatch.setattr(queue_worker.queue_store, "begin_queued", found.begin)
        monkeypatch.setattr(queue_worker.queue_store, "fail_queued", found.fail)
        monkeypatch.setattr(queue_worker.queue_store, "finish_queued", found.finish)
        monkeypatch.setattr(WorkerContext, "engine", property(lambda self: "engine"))
        monkeypatch.setattr(WorkerContext, "embeddings", lambda self: "model")
        monkeypatch.setattr(queue_worker, "stage_file", staged or (lambda source, stage: pytest.fail("read")))
        return found

    return with_rows


def test_a_try_that_fails_is_recorded_and_given_back_and_the_last_one_fails_the_job(tmp_path, rows):
    settings = Settings().changed(ingest={"queue_max_attempts": 2})
    job = job_for(tmp_path / "writer", settings)
    (tmp_path / "elsewhere").mkdir()  # mounted, but without the file
    ctx = WorkerContext(settings, tmp_path / "elsewhere", name="m:1")
    found = rows()
    with pytest.raises(TryAgain):
        run_job(7, job.to_args(), ctx)
    with pytest.raises(GiveUp) as last:
        run_job(7, job.to_args(), ctx)
    assert found.failed == [str(last.value)] * 2 and found.finished is None
    assert str(last.value).startswith("csv/faq.csv: not found under this worker's data folder")


def test_a_file_whose_workers_all_died_is_given_up_without_reading_it(tmp_path, rows):
    settings = Settings().changed(ingest={"queue_max_attempts": 3})
    job = job_for(tmp_path / "writer", settings)
    found = rows(tries=3)  # three tries begun, none ended: each worker died
    with pytest.raises(GiveUp, match="^csv/faq.csv: the worker reading it died 3 times; given up$"):
        run_job(7, job.to_args(), WorkerContext(settings, tmp_path / "writer", name="m:1"))
    assert found.failed == ["csv/faq.csv: the worker reading it died 3 times; given up"]


def test_a_job_of_a_file_no_longer_queued_does_nothing(tmp_path, rows):
    settings = Settings()
    job = job_for(tmp_path / "writer", settings)
    found = rows(queued=False)
    assert run_job(7, job.to_args(), WorkerContext(settings, tmp_path / "writer", name="m:1")) == "skipped"
    assert found.tries == 0 and found.failed == [] and found.finished is None


def test_a_staged_file_is_recorded_with_its_counts(tmp_path, rows):
    from app.ingestion.staging import StagedFile

    settings = Settings()
    job = job_for(tmp_path / "writer", settings)
    runs = []

    def staged(source, stage):
        runs.append((source.doc_id, stage.key, stage.run, stage.embeddings))
        return StagedFile(chunks=4, embedded=3, truncated=0, token_limit=512)

    found = rows(staged=staged)
    assert run_job(7, job.to_args(), WorkerContext(settings, tmp_path / "writer", name="m:1")) == "staged"
    assert runs == [("csv/faq.csv", job.key, "job-7", "model")]
    assert found.finished == {"chunks": 4, "embedded": 3, "truncated": 0, "token_limit": 512, "page_words": None}


def test_a_misfit_worker_gives_the_job_back_uncounted_and_stops(tmp_path, rows):
    settings = Settings()
    job = job_for(tmp_path / "writer", settings)
    found = rows()
    stops = []
    ctx = WorkerContext(settings.changed(ingest={"chunk_size": 300}), tmp_path / "writer", name="m:1")
    ctx.stop = lambda: stops.append(True)
    with pytest.raises(TryAgain, match="differ from the ingest's; refused, and this worker stops"):
        run_job(7, job.to_args(), ctx)
    assert stops == [True] and found.tries == 0 and found.failed == [] and "this worker stops" in ctx.misfit


def test_a_lost_database_is_a_try_again_never_the_jobs_end(tmp_path, rows):
    from app.errors import DatabaseUnavailableError

    settings = Settings()
    job = job_for(tmp_path / "writer", settings)

    def gone(source, stage):
        raise DatabaseUnavailableError("the database failed: connection is bad")

    found = rows(staged=gone)
    with pytest.raises(TryAgain, match="connection is bad"):
        run_job(7, job.to_args(), WorkerContext(settings, tmp_path / "writer", name="m:1"))
    assert found.failed == []  # nothing could be recorded; the lease brings the job back
