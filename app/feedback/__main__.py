"""``python -m app.feedback``: export the flagged questions as an evaluation set, list the most flagged (app.cli.feedback)."""

from app.cli.feedback import main

raise SystemExit(main())
