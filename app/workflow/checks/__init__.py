"""Checks over an answer's text (pure functions, no model, no I/O).

* :mod:`app.workflow.checks.citations` — the ``[n]`` an answer cites, cleaned; the refusal recognized;
* :mod:`app.workflow.checks.numbers` — numbers and named values no context states;
* :mod:`app.workflow.checks.coverage` — how much of the question the contexts cover;
* :mod:`app.workflow.checks.support` — how much of an answer the contexts state;
* :mod:`app.workflow.checks.quote` — the verbatim quote under an answer, and the passage instead
  of a withdrawn answer;
* :mod:`app.workflow.checks.guard` — answers that carry a document's instructions or links;
* :mod:`app.workflow.checks.restated` — answers that give the question back or stop before their value;
* :mod:`app.workflow.checks.cells` — table rows read as cells: the asked cell, values no row holds.

May import :mod:`app.config`, :mod:`app.text` and :mod:`app.workflow.prompts`.
"""
