"""Communities and extractive reports (app.graphrag.communities) on hand-made graphs, exact values."""

from __future__ import annotations

import math

import pytest

from app.graphrag.communities import (
    EntityFacts,
    build_graph,
    central_sentences,
    clip,
    community_ranks,
    detect_communities,
    extractive_report,
)
from app.storage.graphrag_types import Community


def test_build_graph_prunes_rare_entities_and_light_edges():
    chunks = {"a": 3, "b": 2, "c": 2, "d": 1}  # d: named in one chunk only
    edges = [("a", "b", 5), ("b", "c", 1), ("a", "c", 4), ("a", "d", 9), ("c", "c", 2)]
    graph = build_graph(chunks, edges, min_chunks=2, edge_percentile=40)
    # among a, b, c the weights are 5, 1, 4: the 40th percentile is 2.6, so b-c goes; self-loops never count
    assert sorted(graph.edges(data="weight")) == [("a", "b", 5.0), ("a", "c", 4.0)]
    assert "d" not in graph


def two_cliques():
    """Two 4-cliques joined by one light edge (the textbook two-community graph)."""
    edges = [(a, b, 3.0) for group in ("abcd", "wxyz") for i, a in enumerate(group) for b in group[i + 1 :]]
    edges.append(("d", "w", 1.0))
    return build_graph({n: 2 for n in "abcdwxyz"}, edges, min_chunks=2, edge_percentile=0)


def test_detect_communities_finds_the_two_cliques_with_stable_ids():
    communities = detect_communities(two_cliques())
    coarsest = [c for c in communities if c.level == 0]
    assert [(c.id, c.entity_ids) for c in coarsest] == [("c0-0", list("abcd")), ("c0-1", list("wxyz"))]
    assert coarsest[0].size == 4 and coarsest[0].weight == pytest.approx(3 * 12 + 1)  # 4 nodes × 3 edges × 3, +1
    assert detect_communities(two_cliques()) == communities  # seeded: the same graph, the same communities
    for c in communities:
        if c.level:
            parent = next(p for p in communities if p.id == c.parent)
            assert parent.level == c.level - 1 and set(c.entity_ids) <= set(parent.entity_ids)


def test_detect_communities_of_an_empty_graph():
    assert detect_communities(build_graph({"a": 1}, [], min_chunks=1)) == []


def test_community_ranks_are_log_scaled_per_level():
    communities = [
        Community("c0-0", 0, ["a", "b"], weight=99.0),
        Community("c0-1", 0, ["c", "d"], weight=9.0),
        Community("c1-0", 1, ["a", "b"], weight=9.0),
    ]
    assert community_ranks(communities) == {
        "c0-0": 10.0,
        "c0-1": round(10 * math.log(10) / math.log(100), 2),
        "c1-0": 10.0,
    }


def test_clip():
    assert clip("abc  def", 10) == "abc def"
    assert clip("abcdefghij", 5) == "abcd…"


def facts():
    return {
        "e1": EntityFacts(
            "e1",
            "VPN",
            [
                ("VPNで社内に接続する。", "k1", "docs/guide.md"),
                ("VPNにはワンタイムパスワードが要る。", "k2", "docs/guide.md"),
            ],
        ),
        "e2": EntityFacts(
            "e2",
            "ワンタイムパスワード",
            [
                ("VPNにはワンタイムパスワードが要る。", "k2", "docs/guide.md"),
                ("ワンタイムパスワードは認証アプリで作る。", "k3", "csv/faq.csv"),
            ],
        ),
        "e3": EntityFacts("e3", "認証アプリ", [("ワンタイムパスワードは認証アプリで作る。", "k3", "csv/faq.csv")]),
    }


def test_central_sentences_prefer_those_naming_most_members():
    members = list(facts().values())
    assert [s for s, _, _ in central_sentences(members, limit=2)] == [
        "VPNにはワンタイムパスワードが要る。",
        "ワンタイムパスワードは認証アプリで作る。",
    ]


def test_extractive_report_is_written_from_the_community_sentences():
    community = Community("c0-0", 0, ["e1", "e2", "e3"], size=3)
    report = extractive_report(community, facts(), {"e1": 1.0, "e2": 3.0, "e3": 1.0}, rank=7.5)
    assert report.title == "ワンタイムパスワード・VPN・認証アプリ"  # by weighted degree, then ID
    assert report.summary == (
        "VPNにはワンタイムパスワードが要る。 ワンタイムパスワードは認証アプリで作る。 VPNで社内に接続する。"
    )
    assert report.findings == []  # every sentence of theirs is in the summary already
    assert report.rank == 7.5 and report.kind == "extractive"
    assert report.chunk_ids == ["k2", "k3", "k1"]
    assert report.document_ids == ["docs/guide.md", "csv/faq.csv"]
    assert report.entity_ids == ["e2", "e1", "e3"]
    assert report.content().startswith("# ワンタイムパスワード・VPN・認証アプリ\n")


def test_communities_do_not_depend_on_the_order_edges_arrive_in():
    edges = [(a, b, 3.0) for group in ("abcd", "wxyz") for i, a in enumerate(group) for b in group[i + 1 :]]
    edges += [("d", "w", 1.0), ("a", "x", 1.0)]
    chunks = {n: 2 for n in "abcdwxyz"}
    forward = detect_communities(build_graph(chunks, edges, edge_percentile=0))
    backward = detect_communities(build_graph(chunks, [(b, a, w) for a, b, w in reversed(edges)], edge_percentile=0))
    assert forward == backward
