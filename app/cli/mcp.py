"""``python -m app.mcp [--http HOST:PORT] [--watch]`` (``make serve``): serve the MCP server (app.mcp.server)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from app.cli import add_serving_arguments, run
from app.config import get_settings
from app.ingestion.sync import scan  # the readers of every format: only when watching
from app.mcp import server
from app.serving.access import resolve_token
from app.serving.warm import make_service_factory


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: serve until the client disconnects (stdio) or Ctrl-C (HTTP)."""
    parser = argparse.ArgumentParser(prog="python -m app.mcp", description=server.__doc__.split("\n")[0])
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        default=None,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (host default 127.0.0.1); "
        "every request needs Authorization: Bearer <token> (MCP_TOKEN or MCP_TOKEN_FILE)",
    )
    add_serving_arguments(parser)
    args = parser.parse_args(argv)

    def body() -> int:
        settings = get_settings()
        data_dir = args.data_dir or settings.ingest.data_dir
        http = server.parse_http(args.http) if args.http else None
        token = resolve_token(settings.servers.mcp_token, settings.servers.mcp_token_file) if http else None
        if args.watch:
            scan(data_dir)  # a missing data dir is an error before anything loads
        mcp_server = server.build_server(
            make_service_factory(settings, data_dir, args.watch, args.debounce_ms, preload_llm=not args.no_preload)
        )
        if http is None:
            mcp_server.run("stdio")
        else:
            app = server.http_app(mcp_server, settings, *http, token)  # a bad ALLOWED_HOSTS/ORIGINS entry fails here
            for line in server.start_lines(*http, token):
                print(line, file=sys.stderr, flush=True)
            server.serve_http(app, *http, mcp_server.settings.log_level)
        return 0

    return run(body, debug=args.debug, server=True)


if __name__ == "__main__":
    raise SystemExit(main())
