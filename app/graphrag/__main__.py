"""``python -m app.graphrag`` (``make graph``): rebuild the graph from what is stored (app.cli.graphrag)."""

from app.cli.graphrag import main

raise SystemExit(main())
