"""``python -m app.worker``: take files from the ingest queue and stage them (app.cli.worker)."""

from app.cli.worker import main

raise SystemExit(main())
