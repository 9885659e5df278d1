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


def test_a_server_shows_its_ready_line_at_info_and_other_commands_do_not(capsys):
    """Issue 40, case 7: "ready in …" was logged as a WARNING; a server now shows the serving layer's
    INFO lines (ready, what runs, each sync) as INFO, and an ordinary command stays quiet."""
    import logging

    from app.cli import run

    def say() -> int:
        logging.getLogger("app.serving.warm").info("ready in 1.00 s")
        return 0

    logging.getLogger("app.serving").setLevel(logging.NOTSET)
    assert run(say) == 0
    assert capsys.readouterr().err == ""
    assert run(say, server=True) == 0
    assert capsys.readouterr().err == "INFO: ready in 1.00 s\n"
    logging.getLogger("app.serving").setLevel(logging.NOTSET)
