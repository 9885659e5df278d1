"""Local context building and global map-reduce (app.graphrag.local_search, global_search) with a
character-count tokenizer, fake LLM calls and an injected sleep: exact token counts, no waiting."""

from __future__ import annotations

import pytest

from app.graphrag.global_search import (
    NO_DATA_ANSWER,
    GlobalSearch,
    MapParseError,
    MapProcessor,
    ReduceProcessor,
    batch_reports,
    key_points,
    parse_json_object,
    ranked_points,
    report_row,
    traceability,
)
from app.graphrag.local_search import (
    LocalContextBuilder,
    fill,
    map_query_to_entities,
    order_reports,
    order_text_units,
    select_relationships,
)
from app.storage.graphrag_types import CommunityReport, Entity, KeyPoint, MapResult, Relationship, TextUnit

chars = len  # the test tokenizer: one token per character


def entity(eid: str, title: str, degree: int = 1) -> Entity:
    return Entity(id=eid, title=title, description=f"{title}の説明", attributes={"degree": degree})


def report(rid: str, rank: float, entity_ids=(), summary="要約", findings=()) -> CommunityReport:
    return CommunityReport(
        id=rid,
        level=0,
        title=f"題{rid}",
        summary=summary,
        rank=rank,
        findings=list(findings),
        chunk_ids=[f"k-{rid}"],
        document_ids=[f"d-{rid}"],
        entity_ids=list(entity_ids),
    )


# --- local -----------------------------------------------------------------------------


def test_map_query_to_entities_named_first_then_nearest():
    named, similar = [entity("e1", "VPN"), entity("e3", "ミナトVPN")], [entity("e2", "認証"), entity("e1", "VPN")]
    assert [e.id for e in map_query_to_entities(named, similar, top_k=5)] == ["e1", "e3", "e2"]
    assert [e.id for e in map_query_to_entities(named, similar, top_k=1)] == ["e1"]
    assert [e.id for e in map_query_to_entities([], similar, top_k=5)] == ["e2", "e1"]


def test_local_context_keeps_at_most_max_text_units():
    units = [TextUnit(f"k{i}", "あ" * 10, ["e1"]) for i in range(5)]
    result = LocalContextBuilder(chars, max_text_units=2).build_context(
        "q", [entity("e1", "VPN")], [], units, max_tokens=1000
    )
    assert [u.id for u in result.text_units_used] == ["k0", "k1"]


def test_select_relationships_inside_first_then_most_linked_outside():
    chosen = [entity("a", "A"), entity("b", "B")]
    rels = [
        Relationship("r1", "a", "x", weight=9),
        Relationship("r2", "a", "b", weight=1),
        Relationship("r3", "b", "y", weight=5),
        Relationship("r4", "b", "x", weight=2),
    ]
    # r2 is inside; x is linked to both chosen entities, so r1 and r4 come before r3
    assert [r.id for r in select_relationships(chosen, rels)] == ["r2", "r1", "r4", "r3"]
    assert [r.id for r in select_relationships(chosen, rels, per_entity=1)] == ["r2", "r1"]


def test_order_text_units_by_entity_order_then_coverage():
    chosen = [entity("a", "A"), entity("b", "B")]
    units = [
        TextUnit("k3", "t", ["b"]),
        TextUnit("k2", "t", ["a"]),
        TextUnit("k1", "t", ["b", "a"]),
        TextUnit("k0", "t", []),
    ]
    assert [u.id for u in order_text_units(chosen, units)] == ["k1", "k2", "k3", "k0"]


def test_order_reports_by_shared_entities_then_rank():
    chosen = [entity("a", "A"), entity("b", "B")]
    reports = [report("c1", 9.0, ["a"]), report("c2", 1.0, ["a", "b"]), report("c3", 5.0, ["b"])]
    assert [r.id for r in order_reports(chosen, reports)] == ["c2", "c1", "c3"]


def test_fill_takes_rows_while_they_fit():
    section, used = fill("T", "h", ["aa", "bb", "cc"], chars, budget=len("-----T-----\nh\naa\nbb"))
    assert section.rows == ["aa", "bb"] and used == len("-----T-----\nh\naa\nbb")
    empty, used = fill("T", "h", ["aa"], chars, budget=3)
    assert empty.rows == [] and used == 0 and empty.text() == ""


def test_local_context_respects_each_share_of_the_budget():
    entities = [entity("e1", "VPN", degree=2), entity("e2", "認証アプリ", degree=1)]
    rels = [Relationship("r1", "e1", "e2", description="VPNは認証アプリを使う", weight=3)]
    units = [TextUnit("k1", "あ" * 300, ["e1"], source="guide.md#vpn"), TextUnit("k2", "い" * 300, ["e2"])]
    reports = [report("c0-0", 8.0, ["e1", "e2"], summary="う" * 50)]
    builder = LocalContextBuilder(chars, community_prop=0.15, text_unit_prop=0.5)
    result = builder.build_context("VPNは？", entities, rels, units, max_tokens=700, reports=reports)
    t = result.section_tokens
    assert t["reports"] == len("-----Reports-----\nid|title|content\nc0-0|題c0-0|" + "う" * 50) <= 0.15 * 700
    assert t["entities"] == len(
        "-----Entities-----\nid|entity|description|number of relationships\n"
        "e1|VPN|VPNの説明|2\ne2|認証アプリ|認証アプリの説明|1"
    )
    assert t["relationships"] == len(
        "-----Relationships-----\nid|source|target|description|weight\nr1|VPN|認証アプリ|VPNは認証アプリを使う|3"
    )
    # the text units get what is left: the first whole (300), the second cut to fit
    left = 700 - t["reports"] - t["entities"] - t["relationships"]
    assert [u.id for u in result.text_units_used] == ["k1", "k2"]
    assert len(result.text_units_used[0].text) == 300 and t["text_units"] <= left
    assert len(result.text_units_used[1].text) < 300
    assert result.total_tokens == sum(t.values()) <= 700
    assert result.context_text.startswith("-----Reports-----")
    assert [e.id for e in result.entities_used] == ["e1", "e2"] and [r.id for r in result.reports_used] == ["c0-0"]


def test_local_context_too_small_a_budget_is_cut_not_refused():
    entities = [entity("e1", "VPN")]
    units = [TextUnit("k1", "あ" * 100, ["e1"])]
    result = LocalContextBuilder(chars).build_context("q", entities, [], units, max_tokens=30)
    assert result.entities_used == [] and result.text_units_used == []  # nothing fits; nothing raised
    assert result.total_tokens == 0


# --- global: parsing -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"points": [{"description": "A", "score": 80}]}', {"points": [{"description": "A", "score": 80}]}),
        ('```json\n{"points": []}\n```', {"points": []}),
        (
            '要点は次のとおりです: {"points": [{"description": "A", "score": 80}]} 以上です。',
            {"points": [{"description": "A", "score": 80}]},
        ),
        (
            '{"points": [{"description": "A", "score": 80,}]}',
            {"points": [{"description": "A", "score": 80}]},
        ),  # trailing comma
        ('{"points": [{"description": "A", "score": 80}', {"points": [{"description": "A", "score": 80}]}),  # cut off
    ],
)
def test_parse_json_object_good_and_broken(text, expected):
    assert parse_json_object(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "すみません、わかりません。"])
def test_parse_json_object_nothing_readable(text):
    with pytest.raises(MapParseError):
        parse_json_object(text)


def test_key_points_scores_reports_and_drops():
    value = {
        "points": [
            {"description": "料金は月額制 [Data: Reports (c2, c9)]", "score": "85"},
            {"description": "対象外", "score": 0},
            {"description": "", "score": 50},
            {"description": "上限を超える", "score": 140, "reports": ["c1", "zz"]},
            {"description": "点数なし"},
            "not a dict",
        ]
    }
    points = key_points(value, ["c1", "c2"])
    assert [(p.description, p.score, p.report_ids) for p in points] == [
        ("料金は月額制", 85, ["c2"]),
        ("上限を超える", 100, ["c1"]),
    ]
    assert key_points({}, ["c1"]) == [] and key_points([], ["c1"]) == []
    assert key_points([{"description": "A", "score": 10}], ["c1"])[0].report_ids == ["c1"]  # none named: the batch
    with pytest.raises(MapParseError):
        key_points({"answer": "文章だけ"}, ["c1"])


# --- global: batching ------------------------------------------------------------------


def test_report_row_puts_the_content_under_the_id():
    assert report_row(report("c1", 2.5, summary="要約 です", findings=["事実"])) == "[c1] 題c1\n要約 です\n- 事実"


def test_batch_reports_packs_best_first_within_budget_and_counts_what_is_left():
    reports = [report(f"c{i}", 10 - i, summary="あ" * 20) for i in range(5)]
    one = chars(report_row(reports[0])) + 1
    batches, left = batch_reports(reports, chars, budget=2 * one, max_batches=2, shuffle=False)
    assert [[r.id for r in b] for b in batches] == [["c0", "c1"], ["c2", "c3"]]
    assert left == 1
    batches, left = batch_reports(reports, chars, budget=10 * one, max_batches=4, shuffle=False)
    assert len(batches) == 1 and left == 0


def test_batch_reports_cuts_a_report_too_long_for_a_batch_of_its_own():
    batches, left = batch_reports(
        [report("c0", 1, summary="あ" * 500, findings=["f"])], chars, budget=100, max_batches=1
    )
    assert left == 0 and chars(report_row(batches[0][0])) <= 100 and batches[0][0].findings == []


# --- global: map with retries ----------------------------------------------------------


class ScriptedCall:
    """An LLM call that plays answers (or raises exceptions) in order, recording each attempt."""

    def __init__(self, *answers):
        self.answers, self.attempts = list(answers), []

    def __call__(self, system, prompt, attempt):
        self.attempts.append(attempt)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def mapper(call, sleeps, concurrency=1):
    return MapProcessor(call, chars, concurrency=concurrency, sleep=sleeps.append, clock=lambda: 0.0)


GOOD = '{"points": [{"description": "要点", "score": 60}]}'


def test_map_retries_failed_calls_with_exponential_backoff():
    sleeps = []
    call = ScriptedCall(TimeoutError("slow"), ConnectionError("down"), TimeoutError("slow"), GOOD)
    result = mapper(call, sleeps).process_batch(0, [report("c1", 5)], "質問")
    assert sleeps == [1.0, 2.0, 4.0] and call.attempts == [0, 1, 2, 3]
    assert result.error is None and result.attempts == 4 and [p.score for p in result.key_points] == [60]


def test_map_unreadable_answer_is_retried_warmer_without_waiting():
    sleeps = []
    call = ScriptedCall("わかりません", GOOD)
    result = mapper(call, sleeps).process_batch(0, [report("c1", 5)], "質問")
    assert sleeps == [] and call.attempts == [0, 1] and result.attempts == 2


def test_map_skips_a_batch_that_keeps_failing_and_goes_on(caplog):
    sleeps = []
    call = ScriptedCall(*([ConnectionError("down")] * 4), GOOD)
    results = mapper(call, sleeps).map([[report("c1", 5)], [report("c2", 4)]], "質問")
    assert results[0].error == "ConnectionError: down" and results[0].key_points == [] and results[0].attempts == 4
    assert results[1].error is None and results[1].key_points[0].report_ids == ["c2"]
    assert sleeps == [1.0, 2.0, 4.0]  # no sleep after the last attempt
    assert "batch 0 of 1 reports skipped after 4 attempts" in caplog.text


def test_map_runs_batches_concurrently_within_the_bound():
    import threading

    running, peak, lock = [0], [0], threading.Lock()
    barrier = threading.Barrier(2, timeout=5)

    def call(system, prompt, attempt):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        barrier.wait()  # both calls must be in flight at once, or this times out
        with lock:
            running[0] -= 1
        return GOOD

    results = mapper(call, [], concurrency=2).map([[report("c1", 5)], [report("c2", 5)]], "質問")
    assert peak[0] == 2 and [r.batch_id for r in results] == [0, 1]


# --- global: reduce ---------------------------------------------------------------------


def results_with(*scored):
    return [MapResult(i, [KeyPoint(d, s, [r]) for d, s, r in batch], 0, 0.0) for i, batch in enumerate(scored)]


def test_ranked_points_best_score_first():
    results = results_with([("a", 50, "c1"), ("b", 90, "c1")], [("c", 90, "c2")])
    assert [p.description for p in ranked_points(results)] == ["b", "c", "a"]


def test_reduce_packs_the_best_points_within_budget():
    results = results_with([("あ" * 40, 90, "c1"), ("い" * 40, 80, "c2"), ("う" * 40, 70, "c3")])
    calls = []
    reducer = ReduceProcessor(lambda s, p, a: calls.append(p) or "答え", chars, budget=10_000)
    assert len(reducer.select(results, "q")) == 3
    tight = ReduceProcessor(reducer.call, chars, budget=10)
    assert tight.select(results, "q") == []
    assert tight.reduce([], "q") == NO_DATA_ANSWER and calls == []  # no points: no LLM call
    assert reducer.reduce(ranked_points(results), "q") == "答え" and "[1]（重要度 90）" in calls[0]


def test_traceability_follows_points_to_reports_chunks_documents_entities():
    reports = [report("c1", 5, ["e1"]), report("c2", 5, ["e2", "e1"])]
    info = traceability([KeyPoint("a", 90, ["c2"]), KeyPoint("b", 80, ["c1", "c2"])], reports)
    assert (info.report_ids, info.chunk_ids, info.document_ids, info.entity_ids) == (
        ["c2", "c1"],
        ["k-c2", "k-c1"],
        ["d-c2", "d-c1"],
        ["e2", "e1"],
    )


def test_global_search_end_to_end_with_fake_calls():
    reports = [report("c1", 9, ["e1"], summary="料金は月額9800円"), report("c2", 3, ["e2"], summary="拠点は3か所")]
    map_call = ScriptedCall('{"points": [{"description": "料金は月額9800円", "score": 90, "reports": ["c1"]}]}')
    reduce_call = ScriptedCall("料金は月額9800円です。")
    search = GlobalSearch(
        MapProcessor(map_call, chars, clock=lambda: 0.0),
        ReduceProcessor(reduce_call, chars, budget=10_000),
        map_budget=10_000,
        max_batches=4,
    )
    result = search.search("料金の全体像は？", reports)
    assert result.response == "料金は月額9800円です。"
    assert result.traceability.report_ids == ["c1"] and result.traceability.document_ids == ["d-c1"]
    assert result.map_results[0].key_points[0].source_metadata == {
        "document_ids": ["d-c1"],
        "chunk_ids": ["k-c1"],
        "entity_ids": ["e1"],
    }
    assert result.reports_considered == 2 and result.reports_left_out == 0
    assert set(result.timings) == {"context", "map", "reduce"}
    assert ReduceProcessor.format_output(result, "json")["traceability"]["chunk_ids"] == ["k-c1"]
    assert ReduceProcessor.format_output(result) == "料金は月額9800円です。"


def test_each_map_call_writes_at_most_graph_map_max_tokens():
    from app.config import Settings
    from app.graphrag.global_search import MAP_MAX_TOKENS

    assert Settings().graph.map_max_tokens == MAP_MAX_TOKENS == 400
    assert Settings.from_env({"GRAPH_MAP_MAX_TOKENS": "48"}).graph.map_max_tokens == 48
    with pytest.raises(ValueError, match="GRAPH_MAP_MAX_TOKENS"):
        Settings.from_env({"GRAPH_MAP_MAX_TOKENS": "8"})
