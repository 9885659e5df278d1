"""``python -m app.graphrag`` (``make graph``): rebuild the graph from what is stored."""

from app.graphrag.cli import main

raise SystemExit(main())
