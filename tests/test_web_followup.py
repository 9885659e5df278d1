"""app.web.followup: follow-up questions made to stand alone, with exact values."""

import pytest

from app.web.followup import standalone, topic_of


@pytest.mark.parametrize(
    "question, topic",
    [
        ("サポート窓口の受付時間は？", "サポート窓口の受付時間"),
        ("ミナトVPNの接続方法を教えてください。", "ミナトVPNの接続方法"),
        ("有給休暇の申請期限はいつですか", "有給休暇の申請期限"),
        ("E3010とは？", "E3010"),
        ("は？", "は"),
    ],
)
def test_topic_of(question, topic):
    assert topic_of(question) == topic


@pytest.mark.parametrize(
    "question, history, expected",
    [
        ("それは土日も？", ["サポート窓口の受付時間は？"], "サポート窓口の受付時間は土日も？"),
        ("その料金は？", ["ミナトVPNの接続方法を教えてください"], "ミナトVPNの接続方法の料金は？"),
        ("では、土日は？", ["サポート窓口の受付時間は？"], "サポート窓口の受付時間について、土日は？"),
        ("土日は？", ["サポート窓口の受付時間は？"], "サポート窓口の受付時間について、土日は？"),
        (
            "同じ条件で契約社員の場合は？",
            ["有給休暇の申請期限はいつですか"],
            "有給休暇の申請期限について、同じ条件で契約社員の場合は？",
        ),
        ("有給休暇の申請期限はいつですか", ["サポート窓口の受付時間は？"], "有給休暇の申請期限はいつですか"),
        (" それは土日も？ ", [], "それは土日も？"),
        ("それは土日も？", ["  "], "それは土日も？"),
        ("それは？", ["A は？", "サポート窓口の受付時間は？"], "サポート窓口の受付時間は？"),
    ],
)
def test_standalone(question, history, expected):
    assert standalone(question, history) == expected
