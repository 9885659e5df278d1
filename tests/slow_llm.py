"""A slow fake text LLM (a real LangChain ``LLM`` subclass) that streams its answer one character at
a time and records every call: what global search's map calls and a streamed answer meet on two cores."""

from __future__ import annotations

import time
from collections.abc import Iterator

from langchain_core.language_models.llms import LLM
from langchain_core.outputs import GenerationChunk

from app.graphrag.global_search import MAP_TEMPLATE

MAP_ANSWER = '{"points": [{"description": "料金は月額制で、年払いは二か月分安い", "score": 80}]}'
ANSWER = "料金は月額制です。"


class SlowLLM(LLM):
    """Map prompts get :data:`MAP_ANSWER`, anything else :data:`ANSWER`, ``pause`` seconds a character;
    ``calls`` lists each call's kind (``map`` / ``answer``) as it begins, ``pieces`` counts what it wrote."""

    pause: float = 0.01
    calls: list[str] = []
    pieces: int = 0

    @property
    def _llm_type(self) -> str:
        return "slow-fake"

    def _call(self, prompt, stop=None, run_manager=None, **kwargs) -> str:
        return "".join(chunk.text for chunk in self._stream(prompt))

    def _stream(self, prompt, stop=None, run_manager=None, **kwargs) -> Iterator[GenerationChunk]:
        is_map = MAP_TEMPLATE.split("{")[0] in prompt
        self.calls.append("map" if is_map else "answer")
        for char in MAP_ANSWER if is_map else ANSWER:
            time.sleep(self.pause)
            self.pieces += 1
            yield GenerationChunk(text=char)
