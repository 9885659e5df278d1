"""Running the web page: the warm service (models and pool loaded once, the data folder watched if
asked), the app behind its guard, uvicorn without an access log (a URL may carry the secret once)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.config import Settings
from app.serving.gate import AccessGate, access_gate
from app.serving.identify import Identifier
from app.users.identity import Sessions, identity_for_token
from app.web.app import create_app
from app.web.followup import standalone
from app.web.guard import web_guard
from app.web.headers import SecurityHeaders
from app.web.rewrite import llm_standalone
from app.web.sources import document_file, source_view


def followup_rewriter(service: Any, settings: Settings) -> Any:
    """How follow-ups are made to stand alone (FOLLOWUP_REWRITE): the rules, or the service's LLM
    with the rules as its fallback."""
    if settings.servers.followup_rewrite == "llm":
        return lambda question, history: llm_standalone(question, history, service.complete)
    return standalone


def guarded_app(
    service: Any,
    settings: Settings,
    host: str,
    port: int,
    data_dir: Path | None = None,
    *,
    gate: AccessGate | None = None,
    sessions: Sessions | None = None,
) -> Any:
    """The web app over ``service`` behind :class:`app.web.guard.WebGuard` for ``host:port``; who asks
    is named by a personal token (looked up in the store's database), a signing-in proxy, WEB_TOKEN or
    a session cookie (``sessions``, by default in the store's database); the server's mode comes from
    ``gate`` (by default the access file of ``data_dir`` and the store's readers); sources and files
    come from the service's store as who asks, files from ``data_dir`` only."""
    folder = data_dir or settings.ingest.data_dir
    engine = lambda: service.store.engine  # noqa: E731 (looked up when first needed)
    app = create_app(
        service,
        view_source=lambda source, who: source_view(service.source_chunks(source, who), source),
        document_path=lambda doc_id, who: document_file(service.list_documents(who), folder, doc_id),
        followup=followup_rewriter(service, settings),
    )
    web_token = settings.servers.web_token or None
    identifier = Identifier.from_settings(
        settings,
        lambda token: identity_for_token(engine(), token),
        web_token,
        sessions if sessions is not None else Sessions(engine, web_token),
    )
    return web_guard(
        app,
        settings.servers.web_token or None,
        host,
        port,
        settings.servers.allowed_hosts,
        settings.servers.allowed_origins,
        public_url=settings.access.public_url,
        identifier=identifier,
        gate=gate if gate is not None else access_gate(settings, folder, engine),
    )


def serve(
    settings: Settings,
    data_dir: Path,
    host: str,
    port: int,
    service_factory: Callable[[], Any],
    gate: AccessGate | None = None,
) -> None:
    """Load the service (``service_factory``: app.serving.warm.make_service_factory, given its writer and
    watcher by app.cli.web), then serve the page on ``host:port`` until Ctrl-C; ``gate``: the server's
    mode, already asked once at start (app.cli.web), else made here."""
    import uvicorn

    service = service_factory()
    service.surface = "web"  # what the audit log names
    app = SecurityHeaders(guarded_app(service, settings, host, port, data_dir, gate=gate))
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")
