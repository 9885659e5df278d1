"""app.formats.page_words: Tesseract's TSV as the words kept with their boxes, and their stored form."""

from __future__ import annotations

from app.formats.page_words import PageWords, words_from_tsv

HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
TSV = "\n".join(
    [
        HEADER,
        "1\t1\t0\t0\t0\t0\t0\t0\t1300\t360\t-1\t",
        "4\t1\t1\t1\t1\t0\t62\t63\t441\t36\t-1\t",
        "5\t1\t1\t1\t1\t1\t62\t63\t134\t36\t96.5\t就業規則",
        "5\t1\t1\t1\t1\t2\t220\t64\t60\t35\t91.0\t第3条",
        "5\t1\t1\t1\t1\t3\t300\t64\t10\t35\t10.0\t ",  # a blank word: left out
        "5\t1\t1\t1\t2\t1\t62\t143\t861\t36\t95.1\t社員の勤務時間は",
        "5\t1\t2\t1\t1\t1\t62\t223\t500\t36\t93.3\t休憩時間は",
        "5\t1\t2\t1",  # a cut row: left out
    ]
)


def test_words_from_tsv_keeps_each_word_with_its_box_and_line():
    assert words_from_tsv(TSV, 1300, 360) == PageWords(
        1300,
        360,
        (
            ("就業規則", 62, 63, 134, 36, 0),
            ("第3条", 220, 64, 60, 35, 0),
            ("社員の勤務時間は", 62, 143, 861, 36, 1),
            ("休憩時間は", 62, 223, 500, 36, 2),  # another block: another line
        ),
    )
    assert words_from_tsv(HEADER, 10, 20) == PageWords(10, 20, ())


def test_the_stored_form_is_compact_json_and_reads_back_the_same():
    words = PageWords(1300, 360, (("就業規則", 62, 63, 134, 36, 0), ('"引用"', 1, 2, 3, 4, 1)))
    assert words.as_json() == '[["就業規則",62,63,134,36,0],["\\"引用\\"",1,2,3,4,1]]'
    assert PageWords.from_rows(1300, 360, words.as_json()) == words
    assert PageWords.from_rows("1300", 360.0, [["就業規則", 62, 63, 134, 36, 0], ['"引用"', 1, 2, 3, 4, 1]]) == words
