"""Names compared as people see them (issue 49, rows 1 and 9): document IDs in NFC whichever form the
file system holds, one ID for two names that differ only in form, and user names that look like an
existing user's refused unless typed as stored. Real files; the users table runs for real in
tests/integration/test_permissions_names.py."""

from __future__ import annotations

import unicodedata

import pytest

from app.config import Settings
from app.ingestion.scan import resolve_file, scan
from app.storage.doc_ids import document_id, document_path
from app.users.accounts import clash

NAME = "ボーナス規程.md"
NFD = unicodedata.normalize("NFD", NAME)


@pytest.fixture
def data(tmp_path):
    root = tmp_path / "data"
    (root / "docs" / unicodedata.normalize("NFD", "経理ボーナス")).mkdir(parents=True)
    return root


def test_document_id_is_nfc_whatever_the_file_system_holds(data):
    path = data / "docs" / unicodedata.normalize("NFD", "経理ボーナス") / NFD
    assert document_id(path, data) == "docs/経理ボーナス/ボーナス規程.md"
    assert document_id(path, data) != path.relative_to(data).as_posix()


def test_scan_gives_an_nfd_file_its_nfc_id_and_name(data):
    folder = data / "docs" / unicodedata.normalize("NFD", "経理ボーナス")
    (folder / NFD).write_text("# 賞与\n\n本文", encoding="utf-8")
    files, failures = scan(data, Settings())
    assert [(f.doc_id, f.name) for f in files] == [("docs/経理ボーナス/ボーナス規程.md", NAME)] and failures == []
    assert resolve_file(folder / NFD, data, Settings()).doc_id == "docs/経理ボーナス/ボーナス規程.md"


def test_two_files_whose_names_differ_only_in_form_are_one_document(tmp_path):
    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / NAME).write_text("NFC の本文", encoding="utf-8")
    (data / "docs" / NFD).write_text("NFD の本文", encoding="utf-8")
    files, failures = scan(data, Settings())
    assert [f.doc_id for f in files] == [f"docs/{NAME}"]
    assert failures == [(None, f"docs/{NAME}: a second file with this name in another Unicode form; skipped")]


def test_document_path_finds_the_file_in_either_form(data):
    folder = data / "docs" / unicodedata.normalize("NFD", "経理ボーナス")
    (folder / NFD).write_text("x", encoding="utf-8")
    assert document_path(data, f"docs/経理ボーナス/{NAME}") == folder / NFD
    assert document_path(data, "docs/経理ボーナス/none.md") is None
    assert document_path(data, "docs/../docs") is None


@pytest.mark.parametrize(
    "typed, existing, expected",
    [
        ("alice", ["alice"], None),  # the user as stored: its groups may be set
        (" alice ", ["alice"], None),
        ("ａｌｉｃｅ", ["alice"], "alice"),  # row 9: full width is alice typed differently
        ("Alice", ["alice"], "alice"),  # looks like alice
        ("ALICE", ["Alice", "bob"], "Alice"),
        ("carol", ["alice"], None),  # a new name
        (unicodedata.normalize("NFD", "さとう"), ["さとう"], None),  # NFC is the same name people see
        ("ｻﾄｳ", ["サトウ"], "サトウ"),  # half-width katakana
    ],
)
def test_clash(typed, existing, expected):
    assert clash(typed, existing) == expected


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("a\udc80b", "user name contains a lone surrogate (U+DC80) at character 2; remove it and try again"),
        ("経理\ufffe", "group name contains a non-character (U+FFFE) at character 3; remove it and try again"),
    ],
)
def test_check_name_refuses_what_cannot_be_stored(typed, expected):
    from app.permissions.principals import check_name

    what = "group" if typed.startswith("経理") else "user"
    with pytest.raises(ValueError) as caught:
        check_name(typed, what)
    assert str(caught.value) == expected


def test_a_source_named_in_nfd_on_disk_opens_by_its_nfc_id(tmp_path):
    from app.web.sources import document_file

    folder = tmp_path / unicodedata.normalize("NFD", "ボーナス")
    folder.mkdir()
    (folder / "規程.md").write_text("# 規程\n", encoding="utf-8")
    doc_id = unicodedata.normalize("NFC", "ボーナス/規程.md")
    assert document_file([{"doc_id": doc_id}], tmp_path, doc_id) == (folder / "規程.md").resolve()
    assert document_file([], tmp_path, doc_id) is None  # not among the documents the asker may read
