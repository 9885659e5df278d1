"""Community reports written by the LLM (GRAPH_REPORTS=llm), from the extractive report's material.

The LLM gets the community's entities and central sentences and returns JSON
``{"title": …, "summary": …, "findings": […]}``; an answer that cannot be read keeps the extractive
report (one warning), so a build never fails for a report. Reports are reused while the community's
content is unchanged (app.graphrag.index.report_hash), so a sync rewrites only the changed ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from app.graphrag.points import MapParseError, parse_json_object
from app.llm import generate, with_options
from app.storage.graphrag_types import CommunityReport

log = logging.getLogger(__name__)

REPORT_MAX_TOKENS = 300
REPORT_SYSTEM = (
    "あなたは資料の一部（同じテーマのエンティティと文）を読んで短い報告を書くアシスタントです。"
    '示された文だけを根拠に、JSON で {"title": "テーマの名前（20字以内）", "summary": "2文の要約", '
    '"findings": ["重要な事実（1文）"]} を返してください。findings は3つまで。JSON 以外は書かないでください。'
)
REPORT_TEMPLATE = "エンティティ: {entities}\n\n文:\n{sentences}"


@dataclass
class LLMReportWriter:
    """Rewrites an extractive report with the LLM; ``write`` returns None when the answer is unusable."""

    llm: Any

    def prompt(self, report: CommunityReport) -> str:
        """The user message: the report's title entities and its sentences."""
        sentences = "\n".join(f"- {s}" for s in [report.summary, *report.findings] if s)
        return REPORT_TEMPLATE.format(entities=report.title, sentences=sentences)

    def write(self, report: CommunityReport) -> CommunityReport | None:
        """The LLM's report (same ID, rank and traceability), or None (the extractive one stays)."""
        model = with_options(self.llm, ["<|im_end|>", "<|endoftext|>", "</s>"], REPORT_MAX_TOKENS)
        try:
            value = parse_json_object(generate(self.prompt(report), llm=model, system=REPORT_SYSTEM))
        except MapParseError as exc:
            log.warning(
                "community %s: the LLM's report could not be read (%s); keeping the extractive one", report.id, exc
            )
            return None
        if not isinstance(value, dict) or not str(value.get("summary") or "").strip():
            log.warning("community %s: the LLM's report has no summary; keeping the extractive one", report.id)
            return None
        findings = [str(f).strip() for f in value.get("findings") or [] if str(f).strip()][:5]
        return replace(
            report,
            title=str(value.get("title") or report.title).strip()[:80],
            summary=str(value["summary"]).strip(),
            findings=findings,
            kind="llm",
        )
