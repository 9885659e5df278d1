"""The mode router (seed 004's SearchModeRouter): which search answers a question.

``hybrid``, ``vector`` and ``keyword`` retrieve chunks; ``local`` answers from the entities the
question names and their neighbourhood in the graph; ``global`` from the community reports of the
whole corpus (map-reduce). ``auto`` picks one by a small rule set over the question's words:

* overview or aggregate questions (全体, 傾向, まとめ, 主なテーマ, 一覧, 概要 …) go to ``global``:
  no single chunk holds their answer;
* questions about how things relate (関係, 関連, つながり, 違い, 比較, 影響 …) go to ``local``;
* everything else goes to ``hybrid``, the best first stage on both real question sets.

When the graph has not been built, ``auto`` answers with ``hybrid`` and says why.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from app.config import validate_mode

GLOBAL_CUES = (
    "全体",
    "全般",
    "傾向",
    "まとめ",
    "まとめて",
    "主なテーマ",
    "テーマ",
    "一覧",
    "概要",
    "要約",
    "総括",
    "俯瞰",
    "全体像",
    "主な",
    "どのような種類",
    "どんな種類",
    "共通点",
)
LOCAL_CUES = ("関係", "関連", "つながり", "繋がり", "違い", "比較", "影響", "連携", "依存")


@dataclass(frozen=True)
class Route:
    """The mode chosen for a question and the rule that chose it."""

    mode: str
    reason: str


def choose_mode(question: str) -> Route:
    """``auto``'s choice for ``question`` (see the module docstring)."""
    text = unicodedata.normalize("NFKC", question or "")
    for cue in GLOBAL_CUES:
        if cue in text:
            return Route("global", f"overview cue {cue!r}")
    for cue in LOCAL_CUES:
        if cue in text:
            return Route("local", f"relation cue {cue!r}")
    return Route("hybrid", "no overview or relation cue")


def route(mode: str, question: str, graph_ready: bool = True) -> Route:
    """The mode that answers ``question`` when ``mode`` was asked for (``auto`` decides here;
    without a built graph it falls back to hybrid)."""
    mode = validate_mode(mode)
    if mode != "auto":
        return Route(mode, "asked for")
    chosen = choose_mode(question)
    if chosen.mode in ("local", "global") and not graph_ready:
        return Route("hybrid", f"{chosen.reason}, but the graph is not built (run `make graph`)")
    return chosen
