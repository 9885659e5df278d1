"""``python -m app.web [--host H] [--port P] [--watch]`` (``make web``): serve the web page (app.web)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from app.cli import add_serving_arguments, run
from app.config import get_settings
from app.errors import RagError
from app.serving.access import host_port, is_loopback, server_hosts, weak_token_warning

DEFAULT_PORT = 8780


def start_lines(host: str, port: int, token: str) -> list[str]:
    """What the server says at start: the URL to open, and beyond loopback that the secret is needed
    (never the secret itself)."""
    url = f"http://{host_port('127.0.0.1' if host in ('0.0.0.0', '::', '') else host, port)}/"
    lines = [f"web page on {url} (Ctrl-C to stop)"]
    if not is_loopback(host):
        lines.append(
            f"warning: listening on {host}: every request needs WEB_TOKEN (people open {url}?token=<WEB_TOKEN> "
            f"once); the traffic is not encrypted (use an SSH tunnel or a TLS proxy); Host names accepted: "
            f"{', '.join(server_hosts(host, port)) or 'none'} (add more with ALLOWED_HOSTS)"
        )
    weak = weak_token_warning(token, "WEB_TOKEN")
    if weak:
        lines.append(weak)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: serve until Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m app.web", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    add_serving_arguments(parser)
    args = parser.parse_args(argv)

    def body() -> int:
        from app.web.server import serve

        settings = get_settings()
        token = settings.servers.web_token
        if not is_loopback(args.host) and not token:
            raise RagError(
                f"listening on {args.host} lets other machines ask: set WEB_TOKEN to a shared secret first "
                "(e.g. WEB_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe(24))'))"
            )
        for line in start_lines(args.host, args.port, token):
            print(line, file=sys.stderr, flush=True)
        serve(
            settings,
            args.data_dir or settings.ingest.data_dir,
            args.host,
            args.port,
            args.watch,
            args.debounce_ms,
            preload_llm=not args.no_preload,
        )
        return 0

    return run(body, debug=args.debug, server=True)


if __name__ == "__main__":
    raise SystemExit(main())
