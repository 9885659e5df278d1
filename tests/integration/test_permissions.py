"""Who may read what, on real PostgreSQL: every read path of the store carries the caller's principals
in its SQL, row-level security holds without that predicate, derived graph rows carry the intersection
of their sources, and a changed access file or file mode is applied by the next sync without embedding
anything again. The page and MCP surfaces: test_permissions_web.py, test_permissions_mcp.py."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from app import storage
from app.permissions.principals import FULL_ACCESS, SHARED_SECRET
from app.permissions.rules import AccessFileError
from app.storage import users as user_rows
from app.users.identity import identity_for_token, principals_for_user
from tests.integration.conftest import ACL_ACCESS, ACL_QUESTION, ACL_SECRETS, json_strings, run_in_process

pytestmark = pytest.mark.integration

QUESTION = ACL_QUESTION
BONUS_DOC = "docs/経理/賞与規程.md"


def leaks(docs) -> list[str]:
    """The secrets found in search results (text or metadata)."""
    blob = json.dumps([[d.page_content, d.metadata] for d in docs], ensure_ascii=False, default=str)
    return [secret for secret in ACL_SECRETS if secret in blob]


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_bob_finds_nothing_of_accounting_in_any_search_mode_and_alice_does(acl, mode):
    bob = acl.store.search(QUESTION, search_mode=mode, top_k=10, principals=acl.principals["bob"])
    alice = acl.store.search(QUESTION, search_mode=mode, top_k=10, principals=acl.principals["alice"])
    assert bob and leaks(bob) == []
    assert "KX-4471" in " ".join(d.page_content for d in alice)


def test_asking_for_ten_thousand_results_shows_bob_only_his(acl):
    docs = acl.store.search("管理番号", search_mode="hybrid", top_k=10000, principals=acl.principals["bob"])
    assert leaks(docs) == [] and {d.metadata["doc_id"] for d in docs} <= {"docs/営業/営業手当.md", "csv/faq.csv"}


def test_the_documents_list_is_each_users_own(acl):
    listed = {who: {d["doc_id"] for d in acl.store.list_documents(acl.principals[who])} for who in ("alice", "bob")}
    assert listed["bob"] == {"csv/faq.csv", "docs/営業/営業手当.md"}
    assert listed["alice"] == {"csv/faq.csv", "docs/営業/営業手当.md", BONUS_DOC}
    assert {d["doc_id"] for d in acl.store.list_documents(FULL_ACCESS)} == listed["alice"] | {"docs/総務/未分類.md"}


def test_a_document_no_key_covers_is_the_admins_only(acl):
    readers = {d["doc_id"]: d["readers"] for d in acl.store.list_documents(FULL_ACCESS)}
    assert readers == {
        "csv/faq.csv": ["admin", "everyone"],
        "docs/営業/営業手当.md": ["admin", "everyone"],
        BONUS_DOC: ["admin", "経理"],
        "docs/総務/未分類.md": ["admin"],
    }
    assert acl.store.search("MX-9090", search_mode="keyword", principals=SHARED_SECRET) == []


def test_a_source_is_shown_only_to_who_may_read_it(acl):
    source = "賞与規程.md#支給率"
    assert acl.store.source_chunks(source, acl.principals["bob"]) == []
    assert "3.7" in acl.store.source_chunks(source, acl.principals["alice"])[0]["text"]


def test_row_level_security_holds_without_the_applications_predicate(acl, engine):
    """The second wall: plain SELECTs with no readers test, run the way every read runs (as the query
    role, bob's principals set for the transaction), return nothing of the accounting document."""
    tables = {
        "langchain_pg_embedding": "document",
        "rag_document": "doc_id",
        "rag_graph_entity": "description",
        "rag_graph_relationship": "description",
        "rag_graph_report": "summary",
    }
    with storage.reading(engine, acl.principals["bob"]) as conn:
        assert conn.execute(text("SELECT current_user")).scalar() == "rag_query"
        for table, column in tables.items():
            values = " ".join(str(v) for v in conn.execute(text(f"SELECT {column} FROM {table}")).scalars())
            assert [s for s in ACL_SECRETS if s in values] == [], table
    with storage.reading(engine, acl.principals["alice"]) as conn:
        assert "KX-4471" in " ".join(conn.execute(text("SELECT document FROM langchain_pg_embedding")).scalars())


def test_without_principals_set_row_level_security_shows_nothing(acl, engine):
    with engine.connect() as conn:
        conn.execute(text("SELECT set_config('role', 'rag_query', true)"))
        assert conn.execute(text("SELECT count(*) FROM langchain_pg_embedding")).scalar() == 0


def test_graph_rows_carry_the_intersection_of_their_sources(acl):
    bob = acl.store.graph_search(principals=acl.principals["bob"])
    alice = acl.store.graph_search(principals=acl.principals["alice"])
    local_bob = bob.local(QUESTION)
    assert leaks(local_bob.documents) == [] and all(s not in local_bob.context.context_text for s in ACL_SECRETS)
    assert any("3.7" in d.page_content for d in alice.local("賞与規程の支給率").documents)
    reports = json.dumps([r.__dict__ for r in bob.reports()], ensure_ascii=False, default=str)
    assert [s for s in ACL_SECRETS if s in reports] == []
    for mode in ("local", "global"):
        assert leaks(acl.store.search(QUESTION, search_mode=mode, principals=acl.principals["bob"])) == []


def test_tokens_revoked_and_memberships_removed_hold_at_once(acl, engine):
    token = acl.tokens["bob"]
    assert identity_for_token(engine, token).principals == acl.principals["bob"]
    assert identity_for_token(engine, token + "x") is None
    user_rows.upsert_user(engine, acl.names["bob"], [])
    try:
        assert principals_for_user(engine, acl.names["bob"]) == ("everyone", f"user:{acl.names['bob']}")
    finally:
        user_rows.upsert_user(engine, acl.names["bob"], ["営業"])
    from app.users.identity import new_token, token_hash

    spare = new_token()
    user_rows.add_token(engine, acl.names["bob"], token_hash(spare))
    assert identity_for_token(engine, spare) is not None
    user_rows.revoke_tokens(engine, acl.names["bob"])
    assert identity_for_token(engine, spare) is None and identity_for_token(engine, token) is None
    user_rows.add_token(engine, acl.names["bob"], token_hash(token))  # the module's other tests use it


def test_a_changed_access_file_is_applied_by_the_next_sync_without_embedding(acl):
    access = acl.data / "access.toml"
    embedded = acl.store.embeddings.texts
    try:
        access.write_text(ACL_ACCESS.replace('"docs/経理" = ["経理"]', '"docs/経理" = ["everyone"]'), encoding="utf-8")
        _, report = acl.store.sync(acl.data)
        assert report.readers_changed == 1 and report.added == report.updated == 0
        assert acl.store.embeddings.texts == embedded  # nothing embedded again
        assert "KX-4471" in " ".join(
            d.page_content for d in acl.store.search("KX-4471", search_mode="keyword", principals=acl.principals["bob"])
        )
    finally:
        access.write_text(ACL_ACCESS, encoding="utf-8")
        acl.store.sync(acl.data)
    assert leaks(acl.store.search(QUESTION, principals=acl.principals["bob"])) == []


def test_a_bad_access_file_stops_the_sync_and_keeps_the_readers(acl):
    access = acl.data / "access.toml"
    try:
        access.write_text('[folders]\n"docs" = "everyone"\n', encoding="utf-8")
        with pytest.raises(AccessFileError, match="must be a list"):
            acl.store.sync(acl.data)
    finally:
        access.write_text(ACL_ACCESS, encoding="utf-8")
    assert leaks(acl.store.search(QUESTION, principals=acl.principals["bob"])) == []


def test_a_lost_access_file_stops_the_sync_instead_of_giving_everything_to_everyone(acl):
    access = acl.data / "access.toml"
    moved = access.with_name("access.toml.moved")
    access.rename(moved)
    try:
        with pytest.raises(AccessFileError, match=r"is missing, but \d+ stored documents are not everyone's"):
            acl.store.sync(acl.data)
        assert leaks(acl.store.search(QUESTION, principals=acl.principals["bob"])) == []
        access.write_text('[folders]\n"" = ["everyone"]\n', encoding="utf-8")  # opened to everyone on purpose
        _, report = acl.store.sync(acl.data)
        assert report.readers_changed >= 1
        assert "KX-4471" in " ".join(
            d.page_content for d in acl.store.search("KX-4471", search_mode="keyword", principals=acl.principals["bob"])
        )
    finally:
        access.unlink(missing_ok=True)
        moved.rename(access)
        acl.store.sync(acl.data)
    assert leaks(acl.store.search(QUESTION, principals=acl.principals["bob"])) == []


def test_file_share_permissions_are_readers_and_a_chmod_applies_at_the_next_sync(acl, tmp_path):
    """ACCESS_FROM_FS=1 without an access file: a file's OS group when group-readable (as os-group:,
    no app group), everyone when world-readable; a chmod is applied by the next sync, nothing embedded again."""
    import grp
    import os
    import shutil

    data = tmp_path / "share"
    shutil.copytree(acl.data, data, ignore=shutil.ignore_patterns("access.toml"))
    note = data / "docs" / "経理" / "賞与規程.md"
    group = grp.getgrgid(os.getgid()).gr_name
    s = acl.settings.changed(
        access={"from_fs": True}, retrieval={"collection_name": acl.settings.retrieval.collection_name + "_fs"}
    )
    from app.store import RagStore

    store = RagStore(s, embeddings=acl.store.embeddings, engine=acl.store.engine)
    try:
        os.chmod(note, 0o640)
        store.sync(data)
        readers = {d["doc_id"]: d["readers"] for d in store.list_documents(FULL_ACCESS)}
        assert readers[BONUS_DOC] == sorted({"admin", f"os-group:{group}", f"os-user:{note.owner()}"})
        assert leaks(store.search(QUESTION, search_mode="keyword", principals=SHARED_SECRET)) == []
        embedded = store.embeddings.texts
        os.chmod(note, 0o644)
        _, report = store.sync(data)
        assert report.readers_changed == 1 and store.embeddings.texts == embedded
        assert "everyone" in {d["doc_id"]: d["readers"] for d in store.list_documents(FULL_ACCESS)}[BONUS_DOC]
    finally:
        store.vectorstore.delete_collection()


def test_the_users_command_adds_gives_tokens_lists_revokes_and_removes(integration_env, engine):
    name = "carol_cli"
    added = run_in_process("app.cli.users", ["add", name, "--groups", "経理,営業"], {})
    assert added.returncode == 0 and added.stdout == ""
    token = run_in_process("app.cli.users", ["token", name], {})
    assert token.returncode == 0 and token.stdout.count("\n") == 1 and token.stdout.startswith("rag_")
    assert identity_for_token(engine, token.stdout.strip()).principals == ("everyone", f"user:{name}", "営業", "経理")
    listed = run_in_process("app.cli.users", ["list"], {}).stdout
    assert f"{name}\tgroups: 営業,経理\ttokens: 1" in listed
    assert run_in_process("app.cli.users", ["revoke", name], {}).returncode == 0
    assert identity_for_token(engine, token.stdout.strip()) is None
    assert run_in_process("app.cli.users", ["remove", name], {}).returncode == 0
    missing = run_in_process("app.cli.users", ["token", name], {})
    assert missing.returncode == 1 and f"no user '{name}'" in missing.stderr
    bad = run_in_process("app.cli.users", ["add", "a,b"], {})
    assert bad.returncode == 1 and "not allowed" in bad.stderr


def test_ask_as_bob_on_the_command_line_never_shows_accounting(acl, monkeypatch):
    """``python -m app.ask --as bob --json``: the workflow's sources and answer hold nothing of 経理."""
    from app.cli import ask as ask_cli

    monkeypatch.setattr("app.cli.ask.get_settings", lambda: acl.settings)
    monkeypatch.setattr("app.cli.output.ensure_ingested", lambda settings: None)
    shown = json.loads(run_ask(ask_cli, ["--as", acl.names["bob"], "--json", "--", QUESTION]))
    blob = " ".join(json_strings(shown))  # numbers (seconds such as 13.71, scores) may hold "3.7" by chance
    assert [s for s in ACL_SECRETS if s in blob] == [], blob
    alice = json.loads(run_ask(ask_cli, ["--as", acl.names["alice"], "--json", "--mode", "keyword", "--", QUESTION]))
    assert any(source.startswith("賞与規程.md") for source in alice["sources"])
    unknown = run_in_process("app.cli.ask", ["--as", "nobody_here", "--", QUESTION], {})
    assert unknown.returncode == 1 and "no user 'nobody_here'" in unknown.stderr


def run_ask(module, argv: list[str]) -> str:
    """``app.cli.ask.main(argv)``'s stdout (the settings patched to the module's collection)."""
    import io

    out = io.StringIO()
    assert module.main(argv, out=out) == 0
    return out.getvalue()


def test_the_audit_records_who_was_shown_what_and_the_question_only_when_asked(acl, engine):
    """AUDIT_LOG=1: who, where, which sources; AUDIT_LOG_QUESTIONS=1 adds the question; `python -m
    app.users audit --json` prints them; off by default, nothing is written."""
    from app.serving.service import RagService
    from app.users.identity import Identity

    bob = Identity(acl.names["bob"], acl.principals["bob"])

    def service(**access):
        settings = acl.settings.changed(access=access)
        return RagService(settings=settings, store=acl.store, context_factory=lambda: None)

    def rows():
        return [r for r in user_rows.audit_rows(engine, 1) if r["user_name"] == bob.name]

    service().search("営業手当", 5, "keyword", who=bob)
    assert rows() == []  # off by default
    service(audit=True).search("営業手当", 5, "keyword", who=bob)
    service(audit=True, audit_questions=True).search("営業手当の支給額", 5, "keyword", who=bob)
    newest, first = rows()[:2]
    assert (first["surface"], first["action"], first["question"]) == ("mcp", "search", None)
    assert "営業手当.md#支給額" in first["sources"] and newest["question"] == "営業手当の支給額"
    printed = run_in_process("app.cli.users", ["audit", "--json", "--days", "1"], {})
    assert printed.returncode == 0 and f'"user_name": "{bob.name}"' in printed.stdout


def test_evaluate_as_bob_retrieves_nothing_of_accounting(acl, monkeypatch, tmp_path):
    """``python -m app.evaluate --as bob``: the same question set, retrieval only, as bob and as alice."""
    questions = tmp_path / "questions.json"
    item = {"query": QUESTION, "expected_source": "賞与規程.md#支給率", "expected_keywords": ["3.7"]}
    questions.write_text(json.dumps([item], ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr("app.cli.evaluate.get_settings", lambda: acl.settings)
    monkeypatch.setattr("app.cli.evaluate.ensure_ingested", lambda settings: None)
    retrieved = {}
    for who in ("bob", "alice"):
        out = tmp_path / f"{who}.json"
        argv = [
            "--as",
            acl.names[who],
            "--no-generate",
            "--no-progress",
            "--questions",
            str(questions),
            "--json",
            str(out),
        ]
        assert run_in_process("app.cli.evaluate", argv, {}).returncode == 0
        retrieved[who] = json.loads(out.read_text(encoding="utf-8"))["results"][0]["retrieved"]
    assert retrieved["bob"] and not any(s.startswith("賞与規程") for s in retrieved["bob"])
    assert "賞与規程.md#支給率" in retrieved["alice"]
