"""A question whose asker goes away mid-answer: over a real socket to a real uvicorn, the generation
stops at its next token and the model's turn passes to the next question."""

import contextlib
import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn

from app.web.app import create_app
from tests.web_fakes import PageService


class SlowService(PageService):
    """``ask`` streams up to 400 pieces, 20 ms apart, and records how each answer ended."""

    def __init__(self):
        self.ended: list[str] = []

    def ask(self, question, mode="hybrid", on_token=None, who=None, on_passages=None):
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


@pytest.fixture
def server():
    """A real uvicorn on a free loopback port, serving the app over :class:`SlowService`."""
    service = SlowService()
    config = uvicorn.Config(create_app(service), host="127.0.0.1", port=0, log_level="warning", access_log=False)
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not (running.started and running.servers) and time.monotonic() < deadline:
        time.sleep(0.02)
    port = running.servers[0].sockets[0].getsockname()[1]
    yield service, port
    running.should_exit = True
    thread.join(timeout=10)


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

    def __init__(self, port: int, question: str):
        self.events: list[tuple[str, dict]] = []
        self.socket = None
        self.thread = threading.Thread(target=self.run, args=(port, question), daemon=True)
        self.thread.start()

    def run(self, port: int, question: str) -> None:
        try:
            with httpx.stream(
                "POST", f"http://127.0.0.1:{port}/api/ask", json={"question": question}, timeout=30
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
    begin = time.perf_counter()
    listed = httpx.get(f"http://127.0.0.1:{port}/api/documents", timeout=5)
    took = time.perf_counter() - begin
    assert listed.status_code == 200 and took < 0.5  # was 9 s: waiting questions held the server's threads
    assert service.ended == []  # still answering the first, eight still waiting

    # a queued asker closes the page: it leaves the line at once, and the last one moves up
    last = max(askers, key=lambda a: a.told()[-1] if a.told() else 0)
    gone = next(a for a in askers if a.told() and a.told()[-1] == 4)
    gone.hang_up()
    wait_until(lambda: last.told()[-1] == 7)
    for asker in askers:
        asker.hang_up()
