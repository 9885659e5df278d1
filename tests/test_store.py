"""store.py (the Python API) with doubles; tests/integration/test_sync.py runs it on PostgreSQL."""

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from app.config import Settings
from app.errors import DataSourceError
from app.permissions.principals import FULL_ACCESS
from app.store import RagStore


@pytest.fixture
def store(no_db, mock_vectorstore, mock_documents):
    mocker = no_db
    s = RagStore(Settings().changed(retrieval={"search_k": 4}), principals=FULL_ACCESS)
    s._vectorstore, s._engine, s._embeddings = mock_vectorstore, object(), object()
    keyword_docs = [mock_documents[3], mock_documents[0]]
    mocker.patch(
        "app.retrieval.reader.keyword_search",
        side_effect=lambda engine, coll, q, k, principals: [
            Document(page_content=d.page_content, id=d.metadata["source"], metadata=dict(d.metadata))
            for d in keyword_docs
        ][:k],
    )
    return s


def test_search_vector_mode(store):
    out = store.search("受付", search_mode="vector", top_k=2)
    assert [d.metadata["source"] for d in out] == ["faq.csv:r2", "technical_guide.pdf:p4"]
    assert out[0].metadata["relevance_score"] == 1.0


def test_search_keyword_mode(store):
    assert [d.metadata["source"] for d in store.search("E3010", search_mode="keyword")] == [
        "technical_guide.pdf:p3",
        "faq.csv:r2",
    ]


def test_search_hybrid_mode_has_fused_scores(store):
    out = store.search("受付", search_mode="hybrid", top_k=3)
    assert all("relevance_score" in d.metadata and "keyword_rank" in d.metadata for d in out)
    assert len(out) == 3


def test_search_default_mode_and_top_k_from_settings(store, mock_vectorstore):
    store.settings = Settings().changed(retrieval={"search_k": 2, "search_mode": "vector"})
    assert len(store.search("受付")) == 2
    assert mock_vectorstore.similarity_search_with_score.call_args.kwargs == {
        "k": 6,
        "principals": ("admin",),
    }  # 3 × k chunks: k distinct sources


def test_search_k_vector_sets_candidates(store, mock_vectorstore):
    store.search("受付", search_mode="vector", top_k=1, k_vector=3)
    assert mock_vectorstore.similarity_search_with_score.call_args.kwargs == {"k": 9, "principals": ("admin",)}


def test_search_vector_filter_is_passed_to_pgvector(store, mock_vectorstore):
    mock_vectorstore.similarity_search_with_score.side_effect = None
    mock_vectorstore.similarity_search_with_score.return_value = []
    store.search("受付", search_mode="vector", vector_filter={"file": "faq.csv"})
    assert mock_vectorstore.similarity_search_with_score.call_args.kwargs == {
        "k": 12,
        "filter": {"file": "faq.csv"},
        "principals": ("admin",),
    }


def test_search_rejects_unknown_mode(store):
    with pytest.raises(
        ValueError, match="^mode must be one of hybrid, vector, keyword, local, global, auto, got 'semantic'$"
    ):
        store.search("q", search_mode="semantic")


def test_search_blank_query(store):
    assert store.search("  ") == []


def test_get_context_joins_page_content(store, mock_documents):
    assert store.get_context("受付", search_mode="vector", top_k=2) == (
        mock_documents[0].page_content + "\n\n" + mock_documents[1].page_content
    )
    assert store.get_context("受付", separator="|", search_mode="keyword", top_k=1) == mock_documents[3].page_content


def test_as_retriever_runs_search_with_kwargs(store):
    retriever = store.as_retriever(search_mode="keyword", top_k=1)
    assert isinstance(retriever, BaseRetriever)
    assert [d.metadata["source"] for d in retriever.invoke("E3010")] == ["technical_guide.pdf:p3"]


def test_search_function_for_the_graph(store):
    assert len(store.search_function("vector")("受付", 3)) == 3


DOCS = [
    {"doc_id": "csv/faq.csv", "source_file": "faq.csv"},
    {"doc_id": "old/faq.csv", "source_file": "faq.csv"},
    {"doc_id": "pdf/a.pdf", "source_file": "a.pdf"},
]


@pytest.mark.parametrize(
    "wanted,doc_id", [("csv/faq.csv", "csv/faq.csv"), ("a.pdf", "pdf/a.pdf"), ("pdf/a.pdf", "pdf/a.pdf")]
)
def test_remove_document_matches_id_or_file_name(store, mocker, wanted, doc_id):
    mocker.patch("app.storage.list_documents", return_value=DOCS)
    delete = mocker.patch("app.storage.delete_document", return_value=5)
    assert store.remove_document(wanted) == 5
    assert delete.call_args.args[2] == doc_id


def test_remove_document_by_path_under_data_dir(store, mocker, tmp_path):
    store.settings = Settings().changed(ingest={"data_dir": tmp_path})
    mocker.patch("app.storage.list_documents", return_value=DOCS)
    delete = mocker.patch("app.storage.delete_document", return_value=1)
    store.remove_document(tmp_path / "pdf" / "a.pdf")
    assert delete.call_args.args[2] == "pdf/a.pdf"


@pytest.mark.parametrize(
    "wanted,message",
    [("faq.csv", "is ambiguous: csv/faq.csv, old/faq.csv"), ("none.csv", "no stored document 'none.csv'")],
)
def test_remove_document_errors(store, mocker, wanted, message):
    mocker.patch("app.storage.list_documents", return_value=DOCS)
    with pytest.raises(DataSourceError, match=message):
        store.remove_document(wanted)


def test_add_document_rejects_file_outside_data_dir(store, tmp_path):
    store.settings = Settings().changed(ingest={"data_dir": tmp_path / "data"})
    (tmp_path / "x.csv").write_text("a\n1\n")
    with pytest.raises(DataSourceError, match="not under the data directory"):
        store.add_document(tmp_path / "x.csv")


def test_constructor_is_cheap():
    s = RagStore(Settings())
    assert s._vectorstore is None and s._engine is None


class _BrokenVectorStore:
    def __init__(self):
        self.calls = 0

    def similarity_search_with_score(self, query, k, **kwargs):
        self.calls += 1
        raise OSError("model.safetensors is corrupt")


def _store_with_broken_vectors(monkeypatch):
    from langchain_core.documents import Document

    from app.config import Settings
    from app.retrieval import reader as store_module
    from app.store import RagStore

    store = RagStore(Settings(), embeddings=object(), engine=object(), principals=FULL_ACCESS)
    store._vectorstore = _BrokenVectorStore()
    monkeypatch.setattr(
        store_module,
        "keyword_search",
        lambda engine, name, query, k, principals: [
            Document(page_content="受付時間", id="k1", metadata={"relevance_score": 3.0, "source": "faq.csv:r2"})
        ],
    )
    return store


def test_hybrid_search_falls_back_to_keywords_with_one_warning(monkeypatch, caplog):
    store = _store_with_broken_vectors(monkeypatch)
    with caplog.at_level("WARNING"):
        first = store.search("受付時間", search_mode="hybrid", top_k=3)
        second = store.search("受付時間", search_mode="hybrid", top_k=3)
    assert [d.id for d in first] == ["k1"] and [d.id for d in second] == ["k1"]
    assert first[0].metadata["keyword_rank"] == 1 and first[0].metadata["vector_rank"] is None
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        "vector search is unavailable (OSError: model.safetensors is corrupt); searching by keywords only"
    ]
    assert store.vector_unavailable == "OSError: model.safetensors is corrupt"
    assert store._vectorstore.calls == 2  # tried again each time: a repaired model is used at once


def test_vector_mode_does_not_fall_back(monkeypatch):
    store = _store_with_broken_vectors(monkeypatch)
    with pytest.raises(OSError, match="corrupt"):
        store.search("受付時間", search_mode="vector", top_k=3)


# --- reads fail closed: a store made without principals reads nothing unless each call names them ----

NO_PRINCIPALS = "^RagStore reads need principals: pass RagStore\\(principals=...\\) or principals= to the call"
READS = {
    "search": lambda s: s.search("受付", search_mode="keyword"),
    "search (blank query)": lambda s: s.search("  "),
    "search (local)": lambda s: s.search("受付", search_mode="local"),
    "get_context": lambda s: s.get_context("受付"),
    "as_retriever": lambda s: s.as_retriever(search_mode="keyword"),
    "search_function": lambda s: s.search_function("hybrid"),
    "graph_search": lambda s: s.graph_search(),
    "list_documents": lambda s: s.list_documents(),
    "source_chunks": lambda s: s.source_chunks("faq.csv:r2"),
}


@pytest.fixture
def nobody(store):
    """A store made without principals, over the ``store`` fixture's doubles."""
    made = RagStore(store.settings)
    made._vectorstore, made._engine, made._embeddings = store._vectorstore, store._engine, store._embeddings
    return made


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_reads_without_principals_raise(nobody, mocker, mock_vectorstore, read):
    from app.retrieval import reader as store_module

    reads = [mocker.patch(f"app.storage.{name}") for name in ("list_documents", "source_chunks")]
    reads += [mock_vectorstore.similarity_search_with_score, store_module.keyword_search]
    with pytest.raises(TypeError, match=NO_PRINCIPALS):
        read(nobody)
    assert not any(r.called for r in reads)  # refused before anything was read


def test_a_call_naming_principals_reads_as_them(nobody, mock_vectorstore):
    assert len(nobody.search("受付", search_mode="vector", top_k=2, principals=("everyone",))) == 2
    assert mock_vectorstore.similarity_search_with_score.call_args.kwargs["principals"] == ("everyone",)


def test_empty_principals_are_named_and_read_as_nobody(nobody, mock_vectorstore):
    nobody.search("受付", search_mode="vector", top_k=2, principals=())
    assert mock_vectorstore.similarity_search_with_score.call_args.kwargs["principals"] == ()


def test_writes_need_no_principals(nobody, mocker):
    mocker.patch("app.storage.list_documents", return_value=DOCS)
    delete = mocker.patch("app.storage.delete_document", return_value=5)
    assert nobody.remove_document("a.pdf") == 5  # the writer's view of every document, whoever reads
    assert delete.call_args.args[2] == "pdf/a.pdf"


def test_search_passes_a_scope_to_both_halves_and_refuses_it_for_global(store, mocker):
    from app.retrieval import reader
    from app.storage.scope import Scope

    scope = Scope(folders=("docs/規程",), formats=("pdf",))
    keyword = mocker.patch.object(reader, "keyword_search", return_value=[])
    vector = mocker.patch.object(reader, "vector_search", return_value=[])
    assert store.search("受付", search_mode="hybrid", scope=scope) == []
    assert keyword.call_args.kwargs["scope"] == scope and vector.call_args.kwargs["scope"] == scope
    assert store.search_function("keyword", scope=scope)("受付", 3) == []
    assert keyword.call_args.kwargs["scope"] == scope
    store.search("受付", search_mode="keyword", scope=Scope())  # an empty scope: the call as before
    assert "scope" not in keyword.call_args.kwargs
    with pytest.raises(ValueError, match="^global search answers from community reports"):
        store.search("全体の傾向は？", search_mode="global", scope=scope)
