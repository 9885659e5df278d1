from app.mcp.server import main

raise SystemExit(main())
