"""app.web: the page, the streamed answer as Server-Sent Events, the question checks, the turns."""

import asyncio
import base64
import concurrent.futures
import hashlib
import json
import time

import pytest
from starlette.testclient import TestClient

from app.errors import StoreNotReadyError
from app.web.app import create_app, read_question, sse
from app.web.turns import Turns
from tests.web_fakes import PageService


class FakeService(PageService):
    """``ask`` streams the answer in three pieces, then returns the MCP service's result shape."""

    def __init__(self, fail: Exception | None = None):
        self.fail, self.asked = fail, []

    def ask(self, question, mode="hybrid", on_token=None, who=None, on_passages=None, stopped=None):
        self.asked.append((question, mode))
        if self.fail:
            raise self.fail
        for piece in ("受付時間は", "平日9時から18時です", "[1]"):
            on_token(piece)
        return {
            "answer": "受付時間は平日9時から18時です[1]",
            "quote": "根拠: 「平日9時から18時」[1]",
            "mode": mode,
            "sources": ["faq.csv:r2", "faq.csv:r1"],
            "cited_sources": ["faq.csv:r2"],
            "abstained": None,
            "warnings": [],
            "keyword_only": None,
            "timings": {"retrieve": 0.01},
        }

    def list_documents(self, who=None):
        return [{"doc_id": "csv/faq.csv", "chunks": 3}]

    def sync(self):
        self.last_sync = FakeReport()
        return None, self.last_sync


class FakeReport:
    failures = ["bad.pdf: no extractable text"]

    def summary(self):
        return "Ingest: 1 added; 1 failed"


def events(text: str) -> list[tuple[str, dict]]:
    """The (event, data) pairs of an SSE body."""
    out = []
    for block in text.strip().split("\n\n"):
        kind, data = block.split("\n")
        out.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def test_sse_is_one_event_with_readable_japanese():
    assert sse("token", {"text": "受付"}) == 'event: token\ndata: {"text": "受付"}\n\n'


@pytest.mark.parametrize(
    "body, message",
    [
        ([], "質問を JSON で送ってください"),
        ({}, "質問を入力してください"),
        ({"question": "   "}, "質問を入力してください"),
        ({"question": "あ" * 2001}, "質問が長すぎます（2000 文字まで）"),
        ({"question": "受付時間", "mode": 3}, "mode は文字列で指定してください"),
        ({"question": "受付時間", "history": "前の質問"}, "history は文字列のリストで指定してください"),
        ({"question": "受付時間", "history": [1]}, "history は文字列のリストで指定してください"),
    ],
)
def test_bad_questions_are_one_line(body, message):
    with pytest.raises(ValueError) as err:
        read_question(body)
    assert str(err.value) == message


def test_the_page_is_japanese_and_loads_nothing_from_elsewhere():
    page = TestClient(create_app(FakeService())).get("/")
    assert page.status_code == 200 and '<html lang="ja">' in page.text and "質問する" in page.text
    assert "http://" not in page.text and "https://" not in page.text and "innerHTML" not in page.text


@pytest.mark.parametrize("path", ["/", "/documents"])
def test_a_page_may_run_only_its_own_script(path):
    page = TestClient(create_app(FakeService())).get(path)
    script = page.text.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = page.headers["content-security-policy"]
    assert f"script-src 'sha256-{digest}';" in policy and "default-src 'self';" in policy
    assert "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["referrer-policy"] == "no-referrer"


def test_the_answer_streams_token_by_token_then_the_sources():
    service = FakeService()
    response = TestClient(create_app(service)).post("/api/ask", json={"question": " 受付時間は？ ", "mode": "keyword"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    got = events(response.text)
    assert [k for k, _ in got] == ["searched", "token", "token", "token", "done"]
    assert got[0][1] == {"question": "受付時間は？", "rewritten": False}
    assert "".join(d["text"] for k, d in got if k == "token") == got[-1][1]["answer"]
    assert got[-1][1]["cited_sources"] == ["faq.csv:r2"] and got[-1][1]["mode"] == "keyword"
    assert service.asked == [("受付時間は？", "keyword")]


def test_a_follow_up_is_searched_as_a_question_that_stands_alone():
    service = FakeService()
    body = {"question": "それは土日も？", "history": ["古い質問", "サポート窓口の受付時間は？"]}
    got = events(TestClient(create_app(service)).post("/api/ask", json=body).text)
    assert got[0] == ("searched", {"question": "サポート窓口の受付時間は土日も？", "rewritten": True})
    assert service.asked == [("サポート窓口の受付時間は土日も？", "hybrid")]


def test_a_failure_is_one_error_event():
    app = create_app(FakeService(fail=StoreNotReadyError("nothing is stored yet; run `make ingest`")))
    got = events(TestClient(app).post("/api/ask", json={"question": "受付時間は？"}).text)
    assert got[1:] == [("error", {"message": "nothing is stored yet; run `make ingest`"})]


def test_an_unexpected_failure_names_only_its_type():
    got = events(
        TestClient(create_app(FakeService(fail=KeyError("秘密")))).post("/api/ask", json={"question": "q"}).text
    )
    assert got[1:] == [("error", {"message": "回答できませんでした（KeyError）"})]


def test_a_bad_request_is_400_with_one_line():
    client = TestClient(create_app(FakeService()))
    assert client.post("/api/ask", content=b"{").json() == {"error": "質問を JSON で送ってください"}
    response = client.post("/api/ask", json={"question": ""})
    assert response.status_code == 400 and response.json() == {"error": "質問を入力してください"}


def test_documents_lists_the_store_and_the_last_sync():
    service = FakeService()
    client = TestClient(create_app(service))
    assert client.get("/api/documents").json() == {
        "documents": [{"doc_id": "csv/faq.csv", "chunks": 3}],
        "last_sync": None,
        "user": "(this machine)",
        "admin": False,
    }
    page = client.get("/documents")
    assert page.status_code == 200 and "保存されている文書" in page.text and "innerHTML" not in page.text
    synced = client.post("/api/sync")  # the test client is not loopback: refused
    assert synced.status_code == 403 and synced.json() == {
        "error": "再同期は管理者（admin グループ）だけが実行できます"
    }


def test_an_administrator_on_this_machine_can_sync_and_sees_the_failures():
    service = FakeService()
    client = TestClient(create_app(service), client=("127.0.0.1", 50000))
    assert client.post("/api/sync").json() == {
        "summary": "Ingest: 1 added; 1 failed",
        "failures": ["bad.pdf: no extractable text"],
    }
    assert client.get("/api/documents").json()["last_sync"]["failures"] == ["bad.pdf: no extractable text"]


def test_turns_serve_in_order_and_tell_each_how_many_are_ahead():
    async def scenario():
        turns, told = Turns(), {}
        tickets = {
            name: turns.join(lambda ahead, name=name: told.setdefault(name, []).append(ahead))
            for name in ("first", "second", "third", "fourth")
        }
        assert tickets["first"].started and not tickets["second"].started and turns.waiting() == 4
        await turns.wait(tickets["first"])
        turns.drop(tickets["third"])  # its asker went away: the one behind moves up at once
        assert told == {"second": [1], "third": [2], "fourth": [3, 2]} and turns.waiting() == 3
        turns.leave()  # the first answer ended
        await asyncio.wait_for(turns.wait(tickets["second"]), 1)
        assert told["fourth"] == [3, 2, 1] and not tickets["fourth"].started
        turns.leave()
        await asyncio.wait_for(turns.wait(tickets["fourth"]), 1)
        turns.leave()
        assert turns.waiting() == 0

    asyncio.run(scenario())


def test_turns_with_two_models_start_two_and_a_cancelled_wait_leaves_the_line():
    async def scenario():
        turns = Turns(capacity=2)
        a, b, c, d = (turns.join() for _ in range(4))
        assert (a.started, b.started, c.started, d.started) == (True, True, False, False)
        waiting = asyncio.ensure_future(turns.wait(c))
        await asyncio.sleep(0)
        waiting.cancel()  # the page was closed while waiting
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert turns.waiting() == 3
        turns.leave()
        assert d.started and d.told == 1  # one ahead of it once c left, then started

    asyncio.run(scenario())


def stopped_database_error() -> Exception:
    """The real error of a database that is gone: psycopg connecting over a real socket to a port on
    this machine where nothing listens (a stopped server), through SQLAlchemy as the store connects."""
    import socket

    from sqlalchemy import create_engine

    with socket.socket() as probe:  # a free port: bound, then closed, so nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = create_engine(f"postgresql+psycopg://u:pw@127.0.0.1:{port}/rag", connect_args={"connect_timeout": 2})
    try:
        engine.connect()
    except Exception as exc:
        return exc
    finally:
        engine.dispose()
    raise AssertionError("a connection to a closed port succeeded")


class GoneService(FakeService):
    """Every call reaches a stopped database."""

    def __init__(self):
        super().__init__(fail=stopped_database_error())

    def list_documents(self, who=None):
        raise self.fail

    def sync(self):
        raise self.fail


def test_a_stopped_database_is_one_line_503_on_every_route_and_no_traceback(caplog):
    """Issue 40, case 6: /api/documents, /api/source, /files, /api/sync answer 503 with one line, the
    answer's stream one error event saying the same; the log has one warning line each, no traceback."""
    service = GoneService()
    gone = lambda *_: (_ for _ in ()).throw(service.fail)  # noqa: E731 (a lookup that reaches the database)
    client = TestClient(create_app(service, view_source=gone, document_path=gone), client=("127.0.0.1", 50000))
    with caplog.at_level("WARNING", logger="app.web.app"):
        answers = [
            client.get("/api/documents"),
            client.get("/api/source", params={"id": "faq.csv:r2"}),
            client.get("/files/pdf/a.pdf"),
            client.post("/api/sync"),
        ]
        streamed = events(client.post("/api/ask", json={"question": "受付時間は？"}).text)
    for response in answers:
        assert response.status_code == 503
        message = response.json()["error"]
        assert message.startswith("データベースに接続できません: ") and "\n" not in message and "pw" not in message
    assert streamed[-1] == ("error", {"message": answers[0].json()["error"]})
    assert all(record.exc_info is None for record in caplog.records) and len(caplog.records) == 5
    page = client.get("/documents").text
    assert '$("summary").textContent = body.error' in page  # the page shows the line, not an empty table


def test_a_large_or_deeply_nested_body_is_one_line_not_a_traceback():
    """Issue 40, case 7: a body past 64 KB is 413, JSON nested 30,000 deep (a RecursionError in the
    parser) and bytes that are not UTF-8 are 400, each with one line; the model is never asked."""
    service = FakeService()
    client = TestClient(create_app(service))
    big = client.post("/api/ask", content=b'{"question": "' + b"a" * 70_000 + b'"}')
    assert big.status_code == 413 and big.json() == {"error": "リクエストが大きすぎます（64 KB まで）"}
    deep = client.post("/api/ask", content=b"[" * 30_000 + b"]" * 30_000)
    assert deep.status_code == 400 and deep.json() == {"error": "JSON の入れ子が深すぎます"}
    bad = client.post("/api/ask", content=b'{"question": "\xff\xfe"}')
    assert bad.status_code == 400 and bad.json() == {"error": "質問を JSON で送ってください"}
    assert service.asked == []


def test_the_page_recovers_by_itself_once_the_database_is_back():
    """Issue 40, case 6: after a 503 the next request goes to the service again; once the database
    answers, the documents list and the answer come back without a restart."""
    service = GoneService()
    client = TestClient(create_app(service))
    assert client.get("/api/documents").status_code == 503
    service.fail = None
    service.list_documents = FakeService().list_documents  # the database is back
    back = client.get("/api/documents")
    assert back.status_code == 200 and back.json()["documents"] == [{"doc_id": "csv/faq.csv", "chunks": 3}]
    assert events(client.post("/api/ask", json={"question": "受付時間は？"}).text)[-1][0] == "done"


def test_the_done_event_gives_timings_in_whole_milliseconds():
    from app.web.app import page_result

    assert page_result({"answer": "a", "timings": {"retrieve": 0.0137, "generate": 13.7125}}) == {
        "answer": "a",
        "timings_ms": {"retrieve": 14, "generate": 13712},
    }
    assert page_result({"answer": "a"}) == {"answer": "a", "timings_ms": {}}


@pytest.mark.parametrize("name", ["PAGE", "DOCUMENTS_PAGE"])
def test_each_pages_script_parses(name, tmp_path):
    """The inline script is valid JavaScript (Node's own parser; a stray newline in a string literal
    once stopped the whole page). The browser test runs it for real."""
    import shutil
    import subprocess

    from app.web import page

    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("Node.js is not installed (the browser test still runs the script)")
    script = tmp_path / "page.js"
    script.write_text(getattr(page, name).split("<script>", 1)[1].split("</script>", 1)[0], encoding="utf-8")
    checked = subprocess.run([node, "--check", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


class SlowToEnd(concurrent.futures.ThreadPoolExecutor):
    """An executor whose futures complete a while after their work returned (a busy machine's thread
    hand-off, made long): the answer's last event is out well before its turn is given back."""

    def submit(self, fn, /, *args, **kwargs):
        def slow():
            result = fn(*args, **kwargs)
            time.sleep(0.3)
            return result

        return super().submit(slow)


def test_the_stream_ends_after_its_answer_gave_its_turn_back():
    from app.web.app import answer_events

    async def scenario():
        turns = Turns()
        with SlowToEnd(max_workers=1) as executor:
            kinds = [
                event.split("\n", 1)[0]
                async for event in answer_events(FakeService(), turns, "質問", "hybrid", executor=executor)
            ]
            # checked before the loop runs anything else: the turn is free when the response ends, so a
            # client whose event loop ends with the response (a test client) never leaves it taken
            assert kinds[-1] == "event: done" and turns.waiting() == 0

    asyncio.run(scenario())
