"""Checks over an answer's text (pure functions, no model, no I/O).

* :mod:`app.workflow.checks.support` — how much of an answer the contexts state;
* :mod:`app.workflow.checks.quote` — the verbatim quote under an answer, and the passage instead
  of a withdrawn answer;
* :mod:`app.workflow.checks.guard` — answers that carry a document's instructions or links.

May import :mod:`app.text` and :mod:`app.workflow.answers`.
"""
