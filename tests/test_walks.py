"""scripts/walks.py: the static walk along the calls on a hand-made app, with exact counts."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "walks.py"


def load():
    spec = importlib.util.spec_from_file_location("walks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_app(root: Path) -> None:
    files = {
        "app/__init__.py": "",
        "app/top/__init__.py": "",
        "app/top/face.py": (
            "from app.low.work import Worker, helper\n"
            "def main():\n    w = Worker()\n    w.run()\n    helper(callback=shout)\n    ', '.join([])\n"
            "def shout():\n    return 1\n"
        ),
        "app/low/__init__.py": "",
        "app/low/work.py": (
            "from app.top import face\n"
            "class Worker:\n    def __init__(self):\n        pass\n    def run(self):\n        self.step()\n"
            "    def step(self):\n        face.shout()\n"
            "def helper(callback):\n    return callback()\n"
        ),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".importlinter").write_text(
        "[importlinter:contract:floors]\nname = f\ntype = layers\nlayers =\n    app.top\n    app.low\n"
    )


def test_a_walk_counts_moves_climbs_bounces_and_callbacks(tmp_path):
    walks = load()
    make_app(tmp_path)
    index = walks.Index(tmp_path / "app")
    result = walks.walk(index, walks.floors(tmp_path / ".importlinter"), ["top.face:main"])
    assert result["functions"] == 6  # main, Worker.__init__, run, step, helper, shout
    assert result["packages"] == ["low", "top"]
    assert result["moves"] == 4  # main -> __init__, run, helper; step -> shout
    assert result["climb_edges"] == ["low.work:Worker.step -> top.face:shout"]
    assert result["bounces"] == ["low <-> top"]
    assert result["callback_edges"] == 0  # shout is passed within its own package


def test_str_join_is_not_taken_for_an_app_method(tmp_path):
    walks = load()
    make_app(tmp_path)
    (tmp_path / "app/low/turns.py").write_text("class Turns:\n    def join(self):\n        pass\n")
    index = walks.Index(tmp_path / "app")
    calls, _ = walks.edges_of(index, "top.face:main")
    assert "low.turns:Turns.join" not in calls
