"""What the two OpenAI-compatible clients (LLM_BASE_URL, EMBED_BASE_URL) share: the one-line
error for a server that is down, slow, refusing or breaking off."""

from __future__ import annotations

import base64

from app.config.urls import mask_url, mask_urls
from app.errors import RagError


def basic_auth_headers(userinfo: str) -> dict[str, str]:
    """The ``Authorization: Basic …`` header for a ``user:password`` (none for ``""``)."""
    if not userinfo:
        return {}
    return {"Authorization": "Basic " + base64.b64encode(userinfo.encode("utf-8")).decode("ascii")}


def _cause(exc: BaseException) -> str:
    """The first line of the deepest message (httpx's reason, not the client's "Connection error.")."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return mask_urls(lines[0]) if lines else type(exc).__name__


def server_error(
    exc: BaseException, what: str, url: str, variable: str, error: type[RagError], streaming: bool = False
) -> RagError | None:
    """``error`` with one line saying how the ``what`` server at ``url`` (set by ``variable``) failed:
    down, timed out, refused (HTTP status), or, once ``streaming`` pieces had arrived, broke off.
    None for an exception that is not the server's."""
    import httpx
    import openai

    url = mask_url(url)
    if streaming and isinstance(exc, (openai.APIError, httpx.HTTPError)):
        return error(f"the {what} server at {url} broke off the answer ({_cause(exc)})")
    if isinstance(exc, openai.APITimeoutError):
        return error(f"the {what} server at {url} did not answer in time (timeout and retries used up)")
    if isinstance(exc, openai.APIConnectionError):
        return error(f"cannot reach the {what} server at {url} ({_cause(exc)}); start it or fix {variable}")
    if isinstance(exc, openai.APIStatusError):
        return error(f"the {what} server at {url} answered HTTP {exc.status_code}: {_cause(exc)}")
    if isinstance(exc, (openai.APIError, httpx.HTTPError)):
        return error(f"the {what} server at {url} failed ({_cause(exc)})")
    return None
