"""chunking.py: pure functions, exact outputs."""

import pytest

from app.chunking import split_by_structure, split_paragraphs, split_text

JA = "今日は晴れです。明日は雨です。明後日は雪です。"


@pytest.mark.parametrize("text", [None, "", "   ", "\n\n\t"])
def test_split_text_empty_input_gives_empty_list(text):
    assert split_text(text) == []


def test_split_text_short_text_is_one_stripped_chunk():
    assert split_text("  短い文です。 ", 500, 100) == ["短い文です。"]


def test_split_text_text_of_exactly_chunk_size_is_not_split():
    assert split_text("a" * 10, 10, 2) == ["a" * 10]


def test_split_text_cuts_at_whitespace_without_overlap():
    assert split_text("aaaa bbbb cccc dddd", 10, 0) == ["aaaa bbbb", "cccc dddd"]


def test_split_text_overlap_repeats_whole_words():
    assert split_text("aaaa bbbb cccc dddd", 10, 5) == ["aaaa bbbb", "bbbb cccc", "cccc dddd"]


def test_split_text_japanese_cuts_after_sentence_end():
    assert split_text(JA, 10, 0) == ["今日は晴れです。", "明日は雨です。", "明後日は雪です。"]


def test_split_text_japanese_overlap_repeats_whole_sentences():
    assert split_text(JA, 16, 8) == ["今日は晴れです。明日は雨です。", "明日は雨です。明後日は雪です。"]


def test_split_text_without_any_boundary_cuts_at_chunk_size():
    assert split_text("あいうえおかきくけこさしすせそ", 5, 0) == ["あいうえお", "かきくけこ", "さしすせそ"]


def test_split_text_hard_cut_with_overlap():
    assert split_text("あいうえおかきくけこさしすせそ", 5, 2) == [
        "あいうえお",
        "えおかきく",
        "きくけこさ",
        "こさしすせ",
        "すせそ",
    ]


def test_split_text_prefers_paragraph_break():
    assert split_text("第一段落です。\n\n第二段落はここです。", 12, 0) == ["第一段落です。", "第二段落はここです。"]


def test_split_text_english_sentences():
    assert split_text("Hello world. This is a test. Another sentence here.", 20, 0) == [
        "Hello world.",
        "This is a test.",
        "Another sentence",
        "here.",
    ]


def test_split_text_decimal_point_is_not_a_sentence_end():
    chunks = split_text("version 3.5 is here now ok", 14, 0)
    assert chunks == ["version 3.5 is", "here now ok"]


def test_split_text_japanese_comma_is_a_word_boundary():
    assert split_text("東京本社、大阪支社、福岡開発センター", 8, 0) == ["東京本社、", "大阪支社、", "福岡開発センター"]


def test_split_text_overlap_larger_than_chunk_size_terminates():
    assert split_text("one two three four five six seven", 12, 100) == [
        "one two",
        "two three",
        "three four",
        "four five",
        "five six",
        "six seven",
    ]


def test_split_text_overlap_equal_to_chunk_size_terminates():
    chunks = split_text("x" * 25, 10, 10)
    assert chunks[0] == "x" * 10 and chunks[-1].endswith("x") and len(chunks) == 4


@pytest.mark.parametrize("size,overlap", [(1, 0), (3, 1), (7, 3), (50, 10), (500, 100)])
def test_split_text_never_exceeds_chunk_size(size, overlap):
    text = (JA + "Latin words here. " + "あいうえお" * 20 + "\n\n") * 5
    assert all(len(c) <= size for c in split_text(text, size, overlap))


@pytest.mark.parametrize("size,overlap", [(10, 0), (20, 5), (50, 10)])
def test_split_text_loses_no_characters(size, overlap):
    text = "".join(f"第{i}文です。" for i in range(40))
    joined = "".join(split_text(text, size, overlap))
    assert all(f"第{i}文です" in joined for i in range(40))


def test_split_text_without_overlap_reassembles_exactly():
    text = "".join(f"第{i}文です。" for i in range(40))
    assert "".join(split_text(text, 20, 0)) == text


@pytest.mark.parametrize(
    "size,overlap,message", [(0, 0, "chunk_size must be >= 1, got 0"), (10, -1, "overlap must be >= 0, got -1")]
)
def test_split_text_rejects_bad_parameters(size, overlap, message):
    with pytest.raises(ValueError) as err:
        split_text("abc", size, overlap)
    assert str(err.value) == message


def test_split_text_default_parameters_are_500_and_100():
    text = "あ。" * 400  # 800 chars
    chunks = split_text(text)
    assert len(chunks) == 2 and len(chunks[0]) == 500


@pytest.mark.parametrize("text", [None, "", "  \n\n  "])
def test_split_by_structure_empty_input(text):
    assert split_by_structure(text) == []


def test_split_by_structure_returns_paragraphs_when_no_chunk_size():
    assert split_by_structure("段落一\n\n段落二\n\n\n段落三") == ["段落一", "段落二", "段落三"]


def test_split_by_structure_strips_and_drops_blank_paragraphs():
    assert split_by_structure("  一  \n\n   \n\n 二 ") == ["一", "二"]


def test_split_by_structure_blank_line_with_spaces_separates():
    assert split_by_structure("一\n \t\n二") == ["一", "二"]


def test_split_by_structure_single_newline_does_not_separate():
    assert split_by_structure("見出し\n本文です。") == ["見出し\n本文です。"]


def test_split_by_structure_long_paragraph_is_split_with_split_text():
    assert split_by_structure("短い。\n\n" + JA, 10, 0) == [
        "短い。",
        "今日は晴れです。",
        "明日は雨です。",
        "明後日は雪です。",
    ]


def test_split_by_structure_short_paragraphs_are_kept_whole():
    assert split_by_structure("あいう\n\nえお", 3, 1) == ["あいう", "えお"]


def test_split_by_structure_passes_overlap_on():
    assert split_by_structure(JA, 16, 8) == split_text(JA, 16, 8)


def test_split_paragraphs_windows_newlines_inside_paragraph_kept():
    assert split_paragraphs("a\r\nb\n\nc") == ["a\r\nb", "c"]
