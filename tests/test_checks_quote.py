"""app.workflow.evidence: the verbatim sentence an answer was taken from (exact values)."""

from __future__ import annotations

import pytest

from app.workflow.checks.quote import MAX_QUOTE_CHARS, Quote, find_quote

CONTEXTS = [
    "出張の申請は出発の3営業日前までに上長の承認を得てください。旅費は翌月精算です。",
    "経費精算の締め切りは毎月25日です。領収書の原本を経理部に提出してください。",
    "version:22.04 LTS\ncodename:Jammy Jellyfish\nrelease:2022-04-21",
]


@pytest.mark.parametrize(
    "answer, query, cited, expected",
    [
        # 毎月 25 日で: all three terms of the answer
        ("毎月25日です。[2]", "経費精算の締め切りは？", [2], Quote(2, "経費精算の締め切りは毎月25日です。", 1.0)),
        # 25 and 25日 of {25, 日, 25日}; cited [1] wrongly, the quote says where it is
        ("25日[1]", "経費精算の締め切りは？", [1], Quote(2, "経費精算の締め切りは毎月25日です。", 0.667)),
        # 8 of the 9 terms the answer adds to the question (not でで)
        (
            "出発の3営業日前までです。",
            "出張の申請はいつまで？",
            [],
            Quote(1, "出張の申請は出発の3営業日前までに上長の承認を得てください。", 0.889),
        ),
        ("Jammy Jellyfish です[3]", "22.04 のコードネームは？", [3], Quote(3, "codename:Jammy Jellyfish", 1.0)),
        # the date in another form: 8 of 9 terms (not 日で)
        ("2022年4月21日です。", "22.04 の公開日は？", [], Quote(3, "release:2022-04-21", 0.889)),
        ("毎月20日です。", "経費精算の締め切りは？", [], None),  # a number no sentence states
        ("社員食堂は3階です。", "社員食堂は？", [], None),  # nothing like it: 3 alone is not 3階
        # an answer of two sentences: the two neighbouring sentences that hold it (17 of 19 terms)
        (
            "3営業日前までに承認を得ます。旅費は翌月精算です。",
            "出張の申請は？",
            [],
            Quote(1, "出張の申請は出発の3営業日前までに上長の承認を得てください。旅費は翌月精算です。", 0.895),
        ),
        # an answer that restates the question: what it adds decides (the row, not the question's words)
        (
            "22.04 のコードネームは Jammy Jellyfish です",
            "22.04 のコードネームは？",
            [],
            Quote(3, "codename:Jammy Jellyfish", 1.0),
        ),
        ("", "質問", [], None),
    ],
)
def test_find_quote(answer, query, cited, expected):
    assert find_quote(answer, CONTEXTS, query, cited) == expected


def test_quote_line_and_a_long_sentence_cut_around_the_answer():
    long = "前置き" * 80 + "返品は購入から30日以内に受け付けます" + "後書き" * 80 + "。"
    quote = find_quote("購入から30日以内です。", [long], "返品の期限は？")
    assert quote is not None and quote.text.startswith("…") and quote.text.endswith("…")
    assert "購入から30日以内" in quote.text and len(quote.text) == MAX_QUOTE_CHARS + 2
    assert Quote(2, "締め切りは毎月25日です。", 1.0).line() == "根拠: 「締め切りは毎月25日です。」[2]"


def test_two_sentences_across_a_line_break_are_joined_by_a_space_and_a_particle_is_no_unit():
    from app.workflow.checks.quote import _spans, _terms

    spans = [text for text, _, size in _spans("受付は平日です。\n土日は休みです。") if size == 2]
    assert spans == ["受付は平日です。 土日は休みです。"]
    assert "3で" not in _terms("3です") and "3階" in _terms("3階です") and "5%" in _terms("5%です")
