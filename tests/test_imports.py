"""The app's modules import each other without cycles (issue 15, case 12), counting imports inside functions
and the modules of its packages (app.graphrag.search, app.mcp.server …) as modules of their own; only the CLI
layer (app/cli) prints or imports app.cli, and every ``python -m app.<module>`` reaches its command there."""

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"


def module_name(path: Path) -> str:
    """``graph`` for app/graph.py, ``graphrag.search`` for app/graphrag/search.py, ``graphrag`` for its __init__."""
    parts = list(path.relative_to(APP).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p) for p in APP.rglob("*.py")}


def resolve(name: str) -> str | None:
    """The app module an import names (``app.storage.graphrag_rows`` → ``graphrag.store``), or None outside the app."""
    if name != "app" and not name.startswith("app."):
        return None
    name = name[len("app.") :] if name != "app" else ""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def with_packages(target: str, importer: str) -> set[str]:
    """``target`` and the packages above it whose ``__init__`` Python runs first (``ingest`` for
    ``ingest.datadir``), but not the importer's own packages, which are running already."""
    parts = target.split(".")
    own = importer.split(".")
    found = {target}
    for n in range(1, len(parts)):
        package = ".".join(parts[:n])
        if package in MODULES and parts[:n] != own[:n]:
            found.add(package)
    return found


def app_imports(path: Path) -> set[str]:
    """Modules of ``app`` that ``path`` imports anywhere (top level or inside functions), with the
    packages above them that the import initializes."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:  # `from app.graphrag import store` imports the module app.storage.graphrag_rows
                target = (
                    resolve(f"{node.module}.{alias.name}")
                    if f"{node.module}.{alias.name}"[4:] in MODULES
                    else resolve(node.module)
                )
                if target:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found |= {t for a in node.names if (t := resolve(a.name))}
    return set().union(*(with_packages(t, module_name(path)) for t in found)) if found else set()


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None."""
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path + [node, nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [node])
                if cycle:
                    return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [])
            if cycle:
                return cycle
    return None


def test_find_cycle_on_hand_made_graphs():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def test_with_packages_adds_the_packages_an_import_initializes():
    assert with_packages("ingest.datadir", "formats.text") == {"ingest.datadir", "ingest"}
    assert with_packages("ingest.datadir", "ingest.sync") == {"ingest.datadir"}
    assert with_packages("errors", "ingest.sync") == {"errors"}


def test_resolve_names_package_modules():
    assert resolve("app.graphrag.search") == "graphrag.search"
    assert resolve("app.graphrag") == "graphrag"
    assert resolve("langchain_core.documents") is None


def test_app_modules_have_no_import_cycle():
    """Every module of the app, every import edge: no exemptions."""
    graph = {module_name(p): app_imports(p) - {module_name(p)} for p in APP.rglob("*.py")}
    assert find_cycle(graph) is None, find_cycle(graph)


# The design card's entry points (§4.7, §4.8, §4.11): ``main`` (and ``print_report``) stay callable where it
# puts them, and run the command line of app.cli.<name>.
SPEC_ENTRY_POINTS = {"ask": {"main"}, "ingest": {"main"}, "evaluate": {"main", "print_report"}}


def test_no_library_module_imports_the_cli():
    """Only the CLI layer, the packages' ``__main__`` shims and the spec's entry points may import app.cli:
    libraries raise, never print."""
    importers = {
        module_name(p)
        for p in APP.rglob("*.py")
        if any(t == "cli" or t.startswith("cli.") for t in app_imports(p))
        and not (module_name(p).partition(".")[0] == "cli" or p.name == "__main__.py")
    }
    assert importers == set(SPEC_ENTRY_POINTS)


@pytest.mark.parametrize("module", sorted(SPEC_ENTRY_POINTS))
def test_spec_entry_points_import_only_their_command(module):
    """A spec module imports app.cli.<module> and nothing else of the CLI layer, inside its entry points."""
    path = APP / module / "__init__.py" if (APP / module).is_dir() else APP / f"{module}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cli_imports = {
        (n.module, a.name)
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("app.cli")
        for a in n.names
    }
    assert cli_imports == {(f"app.cli.{module}", name) for name in SPEC_ENTRY_POINTS[module]}


def print_calls(source: str) -> list[int]:
    """Line numbers of the calls to the builtin ``print`` in ``source``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
    ]


def test_print_calls_finds_the_builtin_only():
    assert print_calls("print('a')\nx.print('b')\nif x:\n    print(1, file=y)\n") == [1, 4]


def test_only_the_cli_prints():
    """Library modules return text or log; printing is the CLI layer's job (app/cli/)."""
    printing = {
        str(p.relative_to(APP)): lines
        for p in APP.rglob("*.py")
        if module_name(p).partition(".")[0] != "cli" and (lines := print_calls(p.read_text(encoding="utf-8")))
    }
    assert printing == {}


def run_module_target(path: Path) -> str | None:
    """The module ``path``'s ``if __name__ == "__main__"`` shim runs by name (``runpy.run_module("app.cli.x")``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            return node.args[0].value
    return None


@pytest.mark.parametrize(
    ("library", "command"),
    [
        ("ask", "ask"),
        ("ingest", "ingest"),
        ("evaluate", "evaluate"),
        ("tune", "tune"),
        ("db", "db"),
        ("docs", "docs"),
        ("watch", "watch"),
    ],
)
def test_python_m_library_module_runs_its_cli_command(library, command):
    """``python -m app.<library>`` keeps working: its shim runs app.cli.<command>, which has main()."""
    assert run_module_target(APP / f"{library}.py") == f"app.cli.{command}"
    assert "main" in function_names(APP / "cli" / f"{command}.py")


@pytest.mark.parametrize(
    ("package", "command"), [("graphrag", "graphrag"), ("mcp", "mcp"), ("web", "web"), ("models", "models")]
)
def test_python_m_package_runs_its_cli_command(package, command):
    assert f"app.cli.{command}" in {
        n.module
        for n in ast.walk(ast.parse((APP / package / "__main__.py").read_text()))
        if isinstance(n, ast.ImportFrom)
    }
    assert "main" in function_names(APP / "cli" / f"{command}.py")


def function_names(path: Path) -> set[str]:
    """The functions ``path`` defines at top level."""
    return {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)}


# The design card's modules and the names it puts in each (§4): they stay callable where it puts them.
SPEC_NAMES = {
    "config": ["get_db_config", "get_connection_string", "EMBED_MODEL", "LLM_MODEL_PATH", "RERANKER_MODEL"]
    + ["CHUNK_SIZE", "CHUNK_OVERLAP", "SEARCH_K", "RERANK_TOP_K", "COLLECTION_NAME"],
    "db": ["get_vectorstore", "init_db"],
    "embeddings": ["get_embeddings", "embed"],
    "llm": ["get_llm", "generate"],
    "reranker": ["get_reranker", "get_compression_retriever", "rerank"],
    "chunking": ["split_text", "split_by_structure"],
    "ingest": ["load_pdfs", "load_csvs", "main"],
    "ask": ["search", "main"],
    "graph": ["retrieve", "rerank_node", "generate_node", "build_rag_graph", "get_graph"],
    "metrics": ["retrieval_at_k", "faithfulness", "exact_match", "measure_latency"],
    "evaluate": ["load_questions", "evaluate_single", "run_evaluation", "print_report", "main"],
}


@pytest.mark.parametrize("module", sorted(SPEC_NAMES))
def test_the_spec_names_are_where_the_design_card_puts_them(module):
    import importlib

    face = importlib.import_module(f"app.{module}")
    assert [n for n in SPEC_NAMES[module] if not hasattr(face, n)] == []
    assert all(callable(getattr(face, n)) for n in SPEC_NAMES[module] if not n.isupper())


def test_the_top_level_holds_the_faces_and_packages_named_for_what_they_do():
    """At most 16 modules at app/'s top level (the spec's faces, the Python API, shared errors, command
    shims), at least 8 packages, each with a docstring that says what lives there and what it may import."""
    modules = sorted(p.name for p in APP.glob("*.py"))
    packages = sorted(p.name for p in APP.iterdir() if (p / "__init__.py").exists())
    assert len(modules) <= 16, modules
    assert len(packages) >= 8, packages
    for init in APP.rglob("__init__.py"):
        if init.parent == APP:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert doc and ("import" in doc.lower() or "stands on" in doc.lower()), init


def test_no_module_is_longer_than_400_lines():
    long = {str(p.relative_to(APP)): n for p in APP.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_the_page_and_the_mcp_server_both_stand_on_the_serving_layer():
    """app.web imports nothing of app.mcp, nor app.mcp of app.web; both import app.serving."""
    for own, other in (("web", "mcp"), ("mcp", "web")):
        imported = set().union(*(app_imports(p) for p in (APP / own).rglob("*.py")))
        assert not any(t == other or t.startswith(f"{other}.") for t in imported), own
        assert any(t.startswith("serving") for t in imported), own


def test_the_floors_hold():
    """The import-linter contracts of .importlinter (faces over serving over the workflow over the store
    over the basics, the page and MCP independent; the read path off the write path) hold, as `make lint`
    checks them (in a process of its own: import-linter sets up logging as a command does)."""
    import subprocess
    import sys

    check = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    done = subprocess.run([sys.executable, "-c", check], cwd=APP.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_asking_loads_no_part_of_the_write_path():
    """A question (the CLI, the page, the MCP server, the spec's search) imports the read side only: no
    module of app.ingestion nor app.store is loaded, at run time, by any of them."""
    import subprocess
    import sys

    check = (
        "import sys, app.cli.ask, app.ask, app.web.app, app.web.server, app.mcp.server, app.serving.warm; "
        "print(sorted(m for m in sys.modules if m.startswith(('app.ingestion', 'app.store'))))"
    )
    done = subprocess.run([sys.executable, "-c", check], cwd=APP.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
    # and the commands that write do load it (the check above can see it)
    check = "import sys, app.cli.ingest; print('app.ingestion.writer' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", check], cwd=APP.parent, capture_output=True, text=True)
    assert done.stdout.strip() == "True", done.stderr[-2000:]


def test_every_module_has_its_tests():
    """Every app module is tested in a file named after it (test_<package>_<module>.py, test_<module>.py
    or test_<package>.py, in tests/ or tests/integration/), or is listed in tests/covered_elsewhere.txt
    with test files that exist and name it (its dotted path, an import of it, or one of its public names)."""
    import re

    tests = APP.parent / "tests"
    files = {p.stem: p for p in tests.rglob("test_*.py")}
    listed = {}
    for line in (tests / "covered_elsewhere.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("  # ")[0].strip()
        if line and not line.startswith("#"):
            line, _, via = line.partition(" via ")
            module, *where = line.split()
            listed[module] = (where, via)
    missing, stale = [], []
    for path in sorted(APP.rglob("*.py")):
        name = module_name(path)
        if not name or path.name == "__main__.py":
            continue
        parts = name.split(".")
        named = {"test_" + "_".join(parts[i:]) for i in range(len(parts))} | {f"test_{parts[0]}"}
        if named & files.keys():
            if f"app.{name}" in listed:
                stale.append(f"app.{name} is listed but has a test named after it")
            continue
        where, via = listed.pop(f"app.{name}", ([], ""))
        if not where:
            missing.append(f"app.{name}")
            continue
        public = re.findall(r"^(?:def|class) ([A-Za-z]\w*)", path.read_text(encoding="utf-8"), re.M)
        for test in where:
            text = (tests / test).read_text(encoding="utf-8") if (tests / test).is_file() else ""
            last = parts[-1]
            if not (
                (via and via in text)
                or f"app.{name}" in text
                or re.search(rf"\bimport [^\n]*\b{last}\b", text)
                or any(re.search(rf"\b{p}\b", text) for p in public)
            ):
                stale.append(f"app.{name}: {test} does not name it")
    stale += [f"{m} is listed but is no module" for m in listed]
    assert (missing, stale) == ([], [])


def test_the_longest_files_are_started_first():
    from tests.conftest import LONGEST_FIRST, longest_first

    assert longest_first("tests/integration/test_bench.py::test_bench_small_run_writes_results_and_chart") == 0
    assert longest_first("tests/integration/test_queue.py") == 1
    assert longest_first("tests/test_chunks.py::test_x") == len(LONGEST_FIRST)
    tests = Path(__file__).resolve().parent
    assert [name for name in LONGEST_FIRST if not (tests / name).is_file()] == []  # none renamed away
