"""Document versions on real PostgreSQL + pgvector with the real embedding model: the done-when check
of issue 42 at the retrieval level (就業規則_2024 ranks first for the allowance, the 2023 source carries
``superseded_by``), ``make docs``' families, families switched off, and two readers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.cli.docs import format_families
from app.permissions.principals import FULL_ACCESS
from app.storage import versions as version_store
from app.store import RagStore

ROOT = Path(__file__).resolve().parents[2]
OLD, NEW = "docs/規程/就業規則_2023.md", "docs/規程/就業規則_2024.md"
QUESTION = "在宅勤務手当は月額いくらですか？"


@pytest.fixture
def data(tmp_path):
    """The done-when files of issue 42 beside the help-desk manual."""
    root = tmp_path / "data"
    (root / "docs" / "規程").mkdir(parents=True)
    for name in ("就業規則_2023.md", "就業規則_2024.md"):
        shutil.copy(ROOT / "tests" / "fixtures" / "versions" / "規程" / name, root / "docs" / "規程" / name)
    shutil.copy(ROOT / "data" / "docs" / "it_helpdesk.md", root / "docs" / "it_helpdesk.md")
    return root


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "vector"])
def test_current_version_first_and_past_version_marked(own_store, data, mode):
    _, report = own_store.sync(data)
    assert report.versions_changed == 2  # the two versions (the manual alone is no news)

    docs = own_store.search(QUESTION, search_mode=mode, top_k=6)

    assert docs[0].metadata["doc_id"] == NEW
    assert (docs[0].metadata["superseded_by"], docs[0].metadata["effective"]) == (None, "2024-04-01")
    old = [d for d in docs if d.metadata["doc_id"] == OLD]
    assert old and {(d.metadata["superseded_by"], d.metadata["effective"]) for d in old} == {(NEW, "2023-04-01")}
    allowance = [d.metadata["doc_id"] for d in docs if "在宅勤務手当は月額" in d.page_content]
    assert allowance == [NEW, OLD]


def test_question_about_a_past_year_keeps_the_past_version_first(own_store, data):
    own_store.sync(data)
    docs = own_store.search("2023年の在宅勤務手当は月額いくらでしたか？", search_mode="keyword", top_k=6)
    allowance = [d.metadata["doc_id"] for d in docs if "在宅勤務手当は月額" in d.page_content]
    assert allowance == [OLD, NEW]


def test_docs_lists_the_family_with_the_current_version(own_store, data, engine):
    own_store.sync(data)
    rows = version_store.list_versions(engine, own_store.settings.retrieval.collection_name, FULL_ACCESS)
    assert format_families(rows).splitlines() == [
        "Versions: 1 documents with more than one version (current first)",
        f"  {NEW}  current  effective 2024-04-01 (text)",
        f"    {OLD}  past, superseded by {NEW}  effective 2023-04-01 (text)",
    ]


def test_families_off_then_on_again(own_store, data, engine):
    name = own_store.settings.retrieval.collection_name
    own_store.sync(data)
    off = RagStore(
        own_store.settings.changed(memory={"version_families": False}),
        embeddings=own_store.embeddings,
        engine=engine,
        principals=FULL_ACCESS,
    )
    _, report = off.sync(data)
    assert report.embedded == 0 and report.versions_changed == 2
    assert {r["doc_id"]: r["superseded_by"] for r in version_store.list_versions(engine, name, FULL_ACCESS)} == {
        OLD: None,
        NEW: None,
        "docs/it_helpdesk.md": None,
    }
    assert all(d.metadata["superseded_by"] is None for d in off.search(QUESTION, search_mode="keyword", top_k=6))
    _, report = own_store.sync(data)
    assert report.versions_changed == 2


def test_a_reader_of_the_past_version_only_is_not_told_the_current_ones_name(own_store, data, engine):
    (data / "access.toml").write_text(
        '[folders]\n"docs" = ["everyone"]\n"docs/規程/就業規則_2024.md" = ["人事"]\n', encoding="utf-8"
    )
    own_store.sync(data)
    name = own_store.settings.retrieval.collection_name

    hr = own_store.search(QUESTION, search_mode="keyword", top_k=6, principals=("user:hana", "人事", "everyone"))
    staff = own_store.search(QUESTION, search_mode="keyword", top_k=6, principals=("user:taro", "everyone"))

    assert [d.metadata["superseded_by"] for d in hr if d.metadata["doc_id"] == OLD][0] == NEW
    assert NEW not in {d.metadata["doc_id"] for d in staff}
    assert {d.metadata["superseded_by"] for d in staff} == {None}
    rows = version_store.list_versions(engine, name, ("user:taro", "everyone"))
    assert {r["doc_id"]: (r["family"], r["superseded_by"]) for r in rows} == {
        OLD: (None, None),
        "docs/it_helpdesk.md": (None, None),
    }
    assert version_store.versions_of(engine, name, [OLD, NEW], ("user:taro", "everyone")) == {
        OLD: {"effective": __import__("datetime").date(2023, 4, 1), "superseded_by": None, "status": "past"}
    }


def test_versions_file_pins_the_current_version(own_store, data, engine):
    (data / "versions.toml").write_text(
        f'[[family]]\ndocuments = ["{OLD}", "{NEW}"]\ncurrent = "{OLD}"\n', encoding="utf-8"
    )
    own_store.sync(data)
    docs = own_store.search(QUESTION, search_mode="keyword", top_k=6)
    allowance = [
        (d.metadata["doc_id"], d.metadata["superseded_by"]) for d in docs if "在宅勤務手当は月額" in d.page_content
    ]
    assert allowance == [(OLD, None), (NEW, OLD)]
