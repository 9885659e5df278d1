"""sync.py: planning (pure), stable IDs, chunking with metadata, embedding reuse."""

from pathlib import Path

import pytest

from app.config import Settings
from app.errors import DataSourceError
from app.ingestion import reading, scan, staging, sync
from app.ingestion.sync import SourceFile, SyncReport, plan_sync
from app.text.chunks import chunk_id, text_hash
from tests.test_ingest import FAQ, make_pdf


def sf(doc_id, digest):
    return SourceFile(doc_id, Path("/d") / doc_id, doc_id.rsplit("/", 1)[-1], digest)


def stored(doc_id, digest, settings="S"):
    return {
        "doc_id": doc_id,
        "source_file": doc_id.rsplit("/", 1)[-1],
        "content_hash": digest,
        "settings_hash": settings,
        "chunks": 1,
    }


def test_plan_sync_classifies_every_case():
    files = [sf("csv/a.csv", "h1"), sf("csv/b.csv", "h2-new"), sf("csv/new.csv", "h9")]
    db_docs = [stored("csv/a.csv", "h1"), stored("csv/b.csv", "h2"), stored("pdf/gone.pdf", "h3")]
    plan = plan_sync(files, db_docs, "S")
    assert [f.doc_id for f in plan.unchanged] == ["csv/a.csv"]
    assert [f.doc_id for f in plan.updated] == ["csv/b.csv"]
    assert [f.doc_id for f in plan.added] == ["csv/new.csv"]
    assert [d["doc_id"] for d in plan.removed] == ["pdf/gone.pdf"]
    assert plan.renamed == {}


def test_plan_sync_detects_rename_by_content_hash():
    plan = plan_sync([sf("csv/renamed.csv", "h1")], [stored("csv/old.csv", "h1")], "S")
    assert plan.renamed == {"csv/renamed.csv": "csv/old.csv"}
    assert plan.lines() == ["would add:    csv/renamed.csv  (renamed from csv/old.csv)", "would remove: csv/old.csv"]


def test_plan_sync_settings_change_means_update():
    plan = plan_sync([sf("csv/a.csv", "h1")], [stored("csv/a.csv", "h1", settings="OLD")], "S")
    assert [f.doc_id for f in plan.updated] == ["csv/a.csv"] and not plan.unchanged


def test_plan_sync_without_remove_missing_keeps_others():
    plan = plan_sync([sf("csv/a.csv", "h1")], [stored("pdf/x.pdf", "h2")], "S", remove_missing=False)
    assert plan.removed == [] and [f.doc_id for f in plan.added] == ["csv/a.csv"]


def test_plan_sync_empty():
    plan = plan_sync([], [], "S")
    assert (plan.added, plan.updated, plan.unchanged, plan.removed, plan.lines()) == ([], [], [], [], [])


def test_sync_report_summary():
    r = SyncReport(added=1, updated=2, unchanged=3, removed=4, failed=5, embedded=6, reused=7, renamed=1)
    assert r.summary() == (
        "1 added, 2 updated, 3 unchanged, 4 removed, 5 failed; embedded 6 chunks, reused 7 (1 renamed)"
    )


def test_settings_hash_follows_model_and_chunking():
    a = sync.settings_hash(Settings())
    assert a == sync.settings_hash(Settings())
    assert a != sync.settings_hash(Settings().changed(ingest={"chunk_size": 400}))
    assert a != sync.settings_hash(Settings().changed(models={"embed_model": "other"}))
    assert a != sync.settings_hash(Settings().changed(ingest={"ocr_dpi": 200}))  # scans are read again
    assert a != sync.settings_hash(Settings().changed(ingest={"ocr_langs": "jpn"}))
    assert sync.settings_hash(Settings().changed(retrieval={"search_k": 99})) == a


@pytest.fixture
def data_dir(tmp_path):
    (tmp_path / "csv").mkdir()
    (tmp_path / "pdf").mkdir()
    (tmp_path / "csv" / "faq.csv").write_text(FAQ, encoding="utf-8")
    (tmp_path / "csv" / ".~lock.faq.csv#").write_text("x")
    (tmp_path / "csv" / "notes.txt").write_text("x")
    make_pdf(tmp_path / "pdf" / "guide.pdf", ["会社概要\n当社は東京にあります。"])
    return tmp_path


def test_scan_finds_supported_files_with_relative_ids(data_dir):
    files, failures = scan.scan(data_dir)
    assert [f.doc_id for f in files] == ["pdf/guide.pdf", "csv/faq.csv"] and failures == []
    assert files[1].name == "faq.csv" and len(files[1].content_hash) == 64


def test_scan_finds_markdown_and_text_under_docs_recursively(data_dir):
    (data_dir / "docs" / "team" / ".drafts").mkdir(parents=True)
    (data_dir / "docs" / "guide.md").write_text("# A\n\ntext", encoding="utf-8")
    (data_dir / "docs" / "team" / "memo.TXT").write_text("text", encoding="utf-8")
    (data_dir / "docs" / "team" / ".drafts" / "wip.md").write_text("text", encoding="utf-8")
    (data_dir / "docs" / ".hidden.md").write_text("text", encoding="utf-8")
    (data_dir / "docs" / "image.png").write_bytes(b"png")
    files, _ = scan.scan(data_dir)
    assert [f.doc_id for f in files] == ["pdf/guide.pdf", "csv/faq.csv", "docs/guide.md", "docs/team/memo.TXT"]
    assert scan.resolve_file(data_dir / "docs" / "team" / "memo.TXT", data_dir).doc_id == "docs/team/memo.TXT"


def test_resolve_file_rejects_nested_csv(data_dir):
    (data_dir / "csv" / "sub").mkdir()
    (data_dir / "csv" / "sub" / "x.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(DataSourceError, match="only pdf"):
        scan.resolve_file(data_dir / "csv" / "sub" / "x.csv", data_dir)


def test_chunk_file_markdown_sections_carry_title_and_context(data_dir):
    from app.config import Settings

    path = data_dir / "docs" / "guide.md"
    path.parent.mkdir()
    path.write_text("# 導入\n\n## VPN接続\n\nミナトVPNに接続します。\n", encoding="utf-8")
    chunks = reading.chunk_file(scan.resolve_file(path, data_dir), Settings())
    assert [(c.page_content, c.metadata["source"], c.metadata["title"], c.metadata["context"]) for c in chunks] == [
        ("ミナトVPNに接続します。", "guide.md#vpn接続", "導入 > VPN接続", "guide — 導入 > VPN接続")
    ]
    assert chunks[0].metadata["doc_id"] == "docs/guide.md"


def test_scan_missing_dir(tmp_path):
    with pytest.raises(DataSourceError, match="data directory not found"):
        scan.scan(tmp_path / "none")


def test_file_hash_changes_with_content(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a")
    first = scan.file_hash(p)
    p.write_text("b")
    assert scan.file_hash(p) != first


@pytest.mark.parametrize(
    "rel,message",
    [
        ("csv/none.csv", "file not found"),
        (
            "csv/notes.txt",
            "only pdf/\\*.pdf\\|\\*.png.* csv/\\*.csv\\|\\*.xlsx.* and docs/\\*\\*/\\*.md\\|\\*.txt\\|\\*.docx.* are ingested",
        ),
    ],
)
def test_resolve_file_errors(data_dir, rel, message):
    with pytest.raises(DataSourceError, match=message):
        scan.resolve_file(data_dir / rel, data_dir)


def test_resolve_file_outside_data_dir(data_dir, tmp_path_factory):
    other = tmp_path_factory.mktemp("o") / "a.csv"
    other.write_text(FAQ, encoding="utf-8")
    with pytest.raises(DataSourceError, match="is not under the data directory"):
        scan.resolve_file(other, data_dir)


def test_chunk_file_csv_metadata(data_dir):
    src = scan.resolve_file(data_dir / "csv" / "faq.csv", data_dir)
    chunks = reading.chunk_file(src, Settings())
    assert [c.metadata["source"] for c in chunks] == ["faq.csv:r1", "faq.csv:r2"]
    meta = chunks[0].metadata
    assert meta == {
        "source": "faq.csv:r1",
        "chunk_index": 0,
        "file": "faq.csv",
        "doc_id": "csv/faq.csv",
        "context": "faq — 質問, 回答",
        "content_hash": text_hash("faq — 質問, 回答\n" + chunks[0].page_content),
        "embed_model": "intfloat/multilingual-e5-small",
    }
    assert chunks[0].id == chunk_id("documents", "csv/faq.csv", 0, meta["content_hash"])


def test_chunk_file_pdf_pages(data_dir):
    src = scan.resolve_file(data_dir / "pdf" / "guide.pdf", data_dir)
    chunks = reading.chunk_file(src, Settings())
    assert [(c.metadata["source"], c.page_content) for c in chunks] == [
        ("guide.pdf:p1", "会社概要\n当社は東京にあります。")
    ]
    assert chunks[0].metadata["context"] == "guide — 会社概要"  # no PDF title: the file stem; the page's heading


def test_chunk_file_pdf_sections_number_chunks_per_page_and_carry_heading_paths(data_dir):
    from tests.test_formats_loaders import make_sized_pdf

    make_sized_pdf(
        data_dir / "pdf" / "rules.pdf",
        [[(16, "第1章 総則"), (10, "この規則は全社員に適用します。"), (13, "1.1 目的"), (10, "秩序を保つためです。")]],
    )
    chunks = reading.chunk_file(scan.resolve_file(data_dir / "pdf" / "rules.pdf", data_dir), Settings())
    assert [
        (c.metadata["source"], c.metadata["chunk_index"], c.metadata["context"], c.page_content) for c in chunks
    ] == [
        ("rules.pdf:p1", 0, "rules — 第1章 総則", "第1章 総則\nこの規則は全社員に適用します。"),
        ("rules.pdf:p1", 1, "rules — 第1章 総則 > 1.1 目的", "1.1 目的\n秩序を保つためです。"),
    ]
    assert len({c.id for c in chunks}) == 2


def test_chunk_file_empty_csv_is_an_error(data_dir):
    (data_dir / "csv" / "empty.csv").write_text("質問,回答\n", encoding="utf-8")
    with pytest.raises(DataSourceError, match="empty.csv: empty CSV"):
        reading.chunk_file(scan.resolve_file(data_dir / "csv" / "empty.csv", data_dir), Settings())


class CountingEmbeddings:
    def __init__(self):
        self.calls = []

    def embed_documents(self, texts):
        self.calls.append(list(texts))
        return [[float(len(t))] for t in texts]


def test_embed_with_reuse_embeds_only_unknown_text_once():
    from langchain_core.documents import Document

    docs = [Document(page_content=t, metadata={"content_hash": text_hash(t)}) for t in ["a", "bb", "a", "ccc"]]
    known = {text_hash("bb"): [99.0]}
    emb = CountingEmbeddings()
    vectors, embedded = staging.embed_with_reuse(docs, emb, lambda hashes: dict(known))
    assert vectors == [[1.0], [99.0], [1.0], [3.0]] and embedded == 2
    assert emb.calls == [["a", "ccc"]]


def test_embed_with_reuse_batches(monkeypatch):
    from langchain_core.documents import Document

    monkeypatch.setattr(staging, "EMBED_BATCH", 2)
    docs = [Document(page_content=str(i), metadata={"content_hash": str(i)}) for i in range(5)]
    emb = CountingEmbeddings()
    staging.embed_with_reuse(docs, emb, lambda hashes: {})
    assert [len(c) for c in emb.calls] == [2, 2, 1]
