"""The access file's rules as pure functions (issue 49, rows 1 and 2): keys matched segment by segment
in Unicode NFC, the most specific key winning by segments, ties narrowed and reported, the file
share's principals intersected with the key's and mapped only through ``[os]``. Exact values."""

from __future__ import annotations

import unicodedata

import pytest

from app.permissions.principals import may_read, name_key, nfc
from app.permissions.rules import (
    AccessFileError,
    AccessRules,
    Rule,
    covers,
    document_readers,
    intersect,
    load_rules,
    normal_key,
    parse_rules,
    rule_problems,
)

BONUS_NFC = "docs/ボーナス"
BONUS_NFD = unicodedata.normalize("NFD", BONUS_NFC)


def rules(folders: dict, os: dict | None = None) -> AccessRules:
    return parse_rules({"folders": folders, **({"os": os} if os is not None else {})})


# --- matching: one segment per glob, never across / ---------------------------------------------


@pytest.mark.parametrize(
    "key, doc_id, expected",
    [
        ("docs/*.md", "docs/a.md", True),
        ("docs/*.md", "docs/経理/賞与規程.md", False),  # row 2: * never crosses /
        ("docs/*", "docs/経理/賞与規程.md", True),  # the folder docs/経理 matches, and covers what is below
        ("docs/経理", "docs/経理/賞与規程.md", True),
        ("docs/経理", "docs/経理2/a.md", False),
        ("docs/*/議事録", "docs/営業/議事録/1.md", True),
        ("docs/*/議事録", "docs/営業/議事録x/1.md", False),
        ("*/経理", "docs/経理/a.md", True),
        ("docs/?.md", "docs/a.md", True),
        ("docs/[ab].md", "docs/c.md", False),
        ("", "pdf/x.pdf", True),
        ("docs/経理/賞与規程.md", "docs/経理/賞与規程.md", True),
        ("docs/経理/賞与規程.md/x", "docs/経理/賞与規程.md", False),
    ],
)
def test_covers_matches_whole_segments(key, doc_id, expected):
    assert covers(Rule(key, ()).parts, tuple(doc_id.split("/"))) is expected


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("docs/経理/", "docs/経理"),
        ("./docs//経理", "docs/経理"),
        ("docs\\経理", "docs/経理"),
        (".", ""),
        ("", ""),
        (BONUS_NFD, BONUS_NFC),
    ],
)
def test_normal_key(raw, expected):
    assert normal_key(raw) == expected


@pytest.mark.parametrize(
    "raw, message",
    [
        ("docs/../etc", "leaves the data folder"),
        ("docs/**/議事録", "uses \\*\\*: a glob matches one folder or file name"),
    ],
)
def test_normal_key_refuses(raw, message):
    with pytest.raises(AccessFileError, match=message):
        normal_key(raw)


# --- the most specific key wins by segments ------------------------------------------------------

ORDERED = {
    "": ["admin"],
    "docs": ["everyone"],
    "docs/*": ["全社"],
    "docs/経理": ["経理"],
    "*/経理/議事録": ["管理職"],
    "docs/*/議事録": ["役員"],
    "docs/経理/議事録": ["監査"],
}


def test_rules_are_ordered_most_specific_first():
    assert [r.key for r in rules(ORDERED).rules] == [
        "docs/経理/議事録",
        "docs/*/議事録",
        "*/経理/議事録",
        "docs/経理",
        "docs/*",
        "docs",
        "",
    ]


@pytest.mark.parametrize(
    "drop, expected_key",
    [
        ((), "docs/経理/議事録"),  # all literal, deepest
        (("docs/経理/議事録",), "docs/*/議事録"),  # literal first segment beats a glob first segment
        (("docs/経理/議事録", "docs/*/議事録"), "*/経理/議事録"),  # deeper beats shallower, glob or not
        (("docs/経理/議事録", "docs/*/議事録", "*/経理/議事録"), "docs/経理"),  # literal beats glob at depth 2
        (("docs/経理/議事録", "docs/*/議事録", "*/経理/議事録", "docs/経理"), "docs/*"),
        (("docs/経理/議事録", "docs/*/議事録", "*/経理/議事録", "docs/経理", "docs/*"), "docs"),
    ],
)
def test_the_most_specific_key_decides(drop, expected_key):
    table = {k: v for k, v in ORDERED.items() if k not in drop}
    decision = rules(table).decide("docs/経理/議事録/2024.md")
    assert decision.keys == (expected_key,) and list(decision.readers) == ORDERED[expected_key]


def test_row_2_a_glob_below_a_folder_key_leaves_the_folder_alone():
    access = rules({"docs/経理": ["経理"], "docs/*.md": ["everyone"]})
    assert access.readers("docs/経理/賞与規程.md") == ("admin", "経理")
    assert access.readers("docs/readme.md") == ("admin", "everyone")
    assert access.readers("docs/営業/a.md") is None


def test_keys_that_tie_give_only_the_readers_all_name():
    access = rules({"docs/a*": ["経理", "営業"], "docs/*.md": ["経理"], "docs/*.txt": ["everyone"]})
    decision = access.decide("docs/a.md")
    assert (decision.keys, decision.readers) == (("docs/*.md", "docs/a*"), ("経理",))
    assert access.readers("docs/a.txt") == ("admin", "営業", "経理")  # everyone ∩ {経理, 営業}
    assert rules({"docs/a*": ["営業"], "docs/*.md": ["経理"]}).readers("docs/a.md") == ("admin",)


# --- names as people see them --------------------------------------------------------------------


def test_row_1_a_folder_named_in_nfd_is_the_key_written_in_nfc():
    access = rules({"docs": ["everyone"], BONUS_NFC: ["経理"]})
    assert access.readers(f"{BONUS_NFD}/規程.md") == ("admin", "経理")
    assert rules({"docs": ["everyone"], BONUS_NFD: ["経理"]}).readers(f"{BONUS_NFC}/規程.md") == ("admin", "経理")


def test_two_keys_for_one_path_in_two_unicode_forms_are_refused():
    with pytest.raises(AccessFileError, match="name the same path"):
        parse_rules({"folders": {BONUS_NFC: ["経理"], BONUS_NFD + "/": ["everyone"]}})


def test_readers_are_nfkc_names():
    assert rules({"docs": ["ｕｓｅｒ：ｓａｔｏ", "ｋｅｉｒｉ"]}).readers("docs/a.md") == ("admin", "keiri", "user:sato")


def test_name_key_and_nfc():
    assert name_key(" ＡＬＩＣＥ ") == "alice" == name_key("Alice")
    assert nfc(BONUS_NFD) == BONUS_NFC and len(BONUS_NFD) == len(BONUS_NFC) + 1


@pytest.mark.parametrize(
    "principals, readers, expected",
    [
        (("everyone", "user:bob", "営業"), ("admin", "経理"), False),
        (("everyone", "user:alice", "経理"), ("admin", "経理"), True),
        (("admin",), ("admin",), True),
        (("everyone", "user:os"), ("admin", "os-user:os"), False),
    ],
)
def test_may_read(principals, readers, expected):
    assert may_read(principals, readers) is expected


# --- the file share's principals: intersection and the [os] mapping ------------------------------


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ({"everyone"}, {"経理", "os-user:sato"}, {"経理", "os-user:sato"}),
        ({"経理"}, {"everyone"}, {"経理"}),
        ({"経理", "user:sato"}, {"経理", "営業"}, {"経理"}),
        ({"user:sato"}, {"経理"}, set()),
        ({"everyone"}, {"everyone"}, {"everyone"}),
    ],
)
def test_intersect(a, b, expected):
    assert intersect(a, b) == expected


FS_KEIRI = {"os-user:root", "os-group:keiri"}  # what a 0750 root:keiri folder lets through


def test_row_3_the_stricter_of_the_key_and_the_file_share_wins():
    access = rules({"docs": ["everyone"]}, os={"os-group:keiri": "経理", "os-user:sato": ["user:sato"]})
    assert document_readers(access, "docs/経理/a.md", FS_KEIRI) == ("admin", "os-user:root", "経理")
    assert document_readers(access, "docs/経理/a.md", {"os-user:sato", "everyone"}) == (
        "admin",
        "everyone",
        "user:sato",
    )
    narrow = rules({"docs": ["営業"]}, os={"os-group:keiri": "経理"})
    assert document_readers(narrow, "docs/経理/a.md", FS_KEIRI) == ("admin",)
    assert document_readers(narrow, "docs/営業/a.md", {"everyone", "os-user:root"}) == ("admin", "営業")


def test_a_key_with_from_fs_false_stands_alone():
    access = rules({"docs": {"readers": ["everyone"], "from_fs": False}, "docs/経理": ["経理"]})
    assert document_readers(access, "docs/a.md", frozenset()) == ("admin", "everyone")
    assert document_readers(access, "docs/経理/a.md", {"os-group:keiri"}) == ("admin",)


def test_os_principals_are_ours_only_through_the_os_table():
    # no mapping: kept as they are, so an app user named root is not the file's owner
    assert document_readers(None, "docs/a.md", {"os-user:root", "os-group:root"}) == (
        "admin",
        "os-group:root",
        "os-user:root",
    )
    only_os = rules({}, os={"os-group:keiri": "経理"})
    only_os = AccessRules(only_os.rules, only_os.os_names, folders=False)
    assert document_readers(only_os, "docs/a.md", FS_KEIRI) == ("admin", "os-user:root", "経理")


def test_an_access_file_with_only_an_os_table_leaves_the_file_share_to_decide(tmp_path):
    path = tmp_path / "access.toml"
    path.write_text('[os]\n"os-group:keiri" = "経理"\n', encoding="utf-8")
    loaded = load_rules(path)
    assert loaded.folders is False and loaded.os_names == {"os-group:keiri": ("経理",)}
    assert document_readers(loaded, "docs/a.md", {"os-group:keiri"}) == ("admin", "経理")
    assert document_readers(loaded, "docs/a.md", None) == ("admin",)  # without ACCESS_FROM_FS: nobody
    assert document_readers(None, "docs/a.md", None) == ("admin", "everyone")  # no file at all


def test_no_key_covering_a_document_is_admin_only_whatever_the_file_share_says():
    assert document_readers(rules({"pdf": ["everyone"]}), "docs/a.md", {"everyone"}) == ("admin",)


@pytest.mark.parametrize(
    "table, message",
    [
        ({"folders": {"docs": "everyone"}}, "must be a list"),
        ({"folders": {"docs": {"readers": ["x"], "fs": False}}}, "takes readers = \\[...\\] and from_fs"),
        ({"folders": {"docs": {"from_fs": False}}}, "takes readers"),
        ({"folders": {"docs": {"readers": ["x"], "from_fs": "no"}}}, "must be true or false"),
        ({"folders": {}, "os": {"keiri": "経理"}}, "must name the file share's user or group"),
        ({"folders": {}, "os": {"os-group:": "経理"}}, "must name the file share's user or group"),
        ({"folders": {}, "os": {"os-group:keiri": []}}, "must be a group"),
        ({"folders": {}, "os": {"os-group:keiri": "a,b"}}, "not allowed"),
        ({"folders": {}, "groups": {}}, "unknown table or key 'groups'"),
    ],
)
def test_bad_access_files_are_one_clear_error(table, message):
    with pytest.raises(AccessFileError, match=message):
        parse_rules(table)


# --- what the sync and `python -m app.users check` report ----------------------------------------


def test_rule_problems_name_unused_keys_ties_and_unknown_names():
    access = rules(
        {"docs/*.md": ["営業"], "docs/a*": ["経理"], "pdf": ["user:nobody", "経理"], "csv": ["総務"]},
        os={"os-group:keiri": "経理部"},
    )
    docs = ["docs/a.md", "docs/ab.md", "csv/faq.csv"]
    assert rule_problems(access, docs, groups=["経理", "営業"], users=["alice"]) == [
        "access file: the key 'pdf' covers no document",
        "access file: the keys 'docs/*.md', 'docs/a*' are equally specific for 2 document(s) (docs/a.md, …): "
        "they get only the readers all name (admin only)",
        "access file: the key 'csv' names the group '総務', which no user is in",
        "access file: the key 'pdf' names user:nobody, who is not a user",
        "access file: [os] 'os-group:keiri' names the group '経理部', which no user is in",
    ]
    assert rule_problems(access, docs, complete=False) == rule_problems(access, docs)[1:]


def test_ties_with_the_same_readers_are_no_problem():
    assert rule_problems(rules({"docs/*.md": ["経理"], "docs/a*": ["経理"]}), ["docs/a.md"]) == []
