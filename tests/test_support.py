"""app.workflow.checks.support: the words an answer adds to its question, and whether the documents state them
(exact values; the generate node's use of it in tests/test_graph.py, the real model's in
tests/integration/test_real_answers.py)."""

import pytest

from app.workflow.checks.support import added_terms, content_terms, support, unstated_words
from app.workflow.reply import answer_check


def test_content_terms_keep_katakana_kanji_bigrams_and_latin_words():
    assert content_terms("ブラジルの首都はシカゴです。[1]") == {"ブラ", "ラジ", "ジル", "首都", "シカ", "カゴ"}
    assert content_terms("alpha_2:KR") == {"alpha", "2", "kr"}
    assert content_terms("") == set()


def test_added_terms_leave_out_what_the_question_holds():
    assert added_terms("ブラジルの首都はシカゴです。", "ブラジルの首都はどこですか？") == {"シカ", "カゴ"}
    assert added_terms("ブラジルの首都です。", "ブラジルの首都はどこですか？") == set()


@pytest.mark.parametrize(
    ("answer", "stated", "query", "expected"),
    [
        ("ブラジルの首都はシカゴです。[1]", ["name:Brazil\nname_ja:ブラジル"], "ブラジルの首都はどこですか？", 0.0),
        (
            "正式名称はFederative Republic of Brazilです。",
            ["official_name:Federative Republic of Brazil"],
            "ブラジルの正式名称は？",
            1.0,
        ),
        ("日本語です", ["日本の"], "公用語は？", 0.5),  # 日本 stated, 本語 not
        ("５日間です", ["しきい値は5日間"], "何日？", 1.0),  # digits in one form
        ("５日間です", ["5日"], "何日？", 0.5),  # 日間 is not stated
        ("ブラジルの首都です", ["x"], "ブラジルの首都は？", None),  # adds nothing
    ],
)
def test_support_is_the_share_of_added_terms_stated(answer, stated, query, expected):
    assert support(answer, stated, query) == expected


def test_unstated_words_name_the_words_as_the_answer_writes_them():
    assert unstated_words("メキシコの国花は、パトロノミーです。[1]", ["name:Mexico"], "メキシコの国花は？") == [
        "パトロノミー"
    ]
    assert unstated_words("国コードは「JP」と「JP」です", ["alpha_3:NIU"], "日本の国コードは？") == ["JP"]
    assert unstated_words("ドイツの公用語は日本語です", ["name:Germany"], "ドイツの公用語は？") == ["日本語"]
    assert unstated_words("Republic of Finlandです", ["official_name:Republic of Finland"], "?") == []


def test_answer_check_withdraws_an_answer_whose_words_no_context_states():
    stated = ["[1]（出典: countries.csv:r33）\nname:Brazil\nofficial_name:Federative Republic of Brazil"]
    assert answer_check("ブラジルの首都はシカゴです。[1]", [1], stated, "ブラジルの首都は？", 0.5) == "unstated"
    assert answer_check("ブラジルの首都はシカゴです。[1]", [1], stated, "ブラジルの首都は？", 0.0) is None  # off
    assert answer_check("Federative Republic of Brazilです[1]", [1], stated, "ブラジルの正式国名は？", 0.5) is None
    assert answer_check("2人です[1]", [1], stated, "何人？", 0.5) == "unsupported"  # the number check comes first


def test_a_decimal_in_another_form_is_stated():
    stated = ["手数料は通常0.250%、特急0.750%です。"]
    assert support("0.25%と0.75%です[1]", stated, "手数料は？") == 1.0
    assert answer_check("0.25%と0.75%です[1]", [1], stated, "手数料は？", 0.5) is None


def test_named_words_lose_trailing_punctuation_and_keep_accents():
    assert unstated_words("首都はBrasíliaかChicago.です", ["x"], "首都は？") == ["Brasília", "Chicago"]
