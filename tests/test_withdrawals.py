"""The reasons an answer is withdrawn and how each face says so (app.workflow.withdrawals)."""

import pytest

from app.workflow.withdrawals import NOT_ANSWERING, WITHDRAWN, status_line, streamed_note


@pytest.mark.parametrize(
    "abstained, withdrawn, line",
    [
        (None, [], None),
        ("unsupported", ["9800"], "回答に資料にない「9800」が含まれていたため取り消しました。近い出典を示します。"),
        (
            "unstated",
            ["Go", "Rust"],
            "回答に資料にない「Go」「Rust」が含まれていたため取り消しました。近い出典を示します。",
        ),
        ("restated", [], "回答が質問の繰り返しだったため取り消しました。資料の該当箇所を示します。"),
        ("incomplete", [], "回答が途中で切れていたため取り消しました。資料の該当箇所を示します。"),
        ("off_topic", [], "回答の出典が質問とずれていたため取り消しました。資料の該当箇所を示します。"),
        ("model", [], "資料に答えが見つかりませんでした。近い出典を示します。"),
        ("absent_value", [], "資料に答えが見つかりませんでした。近い出典を示します。"),
    ],
)
def test_the_status_line_names_why(abstained, withdrawn, line):
    assert status_line(abstained, withdrawn) == line


def test_every_reason_that_says_nothing_asked_is_a_withdrawal():
    assert set(NOT_ANSWERING) < set(WITHDRAWN) and {"unsupported", "unstated"} < set(WITHDRAWN)


def test_the_command_line_note_names_the_numbers_or_words():
    assert streamed_note(["9800", "500"], "資料に記載がありません。") == (
        "（取り消し: 上の回答の数値 9800、500 はどの資料にも書かれていません）\n資料に記載がありません。"
    )
    assert (
        streamed_note(["Go"], "答え", "unstated")
        == "（取り消し: 上の回答の「Go」はどの資料にも書かれていません）\n答え"
    )
    assert streamed_note([], "答え", "wrong_cell") == "（取り消し: 上の回答は質問された列の値ではありません）\n答え"
