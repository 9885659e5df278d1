"""Evaluation: the question sets run through the same workflow as ``ask``, and their reports.

* :mod:`app.evaluation.run` — loading questions, one question's evaluation, the run and its summary;
* :mod:`app.evaluation.report` — the §4.11 report and the per-question table;
* :mod:`app.evaluation.tune` — choosing the fusion and abstention settings (``make tune``).

The spec's faces are :mod:`app.evaluate` and :mod:`app.metrics`. May import :mod:`app.graph`,
:mod:`app.metrics`, :mod:`app.retrieval`, :mod:`app.workflow`; never serving or the CLI.
"""
