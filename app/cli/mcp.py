"""``python -m app.mcp [--http HOST:PORT] [--watch]`` (``make serve``): serve the MCP server (app.mcp.server)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from app.cli import add_serving_arguments, run
from app.cli.servers import service_factory
from app.config import get_settings
from app.ingestion.sync import scan  # the readers of every format: only when watching
from app.mcp import server
from app.permissions.readers import permissions_on
from app.serving.access import resolve_token
from app.serving.gate import access_gate
from app.storage import get_engine
from app.users.identity import principals_for_user


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
        gate = access_gate(settings, Path(data_dir), lambda: get_engine(settings))
        gate.mode()  # at start: a locked server says so now (a warning line), not at the first call
        mcp_server = server.build_server(
            service_factory(settings, Path(data_dir), args),
            as_user=settings.access.mcp_as_user if http is None else "",
            permissions_on=lambda: permissions_on(settings, Path(data_dir)),
            feedback=settings.memory.feedback,
            gate=gate,
        )
        if http is None:
            if settings.access.mcp_as_user:  # an unknown user fails now, not at the first tool call
                principals_for_user(get_engine(settings), settings.access.mcp_as_user)
            mcp_server.run("stdio")
        else:
            # a bad ALLOWED_HOSTS/ORIGINS entry fails here
            app = server.http_app(mcp_server, settings, *http, token, gate=gate)
            for line in server.start_lines(*http, token, settings.access.public_url):
                print(line, file=sys.stderr, flush=True)
            server.serve_http(app, *http, mcp_server.settings.log_level)
        return 0

    return run(body, debug=args.debug, server=True)


if __name__ == "__main__":
    raise SystemExit(main())
