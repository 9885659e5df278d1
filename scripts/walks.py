"""Walks along the calls (issue 54): from an entry point, every app function a static AST pass says it
may call, and how often the walk changes package ("moves") or calls a package on a higher floor of
.importlinter ("climbs": back-and-forth that is not an injected callback).

    python scripts/walks.py [--root .] [--json]

The call graph is resolved from the source only: ``f()`` (a def of the module or an imported name),
``module.f()``, ``self.m()`` (the class and its app bases), ``Class()`` (its ``__init__``), and
``obj.m()`` when exactly one app class defines ``m``. Nested defs and lambdas count as their
enclosing function. A function passed as a value (``search=store.search``) is a callback edge:
counted apart, never as a climb. Run it on two checkouts to compare before and after.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import io
import json
import logging
import re
import subprocess
import sys
import threading
from collections import defaultdict, deque
from concurrent.futures import Future
from multiprocessing.connection import Connection
from pathlib import Path

BUILTIN_METHODS = {
    name
    for kind in (
        str,
        bytes,
        list,
        dict,
        set,
        tuple,
        int,
        float,
        io.IOBase,
        io.TextIOBase,
        Path,
        re.Match,
        re.Pattern,
        threading.Thread,
        threading.Event,
        subprocess.Popen,
        Future,
        Connection,
        logging.Logger,
    )
    for name in dir(kind)
}
WALKS = {
    "a question (python -m app.ask)": ["cli.ask:main"],
    "a file into storage (python -m app.ingest)": ["cli.ingest:main"],
    "an identity into SQL (the page's search as a user)": [
        "serving.identify:Identifier.identify",
        "serving.service:RagService.search",
    ],
}


def module_name(app: Path, path: Path) -> str:
    """``graph`` for app/graph.py, ``graphrag.search`` for app/graphrag/search.py."""
    parts = list(path.relative_to(app).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Index:
    """Every function and class of the app, and each module's imported names."""

    def __init__(self, app: Path):
        self.trees = {module_name(app, p): ast.parse(p.read_text(encoding="utf-8")) for p in app.rglob("*.py")}
        self.modules = set(self.trees)
        self.functions: dict[str, ast.AST] = {}  # "mod:f" / "mod:C.m" -> node
        self.classes: dict[str, tuple[str, ast.ClassDef]] = {}  # "mod:C" -> (mod, node)
        self.methods: dict[str, list[str]] = defaultdict(list)  # m -> ["mod:C.m", ...]
        self.names: dict[str, dict[str, str]] = {}  # mod -> local name -> "mod2" or "mod2:attr"
        for mod, tree in self.trees.items():
            self.names[mod] = self._imports(mod, tree)
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.functions[f"{mod}:{node.name}"] = node
                elif isinstance(node, ast.ClassDef):
                    self.classes[f"{mod}:{node.name}"] = (mod, node)
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            key = f"{mod}:{node.name}.{item.name}"
                            self.functions[key] = item
                            self.methods[item.name].append(key)

    def _resolve_module(self, dotted: str) -> str | None:
        if dotted != "app" and not dotted.startswith("app."):
            return None
        name = dotted[4:]
        return name if name in self.modules else None

    def _imports(self, mod: str, tree: ast.Module) -> dict[str, str]:
        out: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    local = alias.asname or alias.name
                    sub = self._resolve_module(f"{node.module}.{alias.name}")
                    if sub:
                        out[local] = sub
                    elif (target := self._resolve_module(node.module)) is not None:
                        out[local] = f"{target}:{alias.name}"
                    elif not node.module.startswith("app"):  # a library's name: not ours
                        out[local] = "<library>"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    target = self._resolve_module(alias.name)
                    if target and alias.asname:
                        out[alias.asname] = target
                    elif target is None:  # a library module: its functions are not ours
                        out[(alias.asname or alias.name).split(".")[0]] = "<library>"
        return out

    def follow(self, target: str) -> str | None:
        """A ``mod:name`` through re-exports (``storage:list_documents`` -> ``storage.chunks:list_documents``)."""
        seen = set()
        while target not in self.functions and target not in self.classes and target not in seen:
            seen.add(target)
            mod, _, name = target.partition(":")
            again = self.names.get(mod, {}).get(name)
            if again is None or ":" not in again:
                return None
            target = again
        return target if target in self.functions or target in self.classes else None

    def bases(self, cls: str) -> list[str]:
        """``cls`` and its app base classes, in order."""
        out, todo = [], [cls]
        while todo:
            key = todo.pop(0)
            if key in out or key not in self.classes:
                continue
            out.append(key)
            mod, node = self.classes[key]
            for base in node.bases:
                if isinstance(base, ast.Name):
                    local = f"{mod}:{base.id}"
                    todo.append(local if local in self.classes else self.follow(self.names[mod].get(base.id, "")) or "")
        return out

    def method(self, cls: str, name: str) -> str | None:
        for key in self.bases(cls):
            if f"{key}.{name}" in self.functions:
                return f"{key}.{name}"
        return None


def edges_of(index: Index, key: str) -> tuple[set[str], set[str]]:
    """The functions ``key`` calls, and those it passes as values (callbacks)."""
    mod, _, qual = key.partition(":")
    cls = f"{mod}:{qual.split('.')[0]}" if "." in qual else None
    names = index.names[mod]
    calls, refs = set(), set()
    types: dict[str, str] = {}  # local name -> "mod:Class"

    def target_of(expr: ast.AST) -> str | None:
        if isinstance(expr, ast.Name):
            local = f"{mod}:{expr.id}"
            if local in index.functions or local in index.classes:
                return local
            imported = names.get(expr.id)
            return index.follow(imported) if imported and ":" in imported else None
        if isinstance(expr, ast.Attribute):
            owner = expr.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls") and cls:
                return index.method(cls, expr.attr)
            if isinstance(owner, ast.Name) and owner.id in types:
                return index.method(types[owner.id], expr.attr)
            if isinstance(owner, ast.Name) and names.get(owner.id) == "<library>":
                return None
            if isinstance(owner, ast.Name) and owner.id in names and ":" not in names[owner.id]:
                return index.follow(f"{names[owner.id]}:{expr.attr}")
            if expr.attr in BUILTIN_METHODS:  # str.join, dict.get, file.write ...: not ours to guess
                return None
            found = index.methods.get(expr.attr, [])
            return found[0] if len(found) == 1 else None
        return None

    def as_function(target: str | None) -> str | None:
        if target in index.classes:
            return index.method(target, "__init__")
        return target

    node = index.functions[key]
    for sub in ast.walk(node):  # local names bound to an app class: ``store = RagStore(...)``, ``store: RagStore``
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call) and len(sub.targets) == 1:
            if isinstance(sub.targets[0], ast.Name) and (t := target_of(sub.value.func)) in index.classes:
                types[sub.targets[0].id] = t
        elif isinstance(sub, ast.arg) and sub.annotation is not None:
            hint = sub.annotation.value if isinstance(sub.annotation, ast.Constant) else None
            expr = ast.parse(hint, mode="eval").body if isinstance(hint, str) else sub.annotation
            if (t := target_of(expr)) in index.classes:
                types[sub.arg] = t
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if t := as_function(target_of(sub.func)):
                calls.add(t)
            for arg in [*sub.args, *(k.value for k in sub.keywords)]:
                if isinstance(arg, (ast.Name, ast.Attribute)) and (t := target_of(arg)) in index.functions:
                    refs.add(t)
    return calls - {key}, refs - calls - {key}


def floors(path: Path) -> dict[str, int]:
    """Top package -> floor number (0 the top) from an .importlinter's layers."""
    parser = configparser.ConfigParser()
    parser.read(path)
    layers = parser["importlinter:contract:floors"]["layers"].strip().splitlines()
    out = {}
    for n, line in enumerate(layers):
        for name in line.replace("|", " ").replace(":", " ").split():
            out[name.removeprefix("app.")] = n
    return out


def walk(index: Index, floor: dict[str, int], entries: list[str]) -> dict:
    """BFS from ``entries`` over call edges; the moves, climbs and callback edges met."""
    top = lambda k: k.split(":")[0].split(".")[0]  # noqa: E731
    seen, todo = set(entries), deque(entries)
    moves, climbs, callbacks, directions = 0, [], 0, set()
    while todo:
        key = todo.popleft()
        calls, refs = edges_of(index, key)
        callbacks += sum(top(r) != top(key) for r in refs)
        for callee in sorted(calls):
            if top(callee) != top(key):
                moves += 1
                directions.add((top(key), top(callee)))
                if floor.get(top(callee), 99) < floor.get(top(key), 99):
                    climbs.append(f"{key} -> {callee}")
            if callee not in seen:
                seen.add(callee)
                todo.append(callee)
    packages = sorted({top(k) for k in seen})
    return {
        "functions": len(seen),
        "packages": packages,
        "moves": moves,
        "climbs": len(climbs),
        "climb_edges": climbs,
        # package pairs the walk calls in both directions (back-and-forth between siblings of one floor)
        "bounces": sorted(f"{a} <-> {b}" for a, b in directions if a < b and (b, a) in directions),
        "callback_edges": callbacks,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("."))
    parser.add_argument("--floors", type=Path, help="the .importlinter whose layers are the floors (default: ROOT's)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    index = Index(args.root / "app")
    floor = floors(args.floors or args.root / ".importlinter")
    results = {
        name: walk(index, floor, [e for e in entries if e in index.functions]) for name, entries in WALKS.items()
    }
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=1))
        return 0
    for name, r in results.items():
        print(
            f"{name}: {r['functions']} functions in {len(r['packages'])} packages, {r['moves']} moves, "
            f"{r['climbs']} climbs, {len(r['bounces'])} bounces, {r['callback_edges']} callback edges"
        )
        print(f"  packages: {' '.join(r['packages'])}")
        for pair in r["bounces"]:
            print(f"  bounce: {pair}")
        for edge in r["climb_edges"]:
            print(f"  climb: {edge}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
