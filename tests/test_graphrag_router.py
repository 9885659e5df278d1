"""The mode router (app.graphrag.router): the rule table, validation, and the fallback without a graph."""

from __future__ import annotations

import pytest

from app.graphrag.router import Route, choose_mode, route, validate_mode


@pytest.mark.parametrize(
    "question, mode",
    [
        ("資料全体の傾向を教えてください", "global"),
        ("このサービスの主なテーマをまとめてください", "global"),
        ("製品の一覧を見せて", "global"),
        ("会社概要を要約して", "global"),
        ("どのような種類の製品がありますか？", "global"),
        ("VPNとワンタイムパスワードの関係は？", "local"),
        ("ミナト経費精算とミナト給与の違いは？", "local"),
        ("APIキーに関連する設定は？", "local"),
        ("サポートの受付時間は何時から何時までですか？", "hybrid"),
        ("エラーコードE3010は何を意味しますか？", "hybrid"),
        ("", "hybrid"),
    ],
)
def test_choose_mode_rule_table(question, mode):
    assert choose_mode(question).mode == mode


def test_choose_mode_says_which_rule():
    assert choose_mode("全体の傾向は？") == Route("global", "overview cue '全体'")
    assert choose_mode("AとBの関係は？") == Route("local", "relation cue '関係'")


@pytest.mark.parametrize(
    "mode, expected", [("local", "local"), (" GLOBAL ", "global"), (None, "hybrid"), ("auto", "auto")]
)
def test_validate_mode(mode, expected):
    assert validate_mode(mode) == expected


def test_validate_mode_unknown_lists_the_valid_ones():
    with pytest.raises(ValueError) as err:
        validate_mode("drift")
    assert str(err.value) == "mode must be one of hybrid, vector, keyword, local, global, auto, got 'drift'"


def test_route_keeps_an_explicit_mode_and_falls_back_without_a_graph():
    assert route("keyword", "全体の傾向は？") == Route("keyword", "asked for")
    assert route("auto", "全体の傾向は？").mode == "global"
    fallback = route("auto", "全体の傾向は？", graph_ready=False)
    assert fallback.mode == "hybrid" and "the graph is not built (run `make graph`)" in fallback.reason
    assert route("auto", "受付時間は？", graph_ready=False) == Route("hybrid", "no overview or relation cue")
