"""Global search (seed 004): map-reduce over the community reports.

1. :class:`CommunityContextBuilder` takes the reports of one community level whose rank is at
   least GRAPH_MIN_RANK, best rank first, and packs them into batches that fit the LLM's context
   (``|``-delimited tables with report IDs, counted with the LLM's own tokenizer); at most
   GRAPH_MAP_MAX_BATCHES batches are mapped (on two cores each map call costs seconds), the
   reports left out are counted in the result.
2. :class:`MapProcessor` asks the LLM, for each batch, for the key points that answer the
   question as JSON ``{"points": [{"description", "score": 0-100, "reports": [...]}]}``. A small
   model writes broken JSON: the parser tries plain JSON, then the outermost ``{…}``, then
   json_repair; an answer that still cannot be read is retried with a little temperature, and a
   call that fails (server down, timeout) is retried after an exponential backoff (1, 2, 4 s), up
   to 3 retries. A batch that still fails is skipped with one warning and the others go on.
   Batches run on a bounded executor: one at a time for a llama.cpp model in process (it is not
   re-entrant), GRAPH_MAP_CONCURRENCY at a time for a server.
3. :class:`ReduceProcessor` sorts the points by score (score 0 dropped), packs the best into the
   reduce prompt and asks the LLM for the final answer; with no points the answer is the fixed
   abstention, without an LLM call.

Every point keeps the reports it came from, so the answer traces back to reports, entities,
chunks and documents (:class:`~app.graphrag.models.TraceabilityInfo`).
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from app.graphrag.models import CommunityReport, GlobalSearchResult, KeyPoint, MapResult, TraceabilityInfo

log = logging.getLogger(__name__)

NO_DATA_ANSWER = "資料に記載がありません"
MAX_RETRIES = 3
BACKOFF_S = 1.0
RETRY_TEMPERATURE = 0.4  # added per retry after an unreadable answer (temperature 0 would repeat it)
MAP_MAX_TOKENS = 400
REDUCE_MAX_TOKENS = 400
SHUFFLE_SEED = 7

MAX_POINTS = 5
MAP_SYSTEM = (
    "あなたは資料の要約（レポート）を読んで質問に答える分析者です。"
    f"レポートに書かれた事実だけを使い、質問への答えになる要点を{MAX_POINTS}つまで JSON で返してください。"
    '形式: {"points": [{"description": "要点: レポートの内容を具体的に述べる日本語の1文", '
    '"score": 質問への答えとしての重要度（0から100の整数）, "reports": ["根拠のレポートID"]}]}。'
    "レポートの見出しを書き写すだけの要点は書かないでください。"
    '関係する要点がなければ {"points": []} を返してください。JSON 以外は書かないでください。'
)
MAP_TEMPLATE = "レポート:\n{reports}\n\n質問: {query}"
REDUCE_SYSTEM = (
    "あなたは複数の分析者の要点をまとめて質問に答えるアシスタントです。"
    "示された要点だけを根拠に、重要度の高いものから、日本語で簡潔に（箇条書き可、5項目まで）答えてください。"
    "要点に答えがない場合は「" + NO_DATA_ANSWER + "」とだけ答えてください。"
)
REDUCE_TEMPLATE = "要点:\n{points}\n\n質問: {query}"
_DATA_REPORTS = re.compile(r"\[\s*Data:\s*Reports?\s*\(([^)]*)\)\s*\]", re.IGNORECASE)


class MapParseError(ValueError):
    """The LLM's map answer holds no readable JSON."""


# --- context: batches of reports ---------------------------------------------------------


def report_row(report: CommunityReport) -> str:
    """One report as the map prompt shows it: ``[id] title``, then its summary and findings (one
    line each); its content first, because a small model otherwise copies the titles as points."""
    flat = lambda text: " ".join(str(text).split())  # noqa: E731
    lines = [f"[{report.id}] {flat(report.title)}", flat(report.summary), *(f"- {flat(f)}" for f in report.findings)]
    return "\n".join(line for line in lines if line.strip())


def batch_reports(
    reports: Sequence[CommunityReport],
    count_tokens: Callable[[str], int],
    budget: int,
    max_batches: int,
    shuffle: bool = True,
) -> tuple[list[list[CommunityReport]], int]:
    """Pack ``reports`` (best first) into batches whose text fits ``budget`` tokens.

    A report too long for a batch of its own is cut to fit. At most ``max_batches`` batches;
    returns (batches, reports left out). Each batch is then shuffled (seeded), as GraphRAG does, so
    the model does not read rank order as importance.
    """
    batches: list[list[CommunityReport]] = []
    current: list[CommunityReport] = []
    used = 0
    placed = 0
    for report in reports:
        cost = count_tokens(report_row(report)) + 1  # and the blank line before it
        if current and used + cost > budget:
            batches.append(current)
            current, used = [], 0
            if len(batches) == max_batches:
                break
        if not current and used + cost > budget:
            report = shorten_report(report, count_tokens, budget - used)
            cost = count_tokens(report_row(report))
        current.append(report)
        used += cost
        placed += 1
    if current and len(batches) < max_batches:
        batches.append(current)
    else:
        placed -= len(current)
    if shuffle:
        rng = random.Random(SHUFFLE_SEED)
        for batch in batches:
            rng.shuffle(batch)
    return batches, len(reports) - placed


def shorten_report(report: CommunityReport, count_tokens: Callable[[str], int], budget: int) -> CommunityReport:
    """``report`` with its findings dropped and its summary cut until its row fits ``budget`` tokens."""
    from dataclasses import replace

    short = replace(report, findings=[])
    while len(short.summary) > 20 and count_tokens(report_row(short)) > budget:
        short = replace(short, summary=short.summary[: int(len(short.summary) * 0.8)] + "…")
    return short


def batch_table(batch: Sequence[CommunityReport]) -> str:
    """The reports of one batch, a blank line between them."""
    return "\n\n".join(report_row(r) for r in batch)


# --- map ---------------------------------------------------------------------------------


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


@dataclass
class MapProcessor:
    """The map step: one LLM call per batch, parsed into key points, retried, concurrent within bounds.

    ``call(system, prompt, attempt)`` returns the LLM's text (``attempt`` 0 for the first try, so
    a retry can raise the temperature); ``sleep`` is injected so tests do not wait.
    """

    call: Callable[[str, str, int], str]
    count_tokens: Callable[[str], int]
    concurrency: int = 1
    max_retries: int = MAX_RETRIES
    backoff_s: float = BACKOFF_S
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.perf_counter

    def extract_key_points(self, response: str, batch_ids: Sequence[str]) -> list[KeyPoint]:
        """The key points of one map answer (MapParseError if unreadable)."""
        return key_points(parse_json_object(response), batch_ids)

    def process_batch(self, batch_id: int, batch: Sequence[CommunityReport], query: str) -> MapResult:
        """Map one batch; retried up to ``max_retries`` times, then a MapResult with ``error``."""
        start = self.clock()
        table = batch_table(batch)
        prompt = MAP_TEMPLATE.format(reports=table, query=query)
        ids = [r.id for r in batch]
        error = ""
        for attempt in range(self.max_retries + 1):
            try:
                points = self.extract_key_points(self.call(MAP_SYSTEM, prompt, attempt), ids)
            except MapParseError as exc:  # the model wrote no readable JSON: ask again, a little warmer
                error = f"unreadable answer ({exc})"
            except Exception as exc:
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                if attempt < self.max_retries:
                    self.sleep(self.backoff_s * 2**attempt)
            else:
                return MapResult(batch_id, points, self.count_tokens(prompt), self.clock() - start, attempt + 1)
        log.warning(
            "global search: batch %d of %d reports skipped after %d attempts (%s)",
            batch_id,
            len(batch),
            self.max_retries + 1,
            error,
        )
        return MapResult(
            batch_id, [], self.count_tokens(prompt), self.clock() - start, self.max_retries + 1, error=error
        )

    def map(self, batches: Sequence[Sequence[CommunityReport]], query: str) -> list[MapResult]:
        """Map every batch, at most ``concurrency`` at once; results in batch order."""
        if self.concurrency <= 1 or len(batches) <= 1:
            return [self.process_batch(i, b, query) for i, b in enumerate(batches)]
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="graph-map") as pool:
            return list(pool.map(lambda item: self.process_batch(item[0], item[1], query), enumerate(batches)))


# --- reduce ------------------------------------------------------------------------------


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


@dataclass
class ReduceProcessor:
    """The reduce step: the best points that fit the budget, one LLM call."""

    call: Callable[[str, str, int], str]
    count_tokens: Callable[[str], int]
    budget: int

    def select(self, results: Sequence[MapResult], query: str) -> list[KeyPoint]:
        """The best points whose prompt fits ``budget`` tokens."""
        chosen: list[KeyPoint] = []
        for point in ranked_points(results):
            trial = chosen + [point]
            if (
                self.count_tokens(REDUCE_SYSTEM + REDUCE_TEMPLATE.format(points=points_text(trial), query=query))
                > self.budget
            ):
                break
            chosen = trial
        return chosen

    def reduce(self, points: Sequence[KeyPoint], query: str) -> str:
        """The final answer from ``points`` (NO_DATA_ANSWER without any, no LLM call)."""
        if not points:
            return NO_DATA_ANSWER
        return (
            self.call(REDUCE_SYSTEM, REDUCE_TEMPLATE.format(points=points_text(points), query=query), 0).strip()
            or NO_DATA_ANSWER
        )

    @staticmethod
    def format_output(result: GlobalSearchResult, fmt: str = "text") -> Any:
        """``text``: the answer; ``json``: the whole result as a dict (traceability included)."""
        if fmt == "json":
            return asdict(result)
        if fmt == "text":
            return result.response
        raise ValueError(f"format must be text or json, got {fmt!r}")


# --- traceability ------------------------------------------------------------------------


def traceability(points: Sequence[KeyPoint], reports: Sequence[CommunityReport]) -> TraceabilityInfo:
    """Reports, documents, chunks and entities behind ``points`` (in the order the points use them)."""
    by_id = {r.id: r for r in reports}
    used = [by_id[r] for p in points for r in p.report_ids if r in by_id]
    unique = list({r.id: r for r in used}.values())
    return TraceabilityInfo(
        report_ids=[r.id for r in unique],
        document_ids=list(dict.fromkeys(d for r in unique for d in r.document_ids)),
        chunk_ids=list(dict.fromkeys(c for r in unique for c in r.chunk_ids)),
        entity_ids=list(dict.fromkeys(e for r in unique for e in r.entity_ids)),
    )


def attach_sources(points: Sequence[KeyPoint], reports: Sequence[CommunityReport]) -> None:
    """Fill each point's ``source_metadata`` (documents, chunks, entities of its reports)."""
    for point in points:
        info = traceability([point], reports)
        point.source_metadata = {
            "document_ids": info.document_ids,
            "chunk_ids": info.chunk_ids,
            "entity_ids": info.entity_ids,
        }


# --- the whole search ----------------------------------------------------------------------


@dataclass
class GlobalSearch:
    """Global search over given reports (the caller reads them from the store: app.graphrag.search)."""

    mapper: MapProcessor
    reducer: ReduceProcessor
    map_budget: int
    max_batches: int

    def search(self, query: str, reports: Sequence[CommunityReport]) -> GlobalSearchResult:
        """Batch, map, reduce; timings in seconds (``context``, ``map``, ``reduce``)."""
        clock = self.mapper.clock
        start = clock()
        budget = self.map_budget - self.mapper.count_tokens(MAP_SYSTEM + MAP_TEMPLATE.format(reports="", query=query))
        batches, left_out = batch_reports(reports, self.mapper.count_tokens, budget, self.max_batches)
        t_context = clock()
        results = self.mapper.map(batches, query)
        t_map = clock()
        chosen = self.reducer.select(results, query)
        attach_sources(chosen, reports)
        answer = self.reducer.reduce(chosen, query)
        t_reduce = clock()
        total = sum(r.context_tokens for r in results)
        return GlobalSearchResult(
            response=answer,
            response_type="multiple paragraphs",
            map_results=results,
            traceability=traceability(chosen, reports),
            total_tokens=total,
            processing_time=t_reduce - start,
            timings={"context": t_context - start, "map": t_map - t_context, "reduce": t_reduce - t_map},
            reports_considered=len(reports) - left_out,
            reports_left_out=left_out,
        )
