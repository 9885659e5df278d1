"""reranker.py: scoring order, top_k, validation, singletons, the LangChain wrappers."""

import pytest
from langchain_core.documents import Document

from app import reranker
from app.errors import ModelNotFoundError

DOCS = [
    {"content": "東京本社", "source": "a.pdf:p1"},
    {"content": "受付時間は平日9時から18時", "source": "faq.csv:r2"},
    {"content": "受付", "source": "faq.csv:r9"},
]


@pytest.fixture
def model_wrapper(overlap_model):
    """What get_reranker returns, reduced to what rerank() uses: a ``.model`` with score()."""
    return type("R", (), {"model": overlap_model})()


@pytest.mark.parametrize("docs", [None, []])
def test_rerank_empty_input_returns_empty_list(docs, model_wrapper):
    assert reranker.rerank("質問", docs, reranker=model_wrapper) == []


def test_rerank_orders_by_score_descending(model_wrapper):
    out = reranker.rerank("受付時間", DOCS, top_k=3, reranker=model_wrapper)
    assert [d["source"] for d in out] == ["faq.csv:r2", "faq.csv:r9", "a.pdf:p1"]
    assert [d["score"] for d in out] == [4.0, 2.0, 0.0]


def test_rerank_keeps_top_k(model_wrapper):
    assert [d["source"] for d in reranker.rerank("受付時間", DOCS, top_k=1, reranker=model_wrapper)] == ["faq.csv:r2"]


def test_rerank_default_top_k_is_3(model_wrapper):
    docs = [{"content": str(i), "source": f"s{i}"} for i in range(6)]
    assert len(reranker.rerank("q", docs, reranker=model_wrapper)) == 3


def test_rerank_top_k_larger_than_input_returns_all(model_wrapper):
    assert len(reranker.rerank("受付", DOCS, top_k=10, reranker=model_wrapper)) == 3


def test_rerank_does_not_mutate_inputs(model_wrapper):
    docs = [dict(d) for d in DOCS]
    reranker.rerank("受付", docs, reranker=model_wrapper)
    assert docs == DOCS


def test_rerank_keeps_items_without_source(model_wrapper):
    out = reranker.rerank("受付", [{"content": "受付"}], reranker=model_wrapper)
    assert out == [{"content": "受付", "score": 2.0}]


@pytest.mark.parametrize("bad", [[{"source": "x"}], [{"content": None}], ["plain string"]])
def test_rerank_rejects_items_without_content(bad, model_wrapper):
    with pytest.raises(ValueError, match=r"docs\[0\] must be a dict with a 'content' string"):
        reranker.rerank("q", bad, reranker=model_wrapper)


def test_rerank_rejects_top_k_below_one(model_wrapper):
    with pytest.raises(ValueError, match="top_k must be >= 1, got 0"):
        reranker.rerank("q", DOCS, top_k=0, reranker=model_wrapper)


def test_rerank_scores_query_passage_pairs(model_wrapper, overlap_model):
    reranker.rerank("受付", DOCS[:2], reranker=model_wrapper)
    assert overlap_model.calls == [[("受付", "東京本社"), ("受付", "受付時間は平日9時から18時")]]


def test_rerank_documents_returns_scored_copies(model_wrapper, mock_documents):
    out = reranker.rerank_documents("受付時間", mock_documents, model_wrapper, 2)
    assert [(d.metadata["source"], d.metadata["rerank_score"]) for d in out] == [
        ("faq.csv:r2", 4.0),
        ("technical_guide.pdf:p4", 1.0),
    ]
    assert out[0].page_content == mock_documents[0].page_content and out[0] is not mock_documents[0]
    assert "rerank_score" not in mock_documents[0].metadata


def test_rerank_documents_without_reranker_keeps_order_unscored(mock_documents):
    out = reranker.rerank_documents("受付時間", mock_documents, None, 3)
    assert out == mock_documents[:3] and all("rerank_score" not in d.metadata for d in out)


def test_rerank_documents_empty_asks_no_model(model_wrapper, overlap_model):
    assert reranker.rerank_documents("q", [], model_wrapper, 3) == []
    assert overlap_model.calls == []


def test_load_reranker_returns_none_and_warns_when_missing(tmp_path, clean_env, caplog):
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    clean_env.setenv("RERANKER_MODEL", "acme/missing")
    from app.config import get_settings

    assert reranker.load_reranker(get_settings()) is None
    assert "reranking is off" in caplog.text


def test_scoring_reranker_is_a_crossencoderreranker(fake_reranker, mock_documents):
    from langchain_classic.retrievers.document_compressors import CrossEncoderReranker

    assert isinstance(fake_reranker, CrossEncoderReranker)
    out = fake_reranker.compress_documents(mock_documents, "受付時間")
    assert len(out) == 3 and out[0].metadata["source"] == "faq.csv:r2"


@pytest.fixture
def cross_encoder_dir(tmp_path, clean_env):
    folder = tmp_path / "ms-marco-MiniLM-L-6-v2"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    return folder


def test_get_reranker_top_n_follows_rerank_top_k(mocker, cross_encoder_dir, clean_env, fake_reranker):
    clean_env.setenv("RERANK_TOP_K", "5")
    hf = mocker.patch("langchain_community.cross_encoders.HuggingFaceCrossEncoder", return_value=fake_reranker.model)
    r = reranker.get_reranker()
    assert r.top_n == 5
    assert hf.call_args.kwargs == {"model_name": str(cross_encoder_dir), "model_kwargs": {"device": "cpu"}}


def test_get_reranker_is_a_singleton(mocker, cross_encoder_dir, fake_reranker):
    hf = mocker.patch("langchain_community.cross_encoders.HuggingFaceCrossEncoder", return_value=fake_reranker.model)
    assert reranker.get_reranker() is reranker.get_reranker()
    assert hf.call_count == 1


def test_get_reranker_missing_model_raises_with_make_models(tmp_path, clean_env):
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    clean_env.setenv("RERANKER_MODEL", "acme/missing-cross-encoder")
    with pytest.raises(ModelNotFoundError, match="make models"):
        reranker.get_reranker()


def test_get_compression_retriever_reranks_base_results(fake_reranker, mock_vectorstore):
    retriever = reranker.get_compression_retriever(mock_vectorstore.as_retriever(search_kwargs={"k": 4}), fake_reranker)
    docs = retriever.invoke("受付時間")
    assert [d.metadata["source"] for d in docs][0] == "faq.csv:r2" and len(docs) == 3
    assert all(isinstance(d, Document) for d in docs)


def test_load_reranker_warns_only_when_a_named_model_is_missing(tmp_path, clean_env, caplog):
    """RERANKER_MODEL unset and no cross-encoder installed (the offline set): one info line, no warning
    before the answer; RERANKER_MODEL naming a missing model: a warning."""
    from app.config import get_settings

    clean_env.setenv("MODELS_DIR", str(tmp_path))
    with caplog.at_level("INFO", logger="app.reranker"):
        assert reranker.load_reranker(get_settings()) is None
    assert [(r.levelname, r.getMessage().split(":")[0]) for r in caplog.records] == [("INFO", "reranking is off")]
    caplog.clear()
    clean_env.setenv("RERANKER_MODEL", "acme/missing")
    with caplog.at_level("INFO", logger="app.reranker"):
        assert reranker.load_reranker(get_settings()) is None
    assert [r.levelname for r in caplog.records] == ["WARNING"]
