"""Issue 49's access attacks, replayed against a private PostgreSQL and the real page.

    python scripts/access_attacks.py [--json OUT]

Builds its own world in a temporary folder: an embedded PostgreSQL + pgvector (PGDATA_DIR there, its
own DB_NAME), a data folder (the FAQ, an accounting document only 経理 may read, a sales document, a
folder named in NFD under a key written in NFC, a glob key below a folder key), users alice (経理), bob
(営業) and an admin with personal tokens, the collection synced with the fast graph extractor, and the
real page (app.web.server.guarded_app) served by a real uvicorn on 127.0.0.1 in a thread; the MCP HTTP
app (app.mcp.server.http_app) on another where a row concerns it. Every HTTP request goes over a real
socket: no TestClient. The models are the tests' stand-ins (the GGUF as LLM_MODEL_PATH, never loaded:
answers come from :class:`SlowLLM`, a slow counting LLM; the default offline embedder).

Each row of the issue's table is a function ``attack_N(world) -> str``: it replays the attack and
returns what was seen when the fix held, or raises AssertionError saying what leaked.
tests/integration/test_access_attacks.py runs the same functions. Prints one line per row, then
``N held, M leaked``; exits 1 if any row leaked.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: the repository's packages
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from langchain_core.language_models.llms import LLM  # noqa: E402
from langchain_core.outputs import GenerationChunk  # noqa: E402

GGUF = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
SECRET = "KX-4471"  # the accounting document's management number
BONUS_SECRET = "BN-5521"  # the document in the folder named in NFD
ACCOUNTING = "docs/経理/賞与規程.md"
BONUS = "docs/ボーナス/賞与明細.md"  # its ID: NFC, whatever the folder's bytes
TOP_LEVEL = "docs/はじめに.md"  # what the glob key "docs/*.md" covers
FILES = {
    ACCOUNTING: f"# 賞与規程\n\n## 支給率\n\n賞与の支給率は基本給の3.7か月分とする。管理番号は {SECRET} である。\n",
    "docs/営業/営業手当.md": "# 営業手当\n\n## 支給額\n\n営業手当は外回り一日につき千二百円とする。管理番号は EG-2210 である。\n",
    "docs/総務/未分類.md": "# 未分類メモ\n\n## 備考\n\nこの覚え書きの管理番号は MX-9090 である。\n",
    TOP_LEVEL: "# はじめに\n\n## 使い方\n\n社内文書の検索の使い方をまとめる。管理番号は HJ-1000 である。\n",
    BONUS: f"# 賞与明細\n\n## 明細\n\n賞与明細の保管番号は {BONUS_SECRET} とし、経理だけが扱う。\n",
}
ACCESS = (
    "[folders]\n"
    '"csv" = ["everyone"]\n'
    '"docs" = ["everyone"]\n'
    '"docs/営業" = ["everyone"]\n'
    '"docs/経理" = ["経理"]\n'
    '"docs/ボーナス" = ["経理"]\n'  # NFC, as an editor writes it (row 1)
    '"docs/*.md" = ["everyone"]\n'  # below the folder key (row 2)
)
QUESTION = "賞与の支給率と管理番号は？"
PROXY_SECRET = "proxy-secret-value-1234"
MCP_TOKEN = "shared-mcp-token-value-123"
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "attacks", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


# --- a slow counting LLM ----------------------------------------------------------------------------


class SlowLLM(LLM):
    """A real LangChain LLM that writes one character every ``pause`` seconds and records each call's
    kind (``map`` for global search's map prompts, else ``answer``) as it begins."""

    pause: float = 0.02
    calls: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "slow-counting"

    def _call(self, prompt, stop=None, run_manager=None, **kwargs) -> str:
        return "".join(chunk.text for chunk in self._stream(prompt))

    def _stream(self, prompt, stop=None, run_manager=None, **kwargs) -> Iterator[GenerationChunk]:
        from app.graphrag.global_search import MAP_TEMPLATE

        is_map = MAP_TEMPLATE.split("{")[0] in prompt
        self.calls.append("map" if is_map else "answer")
        text = '{"points": [{"description": "賞与と手当の規程がある", "score": 80}]}' if is_map else "規程があります。"
        for char in text:
            time.sleep(self.pause)
            yield GenerationChunk(text=char)


# --- the world ----------------------------------------------------------------------------------


@dataclass
class World:
    """What every attack reaches: the settings, engine and store of the synced collection, the real
    service and page, the users (``names``, ``tokens``, ``principals`` by alice / bob / admin)."""

    settings: Any
    engine: Any
    embeddings: Any
    base: Path
    data: Path
    store: Any
    service: Any
    llm: SlowLLM
    names: dict[str, str]
    tokens: dict[str, str]
    principals: dict[str, tuple[str, ...]]
    page: str = ""  # the page's base URL
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def port(self) -> int:
        return int(self.page.rpartition(":")[2])


def private_folder(prefix: str) -> Path:
    """A new folder under /tmp (socket paths stay short), ours alone but enterable (0711): the embedded
    PostgreSQL runs as another user when we are root."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o711)
    return base


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(check: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll ``check`` until true; AssertionError naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting: {what}")
        time.sleep(0.02)


@contextlib.contextmanager
def serving(app: Any, port: int) -> Iterator[str]:
    """A real uvicorn serving ``app`` on 127.0.0.1:``port`` in a thread; yields its base URL."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), 60, "uvicorn to start")
    if not server.started:
        raise RuntimeError(f"uvicorn did not start on 127.0.0.1:{port}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def write_data(root: Path) -> Path:
    """The data folder: the sample FAQ, :data:`FILES` (the bonus folder's name written in NFD, as a Mac
    writes it) and :data:`ACCESS`."""
    (root / "csv").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "csv" / "faq.csv", root / "csv" / "faq.csv")
    for name, body in FILES.items():
        path = root / unicodedata.normalize("NFD", name) if name == BONUS else root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    (root / "access.toml").write_text(ACCESS, encoding="utf-8")
    return root


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextlib.contextmanager
def world_of(settings: Any, engine: Any, embeddings: Any, base: Path) -> Iterator[World]:
    """The world on ``engine`` (a database the caller owns; another collection and other users may be
    there): a new collection synced from a new data folder under ``base``, three users, the service
    and the page. Everything it made is removed afterwards, ``base`` left to the caller."""
    from app.graph import default_context
    from app.permissions.principals import user_principals
    from app.serving.service import RagService, no_search
    from app.storage import users as user_rows
    from app.store import RagStore
    from app.users.identity import new_token, token_hash
    from app.web.server import guarded_app

    suffix = uuid.uuid4().hex[:6]
    data = write_data(base / "data")
    settings = settings.changed(
        retrieval={"collection_name": f"attacks_{suffix}", "rerank_top_k": 10},
        graph={"extractor": "fast", "context_tokens": 128, "map_max_batches": 100, "map_concurrency": 1},
        ingest={"data_dir": data},
    )
    store = RagStore(settings, embeddings=embeddings, engine=engine)  # no principals: each read names them
    store.sync(data)
    groups = {"alice": ["経理"], "bob": ["営業"], "admin": ["admin"]}
    names = {who: f"{who}_{suffix}" for who in groups}
    tokens = {}
    for who, name in names.items():
        user_rows.upsert_user(engine, name, groups[who])
        tokens[who] = new_token()
        user_rows.add_token(engine, name, token_hash(tokens[who]))
    llm = SlowLLM()
    service = RagService(
        settings=settings,
        store=store,
        context_factory=lambda: default_context(settings, search=no_search, llm=llm, reranker=None, principals=()),
    )
    service.surface = "web"
    world = World(
        settings=settings,
        engine=engine,
        embeddings=embeddings,
        base=base,
        data=data,
        store=store,
        service=service,
        llm=llm,
        names=names,
        tokens=tokens,
        principals={who: user_principals(names[who], groups[who]) for who in names},
    )
    try:
        with world.stack:
            port = free_port()
            world.page = world.stack.enter_context(
                serving(guarded_app(service, settings, "127.0.0.1", port, data), port)
            )
            yield world
    finally:
        for name in names.values():
            user_rows.delete_user(engine, name)
        with store.writing():
            store.vectorstore.delete_collection()


# --- what a caller receives ------------------------------------------------------------------------


def stored_readers(store) -> dict[str, list[str]]:
    """Each document's stored readers (read with full access)."""
    from app.permissions.principals import FULL_ACCESS

    return {d["doc_id"]: d["readers"] for d in store.list_documents(FULL_ACCESS)}


def received(store, principals, query: str) -> str:
    """Everything ``principals`` get back from the store: the documents list, a keyword and a hybrid
    search for ``query``, as one string."""
    found = [d["doc_id"] for d in store.list_documents(principals)]
    for mode in ("keyword", "hybrid"):
        found += [
            f"{d.metadata.get('doc_id')} {d.page_content}"
            for d in store.search(query, search_mode=mode, top_k=20, principals=principals)
        ]
    return "\n".join(found)


def leaked(text: str, *secrets: str) -> list[str]:
    return [s for s in secrets if s in text]


def one_line_error(response: httpx.Response, status: int, where: str) -> str:
    """The response's one-line ``error`` after checking its status; AssertionError otherwise."""
    body = response.text
    if response.status_code != status:
        raise AssertionError(f"{where}: {response.status_code} {body[:200]!r}, expected {status}")
    line = response.json().get("error", "")
    if not line or "\n" in body or "Traceback" in body:
        raise AssertionError(f"{where}: not one line: {body[:300]!r}")
    return line


# --- the attacks ------------------------------------------------------------------------------------


def only_alice_finds(world: World, query: str, secret: str, word: str) -> None:
    """AssertionError when bob's search for ``query`` returns ``secret`` or ``word``, or when alice's (経理)
    does not return ``secret`` (then the attack proves nothing)."""
    bob = leaked(received(world.store, world.principals["bob"], query), secret, word)
    if bob:
        raise AssertionError(f"bob received {bob}")
    if secret not in received(world.store, world.principals["alice"], query):
        raise AssertionError("alice (経理) does not find the document either: the check proves nothing")


def attack_1(world: World) -> str:
    """A folder named in NFD under a key written in NFC: stored readers and bob's search."""
    on_disk = [p.name for p in (world.data / "docs").iterdir() if unicodedata.normalize("NFC", p.name) == "ボーナス"]
    if on_disk != [unicodedata.normalize("NFD", "ボーナス")]:
        raise AssertionError(f"the folder is not named in NFD on disk: {on_disk!r}")
    readers = stored_readers(world.store)
    if readers.get(BONUS) != ["admin", "経理"]:
        raise AssertionError(f"{BONUS} stored with readers {readers.get(BONUS)}; all IDs: {sorted(readers)}")
    query = f"{BONUS_SECRET} 賞与明細"
    only_alice_finds(world, query, BONUS_SECRET, "賞与明細")
    return f"{BONUS} readers [admin, 経理]; bob: no {BONUS_SECRET}; alice finds it"


def attack_2(world: World) -> str:
    """``"docs/*.md" = ["everyone"]`` below ``"docs/経理" = ["経理"]``: stored readers and bob's search."""
    readers = stored_readers(world.store)
    if readers.get(ACCOUNTING) != ["admin", "経理"]:
        raise AssertionError(f"{ACCOUNTING} stored with readers {readers.get(ACCOUNTING)}")
    if "everyone" not in readers.get(TOP_LEVEL, []):
        raise AssertionError(f"the glob key gave {TOP_LEVEL} no everyone ({readers.get(TOP_LEVEL)}): not in force")
    query = f"{SECRET} 賞与規程 支給率"
    only_alice_finds(world, query, SECRET, "賞与規程")
    return f"{ACCOUNTING} readers [admin, 経理], {TOP_LEVEL} everyone's; bob: no {SECRET}"


def attack_3(world: World) -> str:
    """ACCESS_FROM_FS=1, docs/経理 at 0750 and its files 0644: stored readers, bob's search and an app
    user named like the folder's OS owner."""
    from app.permissions.principals import FULL_ACCESS, user_principals
    from app.store import RagStore

    data = world.base / "fs-data"
    shutil.copytree(world.data, data)
    for path in (data, *(p for p in data.rglob("*") if p.is_dir())):
        path.chmod(0o755)
    for path in (p for p in data.rglob("*") if p.is_file()):
        path.chmod(0o644)
    folder = data / "docs" / "経理"
    folder.chmod(0o750)
    settings = world.settings.changed(
        access={"from_fs": True},
        retrieval={"collection_name": f"{world.settings.retrieval.collection_name}_fs"},
        graph={"extractor": "off"},
    )
    store = RagStore(settings, embeddings=world.embeddings, engine=world.engine)
    try:
        store.sync(data)
        readers = {d["doc_id"]: d["readers"] for d in store.list_documents(FULL_ACCESS)}
        secret_readers = readers.get(ACCOUNTING, [])
        if not secret_readers or "everyone" in secret_readers:
            raise AssertionError(f"{ACCOUNTING} under a 0750 folder stored with readers {secret_readers}")
        owner = folder.owner()
        if f"user:{owner}" in secret_readers or owner in secret_readers:
            raise AssertionError(f"an OS name in the app's namespace: {secret_readers}")
        sales = readers.get("docs/営業/営業手当.md", [])
        if "everyone" not in sales or f"os-user:{owner}" not in sales:
            raise AssertionError(f"the 0755 folder's document: readers {sales}, not everyone's and its owner's")
        query = f"{SECRET} 賞与規程 支給率"
        for who, principals in (("bob", world.principals["bob"]), (f"app user {owner!r}", user_principals(owner, []))):
            got = leaked(received(store, principals, query), SECRET, "賞与規程")
            if got:
                raise AssertionError(f"{who} received {got}")
        return f"{ACCOUNTING} readers {secret_readers}, 営業 os-user:{owner}+everyone; bob, app user {owner!r}: none"
    finally:
        with store.writing():
            store.vectorstore.delete_collection()


def attack_4(world: World) -> str:
    """The query role with no principals, and bob's, on every table PostgreSQL says it may SELECT;
    the keyword rows and statistics, whose tokens spell the text."""
    from app.storage import exposure
    from app.storage.tables import NAMES

    tables = exposure.selectable_tables(world.engine)
    mentions = next((t for t in tables if t[1] == NAMES["mentions"]), None)
    if mentions is None:
        raise AssertionError(f"the mentions table is not among the query role's tables: {tables}")
    shown = {name: n for (_, name), n in exposure.rows_without_principals(world.engine, tables).items() if n}
    if shown:
        raise AssertionError(f"rows shown without principals: {shown}")
    spelled = [NAMES[t] for t in ("keywords", "term_stats") if exposure.may_select(world.engine, NAMES[t])]
    if spelled:
        raise AssertionError(f"the query role may SELECT {spelled}")
    as_bob = exposure.rows_text(world.engine, world.principals["bob"], tables)
    bob = {name: leaked(text, SECRET, "賞与規程") for (_, name), text in as_bob.items()}
    bob = {name: found for name, found in bob.items() if found}
    if bob:
        raise AssertionError(f"bob's transaction reads {bob}")
    if SECRET not in exposure.rows_text(world.engine, world.principals["alice"], [mentions])[mentions]:
        raise AssertionError("alice reads no mention of the secret: the graph holds nothing to leak")
    keywords = leaked(received(world.store, world.principals["bob"], f"{SECRET} 4471"), SECRET)
    if keywords:
        raise AssertionError(f"bob's keyword search received {keywords}")
    return f"{len(tables)} tables, 0 rows without principals; keyword tables not selectable; bob: none"


def attack_5(world: World) -> str:
    """access.toml moved away while restricted readers are stored: the page (no WEB_TOKEN) and MCP over
    HTTP, anonymous from loopback, bob, and an admin."""
    from app.mcp.server import build_server, http_app
    from app.serving.access import Token
    from app.serving.gate import access_gate
    from app.web.server import guarded_app

    data = world.base / "moved-data"
    shutil.copytree(world.data, data)
    gate = access_gate(world.settings, data, lambda: world.engine)
    page_port, mcp_port = free_port(), free_port()
    server = build_server(lambda: world.service, gate=gate)
    mcp = http_app(server, world.settings, "127.0.0.1", mcp_port, Token(MCP_TOKEN, "MCP_TOKEN"), gate)
    page_app = guarded_app(world.service, world.settings, "127.0.0.1", page_port, data, gate=gate)
    with serving(page_app, page_port) as page, serving(mcp, mcp_port) as mcp_url:
        before = httpx.get(f"{page}/api/documents", headers=bearer(world.tokens["bob"]), timeout=60)
        if before.status_code != 200:
            raise AssertionError(f"bob is refused with the access file in place: {before.status_code}")
        (data / "access.toml").rename(world.base / "access.toml.moved")
        lines = set()
        for who, headers in (("anonymous", {}), ("bob", bearer(world.tokens["bob"]))):
            for path in ("/api/documents", "/api/feedback", f"/files/{quote(ACCOUNTING)}"):
                got = httpx.get(f"{page}{path}", headers=headers, timeout=60)
                if leaked(got.text, SECRET, "賞与規程") or got.status_code != 403:
                    raise AssertionError(f"{who} GET {path}: {got.status_code} {got.text[:200]!r}")
                lines.add(one_line_error(got, 403, f"{who} GET {path}"))
        for who, token in (("bob", world.tokens["bob"]), ("MCP_TOKEN", MCP_TOKEN)):
            got = httpx.post(
                f"{mcp_url}/mcp", json=MCP_INITIALIZE, headers={**MCP_HEADERS, **bearer(token)}, timeout=60
            )
            if got.status_code != 403:
                raise AssertionError(f"MCP as {who}: {got.status_code} {got.text[:200]!r}")
        admin = httpx.get(f"{page}/api/documents", headers=bearer(world.tokens["admin"]), timeout=60)
        if admin.status_code != 200 or ACCOUNTING not in admin.text:
            raise AssertionError(f"the admin is refused too ({admin.status_code}): the lock proves nothing")
    return f"anonymous and bob 403 ({len(lines)} line: {next(iter(lines))[:24]}…), MCP 403, admin 200"


def attack_6(world: World) -> str:
    """The database stopped while a personal token and a session cookie name who asks: the page's answer,
    then the next request after the restart. A database of its own (this attack stops it)."""
    from app import storage
    from app.serving.service import RagService
    from app.storage import embedded as embedded_pg
    from app.storage import users as user_rows
    from app.store import RagStore
    from app.users.identity import new_token, token_hash
    from app.web.guard import COOKIE, DATABASE_GONE
    from app.web.server import guarded_app

    base = private_folder("rag-attack6-")
    pgdata = base / "pgdata"
    settings = world.settings.changed(db={"pgdata_dir": pgdata, "name": "rag_down"}, graph={"extractor": "off"})
    try:
        engine = storage.get_engine(settings)
        store = RagStore(settings, embeddings=world.embeddings, engine=engine)
        with store.writing():  # the schema, as the first ingest makes it
            pass
        token = new_token()
        user_rows.upsert_user(engine, "dora", ["経理"])
        user_rows.add_token(engine, "dora", token_hash(token))
        data = base / "data"
        data.mkdir()
        (data / "access.toml").write_text('[folders]\n"csv" = ["everyone"]\n', encoding="utf-8")
        service = RagService(settings=settings, store=store, context_factory=lambda: None)
        port = free_port()
        with serving(guarded_app(service, settings, "127.0.0.1", port, data), port) as page:
            with httpx.Client(base_url=page, timeout=60, follow_redirects=False) as web:
                opened = web.get("/", params={"token": token})
                session = opened.cookies.get(COOKIE)
                if opened.status_code != 303 or not session:
                    raise AssertionError(f"no session opened: {opened.status_code}")
                web.cookies.clear()
                calls = {
                    "token": lambda: web.get("/api/documents", headers=bearer(token)),
                    "cookie": lambda: web.get("/api/documents", cookies={COOKIE: session}),
                }
                for name, call in calls.items():
                    if call().status_code != 200:
                        raise AssertionError(f"{name}: refused while the database runs")
                embedded_pg.stop(pgdata)
                for name, call in calls.items():
                    down = call()
                    line = one_line_error(down, 503, f"{name} with the database stopped")
                    if str(pgdata) in down.text or "PGSQL" in down.text or "socket" in down.text:
                        raise AssertionError(f"{name}: the 503 shows the socket: {down.text[:300]!r}")
                    if line != DATABASE_GONE:
                        raise AssertionError(f"{name}: {line!r}")
                embedded_pg.ensure_running(pgdata)
                for name, call in calls.items():
                    again = call()
                    if again.status_code != 200:
                        raise AssertionError(f"{name} after the restart: {again.status_code} {again.text[:200]!r}")
        return f"token and cookie: 503 {DATABASE_GONE[:14]}…, no path; 200 after the restart"
    finally:
        embedded_pg.stop(pgdata)
        shutil.rmtree(base, ignore_errors=True)


def attack_7(world: World) -> str:
    """A NUL in an answer ID and a question, a lone surrogate, through the real page; a NUL question
    through MCP: refused with one line before any work (no model call)."""
    from mcp import Client

    from app.mcp.server import build_server

    headers = {**bearer(world.tokens["alice"]), "Content-Type": "application/json"}
    calls = len(world.llm.calls)
    requests = [
        ("POST", "/api/feedback", {"answer_id": "ab\u0000cd", "helpful": True}),
        ("POST", "/api/ask", {"question": "賞与\u0000の支給率は？"}),
        ("POST", "/api/ask", {"question": "賞与\ud800の支給率は？"}),
        ("GET", "/api/source?id=" + quote("賞与規程.md") + "%00", None),
        ("GET", "/files/docs/%E7%B5%8C%E7%90%86/x%00.md", None),
    ]
    with httpx.Client(base_url=world.page, timeout=60) as web:
        for method, path, body in requests:
            content = None if body is None else json.dumps(body).encode()  # ASCII escapes, as a script sends
            got = web.request(method, path, content=content, headers=headers)
            one_line_error(got, 400, f"{method} {path} {body!r}")

    async def mcp_ask():
        async with Client(build_server(lambda: world.service, as_user=world.names["alice"])) as client:
            return await client.call_tool("ask", {"question": "ab\u0000cd"})

    tool = asyncio.run(mcp_ask())
    if not tool.is_error or "\n" in tool.content[0].text:
        raise AssertionError(f"MCP ask with a NUL: {tool.content[0].text[:200]!r}")
    if len(world.llm.calls) != calls:
        raise AssertionError(f"the model was called {len(world.llm.calls) - calls} time(s)")
    return f"{len(requests)} page requests 400 with one line, MCP tool error; 0 model calls"


def attack_8(world: World) -> str:
    """A global question over the real page whose asker hangs up at the first map call; another asker's
    question; then the same global question asked to the end: its map calls are what the first would
    have made."""
    llm, port = world.llm, world.port()
    question = {"question": "賞与と手当の全体像は？", "mode": "global"}
    alice = bearer(world.tokens["alice"])
    llm.calls.clear()
    body = json.dumps(question).encode()
    request = (
        f"POST /api/ask HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Authorization: {alice['Authorization']}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(request + body)
        wait_until(lambda: "map" in llm.calls, 120, "the first map call")
        conn.shutdown(socket.SHUT_RDWR)
    after = httpx.post(f"{world.page}/api/ask", json={"question": "営業手当はいくら？"}, headers=alice, timeout=600)
    if "event: done" not in after.text:
        raise AssertionError(f"the next asker got no answer: {after.text[-300:]!r}")
    made = llm.calls.count("map")  # the model answers one question at a time: the first is over
    llm.calls.clear()
    whole = httpx.post(f"{world.page}/api/ask", json=question, headers=alice, timeout=600)
    if "event: done" not in whole.text or llm.calls.count("map") < 3:
        raise AssertionError(f"the question asked to the end made {llm.calls.count('map')} map calls: too few to tell")
    if made > 2 or made >= llm.calls.count("map"):
        raise AssertionError(f"{made} of {llm.calls.count('map')} map calls made after the asker left")
    return f"{made} of {llm.calls.count('map')} map calls made after the hang-up; the next asker answered"


def attack_9(world: World) -> str:
    """``python -m app.users add <alice in full width> --groups 営業`` while alice is in 経理: a real
    process, the world's database through the environment."""
    import subprocess

    from app.storage import users as user_rows

    name = world.names["alice"]
    wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in name)  # ａｌｉｃｅ＿…
    done = subprocess.run(
        [sys.executable, "-m", "app.users", "add", wide, "--groups", "営業"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    groups = user_rows.user_groups(world.engine, name)
    if groups != ["経理"]:
        raise AssertionError(f"alice's groups are now {groups}")
    lines = done.stderr.strip().splitlines()
    if done.returncode != 1 or len(lines) != 1 or name not in lines[0]:
        raise AssertionError(f"exit {done.returncode}, stderr {done.stderr[-300:]!r}")
    return f"exit 1, one line naming {name}; alice keeps 経理"


def attack_10(world: World) -> str:
    """The proxy's identity header twice (the asker's own value first, the proxy's appended): page and
    MCP over HTTP."""
    from app.mcp.server import build_server, http_app
    from app.serving.access import Token
    from app.web.server import guarded_app

    settings = world.settings.changed(access={"user_header": "X-Forwarded-User", "proxy_secret": PROXY_SECRET})
    page_port, mcp_port = free_port(), free_port()
    page_app = guarded_app(world.service, settings, "127.0.0.1", page_port, world.data)
    mcp = http_app(build_server(lambda: world.service), settings, "127.0.0.1", mcp_port, Token(MCP_TOKEN, "MCP_TOKEN"))
    secret = [("X-Auth-Proxy-Secret", PROXY_SECRET)]
    twice = [("X-Forwarded-User", world.names["alice"]), ("X-Forwarded-User", world.names["bob"]), *secret]
    with serving(page_app, page_port) as page, serving(mcp, mcp_port) as mcp_url:
        once = httpx.get(f"{page}/api/documents", headers=[("X-Forwarded-User", world.names["bob"]), *secret])
        if once.status_code != 200 or once.json().get("user") != world.names["bob"]:
            raise AssertionError(f"the proxy's header once is not bob ({once.status_code}): the check proves nothing")
        got = httpx.get(f"{page}/api/documents", headers=twice, timeout=60)
        if leaked(got.text, SECRET, "賞与規程"):
            raise AssertionError(f"the page served alice's documents: {got.text[:200]!r}")
        line = one_line_error(got, 400, "page, the header twice")
        over_mcp = httpx.post(f"{mcp_url}/mcp", json=MCP_INITIALIZE, headers=[*MCP_HEADERS.items(), *twice], timeout=60)
        if over_mcp.status_code != 400:
            raise AssertionError(f"MCP, the header twice: {over_mcp.status_code} {over_mcp.text[:200]!r}")
    return f"page 400 {line!r}, MCP 400"


def attack_11(world: World) -> str:
    """Library entry points called without saying who asks: RagStore, RagService, get_vectorstore."""
    from app import db
    from app.permissions.principals import FULL_ACCESS
    from app.store import RagStore

    store = RagStore(world.settings, embeddings=world.embeddings, engine=world.engine)
    vectors = db.get_vectorstore(settings=world.settings, embeddings=world.embeddings, engine=world.engine)
    if ACCOUNTING not in {d.metadata.get("doc_id") for d in store.search(QUESTION, top_k=20, principals=FULL_ACCESS)}:
        raise AssertionError("full access does not find the accounting document: the check proves nothing")
    reads = {
        "RagStore.search hybrid": lambda: store.search(QUESTION, top_k=20),
        "RagStore.search keyword": lambda: store.search(f"{SECRET} 賞与", search_mode="keyword", top_k=20),
        "RagStore.search global": lambda: store.search(QUESTION, search_mode="global", top_k=20),
        "RagStore.list_documents": lambda: store.list_documents(),
        "RagStore.source_chunks": lambda: store.source_chunks("賞与規程.md#支給率"),
        "RagService.search": lambda: world.service.search(QUESTION, 20, "hybrid"),
        "RagService.list_documents": lambda: world.service.list_documents(),
        "get_vectorstore().similarity_search": lambda: vectors.similarity_search(QUESTION, k=20),
    }
    for name, read in reads.items():
        try:
            got = read()
        except TypeError:
            continue
        raise AssertionError(f"{name} without principals returned {str(got)[:200]!r}")
    return f"{len(reads)} reads raise TypeError; full access named finds the document"


def attack_12(world: World) -> str:
    """The page's session cookie after signing in with a personal token; the raw token as a cookie;
    signing out."""
    from app.storage import users as user_rows
    from app.users.identity import token_hash
    from app.web.guard import COOKIE

    token = world.tokens["alice"]
    with httpx.Client(base_url=world.page, timeout=60, follow_redirects=False) as web:
        opened = web.get("/", params={"token": token})
        session = opened.cookies.get(COOKIE, "")
        if opened.status_code != 303 or token in session or not session.startswith("rs_"):
            raise AssertionError(f"the cookie after signing in: {opened.status_code} {session[:12]!r}…")
        row = user_rows.session_row(world.engine, hashlib.sha256(session.encode()).hexdigest())
        if row is None or row[1] != world.names["alice"] or user_rows.session_row(world.engine, session) is not None:
            raise AssertionError(f"the session is not stored hashed for alice: {row}")
        web.cookies.clear()
        if web.get("/api/documents", cookies={COOKIE: session}).json().get("user") != world.names["alice"]:
            raise AssertionError("the session does not name alice: the check proves nothing")
        raw = web.get("/api/documents", cookies={COOKIE: token})
        if raw.status_code != 401:
            raise AssertionError(f"the raw token as the cookie: {raw.status_code}")
        web.cookies.set(COOKIE, session)
        web.get("/signout")
        web.cookies.clear()
        ended = web.get("/api/documents", cookies={COOKIE: session})
        if ended.status_code != 401 or user_rows.session_row(world.engine, token_hash(session)) is not None:
            raise AssertionError(f"the session still works after signing out: {ended.status_code}")
    return "cookie rs_… stored as sha256; the raw token as cookie 401; signed out 401"


ATTACKS = [
    attack_1,
    attack_2,
    attack_3,
    attack_4,
    attack_5,
    attack_6,
    attack_7,
    attack_8,
    attack_9,
    attack_10,
    attack_11,
    attack_12,
]
TITLES = {
    attack_1: "NFD folder name under an NFC key",
    attack_2: "glob key below a folder key",
    attack_3: "ACCESS_FROM_FS with a 0750 folder",
    attack_4: "query role without principals",
    attack_5: "access file moved away, no WEB_TOKEN",
    attack_6: "database stopped mid-identity",
    attack_7: "NUL / lone surrogate in a request",
    attack_8: "global question, asker hung up",
    attack_9: "users add in full width",
    attack_10: "proxy identity header twice",
    attack_11: "library call without principals",
    attack_12: "session cookie holds the token",
}


def replay(world: World) -> list[dict]:
    """Run every attack; one record each: row, attack, held, what was seen."""
    results = []
    for number, attack in enumerate(ATTACKS, 1):
        try:
            seen, held = attack(world), True
        except AssertionError as exc:
            seen, held = f"leaked: {exc}", False
        except Exception as exc:  # a crash is no proof that the row holds
            seen, held = f"error: {type(exc).__name__}: {exc}".splitlines()[0], False
            traceback.print_exc()
        results.append({"row": number, "attack": TITLES[attack], "held": held, "seen": seen})
    return results


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--json", type=Path, help="also write the results as JSON here")
    options = args.parse_args(argv)
    # before the MCP SDK's own logging set-up (INFO for every request): warnings only, on stderr
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from app import embeddings as embedding_models
    from app import storage
    from app.config import Settings, variables
    from app.storage import embedded as embedded_pg

    base = private_folder("rag-attacks-")
    env = {
        "PGDATA_DIR": str(base / "pgdata"),
        "DB_NAME": "rag_attacks",
        "MODELS_DIR": str(base / "models"),
        "LLM_MODEL_PATH": str(GGUF),
        "LLM_MAX_TOKENS": "48",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    for name in variables():  # nothing of the caller's shell: this world only (app.users reads it too)
        os.environ.pop(name, None)
    os.environ.update(env)
    try:
        settings = Settings.from_env()
        engine = storage.get_engine(settings)
        with world_of(settings, engine, embedding_models.get_embeddings(settings), base) as world:
            results = replay(world)
    finally:
        embedded_pg.stop(base / "pgdata")
        shutil.rmtree(base, ignore_errors=True)
    print(f"{'#':>2}  {'attack':<38}  {'':4}  what was seen")
    for r in results:
        print(f"{r['row']:>2}  {r['attack']:<38}  {'held' if r['held'] else 'LEAK'}  {r['seen']}")
    held = sum(r["held"] for r in results)
    print(f"{held} held, {len(results) - held} leaked")
    if options.json:
        options.json.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0 if held == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
