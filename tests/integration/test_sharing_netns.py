"""Sharing the page for real: in a network namespace of its own (``unshare -n``) the test gives an
interface the address 10.200.0.1/24, starts uvicorn bound to 0.0.0.0 with the web page's real guard
(:func:`app.web.guard.web_guard`, WEB_TOKEN set, no ALLOWED_HOSTS / ALLOWED_ORIGINS, this machine's
names found by the real discovery) and the :class:`app.web.headers.SecurityHeaders` middleware around
a trivial Starlette app, and asks it with urllib at http://10.200.0.1:PORT as a colleague would.

Shown: the machine's address is accepted as Host (200 with the bearer secret, 401 without), the
page's own Origin on a POST is accepted, another Origin is refused (403), another Host is refused
(421), the security headers are on every response, and the start line names 10.200.0.1 (not
127.0.0.1) without the secret. Needs root (to make the namespace); skipped, saying why, otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.integration.conftest import ROOT

pytestmark = pytest.mark.integration

ADDRESS = "10.200.0.1"
PORT = 8780  # a fresh namespace has nothing listening
SECRET = "netns-shared-secret-0123456789"

# Runs inside the namespace: ``serve`` is the server, ``ask`` starts it and asks it, printing JSON.
SCRIPT = r"""
import json, subprocess, sys, time, urllib.error, urllib.request

ADDRESS, PORT, SECRET = sys.argv[2], int(sys.argv[3]), sys.argv[4]

if sys.argv[1] == "serve":
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from app.web.guard import web_guard
    from app.web.headers import SecurityHeaders

    async def documents(request):
        return JSONResponse({"documents": [{"doc_id": "faq.csv"}]})

    async def ask(request):
        return JSONResponse({"answer": (await request.json())["question"]})

    inner = Starlette(
        routes=[Route("/api/documents", documents, methods=["GET"]), Route("/api/ask", ask, methods=["POST"])]
    )
    app = SecurityHeaders(web_guard(inner, SECRET, "0.0.0.0", PORT, (), ()))
    print(json.dumps({"hosts": app.app.hosts, "origins": app.app.origins}), flush=True)
    uvicorn.run(app, host="0.0.0.0", port=PORT, log_level="warning", access_log=False)
    raise SystemExit(0)

from app.cli.web import start_lines

base = f"http://{ADDRESS}:{PORT}"
server = subprocess.Popen(
    [sys.executable, __file__, "serve", ADDRESS, str(PORT), SECRET], stdout=subprocess.PIPE, text=True
)
lists = json.loads(server.stdout.readline())


def call(path, headers=None, body=None):
    request = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={**({"Content-Type": "application/json"} if body is not None else {}), **(headers or {})},
        method="GET" if body is None else "POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return {"status": response.status, "headers": dict(response.headers.items()), "body": response.read().decode()}
    except urllib.error.HTTPError as error:
        return {"status": error.code, "headers": dict(error.headers.items()), "body": error.read().decode()}


try:
    for _ in range(200):
        try:
            call("/api/documents")
            break
        except OSError:
            time.sleep(0.05)
    bearer = {"Authorization": f"Bearer {SECRET}"}
    own = f"http://{ADDRESS}:{PORT}"
    results = {
        "lists": lists,
        "start_lines": start_lines("0.0.0.0", PORT, SECRET),
        "documents": call("/api/documents", bearer),
        "no_secret": call("/api/documents"),
        "own_origin_post": call("/api/ask", {**bearer, "Origin": own}, {"question": "q"}),
        "evil_origin_post": call("/api/ask", {**bearer, "Origin": "http://evil.example"}, {"question": "q"}),
        "evil_host": call("/api/documents", {**bearer, "Host": "evil.example"}),
        "other_port_origin": call("/api/ask", {**bearer, "Origin": f"http://{ADDRESS}:{PORT + 1}"}, {"question": "q"}),
    }
finally:
    server.terminate()
    server.wait(timeout=10)
print("RESULTS " + json.dumps(results))
"""

SETUP = (
    "set -e; ip link set lo up; "
    "if ip link add rag0 type dummy 2>/dev/null; then IF=rag0; "
    "else ip link add rag0 type veth peer name rag1; ip link set rag1 up; IF=rag0; fi; "
    f'ip addr add {ADDRESS}/24 dev "$IF"; ip link set "$IF" up; '
    'exec "$PYTHON" "$SCRIPT" ask "$ADDRESS" "$PORT" "$SECRET"'
)


def namespaces_unavailable() -> str | None:
    """Why a network namespace cannot be made here, or None when it can."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs the unshare and ip commands (util-linux, iproute2)"
    probe = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot make a network namespace here (unshare -n: {probe.stderr.strip() or probe.returncode}); run as root"
    return None


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> dict:
    """What the colleague saw, asked inside a fresh network namespace."""
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    script = tmp_path_factory.mktemp("netns") / "share.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "SCRIPT": str(script),
        "ADDRESS": ADDRESS,
        "PORT": str(PORT),
        "SECRET": SECRET,
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", SETUP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULTS ")]
    assert done.returncode == 0 and lines, (done.returncode, done.stdout[-2000:], done.stderr[-4000:])
    return json.loads(lines[-1].removeprefix("RESULTS "))


SECURITY = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}


def security(response: dict) -> dict:
    """The security headers of a response as sent (names compared case-insensitively)."""
    sent = {name.lower(): value for name, value in response["headers"].items()}
    return {name: sent.get(name.lower()) for name in (*SECURITY, "Cache-Control")}


def test_the_interface_address_is_one_of_the_server_s_own_names(shared):
    assert f"{ADDRESS}:{PORT}" in shared["lists"]["hosts"]
    assert f"http://{ADDRESS}:{PORT}" in shared["lists"]["origins"]
    assert shared["lists"]["hosts"][:3] == [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}"]


def test_the_machine_address_is_accepted_as_host_with_the_secret(shared):
    documents = shared["documents"]
    assert documents["status"] == 200 and json.loads(documents["body"]) == {"documents": [{"doc_id": "faq.csv"}]}
    assert security(documents) == {**SECURITY, "Cache-Control": "no-store"}
    assert shared["no_secret"]["status"] == 401
    assert security(shared["no_secret"]) == {**SECURITY, "Cache-Control": "no-store"}


def test_the_page_s_own_origin_may_post(shared):
    post = shared["own_origin_post"]
    assert (post["status"], json.loads(post["body"])) == (200, {"answer": "q"})
    assert security(post) == {**SECURITY, "Cache-Control": "no-store"}


def test_another_origin_is_refused_with_403(shared):
    for name in ("evil_origin_post", "other_port_origin"):
        refused = shared[name]
        assert refused["status"] == 403, name
        assert json.loads(refused["body"])["error"].endswith("（ALLOWED_ORIGINS）")
        assert security(refused) == {**SECURITY, "Cache-Control": "no-store"}


def test_another_host_is_refused_with_421(shared):
    refused = shared["evil_host"]
    assert refused["status"] == 421 and "ALLOWED_HOSTS" in json.loads(refused["body"])["error"]
    assert security(refused) == {**SECURITY, "Cache-Control": "no-store"}


def test_the_start_line_names_the_interface_address_and_never_the_secret(shared):
    lines = shared["start_lines"]
    assert (
        lines[0]
        == f"web page on http://{ADDRESS}:{PORT}/ (on this machine also http://127.0.0.1:{PORT}/; Ctrl-C to stop)"
    )
    assert lines[1].startswith(f"colleagues open http://{ADDRESS}:{PORT}/?token=<token> once")
    assert f"{ADDRESS}:{PORT}" in lines[2] and SECRET not in "\n".join(lines)
