"""The key points of global search's map answers (seed 004): the JSON a small model writes, read
tolerantly, and the points ranked for the reduce prompt. Pure functions, no LLM and no I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from app.storage.graphrag_types import KeyPoint, MapResult

_DATA_REPORTS = re.compile(r"\[\s*Data:\s*Reports?\s*\(([^)]*)\)\s*\]", re.IGNORECASE)


class MapParseError(ValueError):
    """The LLM's map answer holds no readable JSON."""


def parse_json_object(text: str) -> Any:
    """The JSON in an LLM answer: plain JSON, else the outermost ``{…}``, else json_repair's repair
    of either; MapParseError when nothing readable is there (an empty answer included)."""
    from json_repair import repair_json

    text = (text or "").strip()
    if text.startswith("```"):  # a fenced block: ```json … ```
        text = re.sub(r"^```[a-zA-Z]*\s*|\s*```$", "", text).strip()
    if not text:
        raise MapParseError("empty answer")
    candidates = [text]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    for candidate in reversed(candidates):
        repaired = repair_json(candidate[candidate.find("{") :] if "{" in candidate else candidate)
        if repaired and repaired not in ('""', "''"):
            try:
                value = json.loads(repaired)
            except json.JSONDecodeError:
                continue
            if isinstance(value, (dict, list)):
                return value
    raise MapParseError(f"no JSON in the answer: {text[:80]!r}")


def _score(value: Any) -> int | None:
    """An integer 0-100 from a number or numeric string, else None."""
    try:
        score = int(round(float(str(value).strip().rstrip("点%"))))
    except (TypeError, ValueError):
        return None
    return max(0, min(100, score))


def key_points(value: Any, batch_ids: Sequence[str]) -> list[KeyPoint]:
    """Key points from a parsed map answer (``{"points": […]}`` or a bare list).

    A point needs a non-empty description and a score; score 0 is dropped. Its reports are those
    it names that are in the batch (``reports`` or GraphRAG's ``[Data: Reports (…)]``), else the
    whole batch. MapParseError when the shape is not a point list.
    """
    points = value.get("points", value.get("key_points")) if isinstance(value, dict) else value
    if isinstance(value, dict) and points is None and not value:
        return []  # {}: nothing to say
    if not isinstance(points, list):
        raise MapParseError("the answer has no list of points")
    known = list(batch_ids)
    out = []
    for item in points:
        if not isinstance(item, dict):
            continue
        description = str(item.get("description") or item.get("point") or "").strip()
        score = _score(item.get("score", item.get("importance")))
        if not description or score is None or score == 0:
            continue
        named = [str(r).strip() for r in item.get("reports") or [] if str(r).strip() in known]
        for match in _DATA_REPORTS.finditer(description):
            named += [r.strip() for r in match.group(1).split(",") if r.strip() in known]
        description = _DATA_REPORTS.sub("", description).strip()
        out.append(KeyPoint(description=description, score=score, report_ids=list(dict.fromkeys(named)) or known))
    return out


def ranked_points(results: Sequence[MapResult]) -> list[KeyPoint]:
    """Every point of every batch, best score first (ties: batch order, then the order written)."""
    return [
        p
        for _, _, p in sorted(
            ((-p.score, r.batch_id, p) for r in results for p in r.key_points), key=lambda t: (t[0], t[1])
        )
    ]


def points_text(points: Sequence[KeyPoint]) -> str:
    """The points as the reduce prompt shows them: ``[n] (重要度 s) description``."""
    return "\n".join(f"[{i}]（重要度 {p.score}）{p.description}" for i, p in enumerate(points, 1))
