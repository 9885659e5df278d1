"""app.errors.one_line: the one-line form of an exception that warnings show (store, watcher)."""

import pytest

from app.errors import one_line


@pytest.mark.parametrize(
    "exc, expected",
    [
        (ValueError("bad value\nTraceback (most recent call last):"), "ValueError: bad value"),
        (OSError(), "OSError"),
        (RuntimeError("  \n"), "RuntimeError"),
        (KeyError("x" * 300), "KeyError: '" + "x" * 199),
    ],
)
def test_one_line_keeps_the_type_and_the_first_line_at_most_200_characters(exc, expected):
    assert one_line(exc) == expected
