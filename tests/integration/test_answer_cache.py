"""Earlier answers given again (ANSWER_CACHE), on real PostgreSQL with the real service: the same
question, normalized, from someone with the same readers over unchanged documents, answered at once;
another user, a changed document, or the switch off get a new answer. The page sends the passages
before the first token, and a repeated question's ``done`` without any token."""

import time

import pytest
from starlette.testclient import TestClient

from app.serving.answers import AnswerMemory
from app.serving.service import RagService, no_search
from app.users.identity import FULL, identity_for_token
from app.web.app import create_app
from tests.integration.conftest import ACL_QUESTION, assert_no_secret, sse_events

FAQ_QUESTION = "サポート窓口の受付時間を教えてください。"


def service_for(acl, engine, **memory) -> RagService:
    """The real service over the acl collection, keeping its answers (``memory``: settings changed)."""
    from app.graph import default_context

    settings = acl.settings.changed(memory=memory) if memory else acl.settings
    made = RagService(
        settings=settings,
        store=acl.store,
        context_factory=lambda: default_context(settings, search=no_search, principals=()),
        memory=AnswerMemory(engine, settings.retrieval.collection_name, settings),
    )
    made.context()
    return made


@pytest.fixture(scope="module")
def service(acl, engine) -> RagService:
    return service_for(acl, engine)


def who(acl, engine, name: str):
    return identity_for_token(engine, acl.tokens[name])


def test_the_same_question_is_answered_again_at_once_for_the_same_readers_only(service, acl, engine):
    alice, bob = who(acl, engine, "alice"), who(acl, engine, "bob")
    first = service.ask(ACL_QUESTION, "hybrid", who=alice)
    assert first["cached_at"] is None and isinstance(first["answer_id"], str)
    assert first["passages"]  # the re-ranked top sources (the tiny test re-ranker prefers FAQ rows)
    # the same question, typed with other widths, spaces and punctuation
    again = service.ask("  賞与の支給率は、基本給の何か月分ですか?", "hybrid", who=alice)
    assert again["cached_at"] is not None and again["answer_id"] == first["answer_id"]
    assert again["answer"] == first["answer"] and again["sources"] == first["sources"]
    assert set(again["timings"]) == {"cache"}
    # another mode is another question
    assert service.ask(ACL_QUESTION, "keyword", who=alice)["cached_at"] is None
    # bob reads other documents: never alice's answer
    theirs = service.ask(ACL_QUESTION, "hybrid", who=bob)
    assert theirs["cached_at"] is None and theirs["answer_id"] != first["answer_id"]
    assert_no_secret(theirs, "in bob's answer to the question alice asked first")
    assert service.answer_record(first["answer_id"])["principals"] == sorted(alice.principals)


def test_the_switch_off_answers_anew_and_feedback_still_names_the_answer(acl, engine):
    uncached = service_for(acl, engine, answer_cache=False)
    one = uncached.ask(FAQ_QUESTION, "keyword", who=FULL)
    two = uncached.ask(FAQ_QUESTION, "keyword", who=FULL)
    assert two["cached_at"] is None and one["answer_id"] != two["answer_id"]
    nothing = service_for(acl, engine, answer_cache=False, feedback=False)
    assert nothing.ask(FAQ_QUESTION, "keyword", who=FULL)["answer_id"] is None


def test_an_earlier_answer_lasts_its_time_to_live(acl, engine):
    brief = service_for(acl, engine, answer_cache_ttl_s=1)
    brief.ask("営業手当はいくらですか？", "keyword", who=FULL)
    assert brief.ask("営業手当はいくらですか？", "keyword", who=FULL)["cached_at"] is not None
    time.sleep(1.2)
    assert brief.ask("営業手当はいくらですか？", "keyword", who=FULL)["cached_at"] is None


def test_the_page_shows_the_passages_before_the_first_word_and_a_repeated_question_at_once(service):
    client = TestClient(create_app(service))
    got = sse_events(client.post("/api/ask", json={"question": FAQ_QUESTION}).text)
    kinds = [k for k, _ in got]
    assert kinds[-1] == "done" and "sources" in kinds
    if "token" in kinds:
        assert kinds.index("sources") < kinds.index("token")
    shown = got[kinds.index("sources")][1]
    assert shown["passages"][0]["source"].startswith("faq.csv:r") and shown["ms"] >= 0
    passage = shown["passages"][0]
    assert all(0 <= s < e <= len(passage["text"]) for s, e in passage["marks"])
    assert got[-1][1]["passages"] == shown["passages"] and got[-1][1]["cached_at"] is None

    repeated = sse_events(client.post("/api/ask", json={"question": FAQ_QUESTION}).text)
    assert [k for k, _ in repeated] == ["searched", "sources", "done"]
    done = repeated[-1][1]
    assert done["cached_at"] and done["answer_id"] == got[-1][1]["answer_id"] and done["answer"] == got[-1][1]["answer"]


def test_a_changed_document_makes_every_earlier_answer_stale(service, acl):
    assert service.ask(FAQ_QUESTION, "vector", who=FULL)["cached_at"] is None
    assert service.ask(FAQ_QUESTION, "vector", who=FULL)["cached_at"] is not None
    changed = acl.data / "docs" / "営業" / "営業手当.md"
    changed.write_text(changed.read_text(encoding="utf-8") + "\n申請は月末までとする。\n", encoding="utf-8")
    acl.store.sync(acl.data)
    assert service.ask(FAQ_QUESTION, "vector", who=FULL)["cached_at"] is None
