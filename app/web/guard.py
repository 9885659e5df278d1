"""Who may use the web page: the checks of :mod:`app.serving.access`, fitted to a browser.

On every request (:class:`WebGuard`, a pure ASGI middleware):

1. **Host** must be this server's own name (or one in ALLOWED_HOSTS), else **421** (DNS rebinding);
2. **Origin**, when the browser sends one, must be this server's own (or in ALLOWED_ORIGINS), else
   **403** (another site's page cannot ask in the user's name);
3. **the shared secret** (WEB_TOKEN) when the page is served beyond loopback: the cookie
   ``rag_web_token``, or ``Authorization: Bearer``. Opening ``/?token=<secret>`` once sets the cookie
   (HttpOnly, SameSite=Strict) and redirects to ``/``, so the secret leaves the address bar; else **401**.

Bound to loopback (the default) the page needs no secret: only this machine can reach it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.serving.access import allowed_hosts, allowed_origins, bearer_token, host_allowed, origin_allowed, token_matches

COOKIE = "rag_web_token"


@dataclass(frozen=True)
class WebGuard:
    """ASGI middleware: Host (421), Origin (403), then the secret (401) when ``token`` is set."""

    app: ASGIApp
    token: str | None = field(repr=False)
    hosts: tuple[str, ...]
    origins: tuple[str, ...]

    def refusal(self, scope: Scope, headers: Headers) -> Response | None:
        """The response refusing this request, the redirect that sets the cookie, or None to go on."""
        if not host_allowed(headers.get("host"), self.hosts):
            return JSONResponse({"error": "このホスト名では提供していません（ALLOWED_HOSTS に追加）"}, status_code=421)
        if not origin_allowed(headers.get("origin"), self.origins):
            return JSONResponse({"error": "このサイトからの要求は受け付けません（ALLOWED_ORIGINS）"}, status_code=403)
        if not self.token:
            return None
        given = bearer_token(headers.get("authorization")) or cookie_parser(headers.get("cookie", "")).get(COOKIE)
        if token_matches(given, self.token):
            return None
        offered = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [None])[0]
        if scope.get("path") == "/" and token_matches(offered, self.token):
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
            return response
        return JSONResponse(
            {"error": "合言葉が必要です: 管理者から受け取った URL（…/?token=…）を開いてください"}, status_code=401
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse or pass on one request; other scopes (lifespan) pass untouched."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope, Headers(scope=scope))
        if refused is None:
            await self.app(scope, receive, send)
        else:
            await refused(scope, receive, send)


def web_guard(
    app: ASGIApp,
    token: str | None,
    bind_host: str,
    port: int,
    extra_hosts: tuple[str, ...] = (),
    extra_origins: tuple[str, ...] = (),
) -> WebGuard:
    """``app`` behind a :class:`WebGuard` for a server bound to ``bind_host:port``."""
    return WebGuard(
        app, token, allowed_hosts(bind_host, port, extra_hosts), allowed_origins(bind_host, port, extra_origins)
    )
