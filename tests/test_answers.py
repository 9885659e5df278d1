"""Prompts, citations and abstention (app.workflow.prompts, app.workflow.checks): exact values."""

import pytest

from app.workflow.checks.citations import (
    CitationFilter,
    cited_numbers,
    clean_citations,
    ordered_sources,
    says_not_in_documents,
    strip_echo,
)
from app.workflow.checks.coverage import best_matching_context
from app.workflow.checks.numbers import unsupported_numbers
from app.workflow.prompts import ABSTAIN_ANSWER, build_prompt, focus_context, system_prompt


def test_cited_prompt_numbers_contexts_with_their_sources():
    prompt = build_prompt("受付時間は？", ["平日9時から18時", "土日は休み"], ["faq.csv:r2", "faq.csv:r3"])
    assert prompt == (
        "資料:\n[1]（出典: faq.csv:r2）\n平日9時から18時\n\n[2]（出典: faq.csv:r3）\n土日は休み\n\n質問: 受付時間は？"
    )
    assert f"「{ABSTAIN_ANSWER}」" in system_prompt("cited") and system_prompt("spec") is None


def test_cited_prompt_without_sources_says_unknown():
    assert "[1]（出典: unknown）\nx" in build_prompt("q", ["x"])


def test_spec_prompt_is_the_spec_template():
    assert build_prompt("Q", ["a", "b"], ["s1", "s2"], style="spec") == (
        "以下の情報を基に回答してください:\n\na\n\nb\n\n質問:Q\n回答:"
    )


def test_unknown_prompt_style_is_an_error():
    with pytest.raises(ValueError, match="prompt style must be one of cited, spec"):
        build_prompt("q", ["x"], style="fancy")


@pytest.mark.parametrize(
    "answer, n, expected",
    [
        ("平日9時から18時です[1]。", 3, [1]),
        ("A [2][1] と B [1, 3]", 3, [2, 1, 3]),
        ("全角［２］と【3】", 3, [2, 3]),
        ("存在しない[4]と[0]", 3, []),
        ("引用なし", 3, []),
        ("[1、2]", 2, [1, 2]),
    ],
)
def test_cited_numbers(answer, n, expected):
    assert cited_numbers(answer, n) == expected


@pytest.mark.parametrize(
    "answer, n, expected",
    [
        ("18時までです [1]。", 3, "18時までです [1]。"),
        ("18時までです[5]。", 3, "18時までです。"),
        ("A［１，４］B", 3, "A[1]B"),
        ("A [2, 2]", 3, "A [2]"),
        ("配列 a[i] はそのまま", 3, "配列 a[i] はそのまま"),
        ("休業です。\n\n[1]", 3, "休業です。[1]"),
        ("休業です。\n[1] [2]\n", 3, "休業です。[1] [2]"),
        ("手順:\n1. 開く[1]\n2. 押す[2]", 3, "手順:\n1. 開く[1]\n2. 押す[2]"),
        ("[1]", 3, "[1]"),
    ],
)
def test_clean_citations_drops_numbers_that_name_no_context(answer, n, expected):
    assert clean_citations(answer, n) == expected


@pytest.mark.parametrize(
    "answer, expected",
    [
        (ABSTAIN_ANSWER, True),
        ("資料には記載がありません。", True),
        ("その情報は資料に記載されていません。", True),
        ("情報が見つかりません", True),
        ("受付時間は平日9時から18時です[1]。", False),
        ("", False),
    ],
)
def test_says_not_in_documents(answer, expected):
    assert says_not_in_documents(answer) is expected


def test_ordered_sources_puts_cited_first_without_repeats():
    sources = ["a.pdf:p1", "faq.csv:r2", "a.pdf:p1", "b.csv:r3"]
    assert ordered_sources(sources, [2, 4]) == [("faq.csv:r2", True), ("b.csv:r3", True), ("a.pdf:p1", False)]
    assert ordered_sources(sources, []) == [("a.pdf:p1", False), ("faq.csv:r2", False), ("b.csv:r3", False)]


@pytest.mark.parametrize(
    "pieces",
    [
        ["9時から", "18時です", "[", "1", "]", "。そして", "[", "7]", "です"],
        ["9時から18時です[1]。そして[7]です"],
        list("9時から18時です[1]。そして[7]です"),
    ],
)
def test_citation_filter_streams_the_cleaned_answer(pieces):
    shown = CitationFilter(3)
    out = "".join(shown.feed(p) for p in pieces) + shown.flush()
    assert out == "9時から18時です[1]。そして" + "です"


def test_citation_filter_lets_ordinary_brackets_through():
    shown = CitationFilter(3)
    out = shown.feed("配列 a[i] と [注意] と [") + shown.flush()
    assert out == "配列 a[i] と [注意] と ["


def test_citation_filter_holds_back_only_what_may_be_a_citation():
    shown = CitationFilter(3)
    assert shown.feed("答えは[") == "答えは"
    assert shown.feed("2") == ""
    assert shown.feed("]です") == "[2]です"


@pytest.mark.parametrize(
    "answer, contexts, query, expected",
    [
        ("駐車場は2台分あります[1]。", ["2012年4月設立"], "駐車場は？", ["2"]),
        ("料金は1,200円です[2]。", ["価格は1200円"], "", []),
        ("認証は2024年9月です[1]。", ["2021年2月に取得"], "ISO/IEC 27001の認証", ["2024年9月"]),
        ("ISO 27001 は取得済みです[1]。", ["取得済み"], "ISO/IEC 27001は？", []),
        ("受付は９時からです[3]。", ["平日9時から"], "", []),
        ("答えは[1]です。", [], "", []),
        # one fact, two forms: a date, a part of a date, zero padding (issue "Answers you can check", item 4)
        ("期限は6月30日です[1]。", ["提出期限: 2027-06-30"], "", []),
        ("期限は６月３０日です[1]。", ["提出期限: 2027-06-30"], "", []),
        ("設立は2002年7月19日です[1]。", ["設立 2002-07-19"], "", []),
        ("設立は平成14年7月19日です[1]。", ["設立 2002/7/19"], "", []),
        ("2027年6月までです[1]。", ["2027-06-30"], "", []),
        ("受付は9:00からです[1]。", ["平日9時から"], "", []),
        ("3営業日以内です[1]。", ["三営業日以内に返信"], "", []),
        ("期限は2027年6月31日です[1]。", ["提出期限: 2027-06-30"], "", ["2027年6月31日"]),
        ("7月1日と7月1日です。", ["2002-07-19"], "", ["7月1日"]),
        ("2002年7月1日です[1]。", ["2002-07-19", "第1条"], "", ["2002年7月1日"]),
        ("締切は7月19日です[1]。", ["締切 07/19（金）"], "", []),
        ("期限は2027年6月30日です[1]。", ["2027年度の提出期限は06月30日"], "", []),
    ],
)
def test_unsupported_numbers(answer, contexts, query, expected):
    assert unsupported_numbers(answer, contexts, query) == expected


def test_focus_context_keeps_the_sentences_near_the_question():
    text = "会社概要です。サポートの受付時間は平日9時から18時までです。土日は休みです。\n料金は月額です。解約は30日前までです。"
    assert (
        focus_context(text, "受付時間は何時まで？", 40)
        == "会社概要です。サポートの受付時間は平日9時から18時までです。土日は休みです。"
    )
    assert focus_context(text, "解約は？", 30) == "会社概要です。…料金は月額です。解約は30日前までです。"
    assert focus_context(text, "q", 0) == text and focus_context("短い。", "q", 40) == "短い。"


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("質問: 受付は？\n回答: 9時です[1]。", "9時です[1]。"),
        ("質問：受付は？回答：9時です", "9時です"),
        ("9時です。質問: とは書かない", "9時です。質問: とは書かない"),
    ],
)
def test_strip_echo(answer, expected):
    assert strip_echo(answer) == expected


@pytest.mark.parametrize(
    "pieces", [["質問", ": 受付は？\n回", "答: 9時", "です[1]。"], ["質問: 受付は？\n回答: 9時です[1]。"]]
)
def test_citation_filter_drops_a_leading_echo(pieces):
    shown = CitationFilter(3)
    assert "".join(shown.feed(p) for p in pieces) + shown.flush() == "9時です[1]。"


def test_citation_filter_shows_a_question_that_never_reaches_an_answer():
    shown = CitationFilter(3)
    assert shown.feed("質問のようで") == "" and shown.flush() == "質問のようで"


def test_best_matching_context_finds_the_copied_context():
    contexts = ["サポート窓口の受付時間は平日9時から18時までです。", "バックアップは35日間保持します。"]
    assert best_matching_context("バックアップは35日間保持されます。", contexts) == 2
    assert best_matching_context("受付時間は平日9時から18時です[1]。", contexts) == 1
    assert best_matching_context("まったく別の話題について述べます。", contexts) is None
    assert best_matching_context("", contexts) is None and best_matching_context("x", []) is None


def test_question_coverage_is_the_share_of_question_tokens_in_the_contexts():
    from app.text.keywords import query_tokens
    from app.workflow.checks.coverage import question_coverage

    query = "退職金はいくらですか"
    assert 0 < question_coverage(query, ["退職の手続き"]) < 1
    assert question_coverage(query, []) == 0.0 and question_coverage("", ["x"]) == 1.0
    assert question_coverage("受付時間", ["サポートの受付時間は9時から"]) == 1.0
    tokens = set(query_tokens(query))
    assert question_coverage(query, ["いくら"]) == len(tokens & set(query_tokens("いくら"))) / len(tokens)


def test_citation_filter_holds_trailing_whitespace_until_more_text():
    shown = CitationFilter(3)
    assert shown.feed("9時です。\n\n") == "9時です。"
    assert shown.feed("土日は休み") == "\n\n土日は休み"
    assert shown.feed("。 \n") == "。" and shown.flush() == ""


@pytest.mark.parametrize(
    "query, texts, absent",
    [
        ("Debian 3.0 のコードネームは？", ["Debian 3.0 (woody)"], []),
        ("Debian 3.1 のコードネームは？", ["Debian 3.0 (woody)"], ["3.1"]),
        ("Ubuntu 26.04 のコードネームは？", ["version:25.10, codename:questing", "version:24.04 LTS"], ["26.04"]),
        ("エラーコードE3010は何を意味しますか？", ["E3010: 接続エラー"], []),
        ("エラーコードE3011は何を意味しますか？", ["E3010: 接続エラー"], ["E3011"]),
        ("2030年の元日は何曜日？", ["2026-01-01 元日"], ["2030"]),
        ("平成14年7月19日に何がありましたか？", ["2002-07-19 設立"], []),
        ("日本の3文字の国コードは？", ["alpha_3:JPN"], []),  # a count the question asks for, not a value
        ("稼働率が99.9%を下回ったら？", ["月間稼働率 99.9% を保証"], []),
        ("32ビットの s390 移植版は？", ["s390 (32 ビット) の移植版"], []),
    ],
)
def test_absent_values(query, texts, absent):
    from app.workflow.checks.numbers import absent_values

    assert absent_values(query, texts) == absent
