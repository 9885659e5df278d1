"""The build's pure steps (app.graphrag.index): rows in, entities/relationships/communities/reports out."""

from __future__ import annotations

import pytest

from app.graphrag import index
from app.graphrag.communities import EntityFacts
from app.graphrag.index import (
    derive,
    describe,
    embed_entities,
    embedding_text,
    entity_id,
    relationship_description,
    shape_inputs,
    write_reports,
)


def rows():
    facts = [
        {"entity": k, "title": t, "kind": "noun", "mentions": m, "chunks": c}
        for k, t, m, c in [
            ("vpn", "VPN", 3, 2),
            ("otp", "OTP", 2, 2),
            ("app", "認証アプリ", 2, 2),
            ("lone", "孤立", 1, 1),
        ]
    ]
    sentences = [
        {"entity": "vpn", "sentence": "VPNにはOTPが要る。", "chunk_id": "k1", "doc_id": "d1"},
        {"entity": "vpn", "sentence": "VPNで接続する。", "chunk_id": "k2", "doc_id": "d1"},
        {"entity": "otp", "sentence": "VPNにはOTPが要る。", "chunk_id": "k1", "doc_id": "d1"},
        {"entity": "otp", "sentence": "OTPは認証アプリで作る。", "chunk_id": "k3", "doc_id": "d2"},
        {"entity": "app", "sentence": "OTPは認証アプリで作る。", "chunk_id": "k3", "doc_id": "d2"},
        {"entity": "app", "sentence": "認証アプリを入れる。", "chunk_id": "k4", "doc_id": "d2"},
        {"entity": "lone", "sentence": "孤立した語。", "chunk_id": "k4", "doc_id": "d2"},
    ]
    pairs = [
        {"source": "otp", "target": "vpn", "weight": 3, "chunks": 2},
        {"source": "app", "target": "otp", "weight": 2, "chunks": 1},
        {"source": "app", "target": "lone", "weight": 1, "chunks": 1},
    ]
    return facts, sentences, pairs


def test_entity_and_relationship_ids_are_stable():
    assert entity_id("vpn") == entity_id("vpn") != entity_id("otp")
    assert entity_id("vpn").startswith("e-") and len(entity_id("vpn")) == 14
    assert index.relationship_id("e-1", "e-2") != index.relationship_id("e-2", "e-1")


def test_describe_takes_the_first_distinct_sentences():
    assert describe(["A。", "A。", "B。", "C。", "D。"]) == "A。 B。 C。"
    assert describe(["あ" * 200, "い" * 200]) == "あ" * 200


def test_relationship_description_is_a_sentence_naming_both():
    a = EntityFacts("e1", "VPN", [("VPNで接続する。", "k", "d"), ("VPNにはOTPが要る。", "k", "d")])
    b = EntityFacts("e2", "OTP", [("OTPは6桁。", "k", "d")])
    assert relationship_description(a, b, 2) == "VPNにはOTPが要る。"
    assert relationship_description(b, EntityFacts("e3", "孤立"), 1) == "OTP と 孤立 が同じ文に現れる（1 回）"


def test_derive_builds_entities_relationships_and_communities():
    inputs = shape_inputs(*rows())
    entities, relationships, communities, strength = derive(inputs, min_chunks=2)
    by_key = {e["key"]: e for e in entities}
    assert by_key["vpn"]["description"] == "VPNにはOTPが要る。 VPNで接続する。"
    assert by_key["app"]["degree"] == 2.0 and by_key["lone"]["degree"] == 1.0
    assert {(r["source"], r["target"], r["weight"]) for r in relationships} == {
        (entity_id("otp"), entity_id("vpn"), 3.0),
        (entity_id("app"), entity_id("otp"), 2.0),
        (entity_id("app"), entity_id("lone"), 1.0),
    }
    # 孤立 is named in one chunk: it serves local search but is not in any community
    assert by_key["lone"]["communities"] == []
    members = {e for c in communities for e in c.entity_ids}
    assert entity_id("lone") not in members and entity_id("vpn") in members
    assert by_key["vpn"]["communities"] == [
        c.id for c in sorted(communities, key=lambda c: c.level) if entity_id("vpn") in c.entity_ids
    ]
    # app-otp (2) is below the 40th percentile of the kept weights (3, 2 → 2.4): pruned from the community graph
    assert strength == {entity_id("otp"): 3.0, entity_id("vpn"): 3.0}
    assert [sorted(c.entity_ids) for c in communities if c.level == 0] == [sorted([entity_id("otp"), entity_id("vpn")])]


class CountingEmbeddings:
    def __init__(self):
        self.texts = []

    def embed_documents(self, texts):
        self.texts += texts
        return [[float(len(t))] for t in texts]


def test_embed_entities_reuses_known_vectors_and_skips_rare_entities():
    entities = [
        {"id": "a", "title": "VPN", "description": "VPNで接続する。", "chunks": 2},
        {"id": "b", "title": "OTP", "description": "", "chunks": 3},
        {"id": "c", "title": "孤立", "description": "一度だけ。", "chunks": 1},
    ]
    known_hash = index.text_hash(embedding_text("OTP", ""), "m")
    model = CountingEmbeddings()
    embedded = embed_entities(
        entities, model, lambda hashes: {known_hash: [9.0]} if known_hash in hashes else {}, "m", min_chunks=2
    )
    assert embedded == 1 and model.texts == ["VPN: VPNで接続する。"]
    assert [e["embedding"] for e in entities] == [[float(len("VPN: VPNで接続する。"))], [9.0], None]
    assert entities[2]["embed_hash"] is None


def test_write_reports_reuses_a_stored_llm_report_with_the_same_content():
    inputs = shape_inputs(*rows())
    _, _, communities, strength = derive(inputs, min_chunks=2)
    written = []

    def llm_report(report):
        written.append(report.id)
        return None  # unusable: the extractive one stays

    digest = index.report_hash(communities[0], inputs)
    stored = {digest: {"title": "認証の仕組み", "summary": "VPN と OTP。", "findings": ["要る"], "kind": "llm"}}
    reports, n = write_reports(communities, inputs, strength, llm_report, stored)
    assert (
        reports[0]["title"] == "認証の仕組み" and reports[0]["kind"] == "llm" and reports[0]["content_hash"] == digest
    )
    assert communities[0].id not in written and n == 0
    assert all(r["kind"] == "extractive" for r in reports[1:])


@pytest.mark.parametrize("extractor, expected", [("fast", "fast/"), ("llm", "llm/")])
def test_extractor_name_changes_with_the_extractor(extractor, expected):
    from app.config import Settings

    assert index.extractor_name(Settings().changed(graph={"extractor": extractor})).startswith(expected)
