"""Who may talk to the local HTTP surfaces (the MCP server; the web page will reuse this).

Three checks, in this order, on every HTTP request (:class:`AccessGuard`, a pure ASGI middleware):

1. **Host** (DNS rebinding): the ``Host`` header must be one of :func:`allowed_hosts`, else **421**.
2. **Origin** (a web page in a browser): a request that carries an ``Origin`` header must come from
   one of :func:`allowed_origins`, else **403**. Requests without ``Origin`` (non-browser clients,
   ``curl``, the MCP SDK) pass this check.
3. **Who asks**: ``Authorization: Bearer <token>``: a user's personal token, or the shared token
   (compared with :func:`hmac.compare_digest`; its holder is ``everyone``), or a signing-in proxy's
   headers (app.serving.identify); nobody known gives **401** with ``WWW-Authenticate: Bearer`` and a
   short JSON body, before the app (and so any tool) runs. An identity header sent twice is **400**;
   a database that cannot be reached to look a token up is **503** (one line; the detail is logged);
   a locked server (app.serving.gate: the access file is gone, restricted readers are stored) gives
   everyone but group ``admin`` **403**.

The token is MCP_TOKEN when set, else the contents of MCP_TOKEN_FILE (default
``.secrets/mcp_token``), else a new ``secrets.token_urlsafe(32)`` written to that file (mode 0600,
its folder 0700 when this creates it). A token file that group or others may access is refused
(:class:`TokenFileError`). Nothing here reads the environment: values come from
:class:`app.config.Settings`.

The server's own names need no setting (app.serving.hosts): bound to 0.0.0.0 / ``::``, every address
and name of this machine; PUBLIC_URL adds its host and origin; an Origin that is ``http://`` + an
accepted Host is the page's own. ALLOWED_HOSTS / ALLOWED_ORIGINS add more.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import RagError
from app.serving.gate import LOCKED, AccessGate
from app.serving.hosts import MachineNames, access_lists, host_allowed, origin_allowed
from app.users.identity import SHARED, Identity

log = logging.getLogger(__name__)

TOKEN_BYTES = 32  # secrets.token_urlsafe(32): 43 characters, 256 bits


class TokenFileError(RagError):
    """The token file cannot be used (group/others can read it, it is empty or unreadable)."""


class RepeatedHeaderError(RagError):
    """A request carries an identity header more than once: which copy counts is ambiguous (behind a
    proxy that appends its own, the first is the client's), so the request is refused."""

    def __init__(self, header: str) -> None:
        super().__init__(f"the header {header} appears more than once: send it once")
        self.header = header


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


# --- the middleware ----------------------------------------------------------------------------


def _refusal(status: int, error: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The short JSON body every refusal has: ``{"error": ..., "detail": ...}``."""
    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=headers)


@dataclass(frozen=True)
class AccessGuard:
    """ASGI middleware: Host (421), Origin (403), then who asks (400, 401, 403 locked, 503) on every
    ``http`` and ``websocket`` request; ``lifespan`` and other scopes pass through untouched (so the
    wrapped app's startup and shutdown still run). ``hosts`` and ``origins`` come from
    :func:`~app.serving.hosts.access_lists`. Who asks: ``identify(headers)`` (a personal token's user,
    a signing-in proxy's) or the shared ``token`` (``everyone``); it goes on in ``scope["state"]["identity"]``.
    ``gate``: the server's mode (None: no store known, never locked; a token is needed anyway)."""

    app: ASGIApp
    token: str = field(repr=False)
    hosts: tuple[str, ...]
    origins: tuple[str, ...]
    identify: Callable[[Headers], Identity | None] | None = None
    gate: AccessGate | None = None

    def who(self, headers: Headers) -> Identity | None:
        """The identity of a request with these headers; None: nobody known."""
        if len(headers.getlist("authorization")) > 1:
            raise RepeatedHeaderError("Authorization")
        if self.identify is not None:
            return self.identify(headers)
        return SHARED if token_matches(bearer_token(headers.get("authorization")), self.token) else None

    def checked(self, headers: Headers) -> JSONResponse | Identity:
        """The response refusing a request with these headers, or who asks when it may go on."""
        if not host_allowed(headers.get("host"), self.hosts):
            return _refusal(421, "misdirected_request", "this Host is not served here (add it to ALLOWED_HOSTS)")
        if not origin_allowed(headers.get("origin"), self.origins):
            return _refusal(
                403, "forbidden_origin", "requests from this Origin are refused (add it to ALLOWED_ORIGINS)"
            )
        found = self.who(headers)
        if found is None:
            given = bearer_token(headers.get("authorization"))
            challenge = 'Bearer realm="rag-ja"' if given is None else 'Bearer realm="rag-ja", error="invalid_token"'
            return _refusal(
                401, "unauthorized", "send the header Authorization: Bearer <token>", {"WWW-Authenticate": challenge}
            )
        if self.gate is not None and not found.admin and self.gate.mode() == LOCKED:
            return _refusal(403, "locked", self.gate.locked_line())
        return found

    def refusal(self, headers: Headers) -> JSONResponse | Identity:
        """:meth:`checked`, with a repeated identity header as 400 and a database that cannot be reached
        as 503, each one line (the database's own message, naming sockets or hosts, goes to the log only)."""
        try:
            return self.checked(headers)
        except RepeatedHeaderError as exc:
            return _refusal(400, "repeated_header", str(exc))
        except Exception as exc:
            from app.storage import database_error

            gone = database_error(exc)
            if gone is None:
                raise
            log.warning("who asks could not be checked, the database is not available: %s", gone)
            return _refusal(503, "database_unavailable", "the database is not available; try again shortly")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse or pass on one connection."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        outcome = await asyncio.to_thread(self.refusal, Headers(scope=scope))
        if not isinstance(outcome, JSONResponse):
            scope.setdefault("state", {})["identity"] = outcome
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await outcome(scope, receive, send)


def guard(
    app: ASGIApp,
    token: str,
    bind_host: str,
    port: int,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    *,
    public_url: str = "",
    machine: MachineNames | None = None,
    identify: Callable[[Headers], object | None] | None = None,
    gate: AccessGate | None = None,
) -> AccessGuard:
    """``app`` behind an :class:`AccessGuard` for a server bound to ``bind_host:port`` (this
    machine's names looked up once, unless ``machine`` is given); ``gate``: the server's mode."""
    hosts, origins = access_lists(bind_host, port, extra_hosts, extra_origins, public_url=public_url, machine=machine)
    return AccessGuard(app, token, hosts, origins, identify, gate)
