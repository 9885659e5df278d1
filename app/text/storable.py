"""Text a person sends that cannot be stored or shown safely, found before any work is done.

Every face (the page, MCP, the CLIs) passes what a request carries — questions, comments, IDs, names,
modes — through :func:`check_storable` before retrieval, generation or a database write, and turns its
:class:`UnstorableTextError` into one line (400, a tool error, exit 2).

Refused, with the first offending character named by its code point and position:

* NUL (U+0000): PostgreSQL's ``text`` cannot hold it (the insert fails with a DataError);
* a lone surrogate (U+D800–U+DFFF): no UTF-8 encoding exists (``\\ud800`` in JSON, or an argument
  whose bytes were not UTF-8, which Python decodes to U+DC80–U+DCFF); encoding it fails mid-answer;
* a non-character (U+FDD0–U+FDEF and the last two code points of every plane, U+FFFE, U+FFFF, …):
  Unicode reserves them for a program's own use, never for interchange;
* any other control character (C0 but tab, line feed and carriage return; DEL; C1 U+0080–U+009F):
  nobody types them, and an escape sequence kept in a question would reach the terminal that lists
  the audit log or the flagged questions.

Private-use characters (外字), the byte-order mark and unassigned code points are ordinary text.
"""

from __future__ import annotations

from collections.abc import Mapping

KEPT_CONTROLS = frozenset("\t\n\r")


class UnstorableTextError(ValueError):
    """A request's text holds a character that cannot be stored; the message is the one line shown."""


def unstorable_kind(char: str) -> str | None:
    """What makes one character unstorable (``"a NUL character"``, ``"a lone surrogate"``,
    ``"a non-character"``, ``"a control character"``), or None for an ordinary one."""
    code = ord(char)
    if code == 0:
        return "a NUL character"
    if 0xD800 <= code <= 0xDFFF:
        return "a lone surrogate"
    if 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE:
        return "a non-character"
    if (code < 0x20 and char not in KEPT_CONTROLS) or 0x7F <= code <= 0x9F:
        return "a control character"
    return None


def unstorable_reason(text: str, name: str) -> str | None:
    """The one line that refuses ``text`` (the field called ``name``) for its first unstorable
    character, or None when every character can be stored; positions count from 1."""
    for position, char in enumerate(text, 1):
        kind = unstorable_kind(char)
        if kind is not None:
            return f"{name} contains {kind} (U+{ord(char):04X}) at character {position}; remove it and try again"
    return None


def check_storable(text: str, name: str) -> str:
    """``text`` unchanged when every character can be stored; :class:`UnstorableTextError` otherwise."""
    reason = unstorable_reason(text, name)
    if reason is not None:
        raise UnstorableTextError(reason)
    return text


def check_fields(fields: Mapping[str, object]) -> None:
    """:func:`check_storable` on every string among ``fields`` (name → value) and on the strings of a
    list value (``history[2]``); other values are left to the caller's own checks."""
    for name, value in fields.items():
        if isinstance(value, str):
            check_storable(value, name)
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                if isinstance(item, str):
                    check_storable(item, f"{name}[{index}]")
