"""scripts/compare_analyzers.py: the katakana measure behind README's "Why SudachiPy", on exact values."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compare_analyzers.py"
spec = importlib.util.spec_from_file_location("compare_analyzers", SCRIPT)
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)


@pytest.mark.parametrize(
    "words,expected",
    [
        (["ソースコード", "の", "アーキテクチャ"], (2, 0, 0)),  # both kept whole
        (["ソース", "コード", "の", "アーキテクチャ"], (2, 1, 0)),  # split between two words: not mid-word
        (["ソースコード", "の", "アーキテク", "チャ"], (2, 1, 0)),
        (["ソースコード", "の", "ア", "ーキテクチャ"], (2, 1, 1)),  # a one-letter piece, a piece starting with ー
        (["アイコ", "ン"], (1, 1, 1)),
    ],
)
def test_katakana_cuts(words, expected):
    assert compare.katakana_cuts("".join(words), words) == expected


def test_runs_the_pdf_already_broke_are_left_out():
    # "ァイル" begins with a small kana: the PDF lost the フ before it, the analyzer is not to blame
    assert compare.katakana_cuts("ァイルを開く", ["ァ", "イル", "を", "開く"]) == (0, 0, 0)


def test_boundaries_skip_words_not_found():
    assert compare.boundaries("パッケージ管理", ["パッケージ", "X", "管理"]) == {0, 5, 7}
