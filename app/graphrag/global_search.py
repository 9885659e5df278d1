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
chunks and documents (:class:`~app.storage.graphrag_types.TraceabilityInfo`).

A search is handed ``stopped`` (a callable: has the asker gone?). It is asked before every map call
(each retry included) and before the reduce; once it says yes, :class:`~app.errors.AnswerStoppedError`
ends the search, so the calls left are never made and the model passes to the next question.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from app.errors import AnswerStoppedError
from app.graphrag.points import MapParseError, key_points, parse_json_object, points_text, ranked_points
from app.storage.graphrag_types import CommunityReport, GlobalSearchResult, KeyPoint, MapResult, TraceabilityInfo

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


Stopped = Callable[[], bool]  # whether the asker has gone (the page's closed connection)


def never() -> bool:
    """The ``stopped`` of a search nobody can leave (the CLI, tests): never stopped."""
    return False


def check_stopped(stopped: Stopped) -> None:
    """:class:`~app.errors.AnswerStoppedError` once ``stopped()`` says the asker has gone."""
    if stopped():
        raise AnswerStoppedError("the asker went away")


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

    def process_batch(
        self, batch_id: int, batch: Sequence[CommunityReport], query: str, stopped: Stopped = never
    ) -> MapResult:
        """Map one batch; retried up to ``max_retries`` times, then a MapResult with ``error``;
        AnswerStoppedError before any call once ``stopped()``."""
        start = self.clock()
        table = batch_table(batch)
        prompt = MAP_TEMPLATE.format(reports=table, query=query)
        ids = [r.id for r in batch]
        error = ""
        for attempt in range(self.max_retries + 1):
            check_stopped(stopped)
            try:
                points = self.extract_key_points(self.call(MAP_SYSTEM, prompt, attempt), ids)
            except AnswerStoppedError:  # raised inside the call (at a streamed piece): no retry
                raise
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

    def map(
        self, batches: Sequence[Sequence[CommunityReport]], query: str, stopped: Stopped = never
    ) -> list[MapResult]:
        """Map every batch, at most ``concurrency`` at once; results in batch order. Once ``stopped()``,
        AnswerStoppedError, and the batches not yet begun are never sent."""
        if self.concurrency <= 1 or len(batches) <= 1:
            return [self.process_batch(i, b, query, stopped) for i, b in enumerate(batches)]
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="graph-map") as pool:
            return list(pool.map(lambda item: self.process_batch(item[0], item[1], query, stopped), enumerate(batches)))


# --- reduce ------------------------------------------------------------------------------


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

    def search(self, query: str, reports: Sequence[CommunityReport], stopped: Stopped = never) -> GlobalSearchResult:
        """Batch, map, reduce; timings in seconds (``context``, ``map``, ``reduce``). AnswerStoppedError
        once ``stopped()``, checked before each map call and before the reduce."""
        clock = self.mapper.clock
        start = clock()
        budget = self.map_budget - self.mapper.count_tokens(MAP_SYSTEM + MAP_TEMPLATE.format(reports="", query=query))
        batches, left_out = batch_reports(reports, self.mapper.count_tokens, budget, self.max_batches)
        t_context = clock()
        results = self.mapper.map(batches, query, stopped)
        t_map = clock()
        chosen = self.reducer.select(results, query)
        attach_sources(chosen, reports)
        check_stopped(stopped)
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
