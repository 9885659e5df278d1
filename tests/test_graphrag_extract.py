"""Entity extraction (app.graphrag.extract): the real SudachiPy analyzer on fixed Japanese sentences
(its dictionary ships in the wheel; nothing is downloaded), exact entities expected."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake import FakeListLLM

from app.graphrag import extract
from app.graphrag.extract import (
    assemble,
    chunk_graph,
    english_prose,
    entity_key,
    fast_extract,
    graph_from_json,
    keep_latin,
    llm_extract,
    units_of,
)


@pytest.fixture(scope="module")
def analyzer():
    return extract.SudachiAnalyzer()


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "Debian のパッケージ管理システムは apt-get を使います。",
            [("Debian", "latin"), ("パッケージ管理システム", "noun"), ("apt-get", "latin")],
        ),
        (
            "エラーコードE3010は処理のタイムアウトを表します。",
            [("エラーコードE3010", "noun"), ("E3010", "latin"), ("タイムアウト", "noun")],
        ),
        ("CSVファイルでエクスポートできます", [("CSVファイル", "noun"), ("CSV", "latin"), ("エクスポート", "noun")]),
        ("交通系ICカード連携、承認ワークフロー", [("交通系ICカード連携", "noun"), ("承認ワークフロー", "noun")]),
        ("Debian Policy Manual を読んでください。", [("Debian Policy Manual", "latin")]),
        ("2015年10月に大阪支社を開設しました。", [("大阪支社", "proper")]),
        ("このファイルを使用する場合は注意が必要です。", [("ファイル", "noun")]),  # 場合: formal; 注意: two kanji
        ("1ユーザーあたり月額500円", [("ユーザー", "noun")]),  # あたり ends the phrase; 月額: two kanji
        ("サービスの利用と契約について", [("サービス", "noun")]),  # 利用, 契約: lone two-kanji common nouns
        (
            '"apt-get build-dep" は "/etc/apt/sources.list" の "deb-src" エントリーが必要です。',
            [
                ("apt-get", "latin"),
                ("build-dep", "latin"),
                ("/etc/apt/sources.list", "latin"),
                ("deb-src", "latin"),
                ("エントリー", "noun"),
            ],
        ),
    ],
)
def test_noun_phrases_on_fixed_sentences(analyzer, text, expected):
    assert analyzer.noun_phrases(text) == expected


def test_noun_phrases_drop_plain_words_in_english_prose(analyzer):
    text = "This option will install the package with dpkg-buildpackage and APT."
    assert analyzer.noun_phrases(text) == [("dpkg-buildpackage", "latin"), ("APT", "latin")]


def test_assemble_joins_a_latin_run_the_analyzer_split():
    text = "apt-getを使う"
    words = [
        (0, 3, "apt", "N", "", False),
        (3, 4, "-", "B", "", False),
        (4, 7, "get", "N", "", False),
        (7, 8, "を", "B", "", False),
        (8, 10, "使う", "B", "", False),
    ]
    assert assemble(text, words) == [("apt-get", "latin")]


def test_assemble_number_and_counter_end_a_phrase():
    text = "17年間の保守"
    words = [
        (0, 2, "17", "NUM", "", False),
        (2, 3, "年", "C", "", False),
        (3, 4, "間", "S", "", False),
        (4, 5, "の", "B", "", False),
        (5, 7, "保守", "N", "sahen", False),
    ]
    assert assemble(text, words) == []  # 保守: a lone two-kanji common noun


@pytest.mark.parametrize(
    "text, prose, kept",
    [
        ("a", False, False),
        ("3.0", False, False),
        ("2GiB", False, False),
        ("the", False, False),
        ("dpkg", False, True),
        ("package", True, False),
        ("Debian", True, True),
        ("x86_64", True, True),
    ],
)
def test_keep_latin(text, prose, kept):
    assert keep_latin(text, prose) is kept


def test_english_prose():
    assert english_prose("This option will install the package.") is True
    assert english_prose("Debian のパッケージ管理システムは apt-get を使います。") is False
    assert english_prose("apt-get install") is False  # too few words to call it prose


def test_units_of_a_csv_row_is_one_sentence_without_labels():
    text = "製品名:ミナト経費精算\n価格:月額500円\n仕様:領収書の読み取り。承認ワークフロー"
    assert units_of(text, {"source": "products.csv:r2"}) == [
        "ミナト経費精算 月額500円 領収書の読み取り。承認ワークフロー"
    ]
    assert units_of("一文目です。二文目です。\n三行目", {"source": "guide.pdf:p1"}) == [
        "一文目です。",
        "二文目です。",
        "三行目",
    ]


def test_chunk_graph_counts_mentions_and_same_sentence_pairs():
    phrases = {
        "AとBとA。": [("A", "latin"), ("B", "latin"), ("A", "latin")],
        "BとC。": [("B", "latin"), ("C", "latin")],
    }
    graph = chunk_graph(["AとBとA。", "BとC。"], lambda unit: phrases[unit])
    assert {k: (m.title, m.count, m.sentence) for k, m in graph.mentions.items()} == {
        "a": ("A", 2, "AとBとA。"),
        "b": ("B", 2, "AとBとA。"),
        "c": ("C", 1, "BとC。"),
    }
    assert graph.pairs == {("a", "b"): 1, ("b", "c"): 1}


def test_fast_extract_keys_are_normalized(analyzer):
    graph = fast_extract("ＡＰＩキーとAPIを使う。", {"source": "t.md"}, analyzer)
    assert set(graph.mentions) == {"apiキー", "api"}
    assert graph.pairs == {("api", "apiキー"): 1}


def test_entity_key():
    assert entity_key(" Debian  Policy ") == "debian policy"
    assert entity_key("ＡＰＩ") == "api"


def test_graph_from_json_keeps_only_entities_in_the_text():
    text = "ミナト経費精算は領収書を読み取ります。"
    value = {
        "entities": [
            {"name": "ミナト経費精算", "type": "製品", "description": "経費精算の製品"},
            {"name": "領収書", "type": "書類"},
            {"name": "架空の製品", "type": "製品"},
        ],  # not in the text: invented
        "relationships": [
            {"source": "ミナト経費精算", "target": "領収書", "description": "読み取る"},
            {"source": "ミナト経費精算", "target": "架空の製品"},
        ],
    }
    graph = graph_from_json(value, text)
    assert {k: (m.kind, m.sentence) for k, m in graph.mentions.items()} == {
        "ミナト経費精算": ("製品", "経費精算の製品"),
        "領収書": ("書類", "ミナト経費精算は領収書を読み取ります。"),
    }
    assert graph.pairs == {("ミナト経費精算", "領収書"): 1}
    assert not graph_from_json(["not", "a", "dict"], text)


def test_llm_extract_with_a_fake_llm_returning_fixed_json():
    llm = FakeListLLM(responses=['```json\n{"entities": [{"name": "VPN", "type": "技術"}], "relationships": []}\n```'])
    graph = llm_extract("在宅勤務ではVPNで接続します。", {"source": "guide.md"}, llm)
    assert list(graph.mentions) == ["vpn"]


def test_llm_extract_unreadable_answer_is_an_empty_graph(caplog):
    llm = FakeListLLM(responses=["すみません、わかりません"])
    assert not llm_extract("在宅勤務ではVPNで接続します。", {"source": "guide.md"}, llm)
    assert "could not be read" in caplog.text


def test_chunk_extractor_off_gives_empty_graphs():
    from app.config import Settings

    assert not extract.chunk_extractor(Settings().changed(graph={"extractor": "off"}))("Debian のパッケージ", {})
