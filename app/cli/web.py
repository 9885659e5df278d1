"""``python -m app.web [--host H] [--port P] [--watch]`` (``make web``): serve the web page (app.web)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from app.cli import add_serving_arguments, run
from app.config import get_settings
from app.errors import RagError
from app.permissions.readers import permissions_on
from app.serving.access import weak_token_warning
from app.serving.hosts import MachineNames, is_loopback, public_host, server_hosts, serving_line

DEFAULT_PORT = 8780
ACCESS_HINT = "data/access.toml: README, Users and permissions"


def permissions_line(settings, data_dir) -> str:
    """The start line saying who reads what: the access file in force, or single-team mode."""
    if not permissions_on(settings, data_dir):
        return (
            "single-team mode: no access file, so whoever gets in reads every document "
            f"(write {settings.access.file_in(data_dir)} to give folders to groups)"
        )
    source = "the files' own permissions (ACCESS_FROM_FS)" if settings.access.from_fs else ""
    found = settings.access.file_in(data_dir)
    named = f"{found}" + (f" and {source}" if source else "") if found.exists() else source
    return f"permissions: {named}; every request needs a personal token (python -m app.users token NAME)"


def start_lines(
    host: str, port: int, token: str, public_url: str = "", machine: MachineNames | None = None
) -> list[str]:
    """What the server says at start: the URL people open (PUBLIC_URL, else beyond loopback this
    machine's address, never only 127.0.0.1), and beyond loopback how the secret is sent and the Host
    names accepted (never a token itself: ``<token>`` stands for it)."""
    url, first = serving_line("web page", host, port, "/", public_url, machine)
    lines = [first]
    if not is_loopback(host):
        public = public_host(public_url)
        names = server_hosts(host, port, machine) + ((public,) if public else ())
        lines.append(
            f"colleagues open {url}?token=<token> once: <token> is their personal token (python -m app.users "
            "token NAME) or the shared secret WEB_TOKEN, never shown here (the page keeps it in a cookie, off the "
            "address bar); scripts send the header Authorization: Bearer <token>"
        )
        lines.append(
            f"warning: listening on {host}: every request needs a token; the traffic is not encrypted (use an "
            f"SSH tunnel, or a TLS proxy and PUBLIC_URL); Host names accepted: "
            f"{', '.join(dict.fromkeys(names)) or 'none'} (add more with ALLOWED_HOSTS)"
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
        from app.cli.servers import service_factory
        from app.serving.gate import LOCKED, access_gate
        from app.storage import get_engine
        from app.web.server import serve

        settings = get_settings()
        token = settings.servers.web_token
        data_dir = args.data_dir or settings.ingest.data_dir
        users = permissions_on(settings, data_dir)
        if not is_loopback(args.host) and not token and not users:
            raise RagError(
                f"listening on {args.host} lets other machines ask: write an access file ({ACCESS_HINT}) and "
                "give people personal tokens (python -m app.users), or set WEB_TOKEN to a shared secret "
                "(e.g. WEB_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe(24))'))"
            )
        for line in start_lines(args.host, args.port, token, settings.access.public_url):
            print(line, file=sys.stderr, flush=True)
        gate = access_gate(settings, data_dir, lambda: get_engine(settings))
        if gate.mode() != LOCKED:  # locked: the gate has logged its warning line
            print(permissions_line(settings, data_dir), file=sys.stderr, flush=True)
        serve(settings, data_dir, args.host, args.port, service_factory(settings, data_dir, args), gate=gate)
        return 0

    return run(body, debug=args.debug, server=True)


if __name__ == "__main__":
    raise SystemExit(main())
