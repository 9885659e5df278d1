"""Text a request may not carry (app.text.storable): exact messages for each kind of character, and
what ordinary Japanese business text keeps."""

import pytest

from app.text.storable import UnstorableTextError, check_fields, check_storable, unstorable_reason


@pytest.mark.parametrize(
    "text, expected",
    [
        ("ab\x00cd", "question contains a NUL character (U+0000) at character 3; remove it and try again"),
        ("\ud800", "question contains a lone surrogate (U+D800) at character 1; remove it and try again"),
        ("料金\udcff", "question contains a lone surrogate (U+DCFF) at character 3; remove it and try again"),
        ("x\ufffe", "question contains a non-character (U+FFFE) at character 2; remove it and try again"),
        ("\uffff", "question contains a non-character (U+FFFF) at character 1; remove it and try again"),
        ("\ufdd0", "question contains a non-character (U+FDD0) at character 1; remove it and try again"),
        ("\U0010ffff", "question contains a non-character (U+10FFFF) at character 1; remove it and try again"),
        ("\x1b[31m", "question contains a control character (U+001B) at character 1; remove it and try again"),
        ("a\x07", "question contains a control character (U+0007) at character 2; remove it and try again"),
        ("\x7f", "question contains a control character (U+007F) at character 1; remove it and try again"),
        ("\x9b", "question contains a control character (U+009B) at character 1; remove it and try again"),
        # the first offending character is named, whatever follows
        ("a\x01\x00", "question contains a control character (U+0001) at character 2; remove it and try again"),
    ],
)
def test_unstorable_reason_names_the_first_bad_character(text, expected):
    assert unstorable_reason(text, "question") == expected
    with pytest.raises(UnstorableTextError) as info:
        check_storable(text, "question")
    assert str(info.value) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "受付時間は？",
        "行1\n行2\r\n\t列",  # tab, line feed and carriage return are typed
        "\ue000外字",  # private use: a company's own characters
        "\ufeffBOM",
        "ｶﾀｶﾅ①㈱",
        "\U0001f600",  # a character outside the BMP (a surrogate pair in UTF-16, one code point here)
        "\ufdef\ufffd"[1:],  # U+FFFD, the replacement character, is ordinary text
    ],
)
def test_ordinary_text_is_storable(text):
    assert unstorable_reason(text, "question") is None
    assert check_storable(text, "question") == text


def test_check_fields_names_the_field_and_the_list_item():
    check_fields({"answer_id": "a1", "source": None, "helpful": False, "history": ["前の質問"]})
    with pytest.raises(UnstorableTextError) as info:
        check_fields({"question": "ok", "history": ["前の質問", "x\x00"]})
    assert str(info.value) == "history[1] contains a NUL character (U+0000) at character 2; remove it and try again"
    with pytest.raises(UnstorableTextError) as info:
        check_fields({"comment": "\ud83d"})  # half of an emoji's pair
    assert str(info.value) == "comment contains a lone surrogate (U+D83D) at character 1; remove it and try again"
