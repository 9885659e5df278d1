"""The MCP service's pure helpers (exact values) and RagService with fake store/context.
The real server runs over stdio and HTTP in tests/integration/test_mcp_server.py."""

from __future__ import annotations

import dataclasses
import threading
from types import SimpleNamespace

import pytest
from langchain_core.documents import Document

from app.config import Settings
from app.errors import StoreNotReadyError
from app.mcp.server import parse_http
from app.serving import service
from app.serving.hits import normalized_score, payload, snippet_span
from app.serving.service import RagService, validate_search
from app.users.identity import FULL, Identity


@pytest.mark.parametrize(
    "query, k, mode, error",
    [
        ("", 10, "hybrid", "query must be a non-empty string"),
        ("   ", 10, "hybrid", "query must be a non-empty string"),
        (None, 10, "hybrid", "query must be a non-empty string"),
        ("x" * 2001, 10, "hybrid", "query is too long (2001 characters; at most 2000)"),
        ("q", 0, "hybrid", "k must be an integer from 1 to 50, got 0"),
        ("q", 51, "hybrid", "k must be an integer from 1 to 50, got 51"),
        ("q", True, "hybrid", "k must be an integer from 1 to 50, got True"),
        ("q", "5", "hybrid", "k must be an integer from 1 to 50, got '5'"),
        ("q", 5, "graph", "mode must be one of hybrid, vector, keyword, got 'graph'"),
    ],
)
def test_validate_search_rejects_bad_arguments_with_one_line(query, k, mode, error):
    with pytest.raises(ValueError) as info:
        validate_search(query, k, mode)
    assert str(info.value) == error


def test_validate_search_strips_the_query():
    assert validate_search("  受付時間 ", 50, "keyword") == ("受付時間", 50, "keyword")


def _doc(score: float, text: str = "t", **meta) -> Document:
    return Document(page_content=text, id="c1", metadata={"relevance_score": score, **meta})


def test_normalized_scores_per_mode():
    s = Settings()  # RRF k=60, weights 1:1 unless configured otherwise
    best = sum(w / (s.retrieval.rrf_k + 1) for w in s.retrieval.hybrid_weights)
    assert normalized_score(_doc(best), "hybrid", s) == 1.0
    assert normalized_score(_doc(best / 2), "hybrid", s) == 0.5
    assert normalized_score(_doc(10.0), "keyword", s) == 0.5
    assert normalized_score(_doc(30.0), "keyword", s) == 0.75
    assert normalized_score(_doc(0.0), "keyword", s) == 0.0
    assert normalized_score(_doc(0.8731), "vector", s) == 0.8731
    assert normalized_score(_doc(-0.2), "vector", s) == 0.0


def test_normalized_scores_keep_the_rank_order():
    s = Settings()
    for mode in ("vector", "keyword", "hybrid"):
        raws = [0.03, 0.02, 0.011, 0.0105, 0.0]
        scores = [normalized_score(_doc(r), mode, s) for r in raws]
        assert scores == sorted(scores, reverse=True)


def test_snippet_span_short_text_is_whole():
    assert snippet_span("受付時間は9時から", "受付時間") == (0, 9)


def test_snippet_span_centres_on_the_densest_matches():
    text = "あ" * 300 + "サポート窓口の受付時間は平日9時から18時まで" + "い" * 300
    start, end = snippet_span(text, "受付時間", width=40)
    assert end - start == 40
    assert "受付時間" in text[start:end]
    assert (start, end) == (288, 328)  # hits at 307-310, centred in 40


def test_snippet_span_without_matches_is_the_start():
    assert snippet_span("x" * 500, "受付時間", width=120) == (0, 120)


def test_snippet_span_matches_full_width_text():
    text = "a" * 200 + "エラーコードＥ３０１０はタイムアウト" + "b" * 200
    start, end = snippet_span(text, "E3010", width=30)
    assert "Ｅ３０１０" in text[start:end]


def test_payload_reads_page_or_row_from_the_source():
    doc = Document(page_content="x", metadata={"source": "faq.csv:r2", "doc_id": "csv/faq.csv", "chunk_index": 0})
    assert payload(doc, (0, 1)) == {
        "source": "faq.csv:r2",
        "document_id": "csv/faq.csv",
        "chunk_index": 0,
        "start": 0,
        "end": 1,
        "row": 2,
    }
    pdf = Document(page_content="x", metadata={"source": "guide.pdf:p12", "doc_id": "pdf/guide.pdf", "chunk_index": 3})
    assert payload(pdf, (5, 9))["page"] == 12


def test_documents_for_json_turns_times_into_strings():
    import datetime

    when = datetime.datetime(2026, 11, 24, 3, 0, tzinfo=datetime.UTC)
    assert service.documents_for_json([{"doc_id": "a", "ingested_at": when, "chunks": 3}]) == [
        {"doc_id": "a", "ingested_at": "2026-11-24T03:00:00+00:00", "chunks": 3}
    ]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("8765", ("127.0.0.1", 8765)),
        (":8765", ("127.0.0.1", 8765)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("[::1]:9000", ("::1", 9000)),
    ],
)
def test_parse_http(value, expected):
    assert parse_http(value) == expected


@pytest.mark.parametrize("value", ["host", "host:0", "host:70000", "host:x"])
def test_parse_http_rejects(value):
    with pytest.raises(ValueError, match="--http needs HOST:PORT"):
        parse_http(value)


class FakeStore:
    def __init__(self, ready=True):
        self.calls = []
        self.vector_unavailable = None
        self.ready = ready

    def warm_up(self):
        if not self.ready:
            raise StoreNotReadyError("no documents are stored yet: run make ingest")
        return self

    def search(self, query, search_mode=None, top_k=None, principals=None):
        self.calls.append((query, search_mode, top_k))
        self.principals = principals
        return [
            Document(
                page_content="受付時間は平日9時から18時まで",
                id="c1",
                metadata={"relevance_score": 12.0, "source": "faq.csv:r2", "doc_id": "csv/faq.csv", "chunk_index": 0},
            )
        ]

    def search_function(self, mode, principals=None):
        return ("search", mode)

    def sync(self, data_dir, graph=True):
        return None, SimpleNamespace(summary=lambda: f"synced {data_dir}", failures=["x: bad"])

    def list_documents(self, principals=None):
        return [{"doc_id": "csv/faq.csv", "chunks": 22}]

    def graph_search(self, llm=None, count_tokens=None, principals=None):
        return ("graph", llm, count_tokens)

    def source_chunks(self, source, principals=None, vectors=False):
        self.calls.append(("source_chunks", source, principals))
        return []


def test_service_search_validates_and_shapes_hits():
    store = FakeStore()
    svc = RagService(settings=Settings(), store=store, context_factory=lambda: None)
    hits = svc.search(" 受付時間 ", 3, "keyword", who=FULL)
    assert store.calls == [("受付時間", "keyword", 3)] and store.principals == ("admin",)
    assert hits == [
        {
            "id": "c1",
            "score": 0.5455,
            "snippet": "受付時間は平日9時から18時まで",
            "payload": {
                "source": "faq.csv:r2",
                "document_id": "csv/faq.csv",
                "chunk_index": 0,
                "start": 0,
                "end": 16,
                "row": 2,
            },
        }
    ]
    with pytest.raises(ValueError):
        svc.search("q", 0, who=FULL)
    assert len(store.calls) == 1  # a bad argument never reaches the database


def test_service_loads_the_context_once_and_answers_with_the_mode(monkeypatch):
    from app.serving import service as serving_service

    loads = []

    @dataclasses.dataclass
    class Ctx:
        search: object = None
        mode: str = "hybrid"
        graph_search: object = None
        llm: object = "llm"
        count_tokens: object = None
        read_source: object = None
        on_token: object = None  # the service times every answer through these (app.serving.usage)
        on_passages: object = None

    def factory():
        loads.append(1)
        return Ctx()

    seen = []

    def fake_run(question, ctx):
        seen.append((question, ctx.search))
        modes.append((ctx.mode, ctx.graph_search))
        return {
            "answer": "平日9時から18時です。[1]",
            "sources": ["faq.csv:r9", "faq.csv:r2"],
            "cited_sources": ["faq.csv:r2"],
            "numbered_sources": ["faq.csv:r2", "faq.csv:r9"],
            "timings": {"generate": 1.23456},
        }

    modes = []

    monkeypatch.setattr(serving_service, "run_rag", fake_run)
    svc = RagService(settings=Settings(), store=FakeStore(), context_factory=factory)
    threads = [
        threading.Thread(target=svc.ask, args=("受付時間は？", "vector"), kwargs={"who": FULL}) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result = svc.ask("受付時間は？", who=FULL)
    assert loads == [1]
    assert seen[-1] == ("受付時間は？", ("search", "hybrid")) and seen[0][1] == ("search", "vector")
    assert result == {
        "answer": "平日9時から18時です。[1]",
        "quote": None,
        "mode": "hybrid",
        "sources": ["faq.csv:r2", "faq.csv:r9"],
        "cited_sources": ["faq.csv:r2"],
        "numbered_sources": ["faq.csv:r2", "faq.csv:r9"],
        "abstained": None,
        "withdrawn": [],
        "status": None,  # the model's answer
        "warnings": [],
        "keyword_only": None,
        "timings": {"generate": 1.235},
        "passages": [],
        "past_versions": [],
        "version_notes": [],
        "table": None,  # the text path
        "answer_id": None,  # no answer memory: nothing kept
        "cached_at": None,
        "scope": None,  # asked over every document
    }
    svc.ask("VPNと認証アプリの関係は？", "auto", who=FULL)  # a graph mode: the graph search gets the context's LLM
    assert modes[-1] == ("auto", ("graph", "llm", None)) and modes[0] == ("vector", None)


def test_service_reads_the_top_source_as_who_asks(monkeypatch):
    """TOP_SOURCE_CHARS: the context's ``read_source`` is bound per ask to the asker's principals, as
    the search is; the served context's own refuses (it never runs)."""
    from app.serving import service as serving_service

    def fake_run(question, ctx):
        ctx.read_source("guide.pdf:p21")
        return {"answer": "a", "sources": []}

    store = FakeStore()
    monkeypatch.setattr(serving_service, "run_rag", fake_run)
    from app.workflow.state import RAGContext

    ctx = RAGContext(search=service.no_search, llm=None, read_source=service.no_read_source)
    svc = RagService(settings=Settings(), store=store, context_factory=lambda: ctx)
    svc.ask("版数は？", who=Identity("bob", ("everyone", "user:bob")))
    assert store.calls == [("source_chunks", "guide.pdf:p21", ("everyone", "user:bob"))]
    with pytest.raises(RuntimeError, match="RagService.ask replaces read_source"):
        service.no_read_source("guide.pdf:p21")


def test_service_context_load_failure_is_raised_and_retried():
    attempts = []

    def factory():
        attempts.append(1)
        if len(attempts) == 1:
            raise FileNotFoundError("no model")
        return "ctx"

    svc = RagService(settings=Settings(), store=FakeStore(), context_factory=factory)
    svc._load_context()  # the background preload: logs, does not raise
    assert svc.context() == "ctx" and attempts == [1, 1]


def test_service_sync_summary_and_documents(tmp_path):
    svc = RagService(
        settings=Settings(), store=FakeStore(), writer=FakeStore(), context_factory=lambda: None, data_dir=tmp_path
    )
    assert svc.sync_summary() == {"summary": f"synced {tmp_path}", "failures": ["x: bad"]}
    assert svc.list_documents(FULL) == [{"doc_id": "csv/faq.csv", "chunks": 22}]


def test_ask_validates_its_question_before_loading_anything():
    svc = RagService(settings=Settings(), store=FakeStore(), context_factory=lambda: pytest.fail("loaded"))
    with pytest.raises(ValueError, match="^question must be a non-empty string$"):
        svc.ask("  ", who=FULL)
    with pytest.raises(
        ValueError, match="^mode must be one of hybrid, vector, keyword, local, global, auto, got 'drift'$"
    ):
        svc.ask("受付時間は？", "drift", who=FULL)


def test_ask_before_anything_is_ingested_says_so_without_loading_the_llm():
    svc = RagService(settings=Settings(), store=FakeStore(ready=False), context_factory=lambda: pytest.fail("loaded"))
    with pytest.raises(StoreNotReadyError, match="^no documents are stored yet: run make ingest$"):
        svc.ask("受付時間は？", who=FULL)


def test_a_withdrawn_answer_names_what_no_document_states(monkeypatch):
    from app.serving import service as serving_service

    @dataclasses.dataclass
    class Ctx:
        search: object = None
        mode: str = "hybrid"
        on_token: object = None
        on_passages: object = None
        read_source: object = None

    state = {"answer": "資料に記載がありません", "sources": ["countries.csv:r33"], "abstained": "unstated"}
    monkeypatch.setattr(serving_service, "run_rag", lambda q, ctx: {**state, "unsupported": ["シカゴ"]})
    svc = RagService(settings=Settings(), store=FakeStore(), context_factory=Ctx)
    result = svc.ask("ブラジルの首都は？", who=FULL)
    assert (result["abstained"], result["withdrawn"], result["answer"]) == (
        "unstated",
        ["シカゴ"],
        "資料に記載がありません",
    )


def test_a_warm_server_says_once_what_it_answers_with(tmp_path):
    """Issue 41, case 5: the start line names the embedder, the re-ranker (or that none is installed:
    no warning), the LLM in process or the server it asks (masked), and where the database is."""
    from app.config import Settings
    from app.serving.warm import what_runs

    (tmp_path / "tiny.gguf").write_bytes(b"GGUF")
    (tmp_path / "japanese-reranker").mkdir()
    (tmp_path / "japanese-reranker" / "config.json").write_text("{}")
    assert what_runs(
        Settings.from_env(
            {"MODELS_DIR": str(tmp_path), "LLM_MODEL_PATH": str(tmp_path / "tiny.gguf"), "PGDATA_DIR": "/srv/pg"}
        )
    ) == (
        "embeddings intfloat/multilingual-e5-small; re-ranker none installed (retrieval order); "
        "LLM tiny.gguf in process; database: embedded PostgreSQL in /srv/pg"
    )
    served = Settings.from_env(
        {
            "MODELS_DIR": str(tmp_path),
            "RERANKER_MODEL": "acme/japanese-reranker",
            "LLM_BASE_URL": "http://u:pw@127.0.0.1:8080/v1?api_key=K",
            "EMBED_BASE_URL": "http://127.0.0.1:8081/v1",
            "DB_HOST": "db",
            "DB_PASSWORD": "x",
        }
    )
    assert what_runs(served) == (
        "embeddings server http://127.0.0.1:8081/v1; re-ranker acme/japanese-reranker; "
        "LLM server http://127.0.0.1:8080/v1?api_key=***; database: PostgreSQL at db:5432"
    )


# --- who asks is never implied: a forgotten or empty ``who`` fails before the store is read ----------

SERVICE_READS = {
    "search": lambda svc, **who: svc.search("受付時間", 3, "keyword", **who),
    "ask": lambda svc, **who: svc.ask("受付時間は？", "hybrid", **who),
    "cached_answer": lambda svc, **who: svc.cached_answer("受付時間は？", "hybrid", **who),
    "passages": lambda svc, **who: svc.passages("受付時間は？", "hybrid", **who),
    "list_documents": lambda svc, **who: svc.list_documents(**who),
    "source_chunks": lambda svc, **who: svc.source_chunks("faq.csv:r2", **who),
}


@pytest.mark.parametrize("read", SERVICE_READS.values(), ids=SERVICE_READS.keys())
def test_service_reads_without_who_raise(read):
    store = FakeStore()
    svc = RagService(settings=Settings(), store=store, context_factory=lambda: pytest.fail("loaded"))
    with pytest.raises(TypeError, match="missing 1 required (keyword-only |positional )argument: 'who'"):
        read(svc)
    with pytest.raises(TypeError, match="^who must be an Identity .*got None$"):
        read(svc, who=None)
    with pytest.raises(TypeError, match="^who must be an Identity .*got \\('admin',\\)$"):
        read(svc, who=("admin",))  # bare principals are not an asker: FULL or an Identity, on purpose
    assert store.calls == []
