"""The app's modules import each other without cycles (issue 15, case 12), counting imports inside functions."""
import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"


def app_imports(path: Path) -> set[str]:
    """Modules of ``app`` that ``path`` imports anywhere (top level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "app":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("app."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("app.")}
    return found


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


def test_app_modules_have_no_import_cycle():
    graph = {p.stem: app_imports(p) - {p.stem} for p in APP.glob("*.py")}
    graph = {k: v - {"cli", "errors", "config"} for k, v in graph.items()}  # leaves everyone may use
    assert find_cycle(graph) is None
