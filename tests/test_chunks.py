"""chunks.py: the one chunk builder (IDs, metadata, positions), exact outputs; no I/O."""

from langchain_core.documents import Document

from app.text.chunks import build_chunks, chunk_id, embedding_text, text_hash


def lines(text: str) -> list[str]:
    """A split that cuts at line breaks (the tests' stand-in for the format's splitter)."""
    return [line for line in text.split("\n") if line]


def test_chunk_id_is_stable_across_versions_and_depends_on_each_part():
    base = chunk_id("documents", "csv/a.csv", 0, "h")
    assert base == "d74a1133-f3b1-5bfb-bb03-e7110331fe62"  # a changed ID re-embeds every stored chunk
    others = {
        chunk_id("other", "csv/a.csv", 0, "h"),
        chunk_id("documents", "csv/b.csv", 0, "h"),
        chunk_id("documents", "csv/a.csv", 1, "h"),
        chunk_id("documents", "csv/a.csv", 0, "h2"),
    }
    assert base not in others and len(others) == 4


def test_text_hash_is_stable_and_short():
    assert text_hash("受付") == "0634cc2853b8ef9ffc0307af22bf0152"
    assert text_hash("受付") != text_hash("受付 ") and len(text_hash("x")) == 32


def test_embedding_text_puts_the_context_line_first():
    assert embedding_text("本文", "規程 — 第1章") == "規程 — 第1章\n本文"
    assert embedding_text("本文") == "本文"


def test_build_chunks_counts_per_source_and_positions_per_document():
    units = [("見出し\n本文1", "a.pdf:p1", "A — 第1章"), ("本文2", "a.pdf:p1", "A — 第2章"), ("本文3", "a.pdf:p2", "A")]
    chunks = list(
        build_chunks(
            units,
            lines,
            collection="documents",
            doc_id="pdf/a.pdf",
            file="a.pdf",
            embed_model="m",
            titles={"a.pdf:p2": "T"},
        )
    )
    assert [(c.page_content, c.metadata["source"], c.metadata["chunk_index"]) for c in chunks] == [
        ("見出し", "a.pdf:p1", 0),
        ("本文1", "a.pdf:p1", 1),
        ("本文2", "a.pdf:p1", 2),
        ("本文3", "a.pdf:p2", 0),
    ]
    digest = text_hash("A — 第2章\n本文2")
    assert chunks[2].id == chunk_id("documents", "pdf/a.pdf", 2, digest)
    assert chunks[2].metadata == {
        "source": "a.pdf:p1",
        "chunk_index": 2,
        "file": "a.pdf",
        "context": "A — 第2章",
        "doc_id": "pdf/a.pdf",
        "content_hash": digest,
        "embed_model": "m",
    }
    assert chunks[3].metadata["title"] == "T" and "title" not in chunks[0].metadata


def test_build_chunks_keeps_a_documents_own_metadata_under_its_keys():
    doc = Document(page_content="x", metadata={"author": "総務部", "source": "memo", "chunk_index": 9})
    (chunk,) = build_chunks(
        [("本文", "memo", "")], lines, collection="c", doc_id="p", file="memo", embed_model="m", metadata=doc.metadata
    )
    assert chunk.metadata["author"] == "総務部" and chunk.metadata["chunk_index"] == 0
    assert doc.metadata == {"author": "総務部", "source": "memo", "chunk_index": 9}


def test_build_chunks_is_lazy():
    def units():
        yield ("一", "s", "")
        raise AssertionError("read past the first chunk")

    chunks = build_chunks(units(), lines, collection="c", doc_id="d", file="f", embed_model="m")
    assert next(chunks).page_content == "一"


def test_a_row_is_cited_in_one_format_and_read_back_to_its_table():
    from app.text.chunks import row_source, table_of

    assert row_source("csv/faq.csv", 2) == "csv/faq.csv:r2"
    assert row_source("料金.xlsx", 3, "2024年度") == "料金.xlsx:2024年度!r3"
    assert table_of(row_source("csv/faq.csv", 12)) == "csv/faq.csv"
    assert table_of(row_source("料金.xlsx", 3, "2024年度")) == "料金.xlsx:2024年度"
    assert table_of("manual.pdf:p3") is None and table_of("") is None
