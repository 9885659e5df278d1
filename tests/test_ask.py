"""ask.py: search(), the output format, and the CLI's exits and messages."""

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM

from app import ask
from app.errors import DatabaseUnavailableError
from app.graph import RAGContext


def test_search_returns_content_source_dicts_reranked(mock_vectorstore, fake_reranker):
    out = ask.search("受付時間", k=4, top_k=3, vectorstore=mock_vectorstore, reranker=fake_reranker)
    assert [r["source"] for r in out][0] == "faq.csv:r2"
    assert set(out[0]) == {"content", "source", "chunk_index", "score"}
    assert out[0]["content"].startswith("サポート窓口") and out[0]["score"] == 4.0


def test_search_asks_the_store_for_search_k(mock_vectorstore, fake_reranker):
    ask.search("受付", k=7, vectorstore=mock_vectorstore, reranker=fake_reranker)
    assert mock_vectorstore.as_retriever.call_args.kwargs == {"search_kwargs": {"k": 7}}


def test_search_default_k_comes_from_settings(mock_vectorstore, fake_reranker, clean_env):
    clean_env.setenv("SEARCH_K", "6")
    ask.search("受付", vectorstore=mock_vectorstore, reranker=fake_reranker)
    assert mock_vectorstore.as_retriever.call_args.kwargs == {"search_kwargs": {"k": 6}}


def test_search_top_k_limits_results(mock_vectorstore, fake_reranker):
    assert len(ask.search("受付", k=4, top_k=1, vectorstore=mock_vectorstore, reranker=fake_reranker)) == 1


def test_search_without_reranker_keeps_vector_order(mock_vectorstore, mock_documents):
    out = ask.search("q", k=4, top_k=2, vectorstore=mock_vectorstore, reranker=None)
    assert [r["source"] for r in out] == [d.metadata["source"] for d in mock_documents[:2]]
    assert out[0]["score"] is None


def test_search_uses_a_search_function_for_other_modes(mock_documents, fake_reranker):
    calls = []
    fn = lambda q, k: calls.append((q, k)) or mock_documents[:k]  # noqa: E731
    out = ask.search("受付時間", k=4, top_k=2, search_fn=fn, reranker=fake_reranker)
    assert calls == [("受付時間", 4)] and [r["source"] for r in out][0] == "faq.csv:r2" and len(out) == 2


def test_main_rejects_unknown_mode_in_one_line_listing_the_valid_ones(capsys, clean_env):
    assert ask.main(["--mode", "fuzzy", "質問"]) == 1  # before any database or model is touched
    assert capsys.readouterr().err == (
        "Error: mode must be one of hybrid, vector, keyword, local, global, auto, got 'fuzzy'\n"
    )


@pytest.mark.parametrize("query", ["", "   ", None])
def test_search_blank_query_returns_empty(query, mock_vectorstore):
    assert ask.search(query, vectorstore=mock_vectorstore, reranker=None) == []
    mock_vectorstore.as_retriever.assert_not_called()


def test_format_output_matches_spec():
    assert ask.format_output(" 回答です。\n", ["faq.csv:r1", "a.pdf:p2"]) == (
        "=== Answer ===\n回答です。\n\n=== Sources ===\n- faq.csv:r1\n- a.pdf:p2"
    )


def test_format_output_without_sources():
    assert ask.format_output("なし", []).endswith("=== Sources ===\n(none)")


@pytest.fixture
def context(mock_documents):
    return RAGContext(
        search=lambda q, k: mock_documents[:k],
        llm=FakeListLLM(responses=["平日9時から18時です。"]),
        reranker=None,
        search_k=4,
        rerank_top_k=2,
    )


def test_main_prints_answer_and_sources(context, capsys):
    context.prompt_style, context.llm = "spec", FakeListLLM(responses=["わかりません。"])
    assert ask.main(["受付時間は？"], context=context) == 0
    assert capsys.readouterr().out == (
        "=== Answer ===\nわかりません。\n\n=== Sources ===\n- faq.csv:r2\n- technical_guide.pdf:p4\n"
    )


def test_main_lists_the_context_an_uncited_answer_was_copied_from_first(context, capsys):
    context.llm = FakeListLLM(responses=["全サービスのデータは毎日午前2時にバックアップされます。"])
    assert ask.main(["--no-stream", "バックアップは？"], context=context) == 0
    assert capsys.readouterr().out.endswith("=== Sources ===\n- technical_guide.pdf:p4\n- faq.csv:r2 (not cited)\n")


def test_main_lists_cited_sources_first_and_marks_the_others(context, capsys):
    context.llm = FakeListLLM(responses=["18時までです[2][5]。"])
    assert ask.main(["--no-stream", "受付時間は？"], context=context) == 0
    assert capsys.readouterr().out == (
        "=== Answer ===\n18時までです[2]。\n根拠: 「サポート窓口の受付時間は平日9時から18時までです。」[1]\n\n"
        "=== Sources ===\n- technical_guide.pdf:p4\n- faq.csv:r2 (not cited)\n"
    )  # the quote shows where it came from


def test_main_after_abstaining_says_the_sources_are_only_the_closest(context, capsys):
    from dataclasses import replace

    docs = [
        Document(page_content=d.page_content, metadata={**d.metadata, "vector_score": 0.5})
        for d in context.search("q", 2)
    ]
    ctx = replace(context, search=lambda q, k: docs[:k], min_confidence=0.9)
    assert ask.main(["社員食堂のメニューは？"], context=ctx) == 0
    assert capsys.readouterr().out == (
        "=== Answer ===\n資料に記載がありません\n\n=== Sources (closest; they do not answer the question) ===\n"
        "- faq.csv:r2\n- technical_guide.pdf:p4\n"
    )


def test_format_sources_with_citations():
    assert ask.format_sources(["a:r1", "b:r2"], cited=["b:r2"]) == "=== Sources ===\n- b:r2\n- a:r1 (not cited)"


def test_main_joins_unquoted_words(context, capsys):
    ask.main(["受付", "時間"], context=context)
    assert "=== Answer ===" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [[], [""], ["   "]])
def test_main_without_question_prints_usage_and_exits_2(argv, capsys):
    assert ask.main(argv) == 2
    err = capsys.readouterr().err
    assert "usage:" in err and 'make ask Q="質問文"' in err


def test_main_maps_library_errors_to_one_line(mocker, capsys, clean_env):
    mocker.patch(
        "app.ask.ensure_ingested",
        side_effect=DatabaseUnavailableError("cannot connect to PostgreSQL at db:5432: refused"),
    )
    assert ask.main(["質問"]) == 1
    err = capsys.readouterr().err
    assert err == "Error: cannot connect to PostgreSQL at db:5432: refused\n"


def test_main_bad_env_value_is_one_line_error(capsys, clean_env):
    clean_env.setenv("SEARCH_K", "many")
    assert ask.main(["質問"]) == 1
    assert capsys.readouterr().err == "Error: SEARCH_K must be an integer, got 'many'\n"


def test_ensure_ingested_empty_collection_says_run_ingest(no_db, clean_env):
    no_db.patch("app.db.count_chunks", return_value=0)
    from app.config import get_settings
    from app.errors import RagError

    with pytest.raises(RagError, match="run `make ingest` first"):
        ask.ensure_ingested(get_settings())


@pytest.fixture
def streaming_context(mock_documents):
    from langchain_core.language_models.fake import FakeStreamingListLLM

    return RAGContext(
        search=lambda q, k: mock_documents[:k],
        llm=FakeStreamingListLLM(responses=["  平日9時から18時です。\n\n"]),
        reranker=None,
        search_k=4,
        rerank_top_k=2,
    )


def test_main_streams_the_same_text_as_no_stream(streaming_context, capsys):
    import io

    streamed, whole = io.StringIO(), io.StringIO()
    assert ask.main(["受付時間は？"], context=streaming_context, out=streamed) == 0
    assert ask.main(["受付時間は？", "--no-stream"], context=streaming_context, out=whole) == 0
    assert (
        streamed.getvalue()
        == whole.getvalue()
        == (
            "=== Answer ===\n平日9時から18時です。[1]\n根拠: 「サポート窓口の受付時間は平日9時から18時までです。」[1]\n\n"
            "=== Sources ===\n- faq.csv:r2\n- technical_guide.pdf:p4 (not cited)\n"
        )
    )


def test_main_timings_prints_json_on_stderr(streaming_context, capsys):
    import io
    import json

    ask.main(["受付時間は？", "--timings"], context=streaming_context, out=io.StringIO())
    report = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert set(report["timings"]) == {"route", "retrieve", "rerank", "generate", "first_token"}
    assert report["peak_rss_mb"] > 0 and report["process_start_to_first_token_s"] > 0


def test_token_printer_drops_leading_and_holds_trailing_whitespace():
    import io

    out = io.StringIO()
    printer = ask.TokenPrinter(out)
    for piece in [" ", "\n", "平日", " 9時", "です。", "\n", " "]:
        printer(piece)
    assert out.getvalue() == "平日 9時です。"
    printer("続き")
    assert out.getvalue() == "平日 9時です。\n 続き"


def test_help_is_instant_and_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys, runpy\nsys.argv=['x','--help']\n"
        "try:\n    runpy.run_module('app.ask', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy=[m for m in ('torch','sentence_transformers','llama_cpp','langgraph','sqlalchemy') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert "usage: python -m app.ask" in out and "HEAVY []" in out


def test_main_withdraws_a_streamed_answer_with_an_unsupported_number(streaming_context, capsys):
    import io

    from langchain_core.language_models.fake import FakeStreamingListLLM

    streaming_context.llm = FakeStreamingListLLM(responses=["駐車場は7台分です[1]。"])
    out = io.StringIO()
    assert ask.main(["駐車場は？"], context=streaming_context, out=out) == 0
    assert out.getvalue().startswith(
        "=== Answer ===\n駐車場は7台分です[1]。\n\n（取り消し: 上の回答の数値 7 はどの資料にも書かれていません）\n"
        "資料に記載がありません\n\n=== Sources (closest; they do not answer the question) ===\n"
    )
