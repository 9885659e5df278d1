"""Issue 51: the version in force is what the model reads. Which chunks are hidden (matching passages,
the past-question exception), where their place goes, the note of what a past version said otherwise,
and the workflow with them (a recording fake LLM; the real models in tests/integration/test_versions_read.py)."""

from __future__ import annotations

from datetime import date

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM

from app.graph import RAGContext, run_rag
from app.retrieval.search import prefer_current
from app.storage.scores import RELEVANCE_SCORE_KEY
from app.versions.matching import (
    difference_note,
    matching_current,
    same_passage,
    section_name,
    section_of,
    value_tokens,
)
from app.versions.preference import answer_version_notes
from app.versions.reading import asked_date, question_share, reads_past, split_read

PAST_ID, CURRENT_ID = "docs/規程/人事規程_2023.md", "docs/規程/人事規程_2024.md"


def chunk(doc_id: str, section: str, text: str, superseded_by=None, effective=None, score=None) -> Document:
    metadata = {
        "doc_id": doc_id,
        "source": f"{doc_id.removeprefix('docs/')}#{section}",
        "superseded_by": superseded_by,
        "effective": effective,
    }
    if score is not None:
        metadata[RELEVANCE_SCORE_KEY] = score
    return Document(page_content=text, id=f"{doc_id}#{section}", metadata=metadata)


PAST = chunk(
    PAST_ID,
    "資格取得奨励金",
    "会社が指定する資格を取得した社員には、資格取得奨励金を支給する。資格取得奨励金は一資格につき30,000円とし、"
    "合格証の写しを添えて取得後3か月以内に申請する。受験料は会社が負担しない。",
    CURRENT_ID,
    "2023-04-01",
)
CURRENT = chunk(CURRENT_ID, "資格取得奨励金", "資格取得奨励金は一資格につき50,000円とする。", None, "2024-04-01")
LEAVE = chunk(CURRENT_ID, "休暇", "年次有給休暇は入社6か月後に10日付与する。", None, "2024-04-01")
PAST_LEAVE = chunk(PAST_ID, "休暇", "年次有給休暇は入社6か月後に10日付与する。", CURRENT_ID, "2023-04-01")
MANUAL = chunk("docs/it_helpdesk.md", "パスワード", "パスワードは90日ごとに変更してください。")
APPLY = chunk("docs/faq.md", "申請", "資格取得奨励金の申請は、合格証の写しを添えて人事部へ行う。")
QUESTION = "資格取得奨励金は一資格につきいくらですか？"


# --- matching ----------------------------------------------------------------------------------------


def test_section_of_reads_the_source_after_the_hash():
    assert section_of(PAST) == "資格取得奨励金"
    assert section_of(Document(page_content="x", metadata={"source": "rules.pdf:p3"})) is None


def test_same_passage_by_section_or_by_alike_text():
    assert same_passage(PAST, CURRENT)  # texts unalike (trigram Jaccard 0.18), one section
    assert not same_passage(PAST, LEAVE)
    moved = chunk(CURRENT_ID, "第5条", PAST.page_content.replace("30,000", "50,000"), None, "2024-04-01")
    assert same_passage(PAST, moved)  # another section, near-identical text


@pytest.mark.parametrize(
    "slug,name",
    [
        ("213-永遠のアップグレード人生", "永遠のアップグレード人生"),
        ("2510-update-alternative-コマンド", "update-alternative-コマンド"),
        ("第3条在宅勤務手当", "在宅勤務手当"),
        ("第2章-debian-パッケージ管理", "debian-パッケージ管理"),
        ("第3条", "第3条"),
        ("資格取得奨励金", "資格取得奨励金"),
    ],
)
def test_section_name_drops_the_number_a_revision_shifts(slug, name):
    assert section_name(slug) == name


def test_a_renumbered_section_is_the_same_passage():
    renumbered = chunk(CURRENT_ID, "第4条資格取得奨励金", CURRENT.page_content, None, "2024-04-01")
    assert same_passage(chunk(PAST_ID, "第3条資格取得奨励金", PAST.page_content, CURRENT_ID), renumbered)


def test_another_piece_of_the_same_section_is_not_the_same_passage():
    second = Document(page_content="受験料は会社が負担しない。", metadata={**CURRENT.metadata, "chunk_index": 1})
    assert not same_passage(PAST, second)  # PAST is piece 0 (no chunk_index: the first)
    assert same_passage(Document(page_content="x", metadata={**PAST.metadata, "chunk_index": 1}), second)


def test_matching_current_prefers_the_same_section_over_a_better_ranked_chunk():
    assert matching_current(PAST, [LEAVE, MANUAL, CURRENT]) is CURRENT
    assert matching_current(PAST, [LEAVE, MANUAL]) is None
    assert matching_current(CURRENT, [CURRENT, PAST]) is None  # a current chunk matches nothing


# --- the past-question exception ------------------------------------------------------------------


@pytest.mark.parametrize(
    "query,expected",
    [
        ("2023年の奨励金は？", date(2023, 12, 31)),
        ("令和5年度の奨励金は？", date(2023, 12, 31)),
        ("2024年3月の奨励金は？", date(2024, 3, 31)),
        ("2024年12月の奨励金は？", date(2024, 12, 31)),
        ("2024年3月1日に取得した資格の奨励金は？", date(2024, 3, 1)),
        ("令和6年3月1日の奨励金は？", date(2024, 3, 1)),
        ("奨励金はいくら？", None),
    ],
)
def test_asked_date(query, expected):
    assert asked_date(query) == expected


@pytest.mark.parametrize(
    "query,expected",
    [
        (QUESTION, False),
        ("旧規程の資格取得奨励金はいくらですか？", True),
        ("以前の資格取得奨励金はいくらでしたか？", True),
        ("改定前の資格取得奨励金はいくらでしたか？", True),
        ("2023年の資格取得奨励金はいくらでしたか？", True),  # the past version was in force in 2023
        ("2024年3月1日に取得した資格の奨励金は？", True),  # … and until 2024-03-31
        ("2024年の資格取得奨励金はいくらですか？", False),  # the current one by the year's end
        ("2024年4月1日以降の資格取得奨励金は？", False),
        ("2020年の資格取得奨励金は？", False),  # before the past version: not it either
    ],
)
def test_reads_past_for_past_words_and_a_day_in_its_time(query, expected):
    assert reads_past(query, PAST, CURRENT) is expected


def test_reads_past_without_dates():
    undated_past = chunk(PAST_ID, "資格取得奨励金", "30,000円", CURRENT_ID, None)
    undated_current = chunk(CURRENT_ID, "資格取得奨励金", "50,000円", None, None)
    assert reads_past("2020年の奨励金は？", undated_past, CURRENT) is True  # before the current one
    assert reads_past("2024年の奨励金は？", PAST, undated_current) is True  # cannot tell: read
    assert reads_past("奨励金は？", PAST, undated_current) is False


# --- which chunks the model reads ---------------------------------------------------------------------


def test_question_share_counts_the_question_bigrams_a_chunk_holds():
    assert question_share(QUESTION, CURRENT) == 0.75  # 12 of the question's 16 bigrams
    assert question_share(QUESTION, APPLY) == 0.375  # 資格 格取 取得 得奨 奨励 励金
    assert question_share(QUESTION, MANUAL) == 0.0
    assert question_share("？", MANUAL) == 1.0  # no tokens to hold


def test_split_read_hides_the_past_and_gives_its_place_to_the_next_candidate():
    read, hidden = split_read(QUESTION, [CURRENT, PAST, APPLY, LEAVE], 2)
    assert (read, hidden) == ([CURRENT, APPLY], [PAST])  # 0.375 is RELEVANT_SHARE (0.5) of 0.75: read


def test_split_read_puts_the_matching_current_chunk_in_the_past_ones_place():
    read, hidden = split_read(QUESTION, [PAST, APPLY, MANUAL, CURRENT], 2)
    assert (read, hidden) == ([CURRENT, APPLY], [PAST])


def test_split_read_passes_over_unrelated_candidates_once_a_chunk_is_hidden():
    # the done-when case: the 1.5B model refused beside an unrelated chunk, answered with the current one alone
    assert split_read(QUESTION, [PAST, CURRENT, MANUAL, LEAVE], 3) == ([CURRENT], [PAST])
    assert split_read(QUESTION, [MANUAL, PAST, CURRENT, APPLY], 3) == ([MANUAL, CURRENT, APPLY], [PAST])
    assert split_read(QUESTION, [CURRENT, MANUAL, PAST], 3) == ([CURRENT, MANUAL], [PAST])  # read before the hide


def test_split_read_without_a_hidden_chunk_reads_the_first_top_k():
    assert split_read(QUESTION, [CURRENT, MANUAL, LEAVE], 3) == ([CURRENT, MANUAL, LEAVE], [])


def test_split_read_hides_each_past_chunk_that_has_its_current_passage():
    both = "資格取得奨励金と年次有給休暇は？"  # CURRENT and LEAVE each hold 3 of its 7 bigrams
    read, hidden = split_read(both, [PAST, PAST_LEAVE, CURRENT, LEAVE, MANUAL], 3)
    assert (read, hidden) == ([CURRENT, LEAVE], [PAST, PAST_LEAVE])
    read, hidden = split_read(QUESTION, [PAST, PAST_LEAVE, CURRENT, LEAVE, MANUAL], 3)
    assert (read, hidden) == ([CURRENT], [PAST, PAST_LEAVE])  # LEAVE holds none of this question


@pytest.mark.parametrize("query", ["改定前の資格取得奨励金はいくらでしたか？", "2023年の資格取得奨励金は？"])
def test_split_read_reads_the_past_when_asked_about_it(query):
    assert split_read(query, [CURRENT, PAST, MANUAL], 2) == ([CURRENT, PAST], [])


def test_split_read_keeps_a_past_passage_its_current_version_lacks():
    assert split_read(QUESTION, [PAST, MANUAL], 2) == ([PAST, MANUAL], [])
    assert split_read(QUESTION, [MANUAL, LEAVE], 1) == ([MANUAL], [])


# --- what the past version said otherwise ---------------------------------------------------------


def test_value_tokens_pair_values_by_unit():
    assert value_tokens("一資格につき３万円、取得後3か月以内、2023年4月1日改定、第2.78版、10％") == [
        ("円", "30000円", "3万円"),
        ("か月", "3か月", "3か月"),
        ("date", "2023年4月1日", "2023年4月1日"),
        ("", "2.78", "2.78"),
        ("%", "10%", "10%"),
    ]


def test_difference_note_names_the_past_amount():
    assert difference_note(PAST, CURRENT) == (
        "2023-04-01 版では 30,000円（規程/人事規程_2023.md#資格取得奨励金）。現行の 2024-04-01 版では 50,000円です。"
    )


def test_difference_note_none_when_the_values_agree_or_have_no_counterpart():
    assert difference_note(PAST_LEAVE, LEAVE) is None  # the same values
    fuller = chunk(
        PAST_ID, "休暇", "年次有給休暇は入社6か月後に10日付与する。繰越は20日まで。", CURRENT_ID, "2023-04-01"
    )
    assert difference_note(fuller, LEAVE) is None  # 20日 is said only by the past, 10日 by both


def test_difference_note_without_dates_and_with_many_values():
    past = chunk(PAST_ID, "表", "1 MB、2 MB、3 MB、4 MB", CURRENT_ID, None)
    current = chunk(CURRENT_ID, "表", "5 MB", None, None)
    assert (
        difference_note(past, current)
        == "旧版では 1 MB、2 MB、3 MB…（規程/人事規程_2023.md#表）。現行の版では 5 MBです。"
    )


def test_answer_notes_say_what_the_hidden_past_version_said():
    state = {
        "sources": [CURRENT.metadata["source"], MANUAL.metadata["source"], PAST.metadata["source"]],
        "cited_sources": [CURRENT.metadata["source"]],
        "reranked_documents": [CURRENT, MANUAL],
        "hidden_versions": [PAST],
    }
    assert answer_version_notes(state) == [
        "規程/人事規程_2023.md#資格取得奨励金 は 2023-04-01 時点の旧版です。現行版は docs/規程/人事規程_2024.md です。",
        "2023-04-01 版では 30,000円（規程/人事規程_2023.md#資格取得奨励金）。現行の 2024-04-01 版では 50,000円です。",
    ]
    only_past = [
        "規程/人事規程_2023.md#資格取得奨励金 は 2023-04-01 時点の旧版です。現行版は docs/規程/人事規程_2024.md です。"
    ]
    # the answer comes from another passage, or there is none: the difference is not its business
    assert answer_version_notes({**state, "cited_sources": [MANUAL.metadata["source"]]}) == only_past
    assert answer_version_notes({**state, "cited_sources": [], "abstained": "model"}) == only_past


# --- scores after the current-first move --------------------------------------------------------------


def test_prefer_current_caps_the_moved_chunks_score_at_its_anchors():
    old = chunk(
        PAST_ID, "資格取得奨励金", CURRENT.page_content.replace("50,000", "30,000"), CURRENT_ID, "2023-04-01", 0.6097
    )
    new = chunk(CURRENT_ID, "資格取得奨励金", CURRENT.page_content, None, "2024-04-01", 0.602)
    other = chunk("docs/it_helpdesk.md", "x", "パスワードは90日ごとに変更してください。", score=0.61)
    last = chunk("docs/it_helpdesk.md", "y", "プリンターは2階にあります。", score=0.5)
    out = prefer_current([old, other, new, last], QUESTION)
    assert [d.metadata["doc_id"] for d in out] == ["docs/it_helpdesk.md", CURRENT_ID, PAST_ID, "docs/it_helpdesk.md"]
    assert [d.metadata[RELEVANCE_SCORE_KEY] for d in out] == [0.61, 0.602, 0.602, 0.5]
    assert out[2].metadata["search_score"] == 0.6097 and old.metadata[RELEVANCE_SCORE_KEY] == 0.6097  # a copy


# --- the workflow ------------------------------------------------------------------------------------


class RecordingLLM(FakeListLLM):
    """FakeListLLM that remembers the prompts it was given."""

    prompts: list = []

    def _call(self, prompt, stop=None, run_manager=None, **kwargs):
        self.prompts.append(prompt)
        return super()._call(prompt, stop, run_manager, **kwargs)


def ask(query: str, candidates: list[Document]) -> tuple[dict, str]:
    llm = RecordingLLM(responses=["資格取得奨励金は一資格につき50,000円です。[1]"], prompts=[])
    ctx = RAGContext(search=lambda q, k: list(candidates[:k]), llm=llm, search_k=4, rerank_top_k=2)
    state = run_rag(query, ctx)
    return state, llm.prompts[0]


def test_the_model_reads_the_current_version_and_the_sources_list_the_past_one():
    state, prompt = ask(QUESTION, [CURRENT, PAST, APPLY, MANUAL])
    assert "50,000円" in prompt and "30,000円" not in prompt and "合格証の写し" in prompt  # the freed place
    assert [d.metadata["source"] for d in state["reranked_documents"]] == [
        "規程/人事規程_2024.md#資格取得奨励金",
        "faq.md#申請",
    ]
    alone, prompt = ask(QUESTION, [CURRENT, PAST, MANUAL, LEAVE])  # unrelated candidates: passed over
    assert "90日ごと" not in prompt and len(alone["reranked_documents"]) == 1
    assert state["sources"][-1] == "規程/人事規程_2023.md#資格取得奨励金"
    assert state["cited_sources"] == ["規程/人事規程_2024.md#資格取得奨励金"]
    assert answer_version_notes(state)[-1].startswith("2023-04-01 版では 30,000円")


def test_the_model_reads_both_versions_for_a_question_about_the_past():
    state, prompt = ask("改定前の資格取得奨励金はいくらでしたか？", [CURRENT, PAST, MANUAL, LEAVE])
    assert "50,000円" in prompt and "30,000円" in prompt and "90日ごと" not in prompt
    assert state.get("hidden_versions") == []
