"""Who is asking over HTTP, for the page and the MCP server alike.

In this order: the identity a signing-in reverse proxy vouches for (AUTH_USER_HEADER /
AUTH_GROUPS_HEADER, only with AUTH_PROXY_SECRET in AUTH_PROXY_SECRET_HEADER); a personal token
(``rag_…``, app.users) as ``Authorization: Bearer``; the shared secret (WEB_TOKEN, MCP_TOKEN), whose
holder is in ``everyone`` only; the page's session cookie (a session ID, app.users.identity.Sessions).
None when nothing identifies the request. A request carrying one of these headers twice is refused
(:class:`RepeatedHeaderError`): behind a proxy that appends its header, the first copy is the client's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from app.config import Settings
from app.serving.access import RepeatedHeaderError, bearer_token, token_matches
from app.users.identity import SHARED, TOKEN_PREFIX, Identity, Sessions, identity_for_proxy

__all__ = ["Identifier", "RepeatedHeaderError", "TokenLookup", "utf8"]

TokenLookup = Callable[[str], "Identity | None"]  # a personal token -> its user now (app.users.identity)


def utf8(value: str | None) -> str | None:
    """A header value as the proxy wrote it: HTTP hands its bytes over as Latin-1, a name such as 経理
    arrives as UTF-8 bytes; None for a value that is not UTF-8 (refused, never guessed)."""
    if value is None:
        return None
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class Identifier:
    """Turns a request's headers (and session cookie) into an :class:`Identity`."""

    lookup: TokenLookup = field(repr=False)
    shared_secret: str | None = field(default=None, repr=False)
    user_header: str = ""
    groups_header: str = ""
    proxy_secret: str = field(default="", repr=False)
    proxy_secret_header: str = "X-Auth-Proxy-Secret"
    sessions: Sessions | None = None  # the page's sign-in sessions (None: a cookie names nobody)

    @classmethod
    def from_settings(
        cls, settings: Settings, lookup: TokenLookup, shared_secret: str | None, sessions: Sessions | None = None
    ) -> Identifier:
        """The identifier for these settings, personal tokens looked up by ``lookup``, session cookies
        by ``sessions``."""
        access = settings.access
        return cls(
            lookup,
            shared_secret or None,
            access.user_header,
            access.groups_header,
            access.proxy_secret,
            access.proxy_secret_header,
            sessions,
        )

    def repeated(self, headers: Mapping[str, str]) -> str | None:
        """The first identity header that ``headers`` carry more than once (Authorization, and the
        proxy's user, groups and secret headers when a proxy is set up); None when each comes once."""
        getlist = getattr(headers, "getlist", None)
        if getlist is None:  # a plain mapping holds each name once
            return None
        names = ["Authorization"]
        if self.user_header and self.proxy_secret:
            names += [self.user_header, self.groups_header, self.proxy_secret_header]
        return next((name for name in names if name and len(getlist(name)) > 1), None)

    def proxy(self, headers: Mapping[str, str]) -> Identity | None:
        """The proxy's identity, when its headers and its secret are there."""
        if not self.user_header or not self.proxy_secret:
            return None
        return identity_for_proxy(
            utf8(headers.get(self.user_header)),
            utf8(headers.get(self.groups_header)) if self.groups_header else None,
            headers.get(self.proxy_secret_header),
            self.proxy_secret,
        )

    def token(self, token: str | None) -> Identity | None:
        """The identity a token gives: a user's personal token, or the shared secret."""
        if not token:
            return None
        if token.startswith(TOKEN_PREFIX):
            return self.lookup(token)
        if self.shared_secret and token_matches(token, self.shared_secret):
            return SHARED
        return None

    def session(self, cookie: str | None) -> Identity | None:
        """Who the page's session cookie belongs to; None without sessions, or for an unknown one."""
        return self.sessions.identity(cookie) if self.sessions is not None and cookie else None

    def identify(self, headers: Mapping[str, str], cookie: str | None = None) -> Identity | None:
        """Who sent a request with these headers (and this session cookie); None: nobody known.
        RepeatedHeaderError when an identity header comes twice; a database error propagates."""
        repeated = self.repeated(headers)
        if repeated is not None:
            raise RepeatedHeaderError(repeated)
        return self.proxy(headers) or self.token(bearer_token(headers.get("authorization"))) or self.session(cookie)
