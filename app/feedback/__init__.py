"""The askers' feedback on answers: ``python -m app.feedback export FILE`` writes the questions flagged 👎
with a chosen source as an evaluation set (``python -m app.evaluate --questions FILE``); ``list`` shows the
most flagged questions (app.cli.feedback).

The checks live in :mod:`app.serving.feedback` (shared by the page and MCP), the rows in
:mod:`app.storage.feedback`. This package holds only the command's entry point: it imports app.cli.feedback
from its ``__main__`` and nothing else.
"""
