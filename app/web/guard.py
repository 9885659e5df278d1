"""Who may use the web page, and as whom: the checks of :mod:`app.serving.access`, fitted to a browser.

On every request (:class:`WebGuard`, a pure ASGI middleware):

1. **Host** must be this server's own name (or one in ALLOWED_HOSTS, PUBLIC_URL), else **421** (DNS rebinding);
2. **Origin**, when the browser sends one, must be this server's own (or in ALLOWED_ORIGINS), else
   **403** (another site's page cannot ask in the user's name);
3. **who asks** (:class:`app.serving.identify.Identifier`): a signing-in proxy's headers with its
   secret, a personal token (``Authorization: Bearer``), the shared secret WEB_TOKEN (``everyone``
   only), or the session cookie ``rag_session``. Opening ``/?token=<token>`` once opens a session
   (app.users.identity.Sessions: the cookie holds a random session ID, the database its hash, never
   the token), sets the cookie (HttpOnly, SameSite=Strict, Secure behind an https PUBLIC_URL) and
   redirects to ``/``, so the token leaves the address bar; ``/signout`` ends the session and clears
   the cookie. An identity header sent twice is **400**. The identity goes to the app in
   ``request.state.identity``.

The server's mode (app.serving.gate) decides the rest. Nobody identified: **401** when permissions are
on or WEB_TOKEN is set; in single-team mode (on loopback by default) the request goes on as this
machine's user, who reads what ``everyone`` reads. **Locked** (the access file is gone but restricted
readers are stored): everyone but group ``admin`` gets **403** with one line. When the database cannot
be reached to check who asks, **503** with one line (the detail goes to the log, never to the caller).
"""

from __future__ import annotations

import asyncio
import html
import logging
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app import storage
from app.permissions.principals import SHARED_SECRET
from app.serving.gate import LOCKED, PERMISSIONS, SINGLE_TEAM, AccessGate
from app.serving.hosts import access_lists, host_allowed, origin_allowed
from app.serving.identify import Identifier, RepeatedHeaderError
from app.users.identity import Identity

log = logging.getLogger(__name__)

COOKIE = "rag_session"
SIGN_IN = "ログインが必要です: 管理者から受け取った URL（…/?token=…）を開くか、トークンを送ってください"
SIGN_IN_PAGE = (
    '<!doctype html><html lang="ja"><head><meta charset="utf-8"><title>ログインが必要です</title></head>'
    "<body><h1>ログインが必要です</h1><p>管理者から受け取った URL（<code>…/?token=…</code>）を一度開いてください。"
    "トークンは <code>python -m app.users token 名前</code> で発行されます。</p></body></html>"
)
SIGN_IN_HEADERS = {"Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff"}
# the page's routes too, so every 503 reads the same and none shows a socket path or an address
DATABASE_GONE = "データベースに接続できません: しばらくしてから再度お試しください（詳細はサーバーのログにあります）"
LOCKED_LINE = (
    "アクセス設定ファイル（{name}）が見つからず、閲覧者を限った文書が保存されています: "
    "ファイルが戻るまで管理者（admin グループ）だけが使えます"
)
REPEATED_LINE = "ヘッダー {name} が複数あります: 一つだけ送ってください"
# single-team mode, nobody named: this machine's user, reading what everyone reads
LOCAL = Identity("(this machine)", SHARED_SECRET, "local")


def browser_page(path: str | None, headers: Headers) -> bool:
    """Whether a person opened one of the page's own addresses in a browser (they get HTML, not JSON)."""
    return path in ("/", "/documents") and "text/html" in headers.get("accept", "")


def one_line_page(title: str, line: str, status: int, extra: dict[str, str] | None = None) -> HTMLResponse:
    """A minimal HTML page saying ``line`` (no script, nothing loaded)."""
    body = (
        f'<!doctype html><html lang="ja"><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
        f"<body><p>{html.escape(line)}</p></body></html>"
    )
    return HTMLResponse(body, status_code=status, headers={**(extra or {}), **SIGN_IN_HEADERS})


@dataclass(frozen=True)
class WebGuard:
    """ASGI middleware: Host (421), Origin (403), repeated identity headers (400), then who asks (401,
    403 while locked, 503 when the database cannot say)."""

    app: ASGIApp
    token: str | None = field(repr=False)
    hosts: tuple[str, ...]
    origins: tuple[str, ...]
    identifier: Identifier | None = None  # None: the shared secret only (no users, no sessions)
    gate: AccessGate | None = None  # the server's mode per request; None: no store known, permissions on
    secure_cookie: bool = False  # the page is reached over https (PUBLIC_URL): the cookie says Secure

    def identifying(self) -> Identifier:
        """The identifier of this guard (the shared secret alone when none was given)."""
        return self.identifier or Identifier(lambda _token: None, self.token)

    def mode(self) -> str:
        """The server's mode now (app.serving.gate); permissions on without a gate (never single-team)."""
        return self.gate.mode() if self.gate is not None else PERMISSIONS

    def locked(self, path: str | None, headers: Headers) -> Response:
        """403 with the one line saying the server serves admins only until the access file is back."""
        name = self.gate.access_file.rsplit("/", 1)[-1] if self.gate is not None else "access.toml"
        line = LOCKED_LINE.format(name=name)
        if browser_page(path, headers):
            return one_line_page("管理者のみ", line, 403)
        return JSONResponse({"error": line}, status_code=403)

    def sign_in(self, identifier: Identifier, offered: str, mode: str, path: str, headers: Headers) -> Response | None:
        """``/?token=``: open a session for the token's holder and set its cookie (303 to ``/``); None
        when the token names nobody (the request goes on unidentified)."""
        who = identifier.token(offered)
        if who is None or identifier.sessions is None:
            return None
        if mode == LOCKED and not who.admin:
            return self.locked(path, headers)
        session = identifier.sessions.open(offered)
        if session is None:
            return None
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, session, httponly=True, samesite="strict", path="/", secure=self.secure_cookie)
        return response

    def sign_out(self, identifier: Identifier, cookie: str | None) -> Response:
        """``/signout``: end the session in the database and clear the cookie."""
        if identifier.sessions is not None and cookie:
            identifier.sessions.close(cookie)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=self.secure_cookie)
        return response

    def checked(self, scope: Scope, headers: Headers) -> Response | Identity:
        """The response refusing this request (or signing in or out), or who asks."""
        if not host_allowed(headers.get("host"), self.hosts):
            return JSONResponse({"error": "このホスト名では提供していません（ALLOWED_HOSTS に追加）"}, status_code=421)
        if not origin_allowed(headers.get("origin"), self.origins):
            return JSONResponse({"error": "このサイトからの要求は受け付けません（ALLOWED_ORIGINS）"}, status_code=403)
        identifier = self.identifying()
        repeated = identifier.repeated(headers)
        if repeated is not None:
            raise RepeatedHeaderError(repeated)
        path = scope.get("path")
        cookie = cookie_parser(headers.get("cookie", "")).get(COOKIE)
        if path == "/signout":
            return self.sign_out(identifier, cookie)
        mode = self.mode()
        offered = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [None])[0]
        if path == "/" and offered:
            signed = self.sign_in(identifier, offered, mode, path, headers)
            if signed is not None:
                return signed
        found = identifier.identify(headers, cookie)
        if found is None and mode == SINGLE_TEAM and not self.token:
            found = LOCAL
        if mode == LOCKED and (found is None or not found.admin):
            return self.locked(path, headers)
        if found is not None:
            return found
        challenge = {"WWW-Authenticate": 'Bearer realm="rag-ja"'}
        if browser_page(path, headers):  # a person, in a browser
            return HTMLResponse(SIGN_IN_PAGE, status_code=401, headers={**challenge, **SIGN_IN_HEADERS})
        return JSONResponse({"error": SIGN_IN}, status_code=401, headers=challenge)

    def refusal(self, scope: Scope, headers: Headers) -> Response | Identity:
        """:meth:`checked`, with a repeated identity header as 400 and a database that cannot be reached
        as 503, each one line (the database's own message goes to the log only: it names sockets, hosts)."""
        try:
            return self.checked(scope, headers)
        except RepeatedHeaderError as exc:
            return JSONResponse({"error": REPEATED_LINE.format(name=exc.header)}, status_code=400)
        except Exception as exc:
            gone = storage.database_error(exc)
            if gone is None:
                raise
            log.warning("who asks could not be checked, the database is not available: %s", gone)
            return JSONResponse({"error": DATABASE_GONE}, status_code=503)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse or pass on one request (with ``state.identity``); other scopes (lifespan) pass untouched."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        outcome = await asyncio.to_thread(self.refusal, scope, Headers(scope=scope))
        if isinstance(outcome, Identity):
            scope.setdefault("state", {})["identity"] = outcome
            await self.app(scope, receive, send)
        else:
            await outcome(scope, receive, send)


def web_guard(
    app: ASGIApp,
    token: str | None,
    bind_host: str,
    port: int,
    extra_hosts: tuple[str, ...] = (),
    extra_origins: tuple[str, ...] = (),
    *,
    public_url: str = "",
    identifier: Identifier | None = None,
    gate: AccessGate | None = None,
) -> WebGuard:
    """``app`` behind a :class:`WebGuard` for a server bound to ``bind_host:port``: this server's own
    names (every address and name of this machine when bound to 0.0.0.0), PUBLIC_URL's host and
    origin, the page's own origin under each accepted Host, and ALLOWED_HOSTS / ALLOWED_ORIGINS.
    ``gate``: the server's mode (app.serving.gate); without one, as if permissions were on."""
    hosts, origins = access_lists(bind_host, port, extra_hosts, extra_origins, public_url=public_url)
    secure = public_url.lower().startswith("https://")
    return WebGuard(app, token, hosts, origins, identifier, gate, secure)
