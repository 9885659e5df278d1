"""``python -m app.watch`` (``make watch``): keep the store in sync with the data dir as files change.

The watching itself is :mod:`app.ingestion.watch`; the command line :mod:`app.cli.watch`.
"""

if __name__ == "__main__":  # `python -m app.watch` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.watch", run_name="__main__")
