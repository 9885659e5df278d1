"""Who may talk to the local HTTP surfaces (the MCP server; the web page will reuse this).

Three checks, in this order, on every HTTP request (:class:`AccessGuard`, a pure ASGI middleware):

1. **Host** (DNS rebinding): the ``Host`` header must be one of :func:`allowed_hosts`, else **421**.
2. **Origin** (a web page in a browser): a request that carries an ``Origin`` header must come from
   one of :func:`allowed_origins`, else **403**. Requests without ``Origin`` (non-browser clients,
   ``curl``, the MCP SDK) pass this check.
3. **Token**: ``Authorization: Bearer <token>``, compared with :func:`hmac.compare_digest`; missing
   or wrong gives **401** with ``WWW-Authenticate: Bearer`` and a short JSON body, before the app
   (and so any tool) runs.

The token is MCP_TOKEN when set, else the contents of MCP_TOKEN_FILE (default
``.secrets/mcp_token``), else a new ``secrets.token_urlsafe(32)`` written to that file (mode 0600,
its folder 0700 when this creates it). A token file that group or others may access is refused
(:class:`TokenFileError`). Nothing here reads the environment: values come from
:class:`app.config.Settings`.

Host patterns (ALLOWED_HOSTS, comma-separated) are lower-cased ``name:port`` (exactly that port) or
``name`` / ``name:*`` (that name with any port, or with none); IPv6 addresses in brackets
(``[fe80::1]:8765``; a bare ``fe80::1`` means any port). Origins (ALLOWED_ORIGINS) are compared
exactly as ``scheme://host[:port]`` (lower-cased, a trailing ``/`` dropped); there are no wildcards.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import RagError

TOKEN_BYTES = 32  # secrets.token_urlsafe(32): 43 characters, 256 bits
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")  # the names a client on this machine uses
UNSPECIFIED = ("0.0.0.0", "::", "")  # binding these listens on every address, loopback included
ANY_PORT = "*"
_HOST_NAME = re.compile(r"[a-z0-9._-]+|\[[0-9a-f:.]+\]")  # a DNS name, IPv4, or [IPv6]


class TokenFileError(RagError):
    """The token file cannot be used (group/others can read it, it is empty or unreadable)."""


@dataclass(frozen=True)
class Token:
    """The bearer token and where it came from (``source``: "MCP_TOKEN" or the file's path);
    ``created``: the file was written just now. ``value`` stays out of ``repr``."""

    value: str = field(repr=False)
    source: str
    created: bool = False

    def describe(self) -> str:
        """Where the token is, for the start line (never the token itself)."""
        if self.source == "MCP_TOKEN":
            return "from MCP_TOKEN"
        return f"in {self.source}" + (" (created now, mode 0600)" if self.created else "")


# --- the token ------------------------------------------------------------------------------


def read_token_file(path: Path) -> str | None:
    """The token stored in ``path``; None when there is no such file.

    TokenFileError (one line naming the file) when group or others have any access to it, when it
    is empty, or when it cannot be read."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TokenFileError(f"cannot read the MCP token file {path} ({exc.strerror})") from None
    if stat.S_IMODE(mode) & 0o077:
        raise TokenFileError(
            f"the MCP token file {path} is open to other users (mode {stat.S_IMODE(mode):04o}): "
            f"run `chmod 600 {path}` (or delete it, and a new token is made at the next start)"
        )
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenFileError(f"cannot read the MCP token file {path} ({exc})") from None
    if not token:
        raise TokenFileError(f"the MCP token file {path} is empty: delete it to make a new token, or set MCP_TOKEN")
    return token


def _make_private_dir(folder: Path) -> None:
    """Create ``folder`` (mode 0700) if missing; an existing folder is left as it is."""
    if folder.is_dir():
        return
    try:
        folder.mkdir(mode=0o700, parents=True)
        os.chmod(folder, 0o700)  # mkdir's mode is masked by the umask; make it exact
    except FileExistsError:  # made by another process meanwhile (or a file: os.open says so next)
        pass
    except OSError as exc:
        raise TokenFileError(f"cannot create the folder {folder} for the MCP token file ({exc.strerror})") from None


def create_token_file(path: Path) -> str | None:
    """Write a new ``secrets.token_urlsafe(32)`` to ``path``, created atomically with mode 0600
    (``O_CREAT | O_EXCL``: never over an existing file or link) in a 0700 folder made if missing.
    Returns the token; None when another process created the file first (read that one)."""
    _make_private_dir(path.parent)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return None
    except OSError as exc:
        raise TokenFileError(f"cannot create the MCP token file {path} ({exc.strerror})") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return token


def resolve_token(mcp_token: str, token_file: Path) -> Token:
    """MCP_TOKEN (``mcp_token``) when set, else the token in ``token_file``, else a new one
    written there (see :func:`create_token_file`)."""
    if mcp_token:
        return Token(mcp_token, "MCP_TOKEN")
    stored = read_token_file(token_file)
    if stored is not None:
        return Token(stored, str(token_file))
    created = create_token_file(token_file)
    if created is not None:
        return Token(created, str(token_file), created=True)
    stored = read_token_file(token_file)  # another process made it first
    if stored is None:  # e.g. a link to nowhere
        raise TokenFileError(f"cannot create the MCP token file {token_file}: something else is in the way")
    return Token(stored, str(token_file))


MIN_TOKEN_CHARS = 16


def weak_token_warning(token: str | None, name: str) -> str | None:
    """A start line's warning when a shared secret is shorter than :data:`MIN_TOKEN_CHARS` characters
    (``MCP_TOKEN=a`` is guessed at once); None for a long enough one or none."""
    if not token or len(token) >= MIN_TOKEN_CHARS:
        return None
    return (
        f"warning: {name} is {len(token)} characters long, easy to guess: use at least {MIN_TOKEN_CHARS} "
        "(e.g. $(python -c 'import secrets; print(secrets.token_urlsafe(24))'))"
    )


def bearer_token(authorization: str | None) -> str | None:
    """The token in an ``Authorization: Bearer <token>`` header value (scheme case-insensitive);
    None when the header is missing or another scheme."""
    scheme, _, value = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def token_matches(given: str | None, expected: str) -> bool:
    """``given == expected`` in constant time (:func:`hmac.compare_digest`); None or "" never match."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


# --- addresses, hosts, origins ----------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1 (brackets allowed, IPv4-mapped too); False for
    every other name or address, including 0.0.0.0 and ``::`` (those listen on all addresses)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def host_port(host: str, port: int | str) -> str:
    """``host:port`` as in a Host header or URL: IPv6 addresses in brackets, lower-cased."""
    name = host.strip().strip("[]").lower()
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


def server_hosts(bind_host: str, port: int) -> tuple[str, ...]:
    """The ``host:port`` names of this server itself: the bound address, and the loopback names
    when the server listens on loopback (a loopback address, or 0.0.0.0 / :: which include it).
    0.0.0.0 and :: themselves are not names a client uses, so they are left out."""
    names: list[str] = []
    if bind_host.strip().strip("[]") not in UNSPECIFIED:
        names.append(host_port(bind_host, port))
    if is_loopback(bind_host) or bind_host.strip().strip("[]") in UNSPECIFIED:
        names.extend(host_port(name, port) for name in LOOPBACK_NAMES)
    return tuple(dict.fromkeys(names))


def host_pattern(entry: str) -> str:
    """One ALLOWED_HOSTS entry as a pattern: ``name:port`` kept, ``name`` becomes ``name:*``
    (any port); a bare IPv6 address is bracketed. ValueError for anything else (no wildcard names)."""
    raw = entry.strip().lower()
    if raw.startswith("["):
        name, _, rest = raw[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ANY_PORT
        ok = bool(name) and rest in ("", f":{port}")
        name = f"[{name}]"
    elif raw.count(":") > 1:  # a bare IPv6 address
        name, port, ok = f"[{raw}]", ANY_PORT, True
    else:
        name, _, port = raw.partition(":")
        port, ok = port or ANY_PORT, bool(name)
    if not ok or not _HOST_NAME.fullmatch(name) or (port != ANY_PORT and not port.isdigit()):
        raise ValueError(f"ALLOWED_HOSTS: {entry!r} is not a host name or host:port")
    return f"{name}:{port}"


def allowed_hosts(bind_host: str, port: int, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Host patterns accepted: :func:`server_hosts` (with bare names too when the port is 80, the
    port clients leave out) plus ``extra`` (ALLOWED_HOSTS) through :func:`host_pattern`."""
    own = server_hosts(bind_host, port)
    bare = tuple(name.rpartition(":")[0] for name in own) if port == 80 else ()
    return tuple(dict.fromkeys(own + bare + tuple(host_pattern(e) for e in extra)))


def host_allowed(host: str | None, patterns: Iterable[str]) -> bool:
    """Whether a Host header value matches one of ``patterns`` (exact ``name:port``, or
    ``name:*``: that name with any port or none)."""
    value = (host or "").strip().lower()
    if not value:
        return False
    for pattern in patterns:
        if value == pattern:
            return True
        name, _, port = pattern.rpartition(":")
        if port == ANY_PORT:
            head, sep, tail = value.rpartition(":")
            if value == name or (head == name and sep and tail.isdigit()):
                return True
    return False


def origin_value(entry: str) -> str:
    """An origin as compared: lower-cased, without a trailing ``/``; ValueError unless it looks
    like ``http(s)://host[:port]``."""
    value = entry.strip().lower().rstrip("/")
    scheme, sep, rest = value.partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
        raise ValueError(f"ALLOWED_ORIGINS: {entry!r} is not an origin such as https://rag.example.com")
    return value


def allowed_origins(bind_host: str, port: int, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Origins accepted: exactly this server's own (``http://`` + each of :func:`server_hosts`),
    plus ``extra`` (ALLOWED_ORIGINS). ``http://localhost:<another port>`` is not one of them."""
    own = tuple(f"http://{name}" for name in server_hosts(bind_host, port))
    return tuple(dict.fromkeys(own + tuple(origin_value(e) for e in extra)))


def origin_allowed(origin: str | None, origins: Iterable[str]) -> bool:
    """True when there is no Origin header (not a browser) or it is exactly one of ``origins``."""
    if origin is None:
        return True
    return origin.strip().lower().rstrip("/") in origins


# --- the middleware ----------------------------------------------------------------------------


def _refusal(status: int, error: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The short JSON body every refusal has: ``{"error": ..., "detail": ...}``."""
    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=headers)


@dataclass(frozen=True)
class AccessGuard:
    """ASGI middleware: Host (421), Origin (403), then bearer token (401) on every ``http`` and
    ``websocket`` request; ``lifespan`` and other scopes pass through untouched (so the wrapped
    app's startup and shutdown still run). ``hosts`` and ``origins`` come from
    :func:`allowed_hosts` and :func:`allowed_origins`."""

    app: ASGIApp
    token: str = field(repr=False)
    hosts: tuple[str, ...]
    origins: tuple[str, ...]

    def refusal(self, headers: Headers) -> JSONResponse | None:
        """The response refusing a request with these headers, or None when it may go on."""
        if not host_allowed(headers.get("host"), self.hosts):
            return _refusal(421, "misdirected_request", "this Host is not served here (add it to ALLOWED_HOSTS)")
        if not origin_allowed(headers.get("origin"), self.origins):
            return _refusal(
                403, "forbidden_origin", "requests from this Origin are refused (add it to ALLOWED_ORIGINS)"
            )
        given = bearer_token(headers.get("authorization"))
        if not token_matches(given, self.token):
            challenge = 'Bearer realm="rag-ja"' if given is None else 'Bearer realm="rag-ja", error="invalid_token"'
            return _refusal(
                401, "unauthorized", "send the header Authorization: Bearer <token>", {"WWW-Authenticate": challenge}
            )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse or pass on one connection."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refused = self.refusal(Headers(scope=scope))
        if refused is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await refused(scope, receive, send)


def guard(
    app: ASGIApp,
    token: str,
    bind_host: str,
    port: int,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
) -> AccessGuard:
    """``app`` behind an :class:`AccessGuard` for a server bound to ``bind_host:port``."""
    return AccessGuard(
        app, token, allowed_hosts(bind_host, port, extra_hosts), allowed_origins(bind_host, port, extra_origins)
    )
