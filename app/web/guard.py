"""Who may use the web page, and as whom: the checks of :mod:`app.serving.access`, fitted to a browser.

On every request (:class:`WebGuard`, a pure ASGI middleware):

1. **Host** must be this server's own name (or one in ALLOWED_HOSTS, PUBLIC_URL), else **421** (DNS rebinding);
2. **Origin**, when the browser sends one, must be this server's own (or in ALLOWED_ORIGINS), else
   **403** (another site's page cannot ask in the user's name);
3. **who asks** (:class:`app.serving.identify.Identifier`): a signing-in proxy's headers with its
   secret, a personal token (``Authorization: Bearer``, or the session cookie ``rag_session``), or
   the shared secret WEB_TOKEN (``everyone`` only). Opening ``/?token=<token>`` once sets the cookie
   (HttpOnly, SameSite=Strict) and redirects to ``/``, so the token leaves the address bar;
   ``/signout`` clears it. The identity goes to the app in ``request.state.identity``.

Nobody identified: **401** when an access file exists (permissions are on) or WEB_TOKEN is set;
otherwise (single-team mode, on loopback by default) the request goes on as this machine's user,
who reads what ``everyone`` reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.permissions.principals import SHARED_SECRET
from app.serving.hosts import access_lists, host_allowed, origin_allowed
from app.serving.identify import Identifier
from app.users.identity import Identity

COOKIE = "rag_session"
SIGN_IN = "ログインが必要です: 管理者から受け取った URL（…/?token=…）を開くか、トークンを送ってください"
SIGN_IN_PAGE = (
    '<!doctype html><html lang="ja"><head><meta charset="utf-8"><title>ログインが必要です</title></head>'
    "<body><h1>ログインが必要です</h1><p>管理者から受け取った URL（<code>…/?token=…</code>）を一度開いてください。"
    "トークンは <code>python -m app.users token 名前</code> で発行されます。</p></body></html>"
)
SIGN_IN_HEADERS = {"Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff"}
# single-team mode, nobody named: this machine's user, reading what everyone reads
LOCAL = Identity("(this machine)", SHARED_SECRET, "local")


@dataclass(frozen=True)
class WebGuard:
    """ASGI middleware: Host (421), Origin (403), then who asks (401 when someone must be named)."""

    app: ASGIApp
    token: str | None = field(repr=False)
    hosts: tuple[str, ...]
    origins: tuple[str, ...]
    identifier: Identifier | None = None  # None: the shared secret only (no users)
    permissions_on: Callable[[], bool] = lambda: False  # an access file exists (checked per request)
    secure_cookie: bool = False  # the page is reached over https (PUBLIC_URL): the cookie says Secure

    def who(self, headers: Headers, cookie: str | None) -> Identity | None:
        """The identity of a request with these headers and session cookie."""
        identifier = self.identifier or Identifier(lambda _token: None, self.token)
        return identifier.identify(headers, cookie)

    def anonymous(self) -> Identity | None:
        """Who an unidentified request is: nobody (401) once permissions are on or a secret is set."""
        return None if self.token or self.permissions_on() else LOCAL

    def refusal(self, scope: Scope, headers: Headers) -> Response | Identity:
        """The response refusing this request (or the redirect that sets the cookie), or who asks."""
        if not host_allowed(headers.get("host"), self.hosts):
            return JSONResponse({"error": "このホスト名では提供していません（ALLOWED_HOSTS に追加）"}, status_code=421)
        if not origin_allowed(headers.get("origin"), self.origins):
            return JSONResponse({"error": "このサイトからの要求は受け付けません（ALLOWED_ORIGINS）"}, status_code=403)
        path = scope.get("path")
        if path == "/signout":
            response = RedirectResponse("/", status_code=303)
            response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=self.secure_cookie)
            return response
        offered = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [None])[0]
        if path == "/" and offered and self.who(Headers(), offered) is not None:
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(COOKIE, offered, httponly=True, samesite="strict", path="/", secure=self.secure_cookie)
            return response
        found = self.who(headers, cookie_parser(headers.get("cookie", "")).get(COOKIE)) or self.anonymous()
        if found is not None:
            return found
        challenge = {"WWW-Authenticate": 'Bearer realm="rag-ja"'}
        if path in ("/", "/documents") and "text/html" in headers.get("accept", ""):  # a person, in a browser
            return HTMLResponse(SIGN_IN_PAGE, status_code=401, headers={**challenge, **SIGN_IN_HEADERS})
        return JSONResponse({"error": SIGN_IN}, status_code=401, headers=challenge)

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
    permissions_on: Callable[[], bool] = lambda: False,
) -> WebGuard:
    """``app`` behind a :class:`WebGuard` for a server bound to ``bind_host:port``: this server's own
    names (every address and name of this machine when bound to 0.0.0.0), PUBLIC_URL's host and
    origin, the page's own origin under each accepted Host, and ALLOWED_HOSTS / ALLOWED_ORIGINS."""
    hosts, origins = access_lists(bind_host, port, extra_hosts, extra_origins, public_url=public_url)
    secure = public_url.lower().startswith("https://")
    return WebGuard(app, token, hosts, origins, identifier, permissions_on, secure)
