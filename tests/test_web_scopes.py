"""app.web.scopes: the choices offered from the documents the asker may read, the ask body's ``scope``
checked, and both routes (``/api/scopes``, ``/api/ask`` with a scope) over a fake service."""

import json
import shutil
import subprocess
from datetime import date

import pytest
from starlette.testclient import TestClient

from app.storage.scope import Scope, missing_folder_message
from app.web.app import create_app
from app.web.scopes import read_scope, scope_choices
from tests.web_fakes import PageService


def test_choices_are_every_ancestor_folder_and_each_format():
    ids = ["docs/規程/就業規則.pdf", "docs/規程/古い/旅費.PDF", "docs/faq.csv", "top.md", "csv/売上.xlsx"]
    assert scope_choices(ids) == {
        "folders": ["csv/", "docs/", "docs/規程/", "docs/規程/古い/"],
        "formats": ["csv", "md", "pdf", "xlsx"],
    }


def test_choices_leave_out_what_a_scope_could_not_name():
    # no extension, a dotted folder, an extension that is not letters and digits: no format offered
    assert scope_choices(["README", "v1.2/notes", "a/b.tar-gz", "x/.env"]) == {
        "folders": ["a/", "v1.2/", "x/"],
        "formats": ["env"],
    }
    assert scope_choices([]) == {"folders": [], "formats": []}


def test_the_ask_bodys_scope_becomes_a_scope():
    body = {"question": "q", "scope": {"folders": ["docs/規程"], "formats": [".PDF"], "since": "2025-04-01"}}
    assert read_scope(body) == Scope(folders=("docs/規程/",), formats=("pdf",), since=date(2025, 4, 1))
    assert read_scope({"question": "q"}) == Scope()
    assert read_scope({"question": "q", "scope": {}}) == Scope()
    assert read_scope({"scope": {"folders": [], "formats": [], "since": ""}}) == Scope()
    assert read_scope({"scope": {"folders": "docs"}}) == Scope(folders=("docs/",))


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ("docs", "scope は {folders, formats, since} のオブジェクトで指定してください"),
        ({"folder": ["docs"]}, "scope に使えない項目があります: folder（folders, formats, since）"),
        ({"folders": [1]}, "scope.folders は文字列のリストで指定してください"),
        ({"formats": {"pdf": 1}}, "scope.formats は文字列のリストで指定してください"),
        ({"since": 20250401}, "scope.since は YYYY-MM-DD の文字列で指定してください"),
        ({"folders": ["../secret"]}, "a folder may not contain '..', got '../secret'"),
        ({"folders": ["/etc"]}, "a folder is a path inside the data folder, not an absolute one, got '/etc'"),
        ({"folders": ["docs/*"]}, "a folder is a plain path without * ? or [ (no patterns), got 'docs/*'"),
        ({"formats": ["p.df"]}, "a format is a file extension such as pdf or docx, got 'p.df'"),
        ({"since": "4月1日"}, "since takes a day as YYYY-MM-DD (2025-04-01), got '4月1日'"),
        ({"folders": [f"d{i}" for i in range(21)]}, "scope.folders は 20 個までです"),
    ],
)
def test_a_bad_scope_is_one_line(scope, message):
    with pytest.raises(ValueError) as caught:
        read_scope({"question": "q", "scope": scope})
    assert str(caught.value) == message


def test_a_scope_character_that_cannot_be_stored_is_refused():
    with pytest.raises(ValueError, match="scope.folders"):
        read_scope({"scope": {"folders": ["docs\x00"]}})


class ScopedService(PageService):
    """Records the scope each call gets; ``docs/無い/`` holds nothing the asker may read."""

    def __init__(self):
        self.calls = []

    def list_documents(self, who=None):
        return [{"doc_id": "docs/規程/就業規則.pdf", "chunks": 2}, {"doc_id": "faq.csv", "chunks": 1}]

    def check_scope(self, scope, who, mode=None):
        if "docs/無い/" in scope.folders:
            raise ValueError(missing_folder_message(["docs/無い/"]))
        return scope

    def cached_answer(self, question, mode="hybrid", who=None, scope=None):
        self.calls.append(("cached", scope))
        return None

    def passages(self, question, mode="hybrid", who=None, scope=None):
        self.calls.append(("passages", scope))
        return []

    def ask(self, question, mode="hybrid", on_token=None, who=None, on_passages=None, stopped=None, scope=None):
        self.calls.append(("ask", scope))
        return {"answer": "a", "sources": [], "scope": scope.as_dict() if scope else None, "timings": {}}


def done_event(text: str) -> dict:
    """The data of the ``done`` event of an SSE body."""
    for block in text.strip().split("\n\n"):
        kind, data = block.split("\n")
        if kind == "event: done":
            return json.loads(data.removeprefix("data: "))
    raise AssertionError(text)


def test_api_scopes_offers_the_folders_and_formats_of_the_asker_documents():
    client = TestClient(create_app(ScopedService()))
    response = client.get("/api/scopes")
    assert response.status_code == 200
    assert response.json() == {"folders": ["docs/", "docs/規程/"], "formats": ["csv", "pdf"]}


def test_a_scoped_ask_passes_the_scope_to_every_call_and_the_answer_names_it():
    service = ScopedService()
    client = TestClient(create_app(service))
    scope = {"folders": ["docs/規程"], "formats": ["pdf"], "since": "2025-04-01"}
    response = client.post("/api/ask", json={"question": "有給は？", "scope": scope})
    assert response.status_code == 200
    wanted = Scope(folders=("docs/規程/",), formats=("pdf",), since=date(2025, 4, 1))
    assert service.calls == [("cached", wanted), ("ask", wanted)]
    assert done_event(response.text)["scope"] == {"folders": ["docs/規程/"], "formats": ["pdf"], "since": "2025-04-01"}


def test_an_unscoped_ask_calls_the_service_as_before():
    service = ScopedService()
    response = TestClient(create_app(service)).post("/api/ask", json={"question": "有給は？", "scope": {}})
    assert response.status_code == 200
    assert service.calls == [("cached", None), ("ask", None)]


def test_a_folder_with_nothing_to_read_is_400_with_the_command_lines_line():
    service = ScopedService()
    response = TestClient(create_app(service)).post(
        "/api/ask", json={"question": "有給は？", "scope": {"folders": ["docs/無い"]}}
    )
    assert response.status_code == 400
    assert response.json() == {"error": missing_folder_message(["docs/無い/"])}
    assert service.calls == []


def test_a_bad_scope_is_400_before_anything_is_asked():
    service = ScopedService()
    response = TestClient(create_app(service)).post(
        "/api/ask", json={"question": "有給は？", "scope": {"folders": ["../x"]}}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "a folder may not contain '..', got '../x'"}
    assert service.calls == []


def test_the_page_has_a_labelled_scope_control_and_sends_the_scope():
    from app.web.page import PAGE, content_security_policy
    from app.web.scope_script import SCOPE_SCRIPT

    for control in ("scope-folder", "scope-format", "scope-since"):
        assert f'<label for="{control}">' in PAGE and f'id="{control}"' in PAGE
    assert '<option value="">すべてのフォルダ</option>' in PAGE and 'type="date"' in PAGE
    assert SCOPE_SCRIPT in PAGE and "...chosenScope()" in PAGE and "showScope(result.scope)" in PAGE
    assert " on" + "change=" not in PAGE and " on" + "click=" not in PAGE  # no inline handlers (CSP)
    assert "script-src 'sha256-" in content_security_policy(PAGE)


def test_the_scope_script_builds_the_body_and_the_line_shown():
    """The script's own functions, run by Node over a stand-in document."""
    from app.web.scope_script import SCOPE_SCRIPT

    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("Node.js is not installed")
    stub = """
const elements = {};
const $ = (id) => (elements[id] ||= {value: "", hidden: true, textContent: "", append() {}, focus() {},
                                      addEventListener() {}});
globalThis.fetch = async () => ({ ok: false });
"""
    probe = """
const out = [JSON.stringify(chosenScope())];
$("scope-folder").value = "docs/規程/"; $("scope-since").value = "2025-04-01";
out.push(JSON.stringify(chosenScope()));
out.push(scopeText({folders: ["docs/規程/"], formats: ["pdf"], since: "2025-04-01"}));
out.push(JSON.stringify(scopeText(null)));
console.log(out.join("\\n"));
"""
    run = subprocess.run([node, "-e", stub + SCOPE_SCRIPT + probe], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "{}",
        '{"scope":{"folders":["docs/規程/"],"since":"2025-04-01"}}',
        "絞り込み: docs/規程/ · PDF · 2025-04-01 以降",
        '""',
    ]
