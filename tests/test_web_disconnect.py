"""A question whose asker goes away mid-answer: over a real socket to a real uvicorn, the generation
stops at its next token and the model's turn passes to the next question."""

import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn

from app.web.app import create_app


class SlowService:
    """``ask`` streams up to 400 pieces, 20 ms apart, and records how each answer ended."""

    def __init__(self):
        self.ended: list[str] = []

    def ask(self, question, mode="hybrid", on_token=None, who=None):
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
