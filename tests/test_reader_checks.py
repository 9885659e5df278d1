"""Issue 39's reader checks on exact values: answers that give the question back or stop before their
value (app.workflow.checks.restated), values a question names that no row of the asked table holds
(app.workflow.checks.cells), a source named inline after a citation (app.workflow.checks.citations), and
the generate node withdrawing such answers to their passage (fakes; the real 0.5B runs them in
tests/integration/test_mechanical_failures.py)."""

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM

from app.graph import RAGContext
from app.workflow.checks.cells import (
    absent_from_rows,
    cell_answer,
    named_names,
    named_values,
    row_cells,
    table_of,
    wrong_cell,
)
from app.workflow.checks.citations import CitationFilter, clean_citations
from app.workflow.checks.quote import SHOWN_PREFIX
from app.workflow.checks.restated import adds_nothing, restated, stops_before_value
from app.workflow.generate import generate_node
from tests.conftest import runtime


@pytest.mark.parametrize(
    "answer, query, expected",
    [
        (
            "他社の会計ソフトからデータを移行できますか？ [1]",
            "他社の会計ソフトからデータを移行できますか？",
            "restated",
        ),
        ("契約は自動で更新されます。[1]", "契約は自動で更新されますか？", "restated"),
        ("勤務時間と休憩は、[1]の通りです。", "始業時刻は何時ですか？", "incomplete"),
        ("ディスク容量の表示を切り替えるキーは、[3]", "ディスク容量の表示を切り替えるキーは？", "incomplete"),
        ("手順は以下の通りです。\n\n1. [2]", "パッケージを入れ直す手順は？", "incomplete"),
        ("手順は次の通りです。[1]", "パッケージを入れ直す手順は？", "incomplete"),
        ("詳しくは[2]に記載されています。", "パッケージを入れ直す手順は？", "incomplete"),
        ("始業は午前9時です。[1]", "始業時刻は何時ですか？", None),
        ("ホットキー[1]", "明るい白で表示される文字は何と呼ばれますか？", None),
        ("alpha_2:KR [1]", "韓国の2文字のコードは何ですか？", None),
        ("しきい値は5日間とされています。[1]", "しきい値は何日とされていますか？", None),
        ("手順は以下の通りです。\n1. dpkg -r foo\n2. dpkg -i foo_1.0.deb [1]", "入れ直す手順は？", None),
        ("はい。[1]", "契約は自動で更新されますか？", None),  # no content term: not judged here
        ("764[1]", "タイの通貨の数字コードは？", None),  # a number alone is a value, not a list's marker
        ("18時までです[2]。詳しくは。", "受付は何時までですか？", None),  # the value given, only the tail cut
        ("18時までです。詳しくは[2]に記載されています。", "受付は何時までですか？", None),
        ("gentoo の著作権者は以下の通りです:\n1 Upstream-Contact: Emil Brink [3]", "gentoo の著作権者は？", None),
        ("手順:\n1.", "手順は？", "incomplete"),
        ("[1]", "契約は自動で更新されますか？", None),  # nothing but a citation: the model check's
    ],
)
def test_restated_exact_values(answer, query, expected):
    assert restated(answer, query) == expected


def test_adds_nothing_reads_numbers_in_one_form():
    assert adds_nothing("保守期間は２０２７年です", "保守期間は2027年ですか？")
    assert not adds_nothing("保守期間は2028年です", "保守期間は2027年ですか？")


def test_stops_before_value_keeps_a_value_after_a_colon():
    assert stops_before_value("表示を切り替えるキー:") and not stops_before_value("表示を切り替えるキー: s")


ROWS = [
    ("products.csv:r1", "product:Foo\nversion:2.0\nrelease:2005-06-06"),
    ("products.csv:r2", "product:Foo\nversion:12\nrelease:2010-01-01\nsize:20MB"),
]


COUNTRIES = [
    ("countries.csv:r116", "alpha_2:JP\nalpha_3:JPN\nname:Japan"),
    ("countries.csv:r122", "alpha_2:KR\nalpha_3:KOR\nname:Republic of Korea"),
]


@pytest.mark.parametrize(
    "query, ranked, expected",
    [
        ("Foo 20 のリリース日は？", ROWS, ["20"]),  # not 2.0, not 12, not in 2005-06-06, not 20MB
        ("Foo 12 のリリース日は？", ROWS, []),
        ("Foo 2.0 のリリース日は？", ROWS, []),
        ("2005年に出た版は？", ROWS, []),  # the date's year
        ("Foo 20 のリリース日は？", [("guide.pdf:p3", "Foo 20 は未定です")] + ROWS, []),  # not asked of a table
        ("Foo 20 のリリース日は？", ROWS + [("products.csv:r3", "product:Foo 20\nversion:x")], []),
        ("Foo 20 のリリース日は？", [("other.csv:r1", "version:20")] + ROWS, []),  # the top row's table has it
        ("日本の3文字の国コードは？", [("countries.csv:r116", "alpha_3:JPN\nnumeric:392")], []),
        ("コード E3011 の意味は？", [("errors.xlsx:コード!r1", "code:E3010\nmeaning:日付形式")], ["E3011"]),
        ("コード E3010 の意味は？", [("errors.xlsx:コード!r1", "code:E3010\nmeaning:日付形式")], []),
        ("Foo 20 の価格は？", [("prices.csv:r1", "product:Foo\nprice:月額9800円")], []),  # no cell of its kind
        ("Bar 12 のリリース日は？", ROWS, ["Bar"]),  # a product name no row holds
        ("Wakanda の2文字の国コードは？", COUNTRIES, ["Wakanda"]),
        ("New Zealand の2文字の国コードは？", COUNTRIES, ["New Zealand"]),
        ("Japan の2文字の国コードは？", COUNTRIES, []),
        ("Korea の2文字の国コードは？", COUNTRIES, []),  # a word of the cell ``Republic of Korea``
        ("Debian 3.0 のコードネームは？", [("debian.csv:r3", "version:3.0\ncodename:Woody")], []),  # the table's name
        ("Wakanda の首都は？", [("codes.csv:r1", "alpha_2:JP\nnumeric:392")], []),  # no cell of names
    ],
)
def test_absent_from_rows_exact_values(query, ranked, expected):
    assert absent_from_rows(query, ranked, []) == expected


def test_absent_from_rows_reads_the_candidates_of_the_same_table():
    assert absent_from_rows("Foo 20 のリリース日は？", ROWS, [("products.csv:r9", "version:20")]) == []


def test_table_cells_and_named_values():
    assert table_of("countries.csv:r116") == "countries.csv" and table_of("book.xlsx:価格!r3") == "book.xlsx:価格"
    assert table_of("guide.pdf:p3") is None and table_of("page.html#r1") is None
    assert row_cells("alpha_2:JP\nurl:https://x.example\n説明なし") == {"alpha_2": "JP", "url": "https://x.example"}
    assert named_names("Wakanda と New Zealand、Debian 3.0、alpha_3、JPN、Ab") == ["Wakanda", "New Zealand", "Debian"]
    assert named_values("Debian 3.0 と 32ビットの s390、12文字、日本の3文字の国コード、2005年") == [
        "3.0",
        "s390",
        "2005",
    ]


def test_a_source_named_after_a_citation_is_removed_not_a_stop():
    assert clean_citations("キーは、[3]（出典: aptitude.pdf:p11）「s」です。", 3) == "キーは、[3]「s」です。"
    assert clean_citations("料金（税別）は[1](出典:faq.csv:r2)", 3) == "料金（税別）は[1]"
    pieces = ["キーは、[3]", "（出", "典: apt", "itude.pdf:p11）「s」(", "注)です。"]
    streamed = CitationFilter(3)
    assert "".join(streamed.feed(p) for p in pieces) + streamed.flush() == "キーは、[3]「s」(注)です。"


PASSAGE = "契約期間と更新\n年払いプランの契約期間は申込日から1年間です。期間満了の30日前までに解約の申し出がない場合、1年間自動更新されます。"


def _answer(text: str, min_coverage: float = 0.15) -> dict:
    docs = [
        Document(page_content=PASSAGE, metadata={"source": "agreement.pdf:p4"}),
        Document(page_content="料金は月額9800円です。", metadata={"source": "faq.csv:r3"}),
    ]
    ctx = RAGContext(search=lambda q, k: [], llm=FakeListLLM(responses=[text]), min_coverage=min_coverage)
    return generate_node(
        {"query": "契約は自動で更新されますか？", "documents": docs, "reranked_documents": docs}, runtime(ctx)
    )


def test_an_answer_giving_the_question_back_shows_its_passage():
    out = _answer("契約は自動で更新されます。[1]")
    assert out["abstained"] is None and out["evidence_shown"] == "restated"
    assert out["answer"].startswith(SHOWN_PREFIX + "「契約期間と更新") and out["answer"].endswith("」[1]")
    assert "1年間自動更新されます" in out["answer"] and out["cited_sources"] == ["agreement.pdf:p4"]
    assert out["model_answer"] == "契約は自動で更新されます。[1]"


def test_an_answer_giving_the_question_back_is_refused_on_weak_evidence():
    out = _answer("契約は自動で更新されます。[2]", min_coverage=0.5)  # the cited passage holds none of the question
    assert out["abstained"] == "restated" and out["answer"] == "資料に記載がありません"
    assert out["model_answer"] == "契約は自動で更新されます。[2]"


def test_an_answer_stopping_before_its_value_shows_its_passage():
    out = _answer("更新の条件は、[1]の通りです。")
    assert out["evidence_shown"] == "incomplete" and "1年間自動更新されます" in out["answer"]


def test_an_answer_with_its_value_is_kept():
    out = _answer("期間満了の30日前までに申し出がなければ1年間自動更新されます。[1]")
    assert out["abstained"] is None and "evidence_shown" not in out
    assert out["answer"] == "期間満了の30日前までに申し出がなければ1年間自動更新されます。[1]"


def test_a_question_naming_a_version_no_row_holds_is_refused_before_the_model():
    rows = [Document(page_content=text, metadata={"source": source}) for source, text in ROWS]
    ctx = RAGContext(search=lambda q, k: [], llm=FakeListLLM(responses=["2005-06-06です[1]"]))
    out = generate_node(
        {"query": "Foo 20 のリリース日は？", "documents": rows, "reranked_documents": rows}, runtime(ctx)
    )
    assert out["abstained"] == "absent_value" and out["answer"] == "資料に記載がありません"
    assert out["sources"] == ["products.csv:r1", "products.csv:r2"]  # the closest rows


JAPAN = "alpha_2:JP\nalpha_3:JPN\nnumeric:392\nname:Japan\nofficial_name:\nname_ja:日本"
BRAZIL = (
    "alpha_2:BR\nalpha_3:BRA\nnumeric:076\nname:Brazil\nofficial_name:Federative Republic of Brazil\nname_ja:ブラジル"
)
KOREA = "alpha_2:KR\nalpha_3:KOR\nnumeric:410\nname:Korea, Republic of\nname_ja:大韓民国 (韓国)"
BAHT = "alpha_3:THB\nnumeric:764\nname:Baht\nname_ja:タイ・バーツ"
PRODUCT = "製品名:ミナト勤怠\n価格:1ユーザーあたり月額300円（税別）\n対象:全企業"


@pytest.mark.parametrize(
    "query, row, expected",
    [
        ("日本の3文字の国コードは？", JAPAN, (1, "alpha_3", "JPN")),
        ("韓国の2文字のコードは何ですか？", KOREA, (1, "alpha_2", "KR")),  # 韓国 of 大韓民国 (韓国)
        ("ブラジルの正式国名を英語で言うと？", BRAZIL, (1, "official_name", "Federative Republic of Brazil")),
        ("ブラジルの英語名は？", BRAZIL, (1, "name", "Brazil")),  # name before name_ja: fewer unnamed words
        ("タイで使われているお金の数字コードは？", BAHT, (1, "numeric", "764")),
        ("ミナト勤怠の価格はいくらですか？", PRODUCT, (1, "価格", "1ユーザーあたり月額300円（税別）")),  # as written
        ("ミナト勤怠の料金はいくらですか？", PRODUCT, None),  # no column named
        ("ブラジルの首都はどこですか？", BRAZIL, None),
        ("日本のコードは？", JAPAN, None),  # alpha_2 and alpha_3 named equally: not read
        ("韓国の2文字のコードは何ですか？", JAPAN, None),  # the row is not named
    ],
)
def test_cell_answer_exact_values(query, row, expected):
    assert cell_answer(query, [("countries.csv:r1", row)]) == expected


def test_cell_answer_reads_the_rows_of_the_first_table_only():
    korea, japan = ("countries.csv:r123", KOREA), ("countries.csv:r116", JAPAN)
    assert cell_answer("日本の3文字の国コードは？", [("guide.pdf:p1", "日本"), korea, japan]) == (3, "alpha_3", "JPN")
    assert cell_answer("日本の3文字の国コードは？", [("yen.csv:r1", "alpha_3:JPY\nname_ja:円"), japan]) is None
    assert cell_answer("日本の3文字の国コードは？", [("book.xlsx:国!r3", JAPAN)]) == (1, "alpha_3", "JPN")


def test_a_question_naming_the_row_and_the_column_is_answered_from_the_cell():
    rows = [Document(page_content=JAPAN, metadata={"source": "countries.csv:r116"})]
    llm = FakeListLLM(responses=["JP[1]"])  # the model would have read the wrong cell
    out = generate_node(
        {"query": "日本の3文字の国コードは？", "documents": rows, "reranked_documents": rows},
        runtime(RAGContext(search=lambda q, k: [], llm=llm)),
    )
    assert out["answer"] == "JPN（alpha_3）[1]" and out["abstained"] is None
    assert out["cited_sources"] == ["countries.csv:r116"] and out["model_cited"] is False
    assert out["quote"]["text"] == "alpha_3:JPN" and "first_token" not in out["timings"]
    assert llm.i == 0  # not asked


@pytest.mark.parametrize(
    "answer, query, expected",
    [
        ("日本の3文字のコードはJPです[1]", "日本の3文字のコードは？", ("alpha_3", "JPN")),
        ("JPN[1]", "日本の3文字のコードは？", None),  # the asked value (JP is part of it)
        ("日本の英語名はニホンです[1]", "日本の英語名は？", None),  # states no cell: another check's case
        ("392です[1]", "日本の数字のコードは？", None),
        ("JPNです[1]", "日本の数字のコードは？", ("numeric", "392")),
        ("日本です[1]", "日本の英語名は？", None),  # 日本 is the question's own word
    ],
)
def test_wrong_cell_exact_values(answer, query, expected):
    assert wrong_cell(answer, query, "countries.csv:r116", JAPAN) == expected
    assert wrong_cell(answer, query, "guide.pdf:p2", JAPAN) is None  # not a table row


def test_an_answer_from_another_cell_of_the_cited_row_is_given_the_asked_cell():
    rows = [
        Document(page_content="国コードの一覧です。", metadata={"source": "guide.pdf:p1"}),
        Document(page_content=JAPAN, metadata={"source": "countries.csv:r116"}),
    ]
    out = generate_node(
        {"query": "この国の3文字の国コードは？", "documents": rows, "reranked_documents": rows},  # the row not named
        runtime(
            RAGContext(search=lambda q, k: [], llm=FakeListLLM(responses=["この国の3文字の国コードはJPです。[2]"]))
        ),
    )
    assert out["answer"] == "JPN（alpha_3）[2]" and out["evidence_shown"] == "wrong_cell"
    assert out["model_answer"] == "この国の3文字の国コードはJPです。[2]" and out["cited_sources"] == [
        "countries.csv:r116"
    ]


def test_an_answer_citing_a_passage_off_the_question_shows_the_passage_that_holds_it(monkeypatch):
    import app.workflow.reply as reply

    monkeypatch.setattr(reply, "MIN_CITED_COVERAGE", 0.2)
    out = _answer("料金は月額9800円です。[2]")  # cites the price row, asked about the renewal
    assert out["abstained"] is None and out["evidence_shown"] == "off_topic"
    assert out["answer"].startswith(SHOWN_PREFIX + "「契約期間と更新") and out["answer"].endswith("」[1]")
    assert out["cited_sources"] == ["agreement.pdf:p4"] and out["model_answer"] == "料金は月額9800円です。[2]"


def test_an_off_topic_answer_is_refused_when_no_passage_holds_the_question(monkeypatch):
    import dataclasses

    import app.workflow.reply as reply

    monkeypatch.setattr(reply, "MIN_CITED_COVERAGE", 0.2)
    docs = [
        Document(page_content=PASSAGE, metadata={"source": "agreement.pdf:p4"}),
        Document(page_content="料金は月額9800円です。", metadata={"source": "faq.csv:r3"}),
    ]
    ctx = RAGContext(search=lambda q, k: [], llm=FakeListLLM(responses=["料金は月額9800円です。[2]"]))
    ctx = dataclasses.replace(ctx, evidence_min_coverage=0.99, min_coverage=0.15)
    out = generate_node(
        {"query": "契約は自動で更新されますか？", "documents": docs, "reranked_documents": docs}, runtime(ctx)
    )
    assert out["abstained"] == "off_topic" and out["answer"] == "資料に記載がありません"


def test_the_cited_passage_is_read_with_its_context_line(monkeypatch):
    """A row whose columns hold none of the question's words, under a header line that does, is on topic."""
    import app.workflow.reply as reply

    monkeypatch.setattr(reply, "MIN_CITED_COVERAGE", 0.2)
    docs = [
        Document(
            page_content="name:Brazil\nvalue:BRA", metadata={"source": "t.csv:r1", "context": "t.csv 国コード 一覧"}
        )
    ]
    ctx = RAGContext(search=lambda q, k: [], llm=FakeListLLM(responses=["BRAです[1]"]), min_coverage=0.15)
    out = generate_node(
        {"query": "国コード一覧のBrazilは？", "documents": docs, "reranked_documents": docs}, runtime(ctx)
    )
    assert out["abstained"] is None and "evidence_shown" not in out and out["answer"] == "BRAです[1]"


def test_the_off_topic_check_is_off_with_the_coverage_check(monkeypatch):
    import app.workflow.reply as reply

    monkeypatch.setattr(reply, "MIN_CITED_COVERAGE", 0.2)
    out = _answer("料金は月額9800円です。[2]", min_coverage=0.0)
    assert out["abstained"] is None and out["answer"] == "料金は月額9800円です。[2]"


def test_cited_coverage_and_best_covering_context_exact_values():
    from app.workflow.checks.coverage import best_covering_context, cited_coverage

    contexts = ["受付時間は平日9時から18時", "料金は月額9800円"]
    assert cited_coverage("受付時間は？", contexts, [2]) == 0.0
    assert cited_coverage("受付時間は？", contexts, [2, 1]) == cited_coverage("受付時間は？", contexts[:1], [1]) > 0.5
    assert cited_coverage("受付時間は？", contexts, []) is None
    assert best_covering_context("受付時間は？", contexts)[0] == 1 and best_covering_context("q", []) is None


@pytest.mark.parametrize(
    "kind, line",
    [
        ("restated", "（取り消し: 上の回答は質問に答えていません）"),
        ("incomplete", "（取り消し: 上の回答は質問に答えていません）"),
        ("off_topic", "（取り消し: 上の回答は質問に答えていません）"),
        ("wrong_cell", "（取り消し: 上の回答は質問された列の値ではありません）"),
    ],
)
def test_the_streamed_withdrawal_says_why(kind, line):
    from app.workflow.withdrawals import streamed_note as unsupported_note

    assert unsupported_note([], "資料の該当箇所: 「…」[1]", kind) == f"{line}\n資料の該当箇所: 「…」[1]"
