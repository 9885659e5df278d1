"""``python -m app.tune`` (``make tune``): choose RRF_K / HYBRID_WEIGHTS on a question set, retrieval only.

The tuning itself is :mod:`app.evaluation.tune`; the command line :mod:`app.cli.tune`.
"""

if __name__ == "__main__":  # `python -m app.tune` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.tune", run_name="__main__")
