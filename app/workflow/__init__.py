"""The answer workflow's parts, which the LangGraph graph (:mod:`app.graph`) wires together.

* :mod:`app.workflow.state` — the state the nodes pass on, and the run context they are given;
* :mod:`app.workflow.generate` — the generate node: checks before the LLM, the prompt, the call,
  the checks after it;
* :mod:`app.workflow.prompts` — the prompt styles, the numbered contexts, the refusal sentence;
* :mod:`app.workflow.checks` — citations, numbers, coverage, support, the quote, a document's instructions;
* :mod:`app.workflow.evidence` — the evidence-first style: sentence windows and the grammar.

May import :mod:`app.config`, :mod:`app.text`, :mod:`app.llm` and :mod:`app.reranker`; never
storage, serving or the CLI.
"""
