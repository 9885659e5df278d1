"""``python -m app.web`` (``make web``): the web page's command line (app.cli.web)."""

from app.cli.web import main

raise SystemExit(main())
