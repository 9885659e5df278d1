"""Document versions: effective dates, families and the current version, versions.toml, and the
retrieval preference for current versions (pure functions, exact values)."""

from __future__ import annotations

from datetime import date

import pytest
from langchain_core.documents import Document

from app.errors import DataSourceError
from app.retrieval.search import prefer_current, with_versions
from app.versions.dates import effective_date, name_date, stated_date
from app.versions.families import (
    Version,
    VersionDoc,
    assign_versions,
    group_documents,
    is_archived,
    is_draft,
    name_key,
    signature,
    similarity,
    version_mark,
)
from app.versions.overrides import FamilyOverride, Overrides, parse_overrides
from app.versions.preference import asked_year, asks_about_past, version_notes

RULES = (
    "# 就業規則（在宅勤務）\n\n{year}年4月1日改定\n\n## 第1条（目的）\nこの規則は、社員が自宅で勤務するときの取り扱いを定める。\n"
    "## 第2条（許可）\n自宅で勤務する社員は、所属長の許可を得て、勤務する日を勤怠システムに登録する。\n"
    "## 第3条（在宅勤務手当）\n在宅勤務手当は月額{amount}円とする。手当は給与と合わせて翌月25日に支給する。\n"
    "## 第4条（通信費）\n自宅の通信回線の費用は在宅勤務手当に含むものとし、別に支給しない。\n"
)
TRAVEL = (
    "# 出張旅費規程\n国内出張の日当は1日あたり2000円、宿泊費の上限は1泊12000円とする。新幹線は普通車指定席を利用する。"
    "海外出張は事前に役員の承認を得る。航空券は経理部がまとめて手配する。精算は帰着後2週間以内に行う。"
)


# --- effective dates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("令和6年4月1日改定", date(2024, 4, 1)),
        ("R6.4.1 改訂", date(2024, 4, 1)),
        ("2024年4月1日から施行する。", date(2024, 4, 1)),
        ("施行日: 2024/4/1", date(2024, 4, 1)),
        ("平成31年4月1日制定", date(2019, 4, 1)),
        ("作成日：２０２３年１０月５日", date(2023, 10, 5)),
        ("2023年4月1日改定\n2024年4月1日改定", date(2024, 4, 1)),  # a revision history: the latest
        ("2024年4月1日に会議を開く。", None),  # a date, but no 施行/改定/改訂/制定/作成
        ("", None),
    ],
)
def test_stated_date_reads_western_and_era_forms(text, expected):
    assert stated_date(text) == expected


@pytest.mark.parametrize(
    "name,expected",
    [
        ("規程_20240401.docx", date(2024, 4, 1)),
        ("規程/規程_2024-04-01.md", date(2024, 4, 1)),
        ("規程_令和6年4月1日.docx", date(2024, 4, 1)),
        ("規程_R6.4.1.pdf", date(2024, 4, 1)),
        ("規程_2024年4月.docx", date(2024, 4, 1)),
        ("就業規則_2024.md", date(2024, 1, 1)),
        ("debian-reference_v2.78.txt", None),
        ("manual.txt", None),
    ],
)
def test_name_date_reads_the_file_name(name, expected):
    assert name_date(name) == expected


def test_effective_date_prefers_text_then_name_then_mtime():
    assert effective_date("2024年4月1日改定", "規程_20230401.md", 0.0) == (date(2024, 4, 1), "text")
    assert effective_date("本文", "規程_20230401.md", 0.0) == (date(2023, 4, 1), "name")
    assert effective_date("本文", "規程.md", 1_700_000_000.0) == (date(2023, 11, 14), "mtime")
    assert effective_date("本文", "規程.md", None) == (None, "")


# --- name rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc_id,key",
    [
        ("規程/就業規則_2023.md", "就業規則"),
        ("規程/就業規則_20240401.docx", "就業規則"),
        ("就業規則_令和6年4月1日.docx", "就業規則"),
        ("就業規則_第2版.docx", "就業規則"),
        ("就業規則_v2.pdf", "就業規則"),
        ("就業規則_改定版.docx", "就業規則"),
        ("規程/旧/就業規則_2023(案).docx", "就業規則"),
        ("【旧】就業規則.docx", "就業規則"),
        ("Manual_OLD.pdf", "manual"),
        ("ご案内.docx", "ご案内"),  # 案 inside a word stays
        ("新規取引先一覧.xlsx", "新規取引先一覧"),  # so does 新
    ],
)
def test_name_key_drops_dates_and_version_marks(doc_id, key):
    assert name_key(doc_id) == key


@pytest.mark.parametrize(
    "doc_id,draft",
    [
        ("就業規則（案）.docx", True),
        ("就業規則案.docx", True),
        ("規程_draft.md", True),
        ("就業規則.docx", False),
        ("新サービス提案.pptx", False),
        ("ご案内.docx", False),
    ],
)
def test_is_draft(doc_id, draft):
    assert is_draft(doc_id) is draft


@pytest.mark.parametrize(
    "doc_id,archived",
    [
        ("規程/旧/就業規則.docx", True),
        ("old/manual.pdf", True),
        ("Archive/manual.pdf", True),
        ("【旧】就業規則.docx", True),
        ("旧姓変更届.docx", False),
        ("規程/就業規則.docx", False),
    ],
)
def test_is_archived(doc_id, archived):
    assert is_archived(doc_id) is archived


def test_version_mark():
    assert version_mark("規程_第3版.docx") == ((3,), False)
    assert version_mark("manual_v2.1.pdf") == ((2, 1), False)
    assert version_mark("就業規則_改定版.docx") == ((), True)
    assert version_mark("就業規則.docx") == ((), False)


# --- families -------------------------------------------------------------------------------------


def test_signature_similarity_of_versions_and_of_unrelated_texts():
    old, new = signature(RULES.format(year=2023, amount="3,000")), signature(RULES.format(year=2024, amount="5,000"))
    assert len(old) == 128
    assert similarity(old, new) >= 0.8
    assert similarity(old, signature(TRAVEL)) < 0.1
    assert similarity(old, ()) == 0.0


def doc(doc_id: str, text: str, text_date: date | None = None, mtime: float | None = None) -> VersionDoc:
    return VersionDoc(doc_id, text_date, "", signature(text), mtime)


def test_names_differing_by_a_date_are_one_family_the_latest_current():
    versions = assign_versions(
        [
            doc("規程/就業規則_2023.md", RULES.format(year=2023, amount="3,000"), date(2023, 4, 1)),
            doc("規程/就業規則_2024.md", RULES.format(year=2024, amount="5,000"), date(2024, 4, 1)),
            doc("規程/出張旅費規程.md", TRAVEL),
        ]
    )
    assert versions["規程/就業規則_2023.md"] == Version(
        "規程/就業規則_2023.md", "規程/就業規則_2024.md", date(2023, 4, 1), "text", "past", "規程/就業規則_2024.md"
    )
    assert versions["規程/就業規則_2024.md"] == Version(
        "規程/就業規則_2024.md", "規程/就業規則_2024.md", date(2024, 4, 1), "text", "current", None
    )
    assert versions["規程/出張旅費規程.md"] == Version("規程/出張旅費規程.md", None, None, "", "", None)


def test_version_marks_decide_when_dates_are_only_modification_times():
    text = RULES.format(year="", amount="3,000").replace("年4月1日改定", "")
    versions = assign_versions(
        [
            doc("規程_第2版.docx", text + "第5条を加える。", mtime=1_700_000_000.0),
            doc("規程_第3版.docx", text + "第6条を加える。", mtime=1_600_000_000.0),  # copied earlier
            doc("規程_v1.docx", text, mtime=1_800_000_000.0),
        ]
    )
    assert {k: (v.status, v.superseded_by) for k, v in versions.items()} == {
        "規程_第2版.docx": ("past", "規程_第3版.docx"),
        "規程_第3版.docx": ("current", None),
        "規程_v1.docx": ("past", "規程_第3版.docx"),
    }


def test_revised_edition_supersedes_the_original():
    text = RULES.format(year="", amount="3,000")
    versions = assign_versions(
        [doc("就業規則.docx", text, mtime=1.0e9), doc("就業規則_改定版.docx", text, mtime=1.0e9)]
    )
    assert versions["就業規則.docx"].superseded_by == "就業規則_改定版.docx"
    assert versions["就業規則_改定版.docx"].status == "current"


def test_archive_folder_is_past_even_when_newer():
    versions = assign_versions(
        [
            doc("規程/旧/就業規則.md", RULES.format(year=2025, amount="3,000"), date(2025, 4, 1)),
            doc("規程/就業規則.md", RULES.format(year=2024, amount="5,000"), date(2024, 4, 1)),
        ]
    )
    assert versions["規程/旧/就業規則.md"].status == "archived"
    assert versions["規程/旧/就業規則.md"].superseded_by == "規程/就業規則.md"
    assert versions["規程/就業規則.md"].status == "current"


def test_draft_is_not_current_while_a_final_exists():
    final = doc("就業規則.docx", RULES.format(year=2024, amount="5,000"), date(2024, 4, 1))
    draft = doc("就業規則（案）.docx", RULES.format(year=2025, amount="6,000"), date(2025, 4, 1))
    versions = assign_versions([final, draft])
    assert (versions["就業規則（案）.docx"].status, versions["就業規則（案）.docx"].superseded_by) == (
        "draft",
        "就業規則.docx",
    )
    assert assign_versions([draft])["就業規則（案）.docx"].status == ""  # alone: no family


def test_similar_names_with_unrelated_texts_are_not_grouped():
    groups = group_documents(
        [doc("営業/報告書_2023.docx", RULES.format(year=2023, amount="1")), doc("営業/報告書_2024.docx", TRAVEL)]
    )
    assert groups == [["営業/報告書_2023.docx"], ["営業/報告書_2024.docx"]]


def test_near_identical_texts_are_grouped_whatever_their_names():
    groups = group_documents(
        [
            doc("a/規程.md", RULES.format(year=2023, amount="3,000")),
            doc("b/rules_copy.md", RULES.format(year=2024, amount="5,000")),
        ]
    )
    assert groups == [["a/規程.md", "b/rules_copy.md"]]


def test_equal_versions_are_both_current():
    text = RULES.format(year=2024, amount="5,000")
    versions = assign_versions(
        [doc("就業規則.docx", text, date(2024, 4, 1)), doc("就業規則.pdf", text, date(2024, 4, 1))]
    )
    assert [(v.status, v.superseded_by) for v in versions.values()] == [("current", None), ("current", None)]


# --- versions.toml --------------------------------------------------------------------------------


def test_overrides_fix_family_current_date_and_separate():
    overrides = parse_overrides(
        {
            "family": [{"documents": ["a.md", "b.md"], "current": "a.md"}],
            "document": {"b.md": {"effective": date(2030, 1, 1)}, "営業/報告書_2024.docx": {"separate": True}},
        }
    )
    assert overrides == Overrides(
        (FamilyOverride(("a.md", "b.md"), ("a.md",)),), {"b.md": date(2030, 1, 1)}, frozenset({"営業/報告書_2024.docx"})
    )
    versions = assign_versions([doc("a.md", TRAVEL), doc("b.md", RULES.format(year=2023, amount="1"))], overrides)
    assert versions["b.md"] == Version("b.md", "a.md", date(2030, 1, 1), "override", "past", "a.md")
    assert versions["a.md"].status == "current"
    separated = assign_versions([doc("営業/報告書_2023.docx", TRAVEL), doc("営業/報告書_2024.docx", TRAVEL)], overrides)
    assert [v.family for v in separated.values()] == [None, None]


@pytest.mark.parametrize(
    "data,message",
    [
        ({"families": []}, "versions.toml: unknown table 'families'"),
        ({"family": [{"documents": []}]}, "versions.toml: family 1 documents must be a document ID or a list of them"),
        (
            {"family": [{"documents": ["a"], "current": "b"}]},
            "versions.toml: family 1: current 'b' is not among its documents",
        ),
        ({"document": {"a": {"effective": "2024-04-01"}}}, "versions.toml: document 'a': effective must be a date"),
        ({"document": {"a": {"separate": "yes"}}}, "versions.toml: document 'a': separate must be true or false"),
    ],
)
def test_overrides_errors(data, message):
    with pytest.raises(DataSourceError) as err:
        parse_overrides(data)
    assert str(err.value).startswith(message)


# --- retrieval preference -------------------------------------------------------------------------


def chunk(doc_id: str, text: str, superseded_by: str | None, effective: str) -> Document:
    return Document(
        page_content=text,
        id=f"{doc_id}#{text[:4]}",
        metadata={"doc_id": doc_id, "source": f"{doc_id}:1", "superseded_by": superseded_by, "effective": effective},
    )


OLD = chunk(
    "規程/就業規則_2023.md",
    "在宅勤務手当は月額3,000円とする。手当は給与と合わせて翌月25日に支給する。",
    "規程/就業規則_2024.md",
    "2023-04-01",
)
NEW = chunk(
    "規程/就業規則_2024.md",
    "在宅勤務手当は月額5,000円とする。手当は給与と合わせて翌月25日に支給する。",
    None,
    "2024-04-01",
)
OTHER = chunk("pdf/work_rules.pdf", "在宅勤務は週3日まで認めます。", None, "2022-01-01")


def test_prefer_current_moves_a_past_version_below_its_current_passage():
    assert prefer_current([OLD, OTHER, NEW], "在宅勤務手当は月額いくらですか？") == [OTHER, NEW, OLD]


def test_prefer_current_keeps_order_for_the_past_or_when_the_current_is_missing():
    assert prefer_current([OLD, OTHER, NEW], "改定前の在宅勤務手当はいくらでしたか？") == [OLD, OTHER, NEW]
    assert prefer_current([OLD, OTHER], "在宅勤務手当はいくらですか？") == [OLD, OTHER]


def test_prefer_current_for_a_year_wants_the_version_in_force_then():
    assert prefer_current([NEW, OTHER, OLD], "2023年の在宅勤務手当はいくらでしたか？") == [OTHER, OLD, NEW]
    assert prefer_current([NEW, OTHER, OLD], "令和5年度の在宅勤務手当は？") == [OTHER, OLD, NEW]
    assert prefer_current([OLD, NEW], "2024年の在宅勤務手当は？") == [NEW, OLD]
    assert prefer_current([OLD, NEW], "2010年の在宅勤務手当は？") == [OLD, NEW]  # none in force: as found


def test_prefer_current_does_not_move_below_an_unlike_passage():
    unlike = chunk("規程/就業規則_2024.md", "自宅の通信回線の費用は別に支給しない。", None, "2024-04-01")
    assert prefer_current([OLD, unlike], "在宅勤務手当は？") == [OLD, unlike]


def test_with_versions_copies_and_marks():
    plain = Document(page_content="x", id="1", metadata={"doc_id": "a.md"})
    marked = with_versions([plain], {"a.md": {"effective": date(2023, 4, 1), "superseded_by": "b.md"}})
    assert marked[0].metadata == {"doc_id": "a.md", "superseded_by": "b.md", "effective": "2023-04-01"}
    assert plain.metadata == {"doc_id": "a.md"}
    assert with_versions([plain], {})[0].metadata == {"doc_id": "a.md", "superseded_by": None, "effective": None}


def test_asks_about_past():
    assert (asked_year("令和5年の手当"), asked_year("2023年度の手当"), asked_year("手当はいくら")) == (2023, 2023, None)
    assert [asks_about_past(q) for q in ("旧規程の手当は？", "以前の手当は？", "手当はいくら？")] == [True, True, False]


def test_version_notes_name_the_version_in_force():
    assert version_notes([OLD, NEW], [NEW, OLD]) == [
        "規程/就業規則_2023.md:1 は 2023-04-01 時点の旧版です。現行版は 規程/就業規則_2024.md です。",
        "現行版 規程/就業規則_2024.md（2024-04-01）と旧版 規程/就業規則_2023.md（2023-04-01）で記載が異なります。"
        "適用されるのは現行版 規程/就業規則_2024.md:1 の記載です。",
    ]
    assert version_notes([NEW], [NEW]) == []


# --- where sources are shown (app.cli.output, app.cli.docs) ------------------------------------------


def test_sources_of_a_past_version_are_marked_with_the_version_in_force():
    from app.cli.output import format_sources
    from app.versions.preference import answer_version_notes, source_versions

    state = {
        "sources": [NEW.metadata["source"], OLD.metadata["source"]],
        "cited_sources": [NEW.metadata["source"]],
        "reranked_documents": [NEW, OLD],
        "documents": [NEW, OLD],
    }
    versions = source_versions(state)
    assert versions == [
        {
            "source": "規程/就業規則_2024.md:1",
            "doc_id": "規程/就業規則_2024.md",
            "effective": "2024-04-01",
            "superseded_by": None,
        },
        {
            "source": "規程/就業規則_2023.md:1",
            "doc_id": "規程/就業規則_2023.md",
            "effective": "2023-04-01",
            "superseded_by": "規程/就業規則_2024.md",
        },
    ]
    assert format_sources(state["sources"], state["cited_sources"], versions={v["source"]: v for v in versions}) == (
        "=== Sources ===\n- 規程/就業規則_2024.md:1\n"
        "- 規程/就業規則_2023.md:1 (旧版 2023-04-01; 現行: 規程/就業規則_2024.md) (not cited)"
    )
    assert answer_version_notes(state) == [
        "現行版 規程/就業規則_2024.md（2024-04-01）と旧版 規程/就業規則_2023.md（2023-04-01）で記載が異なります。"
        "適用されるのは現行版 規程/就業規則_2024.md:1 の記載です。"
    ]


def test_format_families_lists_current_first():
    from app.cli.docs import format_families

    rows = [
        {
            "doc_id": "a_2023.md",
            "family": "a_2024.md",
            "effective": date(2023, 4, 1),
            "effective_from": "text",
            "status": "past",
            "superseded_by": "a_2024.md",
        },
        {
            "doc_id": "a_2024.md",
            "family": "a_2024.md",
            "effective": date(2024, 4, 1),
            "effective_from": "text",
            "status": "current",
            "superseded_by": None,
        },
        {
            "doc_id": "b.md",
            "family": None,
            "effective": None,
            "effective_from": None,
            "status": None,
            "superseded_by": None,
        },
    ]
    assert format_families(rows).splitlines() == [
        "Versions: 1 documents with more than one version (current first)",
        "  a_2024.md  current  effective 2024-04-01 (text)",
        "    a_2023.md  past, superseded by a_2024.md  effective 2023-04-01 (text)",
    ]
    assert format_families(rows[2:]) == ""


def test_only_a_changed_version_is_written_again():
    from app.ingestion.versions import _differs

    row = {
        "doc_id": "規程/a.md",
        "family": "規程/b.md",
        "effective": date(2023, 4, 1),
        "effective_from": "text",
        "status": None,
        "superseded_by": "規程/b.md",
    }
    same = {
        "doc": "規程/a.md",
        "family": "規程/b.md",
        "effective": date(2023, 4, 1),
        "effective_from": "text",
        "status": None,
        "superseded_by": "規程/b.md",
    }
    assert _differs(same, row) is False
    assert _differs({**same, "superseded_by": None}, row) is True
    assert _differs({**same, "effective": date(2024, 4, 1)}, row) is True
    assert _differs(same, None) is True


def test_lsh_bands_are_worked_out_once():
    from app.versions.families import _lsh_bands

    assert _lsh_bands() is _lsh_bands()
    bands, rows = _lsh_bands()
    assert bands * rows <= 128
