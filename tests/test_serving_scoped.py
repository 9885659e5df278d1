"""app.serving.scoped: a served question's scope checked as who asks, and the context reading within it;
and RagService passing the scope to the search, the kept answers and the result."""

from types import SimpleNamespace

import pytest

from app.config import Settings
from app.retrieval.reader import GLOBAL_SCOPE
from app.serving import scoped
from app.serving.scoped import asker_context, checked_scope, narrowed
from app.serving.service import RagService
from app.storage.scope import Scope, missing_folder_message
from app.users.identity import Identity
from app.workflow.state import RAGContext

BOB = Identity("bob", ("everyone", "user:bob"))
RULES = Scope(folders=("docs/規程",), formats=("pdf",))


class Store:
    """Records what each read is given."""

    engine = "engine"
    vector_unavailable = None

    def __init__(self):
        self.calls = []

    def warm_up(self):
        return self

    def search(self, query, search_mode=None, top_k=None, principals=None, **scope):
        self.calls.append(("search", search_mode, principals, scope))
        return []

    def search_function(self, mode, principals=None, **scope):
        self.calls.append(("search_function", mode, principals, scope))
        return ("search", mode, scope.get("scope"))

    def graph_search(self, llm=None, count_tokens=None, principals=None, **scope):
        return ("graph", principals, scope.get("scope"))

    def source_chunks(self, source, principals=None, vectors=False):
        return []


def test_narrowed_is_the_keyword_only_for_a_scope_that_narrows():
    assert narrowed(RULES) == {"scope": RULES}
    assert narrowed(Scope()) == {} and narrowed(None) == {}


def test_a_scope_folder_with_nothing_to_read_is_the_command_lines_line(monkeypatch):
    asked = []

    def missing(engine, collection, scope, principals):
        asked.append((engine, collection, scope, tuple(principals)))
        return ["docs/規程/"]

    monkeypatch.setattr(scoped, "missing_folders", missing)
    with pytest.raises(ValueError) as caught:
        checked_scope(Store(), Settings(), RULES, BOB.principals, "hybrid")
    assert str(caught.value) == missing_folder_message(["docs/規程/"])
    assert asked == [("engine", Settings().retrieval.collection_name, RULES, BOB.principals)]


def test_a_scope_is_checked_only_when_it_narrows_and_never_in_global_mode(monkeypatch):
    monkeypatch.setattr(scoped, "missing_folders", lambda *a: [])
    assert checked_scope(Store(), Settings(), RULES, BOB.principals, "hybrid") == RULES
    assert checked_scope(Store(), Settings(), Scope(), BOB.principals, "global") is None
    monkeypatch.setattr(scoped, "missing_folders", lambda *a: pytest.fail("no folder to check"))
    assert checked_scope(Store(), Settings(), Scope(formats=("pdf",)), BOB.principals) == Scope(formats=("pdf",))
    with pytest.raises(ValueError) as caught:
        checked_scope(Store(), Settings(), Scope(formats=("pdf",)), BOB.principals, "global")
    assert str(caught.value) == GLOBAL_SCOPE


@pytest.mark.parametrize("mode", ["hybrid", "local"])
def test_the_context_searches_within_the_scope_as_who_asks(mode):
    ctx = RAGContext(search=None, llm="llm", read_source=None)
    made = asker_context(ctx, Store(), Settings(), mode, BOB.principals, RULES)
    assert made.search == ("search", "hybrid", RULES) and made.scope == RULES and made.mode == mode
    if mode == "local":
        assert made.graph_search == ("graph", BOB.principals, RULES)
    plain = asker_context(ctx, Store(), Settings(), mode, BOB.principals, None)
    assert plain.search == ("search", "hybrid", None) and plain.scope is None


class Memory:
    """Kept answers by (question, scope): what RagService looks up and keeps."""

    def __init__(self):
        self.kept = {}

    def fingerprint(self):
        return "f"

    def find(self, question, mode, principals, fingerprint=None, scope=None):
        hit = self.kept.get((question, scope))
        return None if hit is None else ("id", hit, SimpleNamespace(isoformat=lambda timespec: "2026-01-01T00:00:00"))

    def keep(self, question, mode, principals, fingerprint, result, scope=None):
        self.kept[(question, scope)] = dict(result)
        return "id"


def test_the_service_keeps_and_finds_answers_under_their_scope(monkeypatch):
    from app.serving import service as serving_service

    monkeypatch.setattr(scoped, "missing_folders", lambda *a: [])
    answers = iter(["全体の答え", "規程の答え"])
    monkeypatch.setattr(serving_service, "run_rag", lambda q, ctx: {"answer": next(answers), "sources": []})
    ctx = RAGContext(search=None, llm=None, read_source=None)
    svc = RagService(settings=Settings(), store=Store(), context_factory=lambda: ctx, memory=Memory())
    everything = svc.ask("有給は？", who=BOB)
    assert everything["answer"] == "全体の答え" and everything["scope"] is None
    within = svc.ask("有給は？", who=BOB, scope=RULES)  # not the unscoped answer kept a moment ago
    assert within["answer"] == "規程の答え" and within["cached_at"] is None
    assert within["scope"] == {"folders": ["docs/規程/"], "formats": ["pdf"], "since": None}
    again = svc.ask("有給は？", who=BOB, scope=RULES)
    assert again["answer"] == "規程の答え" and again["cached_at"] is not None


def test_the_service_search_reads_within_the_scope(monkeypatch):
    monkeypatch.setattr(scoped, "missing_folders", lambda *a: [])
    store = Store()
    svc = RagService(settings=Settings(), store=store, context_factory=lambda: None)
    svc.search("有給", 3, "hybrid", who=BOB, scope=RULES)
    svc.search("有給", 3, "hybrid", who=BOB)
    assert store.calls == [
        ("search", "hybrid", BOB.principals, {"scope": RULES}),
        ("search", "hybrid", BOB.principals, {}),
    ]
