"""Batched, resumable staging of one file (app.ingestion.staging.stage_file) without a database: the staging
table is an in-memory double of app.db's staging functions; tests/integration/test_big_files.py
runs the same on PostgreSQL."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from app.config import Settings
from app.ingestion import reading, scan, sync
from app.ingestion.staging import StageRun, generation, stage_file
from app.text.chunks import chunk_id

ROOT = Path(__file__).resolve().parents[1]


class CountingEmbeddings(Embeddings):
    """Predictable 2-d vectors (text length, call number); records each call's texts. With ``fail_on``,
    the call of that number raises (a sync killed mid-file)."""

    def __init__(self, fail_on: int | None = None):
        self.calls: list[list[str]] = []
        self.fail_on = fail_on

    def embed_documents(self, texts):
        self.calls.append(list(texts))
        if self.fail_on is not None and len(self.calls) == self.fail_on:
            raise RuntimeError("killed")
        return [[float(len(t)), float(len(self.calls))] for t in texts]

    def embed_query(self, text):
        return [float(len(text)), 0.0]

    @property
    def embedded(self) -> int:
        return sum(len(c) for c in self.calls)


class StagingTable:
    """app.db's staging functions over a dict: (doc_id, chunk id) -> row."""

    def __init__(self):
        self.rows: dict[tuple[str, str], dict] = {}
        self.batches: list[int] = []

    def claim_staged(self, engine, collection, doc_id, generation, run, ids):
        found = {i for i in ids if (doc_id, i) in self.rows and self.rows[doc_id, i]["generation"] == generation}
        for i in found:
            self.rows[doc_id, i]["run"] = run
        return found

    def stage_chunks(self, engine, collection, doc_id, generation, run, chunks, vectors, graphs=None):
        self.batches.append(len(chunks))
        for (position, doc), vector in zip(chunks, vectors):
            self.rows[doc_id, doc.id] = {
                "generation": generation,
                "run": run,
                "position": position,
                "id": doc.id,
                "text": doc.page_content,
                "metadata": doc.metadata,
                "vector": vector,
            }

    def vectors_by_hash(self, engine, hashes, model):
        return {
            r["metadata"]["content_hash"]: r["vector"]
            for r in self.rows.values()
            if r["metadata"]["content_hash"] in hashes
        }

    def staged(self, run=None):
        return sorted((r for r in self.rows.values() if run is None or r["run"] == run), key=lambda r: r["position"])


@pytest.fixture
def staging(monkeypatch):
    table = StagingTable()
    for name in ("claim_staged", "stage_chunks", "vectors_by_hash"):
        monkeypatch.setattr(f"app.storage.{name}", getattr(table, name))
    return table


@pytest.fixture
def big_csv(tmp_path):
    """A CSV of 20 rows, one of them long enough to be cut into several chunks."""
    (tmp_path / "csv").mkdir()
    rows = [f"{i},第{i}条：社員は規程{i}に従い、業務を誠実に行うものとする。" for i in range(20)]
    rows[7] = "7," + "".join(f"説明{i}の文。" for i in range(60))  # every chunk's text differs: none is reused
    path = tmp_path / "csv" / "rules.csv"
    path.write_text("番号,内容\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return scan.resolve_file(path, tmp_path)


SETTINGS = Settings().changed(ingest={"batch_chunks": 4, "chunk_size": 120}, graph={"extractor": "off"})


def test_batches_stage_exactly_the_chunks_and_ids_of_the_whole_file(big_csv, staging):
    """Cut in batches of 4, the staged chunks are the file's chunks with the IDs they always had (the
    position in the whole document, not in the batch), and no batch exceeds 4 chunks anywhere."""
    whole = reading.chunk_file(big_csv, SETTINGS)
    assert len(whole) > 20  # the long row is several chunks
    emb = CountingEmbeddings()
    staged = stage_file(big_csv, StageRun(SETTINGS, emb, None, "key", "run-1"))
    rows = staging.staged()
    assert [(r["id"], r["text"], r["metadata"]) for r in rows] == [(d.id, d.page_content, d.metadata) for d in whole]
    assert [r["position"] for r in rows] == list(range(len(whole)))
    assert all(
        d.id == chunk_id(SETTINGS.retrieval.collection_name, big_csv.doc_id, i, d.metadata["content_hash"])
        for i, d in enumerate(whole)
    )
    assert max(staging.batches) == 4 and max(len(c) for c in emb.calls) <= 4
    assert (staged.chunks, staged.embedded) == (len(whole), len(whole))
    assert stage_file(big_csv, StageRun(SETTINGS, CountingEmbeddings(), None, "key", "run-1")).chunks == len(whole)


def test_a_batch_is_written_while_the_next_is_embedded_and_a_write_error_is_raised(big_csv, staging, monkeypatch):
    """The writer thread: batch 1 is staged on another thread while batch 2 is embedded; when staging
    batch 2 fails, stage_file raises that error and nothing after it is staged."""
    import threading

    threads, written = set(), []
    inner = staging.stage_chunks

    def stage_chunks(*args, **kwargs):
        threads.add(threading.current_thread().name)
        if len(written) == 1:
            raise RuntimeError("disk on fire")
        written.append(len(args[5]))
        return inner(*args, **kwargs)

    monkeypatch.setattr("app.storage.stage_chunks", stage_chunks)
    with pytest.raises(RuntimeError, match="disk on fire"):
        stage_file(big_csv, StageRun(SETTINGS, CountingEmbeddings(), None, "key", "run-1"))
    assert written == [4]  # the first batch only
    assert threads and all(name.startswith("stage-writer") for name in threads)


def test_iter_chunks_yields_lazily_one_chunk_at_a_time(big_csv):
    chunks = reading.iter_chunks(big_csv, SETTINGS)
    first = next(chunks)
    assert first.metadata["source"] == "rules.csv:r1" and not isinstance(chunks, list)
    assert [first, *chunks] == reading.chunk_file(big_csv, SETTINGS)


def test_a_killed_staging_resumes_without_embedding_the_staged_batches_again(big_csv, staging):
    total = len(reading.chunk_file(big_csv, SETTINGS))
    dying = CountingEmbeddings(fail_on=4)  # the 4th batch never gets its vectors: 3 batches are staged
    with pytest.raises(RuntimeError, match="killed"):
        stage_file(big_csv, StageRun(SETTINGS, dying, None, "key", "run-1"))
    assert len(staging.staged()) == 12
    again = CountingEmbeddings()
    staged = stage_file(big_csv, StageRun(SETTINGS, again, None, "key", "run-2"))
    assert (staged.chunks, staged.embedded) == (total, total - 12)
    assert again.embedded == total - 12  # the staged 12 were claimed, not embedded
    assert len(staging.staged("run-2")) == total  # every chunk belongs to the new run (the switch moves them)


def test_staged_batches_of_other_bytes_or_settings_are_not_claimed(big_csv, staging, monkeypatch):
    total = len(reading.chunk_file(big_csv, SETTINGS))
    stage_file(big_csv, StageRun(SETTINGS, CountingEmbeddings(), None, "key", "run-1"))
    monkeypatch.setattr("app.storage.vectors_by_hash", lambda *a: {})  # only claims could spare embedding here
    other = CountingEmbeddings()
    staged = stage_file(big_csv, StageRun(SETTINGS, other, None, "other-settings", "run-2"))
    assert staged.embedded == total and other.embedded == total


def test_generation_follows_bytes_settings_and_extractor(big_csv):
    base = generation(big_csv, "key", SETTINGS)
    assert base == generation(big_csv, "key", SETTINGS)
    assert base != generation(dataclasses.replace(big_csv, content_hash="x"), "key", SETTINGS)
    assert base != generation(big_csv, "key2", SETTINGS)
    assert base != generation(big_csv, "key", SETTINGS.changed(graph={"extractor": "fast"}))


def test_the_progress_bar_counts_chunks_and_names_the_file(big_csv, staging, monkeypatch, capsys):
    """sync(progress=True), as `python -m app.ingest` runs it: the bar counts chunks, not files."""
    switched = []
    monkeypatch.setattr("app.storage.list_documents", lambda *a: [])
    monkeypatch.setattr("app.storage.clean_staging", lambda *a, **k: 0)
    monkeypatch.setattr("app.storage.forget_stale", lambda *a, **k: 0)
    monkeypatch.setattr(
        "app.storage.switch_document",
        lambda engine, name, doc, run, chunks, extractor, tables=None, words=None: switched.append(
            (doc["doc_id"], chunks, len(staging.staged(run)))
        ),
    )
    monkeypatch.setattr("app.storage.delete_legacy_chunks", lambda *a: 0)
    monkeypatch.setattr("app.storage.apply_readers", lambda *a: 0)
    monkeypatch.setattr("app.ingestion.sync.update_versions", lambda *a: 0)
    data_dir = big_csv.path.parents[1]
    _, report = sync.sync(data_dir, CountingEmbeddings(), None, SETTINGS, progress=True, graph=False)
    total = len(reading.chunk_file(big_csv, SETTINGS))
    assert switched == [("csv/rules.csv", total, total)] and report.chunks_written == total
    err = capsys.readouterr().err
    assert f"{total} chunks" in err and "csv/rules.csv" in err and "file 1/1" in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_a_worker_asks_the_kernel_to_die_with_its_parent():
    """A real process: after _kill_with_parent, prctl(PR_GET_PDEATHSIG) reads SIGKILL."""
    code = (
        "import ctypes, ctypes.util; from app.ingestion import workers; workers._kill_with_parent(); "
        "libc = ctypes.CDLL(ctypes.util.find_library('c')); sig = ctypes.c_int(); "
        "libc.prctl(2, ctypes.byref(sig), 0, 0, 0); print(sig.value)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "9"
