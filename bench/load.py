"""The load run (``make bench``, section ``load``): simulated askers on the page, as colleagues at their
desks would use it, against the in-process model and against a local llama-cpp-python server.

``askers`` askers arrive evenly over ``minutes`` minutes, each asking one different question of the
sample evaluation set on the page (the app ``python -m app.web`` serves, under uvicorn on a free
127.0.0.1 port, loopback only), and read the answer as it streams. For each: the time to the passages
(the first ``sources`` event), to the first token, and to ``done``; errors are counted (none allowed).
Reported: answers per minute (answered questions over the time from the first question to the last
answer), p50/p95 of each time, the longest wait in line.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from app.config import Settings

ROOT = Path(__file__).resolve().parents[1]


def questions(count: int) -> list[str]:
    """``count`` different questions of the sample evaluation set (answerable ones first)."""
    items = json.loads((ROOT / "data" / "eval_questions.json").read_text(encoding="utf-8"))
    ordered = [q["query"] for q in items if q.get("expected_source")] + [
        q["query"] for q in items if not q.get("expected_source")
    ]
    return list(dict.fromkeys(ordered))[:count]


def ask_on_page(port: int, question: str, record: dict) -> None:
    """POST one question and note when its passages, first token and answer arrived (seconds from the
    request), how long it was told to wait, or its error."""
    import httpx

    start = time.perf_counter()
    try:
        with httpx.stream(
            "POST", f"http://127.0.0.1:{port}/api/ask", json={"question": question}, timeout=900
        ) as reply:
            kind = None
            for line in reply.iter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                    at = time.perf_counter() - start
                    if kind == "sources":
                        record.setdefault("passages_s", at)
                    elif kind == "token":
                        record.setdefault("first_token_s", at)
                    elif kind == "queued":
                        record["queued"] = True
                    elif kind == "done":
                        record["done_s"] = at
                    elif kind == "error":
                        record["error"] = "error event"
                elif line.startswith("data: ") and kind == "error":
                    record["error"] = json.loads(line.removeprefix("data: ")).get("message", "error")
    except Exception as exc:  # a failed request is an error, counted, not raised
        record["error"] = f"{type(exc).__name__}: {exc}"
    record["end"] = time.perf_counter()
    if "done_s" not in record and "error" not in record:
        record["error"] = "no done event"


def serve_in_thread(app: Any) -> tuple[Any, int]:
    """uvicorn on a free 127.0.0.1 port in a thread; ``(server, port)`` once it listens."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, name="load-page", daemon=True).start()
    deadline = time.monotonic() + 30
    while not (server.started and server.servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    return server, server.servers[0].sockets[0].getsockname()[1]


def pct(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (nearest rank) of ``values``, rounded to 0.01 s; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))], 2)


def summary(records: list[dict], began: float) -> dict:
    """What one run's askers saw: answers per minute, p50/p95 times, errors."""
    done = [r for r in records if "done_s" in r]
    last = max((r["end"] for r in done), default=began)
    minutes = max(1e-9, (last - began) / 60)
    out: dict[str, Any] = {
        "asked": len(records),
        "answered": len(done),
        "answers_per_minute": round(len(done) / minutes, 2),
    }
    for key in ("passages_s", "first_token_s", "done_s"):
        values = [r[key] for r in records if key in r]
        out[key] = {"p50": pct(values, 50), "p95": pct(values, 95), "n": len(values)}
    out["queued"] = sum(bool(r.get("queued")) for r in records)
    out["errors"] = [r["error"] for r in records if r.get("error")]
    return out


def load_run(service: Any, askers: int, minutes: float) -> dict:
    """``askers`` questions on the page over ``service``, arriving evenly over ``minutes``."""
    from app.web.app import create_app

    server, port = serve_in_thread(create_app(service))
    try:
        wanted = questions(askers)
        records = [{"question": q} for q in wanted]
        gap = minutes * 60 / max(1, len(wanted))
        threads = []
        began = time.perf_counter()
        for i, record in enumerate(records):
            delay = began + i * gap - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            thread = threading.Thread(target=ask_on_page, args=(port, record["question"], record), daemon=True)
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(timeout=1800)
        return summary(records, began)
    finally:
        server.should_exit = True


def bench_load(settings: Settings, askers: int = 20, minutes: float = 5.0) -> dict:
    """The load run against the in-process model, then against llama_cpp.server (the same GGUF), each
    over the sample corpus synced into ``settings``' database; earlier answers are not reused (each
    asker's question is a different one)."""
    from app.models.locate import resolve_llm_path
    from app.serving.service import RagService
    from app.store import RagStore
    from bench.scale import _start_llm_server

    RagStore(settings).sync(ROOT / "data")
    gguf = resolve_llm_path(settings.llm.model_path, settings.models.dir, settings.llm.model_path_is_default)
    results: dict[str, Any] = {"askers": askers, "minutes": minutes, "model": gguf.name}
    started = time.perf_counter()
    service = RagService.create(settings, data_dir=ROOT / "data", preload_llm=False)
    service.context()  # loaded before the first asker: the run measures answering, not loading
    results["in_process"] = load_run(service, askers, minutes)
    del service
    proc, url, log = _start_llm_server(gguf, settings)
    try:
        served = settings.changed(llm={"base_url": url, "model_path": str(gguf), "model_path_is_default": False})
        service = RagService.create(served, data_dir=ROOT / "data", preload_llm=False)
        service.context()
        results["server"] = load_run(service, askers, minutes)
    finally:
        proc.kill()
        log.close()
    results["seconds"] = round(time.perf_counter() - started)
    return results


def format_load(load: dict) -> list[str]:
    """Report lines of the load run."""
    lines = [
        f"\nLoad: {load['askers']} askers over {load['minutes']:g} min on the page ({load['model']}):",
        "  LLM                 answers/min  passages p50/p95 s  first token p50/p95 s  answer p50/p95 s  errors",
    ]
    for key, label in (("in_process", "in process"), ("server", "llama_cpp.server")):
        run = load.get(key)
        if not run:
            continue
        lines.append(
            f"  {label:<19} {run['answers_per_minute']:>11}  "
            f"{run['passages_s']['p50']}/{run['passages_s']['p95']:<13}  "
            f"{run['first_token_s']['p50']}/{run['first_token_s']['p95']:<16}  "
            f"{run['done_s']['p50']}/{run['done_s']['p95']:<11}  {len(run['errors'])}"
        )
    return lines


if __name__ == "__main__":  # python -m bench.load [askers] [minutes]: this section alone
    import sys

    from app.config import get_settings

    base = get_settings()
    chosen = base.changed(db={"name": f"{base.db.name}_bench", "statement_timeout_ms": 0})
    got = bench_load(
        chosen, int(sys.argv[1]) if len(sys.argv) > 1 else 20, float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    )
    print(json.dumps(got, ensure_ascii=False, indent=2))
    print("\n".join(format_load(got)))
