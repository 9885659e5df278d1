"""The writer's side of the ingest queue, pure parts: what a queued file's row means, the machines
running files, a job's description of a file (app.ingestion.queue_sync, app.ingestion.queue)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from app.config import Settings
from app.ingestion.datadir import SourceFile
from app.ingestion.queue import QueuedFile, queue_name
from app.ingestion.queue_sync import FAILED, LOST, STAGED, WAITING, outcome, queued_file, running_by_machine


def row(state="queued", job_status="todo", worker=None, alive=True) -> dict:
    return {"state": state, "job_status": job_status, "worker": worker, "alive": alive}


@pytest.mark.parametrize(
    "given,expected",
    [
        (None, LOST),  # never queued
        (row(), WAITING),
        (row("running", "doing"), WAITING),
        (row("staged", None), STAGED),  # procrastinate deleted the finished job
        (row("staged", "doing"), STAGED),  # staged, the job not marked done yet
        (row("queued", "failed"), FAILED),
        (row("queued", None), LOST),  # the job is gone
        (row("running", "cancelled"), LOST),
        (row("queued", "succeeded"), LOST),  # a job that found nothing to do
    ],
)
def test_what_a_queued_files_row_means_to_the_waiting_writer(given, expected):
    assert outcome(given) == expected


def test_the_machines_running_files_are_counted_by_host():
    rows = [
        row("running", "doing", "ocr-1:100"),
        row("running", "doing", "ocr-1:101"),
        row("running", "doing", "ocr-2.example.jp:7"),
        row("running", "doing", "ocr-4:9", alive=False),  # killed: its job is not given back yet
        row("staged", None, "ocr-3:5"),
        row("queued", "todo", None),
    ]
    assert running_by_machine(rows) == Counter({"ocr-1": 2, "ocr-2.example.jp": 1})


def test_a_job_describes_its_file_relative_to_the_data_folder_bytes_and_all(tmp_path):
    data = tmp_path / "data"
    odd = os.fsdecode(b"\xff\xfe.csv")  # not UTF-8: kept exactly in path_hex
    source = SourceFile("csv/x.csv", data / "csv" / odd, "x.csv", "ab" * 32)
    job = queued_file(source, data, "key1", "gen1")
    assert job.path == "csv/\ufffd\ufffd.csv" and job.path_hex == b"csv/\xff\xfe.csv".hex()
    assert QueuedFile.from_args(job.to_args()) == job
    assert job.local_path(Path("/mnt/share")) == Path(os.fsdecode(b"/mnt/share/csv/\xff\xfe.csv"))
    assert job.to_args() == {
        "doc_id": "csv/x.csv",
        "path": "csv/\ufffd\ufffd.csv",
        "path_hex": "6373762ffffe2e637376",
        "name": "x.csv",
        "content_hash": "ab" * 32,
        "key": "key1",
        "generation": "gen1",
    }


def test_each_collection_has_its_own_short_queue():
    first = queue_name(Settings())
    other = queue_name(Settings().changed(retrieval={"collection_name": "営業部の文書" * 20}))
    assert first.startswith("rag_ingest_") and len(first) == len(other) == 23 and first != other


def test_a_scans_words_go_through_the_database_and_come_back_the_same():
    from app.formats.page_words import PageWords, pages_from_json, pages_to_json

    pages = {
        2: PageWords(1300, 360, (("休暇", 60, 40, 80, 40, 0), ("申請", 150, 40, 80, 40, 0))),
        1: PageWords(10, 20, ()),
    }
    raw = pages_to_json(pages)
    assert raw == '{"1":[10,20,[]],"2":[1300,360,[["休暇",60,40,80,40,0],["申請",150,40,80,40,0]]]}'
    assert pages_from_json(raw) == pages == pages_from_json(__import__("json").loads(raw))
    assert pages_from_json(None) == {}


def test_a_writer_waiting_with_no_worker_says_so_once_per_quiet_stretch():
    from app.ingestion.queue_sync import IdleWatch

    now = [0.0]
    watch = IdleWatch(60, clock=lambda: now[0])
    said = []
    for t, finished, running in [
        (30, 0, 0),
        (61, 0, 0),
        (90, 0, 0),
        (100, 0, 1),
        (170, 0, 1),
        (200, 1, 0),
        (259, 1, 0),
        (261, 1, 0),
    ]:
        now[0] = t
        said.append(watch.quiet(finished, running))
    # silent while a worker runs a file (a scan may take minutes), and again for 60 s after a file is done
    assert said == [False, True, False, False, False, False, False, True]
