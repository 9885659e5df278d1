"""Incremental ingest on real PostgreSQL: unchanged/edit/delete/rename, crash safety, watch, the API."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from langchain_core.documents import Document
from sqlalchemy import create_engine, text

from app import storage
from app.retrieval.search import keyword_search
from tests.integration.conftest import ROOT, CountingEmbeddings

pytestmark = pytest.mark.integration


def rows(engine, collection, table="langchain_pg_embedding"):
    """(source, doc_id) of every chunk row of a collection; keyword rows via join."""
    cid = storage.collection_id(engine, collection)
    with engine.connect() as conn:
        if table == "keyword":
            return conn.execute(
                text(f"SELECT count(*) FROM {storage.KEYWORD_TABLE} WHERE collection_id = :c"), {"c": cid}
            ).scalar()
        return sorted(
            conn.execute(
                text(
                    "SELECT cmetadata->>'source', cmetadata->>'doc_id' FROM langchain_pg_embedding WHERE collection_id = :c"
                ),
                {"c": cid},
            ).all()
        )


@pytest.fixture
def data(tmp_path):
    target = tmp_path / "data"
    shutil.copytree(ROOT / "data", target)
    return target


def test_second_sync_of_unchanged_data_adds_nothing_and_embeds_nothing(own_store, engine, data):
    _, first = own_store.sync(data)
    before = rows(engine, own_store.settings.retrieval.collection_name)
    embedded_before = own_store.embeddings.texts
    _, second = own_store.sync(data)
    assert first.added == 7 and first.embedded + first.reused == 50  # vectors of identical text are reused
    assert (second.added, second.updated, second.unchanged, second.removed, second.embedded) == (0, 0, 7, 0, 0)
    assert own_store.embeddings.texts == embedded_before
    assert rows(engine, own_store.settings.retrieval.collection_name) == before and len(before) == 50


def _row_versions(engine, collection: str, doc_id: str) -> dict:
    """id -> xmin (the transaction that last wrote the row) of a document's chunk rows."""
    cid = storage.collection_id(engine, collection)
    with engine.connect() as conn:
        return dict(
            conn.execute(
                text(
                    "SELECT id, xmin::text FROM langchain_pg_embedding WHERE collection_id = :c AND cmetadata->>'doc_id' = :d"
                ),
                {"c": cid, "d": doc_id},
            ).all()
        )


def test_edited_file_replaces_only_its_chunks_in_both_indexes(own_store, engine, data):
    name = own_store.settings.retrieval.collection_name
    own_store.sync(data)
    before = _row_versions(engine, name, "csv/faq.csv")
    faq = data / "csv" / "faq.csv"
    faq.write_text(
        faq.read_text(encoding="utf-8").replace("平日9時から18時まで", "平日10時から17時まで"), encoding="utf-8"
    )
    _, report = own_store.sync(data)
    assert (report.updated, report.unchanged, report.embedded + report.reused) == (1, 6, 22)
    assert report.reused >= 21  # only the edited row is new text
    assert len(rows(engine, name)) == 50 and rows(engine, name, "keyword") == 50
    hit = keyword_search(engine, name, "平日10時から17時", 1, ("admin",))[0]
    assert hit.metadata["source"] == "faq.csv:r2" and "10時" in hit.page_content
    assert all(
        "平日9時から18時" not in d.page_content for d in keyword_search(engine, name, "平日9時から18時", 50, ("admin",))
    )
    after = _row_versions(engine, name, "csv/faq.csv")
    rewritten = {i for i in after if before.get(i) != after[i]}
    assert len(after) == len(before) == 22 and len(rewritten) == 1  # the edited row only; 21 rows untouched
    assert len(set(before) - set(after)) == 1  # its old version is gone


def test_deleted_file_is_purged_from_both_indexes(own_store, engine, data):
    name = own_store.settings.retrieval.collection_name
    own_store.sync(data)
    (data / "pdf" / "technical_guide.pdf").unlink()
    _, report = own_store.sync(data)
    assert report.removed == 1
    assert not [s for s, _ in rows(engine, name) if s.startswith("technical_guide")]
    assert rows(engine, name, "keyword") == 46
    assert "pdf/technical_guide.pdf" not in [d["doc_id"] for d in own_store.list_documents()]
    assert all(
        d.metadata["file"] != "technical_guide.pdf" for d in keyword_search(engine, name, "E3010", 10, ("admin",))
    )


def test_renamed_file_is_not_re_embedded(own_store, engine, data):
    """A PDF with a metadata title keeps its context when renamed: nothing is embedded again.
    A CSV's context is its file name and header, so a renamed CSV is embedded anew (its name
    is part of what is indexed)."""
    name = own_store.settings.retrieval.collection_name
    own_store.sync(data)
    embedded = own_store.embeddings.texts
    chunks = len([s for s, d in rows(engine, name) if d == "pdf/technical_guide.pdf"])
    (data / "pdf" / "technical_guide.pdf").rename(data / "pdf" / "guide_2026.pdf")
    _, report = own_store.sync(data)
    assert (report.added, report.removed, report.renamed, report.embedded, report.reused) == (1, 1, 1, 0, chunks)
    assert own_store.embeddings.texts == embedded
    sources = [s for s, _ in rows(engine, name)]
    assert "guide_2026.pdf:p1" in sources and not [s for s in sources if s.startswith("technical_guide.pdf")]
    assert rows(engine, name, "keyword") == 50
    (data / "csv" / "faq.csv").rename(data / "csv" / "faq_2026.csv")
    _, report = own_store.sync(data)
    assert (report.renamed, report.embedded, report.reused) == (1, 22, 0)


def test_python_api_add_search_context_retriever_remove(own_store, data):
    ids = own_store.add_document(data / "csv" / "faq.csv", data_dir=data)
    assert ids == ["csv/faq.csv"]
    parent = own_store.add_document(
        Document(
            page_content="社内規程：出張旅費は精算システムで申請する。", metadata={"source": "memo:1"}, id="memo-1"
        )
    )
    assert parent == ["memo-1"]
    hits = own_store.search("出張旅費", search_mode="keyword", top_k=2)
    assert hits[0].metadata["source"] == "memo:1" and hits[0].metadata["relevance_score"] > 0
    assert "受付時間" in own_store.get_context("サポートの受付時間", search_mode="hybrid", top_k=2)
    assert own_store.as_retriever(search_mode="keyword", top_k=1).invoke("出張旅費")[0].id
    assert {d["doc_id"] for d in own_store.list_documents()} == {"csv/faq.csv", "memo-1"}
    assert own_store.remove_document("memo-1") == 1
    assert own_store.search("出張旅費", search_mode="keyword", top_k=5) == [] or all(
        d.metadata["source"] != "memo:1" for d in own_store.search("出張旅費", search_mode="keyword", top_k=5)
    )


def test_watch_syncs_once_per_burst_of_saves(own_store, data):
    from app.ingestion.watch import watch_and_sync

    syncs, stop = [], threading.Event()
    thread = threading.Thread(
        target=watch_and_sync,
        args=(data, own_store),
        kwargs={"debounce_ms": 800, "stop": stop, "on_sync": lambda r, rep: syncs.append((r, rep))},
    )
    thread.start()
    try:
        deadline = time.time() + 60
        while not syncs and time.time() < deadline:
            time.sleep(0.1)
        assert syncs and syncs[0][1].added == 7
        new = data / "csv" / "new.csv"
        for i in range(5):  # a burst of saves
            new.write_text(f"項目\n新しい行{i}\n", encoding="utf-8")
            time.sleep(0.05)
        deadline = time.time() + 30
        while len(syncs) < 2 and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(2)  # nothing else should follow
        assert len(syncs) == 2, [r for r, _ in syncs]
        assert syncs[1][1].added == 1
        assert "新しい行4" in own_store.get_context("新しい行", search_mode="keyword", top_k=1)
        new.unlink()
        deadline = time.time() + 30
        while len(syncs) < 3 and time.time() < deadline:
            time.sleep(0.1)
        assert syncs[2][1].removed == 1
    finally:
        stop.set()
        thread.join(timeout=10)


def make_corpus(folder, files=30, rows_per_file=12):
    (folder / "csv").mkdir(parents=True)
    for f in range(files):
        lines = ["番号,内容"] + [
            f"{f}-{r},ファイル{f}の{r}行目：検査用の文章その{f * 100 + r}です。" for r in range(rows_per_file)
        ]
        (folder / "csv" / f"part{f:02d}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def consistent(engine) -> tuple[int, int]:
    """Check every stored document is complete; return (documents, chunks)."""
    with engine.connect() as conn:
        docs = conn.execute(text(f"SELECT doc_id, chunks FROM {storage.DOCUMENT_TABLE}")).all()
        counts = dict(
            conn.execute(text("SELECT cmetadata->>'doc_id', count(*) FROM langchain_pg_embedding GROUP BY 1")).all()
        )
        keywords = conn.execute(text(f"SELECT count(*) FROM {storage.KEYWORD_TABLE}")).scalar()
    assert set(counts) == {d for d, _ in docs}, "chunks without a document row (a partial document)"
    assert all(counts[d] == n for d, n in docs), "a document with missing chunks"
    assert keywords == sum(counts.values())
    return len(docs), sum(counts.values())


def test_killed_ingest_leaves_no_partial_document_and_next_run_completes(integration_env, tmp_path):
    from app.config import Settings

    make_corpus(tmp_path / "data")
    env = {**os.environ, "DB_NAME": "rag_kill_test"}
    settings = Settings.from_env().changed(db={"name": "rag_kill_test"})
    engine = create_engine(storage.resolve_connection_string(settings))
    cmd = [sys.executable, "-m", "app.ingest", "--data-dir", str(tmp_path / "data")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline, stored = time.time() + 180, 0
        while time.time() < deadline and proc.poll() is None:
            try:
                with engine.connect() as conn:
                    stored = conn.execute(text(f"SELECT count(*) FROM {storage.DOCUMENT_TABLE}")).scalar()
            except Exception:  # schema not created yet
                stored = 0
            if stored >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "ingest finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    docs, chunks = consistent(engine)
    assert 3 <= docs < 30 and chunks == docs * 12
    rerun = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{30 - docs} added, 0 updated, {docs} unchanged" in rerun.stdout
    assert consistent(engine) == (30, 360)
    engine.dispose()


def test_docs_and_remove_cli(ingested, integration_env):
    from tests.integration.conftest import run_cli

    listed = run_cli("app.docs", "list")
    assert listed.returncode == 0 and "csv/faq.csv" in listed.stdout and "7 documents, 50 chunks" in listed.stdout
    missing = run_cli("app.docs", "remove", "nope.csv")
    assert (
        missing.returncode == 1 and missing.stderr.strip() == "Error: no stored document 'nope.csv' (see `make docs`)"
    )


def test_markdown_sections_are_searchable_with_heading_weight_and_follow_edits(own_store, engine, data):
    name = own_store.settings.retrieval.collection_name
    own_store.sync(data)
    hit = keyword_search(engine, name, "ミナトVPN", 1, ("admin",))[0]
    assert hit.metadata["source"] == "it_helpdesk.md#vpn接続"
    assert hit.metadata["title"] == "情報システム部 ヘルプデスク手順書 > VPN接続"
    assert (
        own_store.search("在宅で社内システムにつなぐ方法", search_mode="vector", top_k=3)[0].metadata["doc_id"]
        == "docs/it_helpdesk.md"
    )

    # the heading path is weighted above body text: the section titled 経費精算 outranks a body mention
    (data / "docs" / "rules").mkdir()
    (data / "docs" / "rules" / "notes.md").write_text(
        "# 経費精算\n\n領収書を添えて月末までに提出します。\n\n# 出張\n\n出張の経費精算は帰着後に行います。\n",
        encoding="utf-8",
    )
    _, report = own_store.sync(data)
    assert (report.added, report.unchanged) == (1, 7)
    ranked = [d.metadata["source"] for d in keyword_search(engine, name, "経費精算", 5, ("admin",))]
    assert ranked[0] == "notes.md#経費精算" and ranked.index("notes.md#経費精算") < ranked.index("notes.md#出張")

    guide = data / "docs" / "it_helpdesk.md"
    guide.write_text(guide.read_text(encoding="utf-8").replace("ミナトVPN", "ZephyrNet"), encoding="utf-8")
    _, report = own_store.sync(data)
    assert (report.updated, report.unchanged, report.embedded) == (1, 7, 1)  # one section's text is new
    assert keyword_search(engine, name, "zephyrnet", 1, ("admin",))[0].metadata["source"] == "it_helpdesk.md#vpn接続"
    assert all("ミナトVPN" not in d.page_content for d in keyword_search(engine, name, "ミナトvpn", 50, ("admin",)))

    guide.unlink()
    _, report = own_store.sync(data)
    assert report.removed == 1
    assert not [s for s, d in rows(engine, name) if d == "docs/it_helpdesk.md"]


def _vectors(engine, collection):
    cid = storage.collection_id(engine, collection)
    with engine.connect() as conn:
        return dict(
            conn.execute(
                text("SELECT id, embedding::text FROM langchain_pg_embedding WHERE collection_id = :c"), {"c": cid}
            ).all()
        )


def test_parallel_workers_embed_in_their_own_processes_and_a_bad_file_fails_alone(
    settings, engine, real_embeddings, tmp_path
):
    """Texts nobody stored before (so no vector can be reused): the two workers embed them all,
    this process none, with the same model; a broken file is counted alone."""
    import uuid

    import numpy as np

    from app.store import RagStore
    from app.text.chunks import embedding_text

    token = uuid.uuid4().hex
    data = tmp_path / "data"
    (data / "csv").mkdir(parents=True)
    (data / "pdf").mkdir()
    for f in range(4):
        rows = "\n".join(f"{token}-{f}-{i},社内規程 {i} 条の説明 {token[:6]}" for i in range(5))
        (data / "csv" / f"w{f}.csv").write_text(f"番号,内容\n{rows}\n", encoding="utf-8")
    (data / "pdf" / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    here = CountingEmbeddings(real_embeddings)
    store = RagStore(settings.changed(retrieval={"collection_name": f"w_{token[:8]}"}), embeddings=here, engine=engine)
    try:
        _, report = store.sync(data, workers=2)
        assert (report.added, report.failed, report.embedded, report.chunks_written) == (4, 1, 20, 20)
        assert report.failures[0].startswith("pdf/broken.pdf: ")
        # every chunk was embedded in the worker processes; here, only the graph's entity descriptions
        assert here.texts == report.graph.entities_embedded
        cid = storage.collection_id(engine, store.settings.retrieval.collection_name)
        with engine.connect() as conn:
            stored = conn.execute(
                text(
                    "SELECT document, cmetadata->>'context', embedding::text "
                    "FROM langchain_pg_embedding WHERE collection_id = :c"
                ),
                {"c": cid},
            ).all()
        expected = real_embeddings.embed_documents([embedding_text(doc, context) for doc, context, _ in stored])
        got = np.array([json.loads(v) for _, _, v in stored])
        assert got.shape == (20, 384) and np.abs(got - np.array(expected)).max() < 1e-3  # the same model
    finally:
        store.vectorstore.delete_collection()


def test_a_new_embedding_model_rewrites_rows_whose_ids_stay_the_same(hash_store, engine, data):
    """Chunk ids cover the text, not the model: a sync under another EMBED_MODEL must still replace
    every vector (the kept-row check compares the metadata, which names the model)."""
    from app.store import RagStore
    from tests.integration.conftest import HashEmbeddings

    class Shifted(HashEmbeddings):
        def _vector(self, text_):
            return [-x for x in super()._vector(text_)]

    hash_store.sync(data)
    name = hash_store.settings.retrieval.collection_name
    before = _vectors(engine, name)
    other = RagStore(
        hash_store.settings.changed(models={"embed_model": "acme/other-384"}), embeddings=Shifted(), engine=engine
    )
    _, report = other.sync(data)
    assert report.updated == 7 and report.embedded == 50  # nothing reused across models
    after = _vectors(engine, name)
    assert set(after) == set(before)  # the same ids...
    assert all(json.loads(after[i]) != json.loads(before[i]) for i in after)  # ...with the new model's vectors
    cid = storage.collection_id(engine, name)
    with engine.connect() as conn:
        models = set(
            conn.execute(
                text("SELECT DISTINCT cmetadata->>'embed_model' FROM langchain_pg_embedding WHERE collection_id = :c"),
                {"c": cid},
            ).scalars()
        )
    assert models == {"acme/other-384"}


def test_a_large_sync_analyzes_the_bm25_statistics_tables(own_store, engine, tmp_path, monkeypatch):
    """Manual ANALYZE runs are counted apart from autovacuum's (pg_stat_user_tables.analyze_count):
    a sync below the threshold adds none, one at it adds one (threshold lowered to these files)."""
    import uuid

    from app.ingestion import sync as sync_module

    data = tmp_path / "big"
    (data / "csv").mkdir(parents=True)
    rows_ = "\n".join(f"{i},{uuid.uuid4().hex}" for i in range(40))
    (data / "csv" / "terms.csv").write_text("n,code\n" + rows_ + "\n", encoding="utf-8")

    def analyzed() -> int:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_stat_clear_snapshot()"))
            return conn.execute(
                text("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = :t"),
                {"t": storage.TERM_STATS_TABLE},
            ).scalar()

    before = analyzed()
    monkeypatch.setattr(sync_module, "ANALYZE_AFTER_CHUNKS", 41)
    _, first = own_store.sync(data)
    assert first.chunks_written == 40 and analyzed() == before
    (data / "csv" / "more.csv").write_text("n,code\n" + rows_.replace(",", ",x") + "\n", encoding="utf-8")
    monkeypatch.setattr(sync_module, "ANALYZE_AFTER_CHUNKS", 40)
    _, second = own_store.sync(data)
    assert second.chunks_written == 40 and analyzed() == before + 1


def test_a_page_cut_at_headings_is_one_search_result_in_every_mode(own_store, engine, tmp_path):
    """Real PDF (sizes drawn by reportlab), real pypdf, real e5 and PostgreSQL: the page's two sections
    are two stored chunks with their heading paths, and each search mode returns the page once."""
    from tests.test_formats_loaders import make_sized_pdf

    (tmp_path / "pdf").mkdir()
    make_sized_pdf(
        tmp_path / "pdf" / "keihi.pdf",
        [
            [
                (16, "第3章 経費精算"),
                (10, "経費精算は月末までに申請します。"),
                (13, "3.1 経費精算の承認"),
                (10, "経費精算の承認は部長が行います。"),
            ],
            [(10, "出張旅費は別の規程で定めます。")],
        ],
    )
    own_store.sync(tmp_path)
    cid = storage.collection_id(engine, own_store.settings.retrieval.collection_name)
    with engine.connect() as conn:
        stored = conn.execute(
            text(
                "SELECT cmetadata->>'source', cmetadata->>'context' FROM langchain_pg_embedding "
                "WHERE collection_id = :c ORDER BY cmetadata->>'source', (cmetadata->>'chunk_index')::int"
            ),
            {"c": cid},
        ).all()
    assert [tuple(r) for r in stored] == [
        ("keihi.pdf:p1", "keihi — 第3章 経費精算"),
        ("keihi.pdf:p1", "keihi — 第3章 経費精算 > 3.1 経費精算の承認"),
        ("keihi.pdf:p2", "keihi — 第3章 経費精算 > 3.1 経費精算の承認"),
    ]
    for mode in ("vector", "keyword", "hybrid"):
        sources = [d.metadata["source"] for d in own_store.search("経費精算の承認", search_mode=mode, top_k=5)]
        assert sources[0] == "keihi.pdf:p1" and len(sources) == len(set(sources)), (mode, sources)
