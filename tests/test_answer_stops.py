"""An answer whose asker has gone stops (``stopped``, app.errors.AnswerStoppedError): global search
between its map calls and before its reduce, a model call at its next streamed piece, the streamed
answer of every other mode before its prompt is read and at each piece. The page's real server over
a closed socket: tests/test_web_disconnect.py."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from app.config import Settings
from app.errors import AnswerStoppedError
from app.graph import run_rag
from app.graphrag.global_search import GlobalSearch, MapProcessor, ReduceProcessor
from app.graphrag.search import GraphSearch
from app.storage.graphrag_types import CommunityReport
from app.workflow.state import RAGContext
from tests.slow_llm import ANSWER, MAP_ANSWER, SlowLLM

GOOD = '{"points": [{"description": "料金は月額制", "score": 60}]}'


def report(rid: str) -> CommunityReport:
    return CommunityReport(id=rid, level=0, title=f"題{rid}", summary="要約", rank=5, chunk_ids=[f"k-{rid}"])


class CountedCall:
    """A map or reduce call that answers at once and counts how often it was made."""

    def __init__(self, answer: str = GOOD):
        self.answer, self.made = answer, 0

    def __call__(self, system: str, prompt: str, attempt: int) -> str:
        self.made += 1
        return self.answer


def test_the_map_calls_left_are_not_made_once_the_asker_has_gone():
    call, sleeps = CountedCall(), []
    mapper = MapProcessor(call, len, sleep=sleeps.append)
    batches = [[report(f"c{i}")] for i in range(5)]
    with pytest.raises(AnswerStoppedError):
        mapper.map(batches, "質問", stopped=lambda: call.made >= 2)
    assert call.made == 2


def test_a_call_stopped_midway_is_not_retried():
    sleeps, attempts = [], []

    def call(system, prompt, attempt):
        attempts.append(attempt)
        raise AnswerStoppedError("the asker went away")

    with pytest.raises(AnswerStoppedError):
        MapProcessor(call, len, sleep=sleeps.append).process_batch(0, [report("c1")], "質問")
    assert attempts == [0] and sleeps == []  # a failed call would be retried 3 times after 1, 2, 4 s


def test_the_reduce_is_not_asked_once_the_asker_has_gone():
    map_call, reduce_call = CountedCall(), CountedCall("答え")
    search = GlobalSearch(MapProcessor(map_call, len), ReduceProcessor(reduce_call, len, 10_000), 10_000, 4)
    reports = [report("c1")]
    with pytest.raises(AnswerStoppedError):
        search.search("質問", reports, stopped=lambda: map_call.made >= 1)  # gone once the map is done
    assert (map_call.made, reduce_call.made) == (1, 0)
    assert search.search("質問", reports).response == "答え"  # nobody left: the same search answers


def graph_search(llm: SlowLLM) -> GraphSearch:
    """A graph search over no database: only its model calls are used here."""
    return GraphSearch(Settings(), None, llm=llm, principals=("everyone",))


def test_a_map_call_stops_at_its_next_piece_once_the_asker_has_gone():
    llm = SlowLLM(pause=0)
    call = graph_search(llm).llm_call(400, stopped=lambda: llm.pieces >= 3)
    with pytest.raises(AnswerStoppedError):
        call("system", "レポート:\n[c1] 料金\n\n質問: 料金は？", 0)
    assert llm.pieces == 3 and llm.calls == ["map"]  # of its 60-odd characters
    assert graph_search(llm).llm_call(400)("system", "レポート:\n[c1]\n\n質問: q", 0) == MAP_ANSWER


def streaming_context(llm: SlowLLM, stopped) -> RAGContext:
    doc = Document(page_content="料金は月額制です。", id="c1", metadata={"source": "faq.csv:r1"})
    return RAGContext(search=lambda q, k: [doc], llm=llm, on_token=lambda piece: None, stopped=stopped)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_streamed_answer_stops_at_its_next_piece(mode):
    llm = SlowLLM(pause=0)
    ctx = streaming_context(llm, lambda: llm.pieces >= 2)
    ctx.mode = mode
    with pytest.raises(AnswerStoppedError):
        run_rag("料金は？", ctx)
    assert llm.pieces == 2 and llm.calls == ["answer"]
    assert run_rag("料金は？", streaming_context(llm, None))["answer"].startswith(ANSWER[:4])  # nobody left


def test_an_answer_whose_asker_left_during_retrieval_never_reaches_the_model():
    llm = SlowLLM(pause=0)
    with pytest.raises(AnswerStoppedError):
        run_rag("料金は？", streaming_context(llm, lambda: True))
    assert llm.calls == []


def test_each_global_map_call_is_given_graph_map_max_tokens(monkeypatch):
    """GRAPH_MAP_MAX_TOKENS reaches the map calls (the reduce keeps its own budget)."""
    search = GraphSearch(
        Settings().changed(graph={"map_max_tokens": 48}), None, llm=SlowLLM(pause=0), principals=("everyone",)
    )
    made = []
    real = search.llm_call
    monkeypatch.setattr(search, "reports", lambda: [report("c1")])
    monkeypatch.setattr(
        search, "llm_call", lambda max_tokens, stopped=None: made.append(max_tokens) or real(max_tokens, stopped)
    )
    search.global_search("料金は？")
    assert made[0] == 48 and len(made) == 2  # the map's, then the reduce's
    assert made[1] != 48
