"""Security headers on every HTTP response of the web server, not only on the HTML page.

:class:`SecurityHeaders` (a pure ASGI middleware) adds, to each ``http.response.start`` that lacks
them: ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``, ``X-Frame-Options: DENY``,
and ``Cache-Control: no-store`` on JSON responses (the API's answers and refusals may name documents;
no browser or proxy should keep them). A header the response already has is left as it is, and a
Content-Security-Policy is never added or changed (the page sets its own).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
)
JSON_HEADERS: tuple[tuple[bytes, bytes], ...] = ((b"cache-control", b"no-store"),)


def with_security_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` (raw ASGI pairs) plus each of :data:`SECURITY_HEADERS` they lack, and
    :data:`JSON_HEADERS` too when the content type is JSON; names compared case-insensitively."""
    present = {name.lower() for name, _ in headers}
    content_type = next((value for name, value in headers if name.lower() == b"content-type"), b"")
    is_json = content_type.split(b";")[0].strip().lower() in (b"application/json", b"application/problem+json")
    wanted = SECURITY_HEADERS + (JSON_HEADERS if is_json else ())
    return list(headers) + [(name, value) for name, value in wanted if name not in present]


@dataclass(frozen=True)
class SecurityHeaders:
    """ASGI middleware: :func:`with_security_headers` on every ``http`` response; other scopes
    (lifespan, websocket) pass through untouched."""

    app: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, adding the headers as the response starts."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": with_security_headers(list(message.get("headers", [])))}
            await send(message)

        await self.app(scope, receive, send_with_headers)
