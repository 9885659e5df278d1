"""The two sides of the store on real PostgreSQL (issue 54): a StoreWriter alone syncs a folder, and
StoreReaders, one per user, read it back, each only what they may read; the read side has no way to write."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from app.ingestion.writer import StoreWriter
from app.permissions.principals import user_principals
from app.retrieval.reader import StoreReader

pytestmark = pytest.mark.integration


@pytest.fixture
def folder(tmp_path) -> Path:
    data = tmp_path / "data"
    (data / "docs" / "規程").mkdir(parents=True)
    (data / "docs" / "共有").mkdir()
    (data / "docs" / "規程" / "給与.md").write_text("# 給与\n\n役員報酬の支給日は毎月25日です。\n", encoding="utf-8")
    (data / "docs" / "共有" / "案内.md").write_text("# 案内\n\n食堂の営業時間は11時から14時です。\n", encoding="utf-8")
    (data / "access.toml").write_text(
        '[folders]\n"docs/共有" = ["everyone"]\n"docs/規程" = ["人事"]\n', encoding="utf-8"
    )
    return data


def test_a_writer_alone_stores_and_readers_read_only_their_share(folder, settings, engine, real_embeddings):
    s = settings.changed(retrieval={"collection_name": f"t_{uuid.uuid4().hex[:8]}"})
    writer = StoreWriter(s, embeddings=real_embeddings, engine=engine)
    _, report = writer.sync(folder, graph=False)
    assert report.failures == []
    assert sorted(d["doc_id"] for d in writer.stored_documents()) == ["docs/共有/案内.md", "docs/規程/給与.md"]
    try:
        alice = StoreReader(s, embeddings=real_embeddings, engine=engine, principals=user_principals("alice", ["人事"]))
        bob = StoreReader(s, embeddings=real_embeddings, engine=engine, principals=user_principals("bob", []))
        question = "役員報酬の支給日"
        assert any("25日" in d.page_content for d in alice.search(question, search_mode="keyword"))
        assert not any("25日" in d.page_content for d in bob.search(question, search_mode="keyword"))
        assert [d["doc_id"] for d in bob.list_documents()] == ["docs/共有/案内.md"]
        assert not hasattr(bob, "sync") and not hasattr(bob, "remove_document")  # the read side cannot write
        assert [d["doc_id"] for d in alice.list_documents()] == ["docs/共有/案内.md", "docs/規程/給与.md"]
        assert writer.remove_document("docs/規程/給与.md") > 0
        assert [d["doc_id"] for d in alice.list_documents()] == ["docs/共有/案内.md"]
    finally:
        StoreReader(s, embeddings=real_embeddings, engine=engine).vectorstore.delete_collection()
        shutil.rmtree(folder, ignore_errors=True)
