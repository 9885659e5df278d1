"""``python -m app.mcp`` (``make serve``): the MCP server's command line (app.cli.mcp)."""

from app.cli.mcp import main

raise SystemExit(main())
