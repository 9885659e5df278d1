"""A question whose asker goes away mid-answer: over a real socket to a real uvicorn, the generation
stops at its next token and the model's turn passes to the next question; a global question stops
between (and within) its map calls, and the calls left are never made."""

import contextlib
import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn
from langchain_core.documents import Document

from app.config import Settings
from app.graph import run_rag
from app.graphrag.global_search import MAP_SYSTEM
from app.graphrag.search import GraphSearch
from app.storage.graphrag_types import CommunityReport
from app.web.app import create_app
from app.workflow.state import RAGContext
from tests.slow_llm import SlowLLM
from tests.web_fakes import PageService


class SlowService(PageService):
    """``ask`` streams up to 400 pieces, 20 ms apart, and records how each answer ended."""

    def __init__(self):
        self.ended: list[str] = []

    def ask(self, question, mode="hybrid", on_token=None, who=None, on_passages=None, stopped=None):
        try:
            for _ in range(400):
                on_token("あ")
                time.sleep(0.02)
        except Exception as exc:
            self.ended.append(type(exc).__name__)
            raise
        self.ended.append("finished")
        return {"answer": "あ" * 400, "sources": [], "cited_sources": [], "timings": {}}

    def list_documents(self, who=None):
        return []


@contextlib.contextmanager
def serving(service):
    """A real uvicorn on a free loopback port, serving the app over ``service``: (service, port)."""
    config = uvicorn.Config(create_app(service), host="127.0.0.1", port=0, log_level="warning", access_log=False)
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not (running.started and running.servers) and time.monotonic() < deadline:
        time.sleep(0.02)
    port = running.servers[0].sockets[0].getsockname()[1]
    try:
        yield service, port
    finally:
        running.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def server():
    """A real uvicorn serving the app over :class:`SlowService`."""
    with serving(SlowService()) as running:
        yield running


def ask_and_hang_up(port: int) -> bytes:
    """POST a question, read until the first token arrives, then close the connection."""
    body = json.dumps({"question": "受付時間は？"}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(
            b"POST /api/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        received = b""
        while b"event: token" not in received:
            received += conn.recv(4096)
    return received


def test_a_closed_connection_stops_the_answer_and_frees_the_model(server):
    service, port = server
    assert b"event: searched" in ask_and_hang_up(port)
    deadline = time.monotonic() + 5
    while not service.ended and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service.ended == ["Cancelled"]  # stopped at a token, long before its 400 pieces (8 s)

    # The next question gets the model at once and its whole answer.
    with httpx.stream("POST", f"http://127.0.0.1:{port}/api/ask", json={"question": "次の質問"}, timeout=30) as reply:
        text = "".join(reply.iter_text())
    assert "event: done" in text
    assert service.ended == ["Cancelled", "finished"]


class Asker:
    """One question streamed in a thread: the events as they come, until :meth:`hang_up`."""

    def __init__(self, port: int, question: str, mode: str = "hybrid"):
        self.events: list[tuple[str, dict]] = []
        self.socket = None
        self.thread = threading.Thread(target=self.run, args=(port, question, mode), daemon=True)
        self.thread.start()

    def run(self, port: int, question: str, mode: str) -> None:
        try:
            with httpx.stream(
                "POST", f"http://127.0.0.1:{port}/api/ask", json={"question": question, "mode": mode}, timeout=30
            ) as reply:
                self.socket = reply.extensions["network_stream"].get_extra_info("socket")
                kind = None
                for line in reply.iter_lines():
                    if line.startswith("event: "):
                        kind = line.removeprefix("event: ")
                    elif line.startswith("data: "):
                        self.events.append((kind, json.loads(line.removeprefix("data: "))))
        except httpx.HTTPError:
            pass  # hung up

    def told(self) -> list[int]:
        return [data["ahead"] for kind, data in self.events if kind == "queued"]

    def hang_up(self) -> None:
        """Close the connection as a closed page does (the reading thread ends); once is enough."""
        with contextlib.suppress(OSError):  # already closed
            self.socket.shutdown(socket.SHUT_RDWR)


def wait_until(check, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_queued_questions_leave_every_other_route_fast_and_each_asker_knows_its_place(server):
    service, port = server
    askers = [Asker(port, f"質問{i}") for i in range(9)]  # one answered, eight queued
    wait_until(lambda: all(a.told() or a.events for a in askers) and sum(bool(a.told()) for a in askers) == 8)
    # every waiting asker was told its place: 1 to 8 questions ahead
    assert sorted(a.told()[-1] for a in askers if a.told()) == list(range(1, 9))
    listed = httpx.get(f"http://127.0.0.1:{port}/api/documents", timeout=5)
    assert listed.status_code == 200  # answered while the questions wait (before: after them, 9 s)
    assert service.ended == []  # still answering the first, eight still waiting

    # a queued asker closes the page: it leaves the line at once, and the last one moves up
    last = max(askers, key=lambda a: a.told()[-1] if a.told() else 0)
    gone = next(a for a in askers if a.told() and a.told()[-1] == 4)
    gone.hang_up()
    wait_until(lambda: last.told()[-1] == 7)
    for asker in askers:
        asker.hang_up()


# --- a global question: map calls on a slow model ----------------------------------------------------

BATCHES = 30


class ReportsInMemory(GraphSearch):
    """Global search as app.graphrag.search runs it (its model calls, batching, map and reduce) over
    reports held here instead of the database: one report per batch, :data:`BATCHES` batches."""

    def reports(self, level=None, min_rank=None):
        summary = "料金は月額制で、年払いは二か月分安くなります。" * 4  # about 90 characters: one per batch
        return [CommunityReport(f"c{i}", 0, f"料金{i}", summary, rank=5.0) for i in range(BATCHES)]

    def sources_of(self, chunk_ids):
        return []


class GraphService(PageService):
    """``ask`` runs the real workflow over a :class:`~tests.slow_llm.SlowLLM` (a map call writes for
    about 0.6 s: the 30 batches of a global question take 18 s); records how each answer ended."""

    def __init__(self):
        self.llm = SlowLLM(pause=0.01)
        self.ended: list[str] = []
        budget = len(MAP_SYSTEM) + 150  # the map prompt's own text, and room for one report's row
        self.settings = Settings().changed(graph={"context_tokens": budget, "map_max_batches": BATCHES})

    def ask(self, question, mode="hybrid", on_token=None, who=None, on_passages=None, stopped=None):
        doc = [Document(page_content="料金は月額制です。", id="c1", metadata={"source": "faq.csv:r1"})]
        graph = ReportsInMemory(self.settings, None, llm=self.llm, count_tokens=len, principals=("everyone",))
        ctx = RAGContext(
            search=lambda q, k: doc, llm=self.llm, mode=mode, graph_search=graph, on_token=on_token, stopped=stopped
        )
        try:
            state = run_rag(question, ctx)
        except Exception as exc:
            self.ended.append(type(exc).__name__)
            raise
        self.ended.append("finished")
        return {"answer": state["answer"], "sources": [], "cited_sources": [], "timings": {}}

    def list_documents(self, who=None):
        return []


def test_a_global_question_whose_asker_left_makes_no_more_map_calls_and_the_next_asker_is_answered():
    with serving(GraphService()) as (service, port):
        gone = Asker(port, "料金の全体像は？", mode="global")
        wait_until(lambda: service.llm.calls.count("map") >= 1)  # in the map phase: 1 of 30 calls begun
        gone.hang_up()
        wait_until(lambda: service.ended == ["AnswerStoppedError"])
        made = service.llm.calls.count("map")
        assert made <= 2  # the call under way stopped at its next piece; the other 28+ were never made

        # the model passes on: the next asker's first token comes within seconds (the 30 calls: 18 s)
        after = Asker(port, "料金は？")
        wait_until(lambda: any(kind == "token" for kind, _ in after.events), seconds=5)
        wait_until(lambda: after.events and after.events[-1][0] in ("done", "error"))
        assert after.events[-1][0] == "done" and service.ended == ["AnswerStoppedError", "finished"]
        assert service.llm.calls.count("map") == made  # nothing went on behind the next answer
