"""``python -m app.graphrag`` (``make graph``): rebuild the graph from what is stored (app.cli.graph)."""

from app.cli.graph import main

raise SystemExit(main())
