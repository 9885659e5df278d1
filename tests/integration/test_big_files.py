"""A large file on real PostgreSQL: staged in batches (searches see the old document or the new one,
never part of it), a killed ingest resumes without embedding its staged batches again, and stale
batches are cleaned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from sqlalchemy import text

from app import storage
from app.permissions.principals import FULL_ACCESS
from app.retrieval.search import keyword_search
from tests.integration.conftest import ROOT, HashEmbeddings

pytestmark = pytest.mark.integration

ROWS = 2000
BATCH = 50
# The module's own database, its chunks 16-d: thousands of rows go in and out here, and each one's HNSW
# insert costs its distance computations (a 384-d one, ten times the time); what is tested is the
# staging, the switch and the keyword statistics, none of which reads a vector's size.
DB = "rag_big"
DIMS = 16
MODEL = "test/hash-16"  # no published size: the store measures the hash embeddings' 16

# A sync of the data dir in its own process, with hash embeddings slowed to 0.3 s a batch (a big
# file's ingest takes a while), so the test can look at the database during it and kill it.
SLOW_INGEST = """
import dataclasses, pathlib, sys, time
from app.config import get_settings
from app.store import RagStore
from tests.integration.conftest import HashEmbeddings

class Slow(HashEmbeddings):
    def embed_documents(self, texts):
        time.sleep(0.3)
        return super().embed_documents(texts)

settings = get_settings().changed(retrieval={"collection_name": sys.argv[2]}, ingest={"batch_chunks": int(sys.argv[3])})
RagStore(settings, embeddings=Slow(int(sys.argv[4]))).sync(pathlib.Path(sys.argv[1]))
"""


@pytest.fixture(scope="module")
def big_settings(settings):
    """The session's settings on the module's own database, with the hash embeddings' model name."""
    return settings.changed(db={"name": DB}, models={"embed_model": MODEL})


@pytest.fixture(scope="module")
def engine(big_settings):
    """The engine of the module's database."""
    return storage.get_engine(big_settings)


@pytest.fixture
def hash_store(big_settings, engine):
    """A RagStore on its own collection of the module's database, 16-d hash embeddings, dropped afterwards."""
    import uuid

    from app.store import RagStore

    s = big_settings.changed(retrieval={"collection_name": f"h_{uuid.uuid4().hex[:8]}"})
    rs = RagStore(s, embeddings=HashEmbeddings(DIMS), engine=engine, principals=FULL_ACCESS)
    yield rs
    with rs.writing():
        rs.vectorstore.delete_collection()


class Counting(HashEmbeddings):
    """Hash embeddings that count the texts they embed; with ``fail_on``, that call raises."""

    def __init__(self, fail_on: int | None = None):
        super().__init__(DIMS)
        self.calls, self.fail_on = 0, fail_on

    def embed_documents(self, texts):
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("the model crashed")
        return super().embed_documents(texts)


def write_csv(path, tag: str, rows: int = ROWS) -> None:
    """``rows`` rows, each its own text, all marked with ``tag`` (a word found nowhere else)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{i},{tag}の規程第{i}条：社員は手続き{i}番を守ること。" for i in range(rows)]
    path.write_text("番号,内容\n" + "\n".join(lines) + "\n", encoding="utf-8")


def state(engine, collection: str, doc_id: str = "csv/big.csv") -> dict:
    """The document's stored chunks (all, with 旧版, with 新版), keyword rows, links and staged rows."""
    cid = storage.collection_id(engine, collection)
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT count(*), count(*) FILTER (WHERE document LIKE '%旧版%'), "
                "count(*) FILTER (WHERE document LIKE '%新版%'), "
                "(SELECT count(*) FROM rag_keyword_index k WHERE k.collection_id = :c), "
                "(SELECT count(*) FROM rag_graph_mention m WHERE m.collection_id = :c), "
                "(SELECT count(*) FROM rag_staging s WHERE s.collection_id = :c AND s.doc_id = :d) "
                "FROM langchain_pg_embedding WHERE collection_id = :c AND cmetadata->>'doc_id' = :d"
            ),
            {"c": cid, "d": doc_id},
        ).one()
    return dict(zip(("chunks", "old", "new", "keywords", "mentions", "staged"), row))


def hits(engine, collection: str, query: str) -> int:
    return len(keyword_search(engine, collection, query, 10, ("admin",)))


def test_a_killed_ingest_of_a_big_csv_shows_no_half_document_and_resumes(hash_store, engine, tmp_path):
    hash_store.settings = hash_store.settings.changed(ingest={"batch_chunks": BATCH})
    name = hash_store.settings.retrieval.collection_name
    big = tmp_path / "data" / "csv" / "big.csv"
    write_csv(big, "旧版")
    hash_store.sync(tmp_path / "data")
    old = state(engine, name)
    assert (old["chunks"], old["old"], old["keywords"], old["staged"]) == (ROWS, ROWS, ROWS, 0)

    write_csv(big, "新版")  # every row's text changes
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_INGEST, str(tmp_path / "data"), name, str(BATCH), str(DIMS)],
        cwd=ROOT,
        env={**os.environ, "DB_NAME": DB, "EMBED_MODEL": MODEL},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    try:
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None:
            now = state(engine, name)
            seen.append(now["staged"])
            # during the ingest a search sees the whole old document and nothing of the new one
            assert (now["chunks"], now["old"], now["new"]) == (ROWS, ROWS, 0), now
            assert hits(engine, name, "新版") == 0 and hits(engine, name, "旧版") == 10
            if now["staged"] >= 3 * BATCH:
                break
            time.sleep(0.1)
        assert proc.poll() is None, f"the ingest ended before it could be killed: {proc.communicate()[1][-2000:]}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    killed = state(engine, name)
    assert (killed["chunks"], killed["old"], killed["new"]) == (ROWS, ROWS, 0)
    assert 3 * BATCH <= killed["staged"] < ROWS and killed["staged"] % BATCH == 0  # whole batches only
    assert seen[0] < killed["staged"]  # the batches were committed one by one, while the test watched

    counting = Counting()
    hash_store._embeddings = counting
    _, report = hash_store.sync(tmp_path / "data")
    assert (report.updated, report.failed, report.chunks_written) == (1, 0, ROWS)
    assert report.embedded == ROWS - killed["staged"] < ROWS  # the staged batches were not embedded again
    assert report.reused == killed["staged"]
    done = state(engine, name)
    assert (done["chunks"], done["old"], done["new"], done["staged"]) == (ROWS, 0, ROWS, 0)
    assert done["keywords"] == ROWS and done["mentions"] > 0  # keyword rows and entity links moved in too
    assert hits(engine, name, "新版") == 10 and hits(engine, name, "旧版") == 0
    assert [d["chunks"] for d in hash_store.list_documents()] == [ROWS]


def test_a_file_failing_mid_way_keeps_its_old_version_and_stale_batches_are_cleaned(
    hash_store, engine, tmp_path, caplog
):
    hash_store.settings = hash_store.settings.changed(ingest={"batch_chunks": BATCH}, graph={"extractor": "off"})
    name = hash_store.settings.retrieval.collection_name
    data = tmp_path / "data"
    big = data / "csv" / "big.csv"
    write_csv(big, "旧版", rows=400)
    hash_store.sync(data)

    write_csv(big, "新版", rows=400)
    hash_store._embeddings = Counting(fail_on=4)  # three batches staged, then the model fails
    _, report = hash_store.sync(data)
    assert report.failed == 1 and report.failures == ["csv/big.csv: RuntimeError: the model crashed"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "skipped csv/big.csv: RuntimeError: the model crashed"
    ]
    failed = state(engine, name)
    assert (failed["chunks"], failed["old"], failed["new"], failed["staged"]) == (400, 400, 0, 3 * BATCH)

    write_csv(big, "新版", rows=399)  # the file changes again: the staged batches are of no use now
    counting = Counting()
    hash_store._embeddings = counting
    _, report = hash_store.sync(data)
    assert (report.updated, report.embedded, report.reused) == (1, 399 - 3 * BATCH, 3 * BATCH)  # same texts: reused
    assert state(engine, name)["staged"] == 0

    write_csv(data / "csv" / "other.csv", "別表", rows=300)
    hash_store._embeddings = Counting(fail_on=3)
    _, report = hash_store.sync(data)
    assert report.failed == 1 and state(engine, name, "csv/other.csv")["staged"] == 2 * BATCH
    (data / "csv" / "other.csv").unlink()  # a removed file's staged batches go too
    _, report = hash_store.sync(data)
    assert report.failed == 0 and state(engine, name, "csv/other.csv")["staged"] == 0
    with engine.connect() as conn:
        assert (
            conn.execute(
                text(
                    "SELECT count(*) FROM rag_staging s JOIN langchain_pg_collection c "
                    "ON c.uuid = s.collection_id WHERE c.name = :n"
                ),
                {"n": name},
            ).scalar()
            == 0
        )


def test_removing_a_big_document_keeps_within_the_statement_timeout_and_the_bm25_statistics_exact(
    big_settings, tmp_path
):
    """6,000 chunks out in one statement: the statistics trigger deletes the terms whose last chunk
    went by a join on (collection, term); it used to loop over every removed term for each of them
    (583 s for 20,000 chunks), far past DB_STATEMENT_TIMEOUT_MS."""
    import hashlib
    import uuid

    from app.store import RagStore

    s = big_settings.changed(
        retrieval={"collection_name": f"h_{uuid.uuid4().hex[:8]}"},
        db={"statement_timeout_ms": 10000},
        graph={"extractor": "off"},
    )
    store = RagStore(s, embeddings=HashEmbeddings(DIMS), engine=storage.get_engine(s))
    data = tmp_path / "data"
    (data / "csv").mkdir(parents=True)
    codes = [hashlib.sha256(str(i).encode()).hexdigest()[:10] for i in range(6000)]  # 12,000 distinct terms
    (data / "csv" / "big.csv").write_text(
        "番号,内容\n"
        + "\n".join(f"{i},大表の規程第{i}条：コード{code}を守ること。" for i, code in enumerate(codes))
        + "\n",
        encoding="utf-8",
    )
    write_csv(data / "csv" / "small.csv", "小表", rows=20)
    try:
        store.sync(data)
        (data / "csv" / "big.csv").unlink()
        _, report = store.sync(data)
        assert report.removed == 1
        cid = storage.collection_id(store.engine, s.retrieval.collection_name)
        with store.engine.connect() as conn:
            stored = dict(
                conn.execute(text("SELECT term, df FROM rag_term_stats WHERE collection_id = :c"), {"c": cid}).all()
            )
            exact = dict(
                conn.execute(
                    text(
                        "SELECT t.term, count(*) FROM rag_keyword_index k, unnest(tsvector_to_array(k.tsv)) AS t(term) "
                        "WHERE k.collection_id = :c GROUP BY 1"
                    ),
                    {"c": cid},
                ).all()
            )
            n = conn.execute(text("SELECT n FROM rag_collection_stats WHERE collection_id = :c"), {"c": cid}).scalar()
        assert stored == exact and n == 20 and "大表" not in " ".join(stored)
    finally:
        with store.writing():
            store.vectorstore.delete_collection()
