"""URLs in settings: checked when read, shown with their secrets masked.

A base URL's ``user:password`` is taken out of the URL and sent as an Authorization header, so no log
line or error message that shows the URL can show the secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

DATABASE_URL_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
_URL = re.compile(r"https?://[^\s'\"<>]+")


def mask_url(url: str) -> str:
    """``url`` as it may be shown: a user:password becomes ``***@``, and the value of every query
    parameter becomes ``***`` (a key may hide under any name); the names stay, to tell them apart."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(
        f"{name}=***" if sep else name
        for name, sep, _ in (item.partition("=") for item in parts.query.split("&") if item)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_urls(text: str) -> str:
    """``text`` with every http(s) URL in it masked (:func:`mask_url`): for messages and log lines."""
    return _URL.sub(lambda m: mask_url(m.group(0)), text)


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """``(url without its query string, the query's parameters)``: an OpenAI-compatible client joins
    paths onto its base URL (``…/v1?key=k`` + ``chat/completions`` would break it), so the query is
    sent as the client's default query on every request instead."""
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    bare = urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment))
    return bare, dict(parse_qsl(parts.query, keep_blank_values=True))


def split_userinfo(url: str) -> tuple[str, str]:
    """``(url without user:password, "user:password")`` (percent-decoded; ``""`` when there is none):
    the secret travels in an Authorization header, never inside a URL that a log or error may show."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, ""
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    return urlunsplit(
        (parts.scheme, host, parts.path, parts.query, parts.fragment)
    ), f"{unquote(user)}:{unquote(password)}"


def base_url(env: Mapping[str, str], name: str, key_name: str) -> tuple[str | None, str]:
    """An http(s) base URL such as ``http://127.0.0.1:8080/v1`` (trailing slash dropped) and the
    ``user:password`` it carried (sent as HTTP Basic auth), or ``(None, "")``. A user:password
    together with ``key_name`` (an API key, sent as a Bearer token) is refused: a request carries one
    Authorization header, and silently dropping one of them hid the mistake."""
    raw = env.get(name, "").strip()
    if not raw:
        return None, ""
    parts = urlsplit(raw)
    try:
        hostname = parts.hostname
        parts.port  # noqa: B018 (validates the port)
    except ValueError:
        hostname = None
    if parts.scheme not in ("http", "https") or not hostname:
        raise ValueError(
            f"{name} must be an http:// or https:// URL such as http://127.0.0.1:8080/v1, got {mask_url(raw)!r}"
        )
    url, userinfo = split_userinfo(raw.rstrip("/"))
    if userinfo and env.get(key_name, ""):
        raise ValueError(
            f"{name} carries a user:password and {key_name} is set too; a request sends one "
            f"Authorization header: keep the password in the URL (HTTP Basic) or {key_name} "
            "(Bearer), not both"
        )
    return url, userinfo


def database_url(env: Mapping[str, str], host: str | None) -> str | None:
    """DATABASE_URL, a libpq URI (``postgresql://user:pass@host:5432/db?sslmode=require``), checked
    and rewritten for SQLAlchemy's psycopg 3 driver; None when unset. Not together with DB_HOST."""
    raw = env.get("DATABASE_URL", "").strip()
    if not raw:
        return None
    if host is not None:
        raise ValueError("DATABASE_URL and DB_HOST are both set; set one of them")
    scheme, sep, rest = raw.partition("://")
    if not sep or scheme not in DATABASE_URL_SCHEMES or not rest:
        raise ValueError(
            "DATABASE_URL must look like postgresql://user:password@host:5432/dbname "
            f"(scheme {scheme or '?'!r} is not one of {', '.join(DATABASE_URL_SCHEMES)})"
        )
    try:
        urlsplit(raw).port  # noqa: B018 (validates the port)
    except ValueError:
        raise ValueError("DATABASE_URL has a port that is not a number from 1 to 65535") from None
    return "postgresql+psycopg://" + rest


def db_password(env: Mapping[str, str], host: str | None) -> str:
    """DB_PASSWORD, or the contents of DB_PASSWORD_FILE (a Docker secret); required with DB_HOST.

    There is no default password: a server reached over the network must be given one.
    """
    path = env.get("DB_PASSWORD_FILE", "").strip()
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise ValueError(f"DB_PASSWORD_FILE: cannot read {path} ({exc.strerror})") from None
    if "DB_PASSWORD" in env:
        return env["DB_PASSWORD"]
    if host is not None:
        raise ValueError(
            "DB_HOST is set, so DB_PASSWORD or DB_PASSWORD_FILE must be set too (there is no default password)"
        )
    return ""


_SECRET = "***"


def shown(group: object, hidden: frozenset[str] = frozenset()) -> str:
    """``Name(field=value, …)`` with the fields in ``hidden`` masked when set (a settings group's repr)."""
    from dataclasses import fields

    def value(name: str) -> str:
        raw = getattr(group, name)
        if name in hidden and raw:
            return repr(_SECRET)
        return repr(mask_url(raw)) if name.endswith("url") and isinstance(raw, str) else repr(raw)

    values = ", ".join(f"{f.name}={value(f.name)}" for f in fields(group))  # type: ignore[arg-type]
    return f"{type(group).__name__}({values})"
