"""Which earlier answer a question may be given again (ANSWER_CACHE): pure functions of the question,
the mode, who asks and the settings that shape an answer. The rows live in PostgreSQL
(app.storage.answers); a row is found only under the same key, for the same principals, over the same
documents."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from app.config import Settings
from app.storage.answers import answer_by_id, cached_answer, documents_fingerprint, record_answer
from app.storage.scope import Scope


def question_key(question: str) -> str:
    """The question as it is compared: NFKC (full/half width), lower case, without spaces, punctuation or
    symbols. ``「受付時間は？」`` and ``受付時間は ?`` are one question; ``受付時間は`` and ``受付期間は`` two."""
    text = unicodedata.normalize("NFKC", question).lower()
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZSC")


def answering_settings(settings: Settings) -> dict[str, Any]:
    """What shapes an answer besides the documents: the models, retrieval and answer settings, the graph's
    (a change of any makes earlier answers stale)."""
    models = settings.models
    return {
        "embed": [models.embed_model, models.embed_base_url, models.reranker_model],
        "llm": [
            settings.llm.model_path,
            settings.llm.base_url,
            settings.llm.model,
            settings.llm.max_tokens,
            settings.llm.n_ctx,
            settings.llm.temperature,
        ],
        "retrieval": {k: v for k, v in asdict(settings.retrieval).items()},
        "answers": asdict(settings.answers),
        "graph": asdict(settings.graph),
    }


def cache_key(
    question: str,
    mode: str,
    principals: Sequence[str],
    settings: Settings | Mapping[str, Any],
    scope: Scope | None = None,
) -> str:
    """SHA-256 of the normalized question, the mode, the sorted principals, the answering settings and the
    question's scope (app.storage.scope.Scope): an answer read within some folders, formats or dates is
    another answer than one read from everything. No scope (or an empty one) leaves the key as it was
    before scopes existed, so the answers kept then are still found."""
    shaping = answering_settings(settings) if isinstance(settings, Settings) else dict(settings)
    payload = {"q": question_key(question), "mode": mode, "principals": sorted(set(principals)), "settings": shaping}
    if scope:
        payload["scope"] = scope.as_dict()
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()


@dataclass
class AnswerMemory:
    """The kept answers of one store's collection (app.storage.answers), as the service uses them."""

    engine: Any
    collection: str
    settings: Settings

    def fingerprint(self) -> str:
        """What the stored documents are now (app.storage.answers.documents_fingerprint)."""
        return documents_fingerprint(self.engine, self.collection)

    def find(
        self,
        question: str,
        mode: str,
        principals: Sequence[str],
        fingerprint: str | None = None,
        scope: Scope | None = None,
    ) -> tuple[str, dict, Any] | None:
        """``(id, result, created_at)`` of the earlier answer to this question for these principals within
        the same ``scope`` over the documents as they are now (``fingerprint``, read here when not given),
        within ANSWER_CACHE_TTL_S; None otherwise."""
        key = cache_key(question, mode, principals, self.settings, scope)
        ttl = self.settings.memory.answer_cache_ttl_s
        now = self.fingerprint() if fingerprint is None else fingerprint
        return cached_answer(self.engine, self.collection, key, now, principals, ttl)

    def keep(
        self,
        question: str,
        mode: str,
        principals: Sequence[str],
        fingerprint: str,
        result: Mapping[str, Any],
        scope: Scope | None = None,
    ) -> str | None:
        """Keep one answer written within ``scope`` over documents with ``fingerprint``; its new ID."""
        key = cache_key(question, mode, principals, self.settings, scope)
        ttl = self.settings.memory.answer_cache_ttl_s
        return record_answer(self.engine, self.collection, key, fingerprint, question, mode, principals, result, ttl)

    def by_id(self, answer_id: str) -> dict | None:
        """One kept answer: question, mode, sources, principals (app.storage.answers.answer_by_id)."""
        return answer_by_id(self.engine, self.collection, answer_id)
