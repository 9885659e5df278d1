"""Issue 49, rows 1, 2, 3 and 9, on real PostgreSQL with real syncs: a folder named in NFD under a key
written in NFC, a glob below a folder key, a 0750 folder under ACCESS_FROM_FS and an OS user named as
an app user, a user name typed in full width; and ``python -m app.users check``. Bob (営業) receives
nothing of the 経理 document in any case. Hash embeddings: these tests are about who reads, and the
keyword search finds the secret's exact words."""

from __future__ import annotations

import logging
import os
import unicodedata
import uuid

import pytest

from app.ingestion.datadir import SourceFile
from app.permissions.principals import FULL_ACCESS, user_principals
from app.storage import users as user_rows
from tests.integration.conftest import HashEmbeddings, run_in_process

pytestmark = pytest.mark.integration

SECRET = "KX-4471"
SECRET_TEXT = f"# 賞与規程\n\n## 支給率\n\n賞与の支給率は基本給の3.7か月分とする。管理番号は {SECRET} である。\n"
SALES_TEXT = "# 営業手当\n\n## 支給額\n\n営業手当は外回り一日につき千二百円とする。管理番号は EG-2210 である。\n"
BOB = user_principals("bob", ["営業"])
ALICE = user_principals("alice", ["経理"])


@pytest.fixture
def store(settings, engine):
    """A RagStore on its own collection (hash embeddings, no graph), dropped afterwards."""
    from app.store import RagStore

    s = settings.changed(retrieval={"collection_name": f"n_{uuid.uuid4().hex[:8]}"}, graph={"extractor": "off"})
    made = RagStore(s, embeddings=HashEmbeddings(), engine=engine)
    with made.writing():
        pass
    yield made
    with made.writing():
        made.vectorstore.delete_collection()


def write_data(root, secret_folder: str, access: str | None):
    """docs/<secret_folder>/賞与規程.md (the secret), docs/営業/営業手当.md, and the access file."""
    (root / "docs" / secret_folder).mkdir(parents=True)
    (root / "docs" / "営業").mkdir()
    (root / "docs" / secret_folder / "賞与規程.md").write_text(SECRET_TEXT, encoding="utf-8")
    (root / "docs" / "営業" / "営業手当.md").write_text(SALES_TEXT, encoding="utf-8")
    if access is not None:
        (root / "access.toml").write_text(access, encoding="utf-8")
    return root


def readers(store) -> dict[str, list[str]]:
    return {d["doc_id"]: d["readers"] for d in store.list_documents(FULL_ACCESS)}


def receives(store, principals) -> str:
    """Everything a caller gets back: the documents list and a keyword and a hybrid search for the secret."""
    found = [d["doc_id"] for d in store.list_documents(principals)]
    for mode in ("keyword", "hybrid"):
        found += [d.page_content for d in store.search(f"{SECRET} 賞与", search_mode=mode, principals=principals)]
    return " ".join(found)


def test_row_1_a_folder_named_in_nfd_is_the_nfc_key(store, tmp_path):
    nfd = unicodedata.normalize("NFD", "ボーナス")
    data = write_data(tmp_path / "data", nfd, '[folders]\n"docs" = ["everyone"]\n"docs/ボーナス" = ["経理"]\n')
    store.sync(data)
    assert readers(store) == {
        "docs/ボーナス/賞与規程.md": ["admin", "経理"],
        "docs/営業/営業手当.md": ["admin", "everyone"],
    }
    assert SECRET not in receives(store, BOB) and "賞与規程" not in receives(store, BOB)
    assert SECRET in receives(store, ALICE)


def test_a_document_stored_under_its_nfd_id_is_renamed_once_by_the_next_sync(store, tmp_path):
    """Stored before IDs were NFC: the next sync moves it to its NFC ID, every vector reused, nothing
    lost, nothing doubled."""
    from app.formats.limits import file_hash
    from app.ingestion.sync import sync

    nfd = unicodedata.normalize("NFD", "ボーナス")
    data = write_data(tmp_path / "data", nfd, None)
    path = data / "docs" / nfd / "賞与規程.md"
    old = SourceFile(f"docs/{nfd}/賞与規程.md", path, "賞与規程.md", file_hash(path))
    with store.writing():
        sync(data, store.embeddings, store.engine, store.settings, files=[old], remove_missing=False)
    assert list(readers(store)) == [old.doc_id]
    chunks = store.list_documents(FULL_ACCESS)[0]["chunks"]
    _, report = store.sync(data)
    assert (report.added, report.renamed, report.removed) == (2, 1, 1)  # the sales file is new
    assert report.reused == chunks  # the renamed one's vectors, nothing embedded again
    assert sorted(readers(store)) == ["docs/ボーナス/賞与規程.md", "docs/営業/営業手当.md"]
    assert store.sync(data)[1].unchanged == 2


def test_row_2_a_glob_below_a_folder_key_leaves_the_folder_alone(store, tmp_path, caplog):
    access = '[folders]\n"docs/営業" = ["everyone"]\n"docs/経理" = ["経理"]\n"docs/*.md" = ["everyone"]\n'
    data = write_data(tmp_path / "data", "経理", access)
    with caplog.at_level(logging.WARNING, logger="app.permissions.readers"):
        store.sync(data)
    assert readers(store)["docs/経理/賞与規程.md"] == ["admin", "経理"]
    assert SECRET not in receives(store, BOB) and SECRET in receives(store, ALICE)
    assert "access file: the key 'docs/*.md' covers no document" in caplog.messages


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group needs root")


@needs_root
def test_row_3_a_0750_folder_narrows_the_access_file_and_os_names_are_not_app_names(store, tmp_path):
    import grp

    group = next(g for g in grp.getgrall() if g.gr_gid != os.getegid())
    access = f'[folders]\n"docs" = ["everyone"]\n\n[os]\n"os-group:{group.gr_name}" = "経理"\n'
    data = write_data(tmp_path / "data", "経理", access)
    folder = data / "docs" / "経理"
    os.chown(folder, -1, group.gr_gid)
    folder.chmod(0o750)
    for path in (data, data / "docs", data / "docs" / "営業"):
        path.chmod(0o755)
    for path in data.rglob("*.md"):
        path.chmod(0o644)
    fs_store = store.__class__(store.settings.changed(access={"from_fs": True}), store.embeddings, store.engine)
    fs_store.sync(data)
    owner = f"os-user:{folder.owner()}"
    assert readers(fs_store) == {
        "docs/経理/賞与規程.md": sorted(["admin", owner, "経理"]),
        "docs/営業/営業手当.md": sorted(["admin", "everyone", owner, f"os-group:{data.group()}"]),
    }
    assert SECRET not in receives(fs_store, BOB) and SECRET in receives(fs_store, ALICE)
    # an app user named like the file's OS owner is not that owner
    assert SECRET not in receives(fs_store, user_principals(folder.owner(), []))


def test_row_9_a_name_typed_in_full_width_never_replaces_an_existing_users_groups(integration_env, engine):
    name = f"alice{uuid.uuid4().hex[:6]}"
    wide = "".join(chr(ord(c) + 0xFEE0) for c in name)  # ａｌｉｃｅ…: what a Japanese keyboard types
    try:
        assert run_in_process("app.cli.users", ["add", name, "--groups", "経理"], {}).returncode == 0
        refused = run_in_process("app.cli.users", ["add", wide, "--groups", "営業"], {})
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            f"Error: {wide!r} would be read as the existing user {name!r}; to change that user's groups, type "
            f"the name as stored: python -m app.users add {name} --groups …"
        )
        assert run_in_process("app.cli.users", ["add", name.upper(), "--groups", "営業"], {}).returncode == 1
        assert user_rows.user_groups(engine, name) == ["経理"]
        changed = run_in_process("app.cli.users", ["add", name, "--groups", "営業"], {})
        assert changed.returncode == 0 and changed.stderr.strip() == f"user {name}: groups 営業 (was 経理)"
        assert user_rows.user_groups(engine, name) == ["営業"]
    finally:
        user_rows.delete_user(engine, name)


def test_the_check_command_names_the_problems_and_what_a_user_reads(integration_env, engine, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    bob, alice, nobody_group = f"bob{suffix}", f"alice{suffix}", f"総務{suffix}"
    access = (
        f'[folders]\n"docs/経理" = ["経理"]\n"docs/*.md" = ["everyone"]\n"docs/営*" = ["営業"]\n'
        f'"docs/*業" = ["everyone"]\n"pdf" = ["{nobody_group}"]\n'
    )
    data = write_data(tmp_path / "data", "経理", access)
    open_data = write_data(tmp_path / "open", "経理", None)
    user_rows.upsert_user(engine, bob, ["営業"])
    user_rows.upsert_user(engine, alice, ["経理"])
    try:
        checked = run_in_process("app.cli.users", ["check", "--data-dir", str(data), "--user", bob], {})
        clean = run_in_process("app.cli.users", ["check", "--data-dir", str(open_data)], {})
    finally:
        user_rows.delete_user(engine, bob)
        user_rows.delete_user(engine, alice)
    assert checked.returncode == 1
    assert checked.stdout.splitlines() == [
        "warning: access file: the key 'docs/*.md' covers no document",
        "warning: access file: the key 'pdf' covers no document",
        "warning: access file: the keys 'docs/*業', 'docs/営*' are equally specific for 1 document(s) "
        "(docs/営業/営業手当.md): they get only the readers all name (営業)",
        f"warning: access file: the key 'pdf' names the group '{nobody_group}', which no user is in",
        f"{bob} may read 1 of 2 documents:",
        "  docs/営業/営業手当.md",
    ]
    assert (clean.returncode, clean.stdout) == (
        0,
        f"no access file ({open_data / 'access.toml'}) and ACCESS_FROM_FS is off: everyone reads everything\n"
        "2 documents, no problem found\n",
    )
