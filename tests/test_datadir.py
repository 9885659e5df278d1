"""app.ingestion.datadir: the link policy on real files, links, loops and FIFOs (issue 24, case 2 and 3)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.config import Settings
from app.ingestion import scan, sync
from app.ingestion.datadir import escape, is_system_path, link_refusal, walk_data_dir

FOLDERS = {"pdf": (".pdf",), "csv": (".csv",), "docs": (".md", ".txt")}


@pytest.fixture
def data(tmp_path):
    root = tmp_path / "data"
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True)
    (root / "csv" / "faq.csv").write_text("質問,回答\n休日は？,土日です。\n", encoding="utf-8")
    (root / "docs" / "guide.md").write_text("# 導入\n\n本文", encoding="utf-8")
    return root


def walked(data: Path, follow: bool = False) -> tuple[list[str], list[tuple[str, str, bool]]]:
    walk = walk_data_dir(data, FOLDERS, {"docs"}, follow)
    rel = [p.relative_to(data).as_posix() for p in walk.files]
    return rel, [(p.doc_id, p.reason, p.keep) for p in walk.problems]


def test_walk_refuses_a_link_to_proc_even_when_links_are_allowed(data):
    (data / "docs" / "env.txt").symlink_to("/proc/self/environ")
    for follow in (False, True):
        files, problems = walked(data, follow)
        assert files == ["csv/faq.csv", "docs/guide.md"]
        assert problems[0][0] == "docs/env.txt" and "system files are never read" in problems[0][1]
        assert problems[0][2] is False


def test_walk_follows_an_external_file_link_only_when_allowed(data, tmp_path):
    outside = tmp_path / "outside.csv"
    outside.write_text("a\n1\n", encoding="utf-8")
    (data / "csv" / "ext.csv").symlink_to(outside)
    files, problems = walked(data)
    assert files == ["csv/faq.csv", "docs/guide.md"]
    assert problems == [
        (
            "csv/ext.csv",
            f"csv/ext.csv: a link to a file outside the data directory ({outside}): "
            "not followed (set FOLLOW_EXTERNAL_LINKS=1 to follow it)",
            False,
        )
    ]
    files, problems = walked(data, follow=True)
    assert files == ["csv/ext.csv", "csv/faq.csv", "docs/guide.md"] and problems == []


def test_walk_does_not_walk_an_external_folder_link_by_default(data, tmp_path):
    outside = tmp_path / "shared"
    outside.mkdir()
    (outside / "memo.md").write_text("外部", encoding="utf-8")
    (data / "docs" / "shared").symlink_to(outside)
    files, problems = walked(data)
    assert files == ["csv/faq.csv", "docs/guide.md"]
    assert problems[0][1].startswith("docs/shared: a link to a folder outside the data directory")
    files, _ = walked(data, follow=True)
    assert files == ["csv/faq.csv", "docs/guide.md", "docs/shared/memo.md"]


def test_walk_skips_link_loops_and_goes_on(data):
    (data / "docs" / "loop1.md").symlink_to("loop2.md")
    (data / "docs" / "loop2.md").symlink_to("loop1.md")
    (data / "docs" / "again").symlink_to("../docs")  # a folder loop
    files, problems = walked(data)
    assert files == ["csv/faq.csv", "docs/guide.md"]
    assert [(doc_id, reason) for doc_id, reason, _ in problems] == [
        ("docs/again", "docs/again: a folder already read (a link loop, or a second link to it): skipped"),
        ("docs/loop1.md", "docs/loop1.md: link loop: skipped"),
        ("docs/loop2.md", "docs/loop2.md: link loop: skipped"),
    ]


def test_walk_skips_a_fifo(data):
    os.mkfifo(data / "csv" / "pipe.csv")  # reading it would block the sync for ever
    files, problems = walked(data)
    assert files == ["csv/faq.csv", "docs/guide.md"]
    assert problems == [("csv/pipe.csv", "csv/pipe.csv: not a regular file (a FIFO, socket or device): skipped", False)]


def test_walk_takes_links_inside_the_data_dir(data):
    (data / "csv" / "same.csv").symlink_to(data / "csv" / "faq.csv")
    files, problems = walked(data)
    assert files == ["csv/faq.csv", "csv/same.csv", "docs/guide.md"] and problems == []


def test_scan_keeps_broken_links_but_not_refused_ones(data):
    (data / "csv" / "gone.csv").symlink_to(data / "csv" / "missing.csv")
    (data / "docs" / "env.txt").symlink_to("/proc/self/environ")
    files, failures = scan.scan(data)
    assert [f.doc_id for f in files] == ["csv/faq.csv", "docs/guide.md"]
    assert [doc_id for doc_id, _ in failures] == ["csv/gone.csv", None]  # None: a stored copy is removed


def test_plan_removes_a_stored_document_the_policy_now_refuses(data):
    (data / "docs" / "env.txt").symlink_to("/proc/self/environ")
    files, failures = scan.scan(data)
    stored = [{"doc_id": "docs/env.txt", "content_hash": "x", "settings_hash": "s", "origin": "data_dir"}]
    plan = sync.plan_sync(files, stored, "s", keep=[doc_id for doc_id, _ in failures if doc_id])
    assert [d["doc_id"] for d in plan.removed] == ["docs/env.txt"]


def test_resolve_file_applies_the_link_policy(data):
    (data / "docs" / "env.txt").symlink_to("/proc/self/environ")
    with pytest.raises(sync.DataSourceError, match="system files are never read"):
        scan.resolve_file(data / "docs" / "env.txt", data)
    assert link_refusal(data / "docs" / "guide.md", data) is None


@pytest.mark.parametrize(
    "name, shown",
    [
        ("報告書.md", "報告書.md"),
        ("a\x1b[31mred.md", "a\\x1b[31mred.md"),
        ("two\nlines.md", "two\\nlines.md"),
        ("tab\tname.csv", "tab\\tname.csv"),
        ("全角　空白.txt", "全角\\u3000空白.txt"),
    ],
)
def test_escape_shows_control_characters(name, shown):
    assert escape(name) == shown


def test_scan_refuses_names_with_control_characters_in_one_escaped_line(data):
    (data / "csv" / "evil\x1b[2J\nname.csv").write_text("a\n1\n", encoding="utf-8")
    files, failures = scan.scan(data)
    assert [f.doc_id for f in files] == ["csv/faq.csv", "docs/guide.md"]
    assert failures == [
        (None, "csv/evil\\x1b[2J\\nname.csv: a file name with a control character is not read; rename the file")
    ]


def test_two_names_that_escaping_made_one_are_two_ids_or_a_refusal(data):
    """Issue 40, case 4: a name with a real newline and one with a written backslash-n were both
    ``docs/line\\nbreak.md`` (one file never searchable, the other re-embedded every sync). Now the
    first is refused with one line, the second stored under its exact name; ``..%2f`` names are read."""
    (data / "docs" / "line\nbreak.md").write_text("# 改行\n\n本文A", encoding="utf-8")
    (data / "docs" / "line\\nbreak.md").write_text("# 文字\n\n本文B", encoding="utf-8")
    (data / "docs" / "..%2f..%2fetc.md").write_text("# 名前\n\n本文C", encoding="utf-8")
    (data / "docs" / ".hidden.md").write_text("# 隠し\n", encoding="utf-8")
    files, failures = scan.scan(data)
    ids = [f.doc_id for f in files]
    assert ids == ["csv/faq.csv", "docs/..%2f..%2fetc.md", "docs/guide.md", "docs/line\\nbreak.md"]
    assert len(set(ids)) == len(ids) == len(files)
    assert [f.name for f in files][-1] == "line\\nbreak.md"
    assert failures == [
        (None, "docs/line\\nbreak.md: a file name with a control character is not read; rename the file")
    ]


@pytest.mark.parametrize(
    ("name", "hidden"),
    [(".DS_Store", True), (".~lock.x.docx#", True), ("..%2f..%2fetc.md", False), ("..md", False), ("a.md", False)],
)
def test_only_real_dot_files_are_hidden(name, hidden):
    from app.ingestion.datadir import is_hidden

    assert is_hidden(name) is hidden


@pytest.mark.parametrize(
    "path, expected",
    [
        ("/proc/self/environ", True),
        ("/proc", True),
        ("/sys/kernel", True),
        ("/dev/zero", True),
        ("/process/x", False),
        ("/home/u/dev", False),
        ("/srv/docs", False),
    ],
)
def test_is_system_path(path, expected):
    assert is_system_path(Path(path)) is expected


def test_scan_refuses_files_over_the_size_limit(data):
    big = data / "csv" / "big.csv"
    big.write_bytes(b"a\n" + b"1\n" * (600 * 1024))  # 1.2 MB
    files, failures = scan.scan(data, Settings().changed(ingest={"max_csv_mb": 1}))
    assert [f.doc_id for f in files] == ["csv/faq.csv", "docs/guide.md"]
    assert failures == [
        ("csv/big.csv", "csv/big.csv: 1 MB, larger than MAX_CSV_MB=1; skipped (raise MAX_CSV_MB to read it)")
    ]
