"""The workflow's graph branches (app.graph: route → local → generate, route → global) with a fake
GraphSearch and a recording LLM: one compiled graph, the mode chosen, the graph context in the prompt."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM

from app import graph
from app.errors import GraphNotReadyError
from app.graph import RAGContext, run_rag
from app.graphrag.global_search import NO_DATA_ANSWER
from app.graphrag.local_search import NO_ENTITIES_ANSWER
from app.graphrag.search import LocalResult
from app.storage.graphrag_types import (
    ContextResult,
    Entity,
    GlobalSearchResult,
    KeyPoint,
    MapResult,
    TextUnit,
    TraceabilityInfo,
)


class RecordingLLM(FakeListLLM):
    prompts: list = []

    def _call(self, prompt, stop=None, run_manager=None, **kwargs):
        self.prompts.append(prompt)
        return super()._call(prompt, stop, run_manager, **kwargs)


class FakeGraph:
    """Stands in for app.graphrag.search.GraphSearch: fixed local and global results."""

    def __init__(self, entities=True, ready=True, answer="テーマは料金と認証です。"):
        self.entities, self.ready, self.answer, self.calls = entities, ready, answer, []

    def is_ready(self):
        return self.ready

    def local(self, query):
        self.calls.append(("local", query))
        unit = TextUnit("k1", "VPNにはワンタイムパスワードが必要です。", ["e1"], source="it_helpdesk.md#vpn接続")
        used = [Entity("e1", "VPN")] if self.entities else []
        context = ContextResult(
            "-----Entities-----\nid|entity|description|number of relationships\ne1|VPN|…|1",
            used,
            [],
            [unit] if used else [],
            42,
            section_tokens={"entities": 20},
        )
        docs = [Document(page_content=unit.text, id="k1", metadata={"source": unit.source})] if used else []
        return LocalResult(context, docs, {"entities": 0.01})

    def global_search(self, query, stopped=None):
        self.calls.append(("global", query))
        point = KeyPoint("料金は月額制", 90, ["c0-0"])
        return GlobalSearchResult(
            self.answer,
            "multiple paragraphs",
            [MapResult(0, [point], 100, 0.5)],
            TraceabilityInfo(["c0-0"], ["csv/products.csv"], ["k9"], ["e1"]),
            100,
            1.0,
            timings={"context": 0.0, "map": 0.5, "reduce": 0.5},
        )

    def sources_of(self, chunk_ids):
        return [f"products.csv:r{i}" for i, _ in enumerate(chunk_ids, 1)]


def context(mode, fake, llm, mock_documents):
    return RAGContext(
        search=lambda q, k: list(mock_documents[:k]), llm=llm, search_k=4, rerank_top_k=3, mode=mode, graph_search=fake
    )


@pytest.fixture
def llm():
    return RecordingLLM(responses=["VPNにはワンタイムパスワードが必要です。[1]"], prompts=[])


def test_local_mode_answers_from_the_graph_context_and_its_chunks(llm, mock_documents):
    fake = FakeGraph()
    state = run_rag("VPNとワンタイムパスワードの関係は？", context("local", fake, llm, mock_documents))
    assert state["mode"] == "local" and state["route_reason"] == "asked for"
    assert state["answer"] == "VPNにはワンタイムパスワードが必要です。[1]"
    assert state["sources"] == ["it_helpdesk.md#vpn接続"] and state["cited_sources"] == ["it_helpdesk.md#vpn接続"]
    prompt = llm.prompts[0]
    assert "知識グラフ（資料から抽出したエンティティ・関係・要約）:\n-----Entities-----" in prompt
    assert prompt.index("知識グラフ") < prompt.index("[1]（出典: it_helpdesk.md#vpn接続）")
    assert state["graph"]["entity_ids"] == ["e1"] and state["graph"]["chunk_ids"] == ["k1"]
    assert {"route", "local", "local_entities", "generate"} <= set(state["timings"])
    assert "retrieve" not in state["timings"]  # the chunk search did not run


def test_local_mode_without_entities_says_so_without_the_llm(llm, mock_documents):
    state = run_rag("社員食堂のメニューは？", context("local", FakeGraph(entities=False), llm, mock_documents))
    assert state["answer"] == NO_ENTITIES_ANSWER and state["abstained"] == "no_entities"
    assert llm.prompts == [] and "generate" not in state["timings"]


def test_global_mode_returns_the_reduced_answer_with_traceability(llm, mock_documents):
    fake = FakeGraph()
    streamed = []
    ctx = context("global", fake, llm, mock_documents)
    ctx.on_token = streamed.append
    state = run_rag("資料全体の主なテーマは？", ctx)
    assert state["answer"] == "テーマは料金と認証です。" and streamed == ["テーマは料金と認証です。"]
    assert state["sources"] == ["products.csv:r1"] and state["abstained"] is None
    assert state["traceability"] == {
        "report_ids": ["c0-0"],
        "document_ids": ["csv/products.csv"],
        "chunk_ids": ["k9"],
        "entity_ids": ["e1"],
    }
    assert state["map_results"][0]["key_points"][0]["score"] == 90
    assert {"route", "global", "global_map", "global_reduce"} <= set(state["timings"])
    assert llm.prompts == []  # the fake graph search stands for the map-reduce calls


def test_global_mode_with_no_points_is_an_abstention(llm, mock_documents):
    state = run_rag("全体の傾向は？", context("global", FakeGraph(answer=NO_DATA_ANSWER), llm, mock_documents))
    assert state["abstained"] == "no_points"


@pytest.mark.parametrize(
    "question, mode",
    [("全体の傾向をまとめて", "global"), ("VPNとパスワードの関係は？", "local"), ("受付時間は何時から？", "hybrid")],
)
def test_auto_mode_routes_by_the_rule_table(llm, mock_documents, question, mode):
    llm.responses = ["平日9時から18時までです。[1]"]
    fake = FakeGraph()
    state = run_rag(question, context("auto", fake, llm, mock_documents))
    assert state["mode"] == mode
    assert [c[0] for c in fake.calls] == ([mode] if mode != "hybrid" else [])
    assert ("retrieve" in state["timings"]) == (mode == "hybrid")


def test_auto_mode_without_a_built_graph_answers_with_hybrid(llm, mock_documents):
    state = run_rag("全体の傾向をまとめて", context("auto", FakeGraph(ready=False), llm, mock_documents))
    assert state["mode"] == "hybrid" and "the graph is not built" in state["route_reason"]


def test_auto_mode_answers_a_narrowed_overview_question_from_passages_not_reports(llm, mock_documents):
    """Community reports span every folder: a question narrowed by a scope is not answered from them."""
    from app.storage.scope import Scope

    llm.responses = ["平日9時から18時までです。[1]"]
    fake = FakeGraph()
    ctx = context("auto", fake, llm, mock_documents)
    ctx.scope = Scope(folders=("docs/規程",))
    state = run_rag("全体の傾向をまとめて", ctx)
    assert state["mode"] == "hybrid" and state["route_reason"] == (
        "overview cue '全体', but the question is narrowed (--in, --format, --since)"
    )
    assert fake.calls == [] and "retrieve" in state["timings"]


def test_graph_mode_without_a_graph_search_is_a_clear_error(llm, mock_documents):
    with pytest.raises(GraphNotReadyError, match="local search needs the graph"):
        run_rag("VPNの関係は？", context("local", None, llm, mock_documents))


def test_default_context_rejects_an_unknown_mode(clean_env):
    with pytest.raises(
        ValueError, match="^mode must be one of hybrid, vector, keyword, local, global, auto, got 'drift'$"
    ):
        graph.default_context(mode="drift", search=lambda q, k: [], reranker=None, generate=False, principals=())


def test_coverage_check_counts_the_graph_tables_too():
    from app.workflow.generate import pre_llm_abstention

    ctx = RAGContext(search=None, llm=None, min_coverage=0.5)
    docs = [Document(page_content="VPNで接続します。")]
    assert pre_llm_abstention(ctx, "認証アプリの役割", docs, None) == "low_coverage"
    assert pre_llm_abstention(ctx, "認証アプリの役割", docs, None, preamble="e1|認証アプリ|役割を持つ|2") is None


def test_a_scoped_local_search_keeps_the_entities_and_relationships_its_chunks_name():
    from app.graphrag.search import named_within
    from app.storage.graphrag_types import Entity, Relationship, TextUnit

    entities = [Entity("e1", "休暇"), Entity("e2", "有給"), Entity("e3", "賞与")]
    relationships = [Relationship("r1", "e1", "e2"), Relationship("r2", "e1", "e3"), Relationship("r3", "e2", "e9")]
    units = [TextUnit("c1", "…", entity_ids=["e2", "e1"]), TextUnit("c2", "…", entity_ids=["e1"])]
    kept, linked = named_within(entities, relationships, units)
    assert [e.id for e in kept] == ["e1", "e2"] and [r.id for r in linked] == ["r1"]
    assert named_within(entities, relationships, []) == ([], [])
