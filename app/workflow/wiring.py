"""The StateGraph of the answer workflow, built once per process, and one question's run:

    route ─┬─ hybrid | vector | keyword ─→ table ─┬─ (answered by computing over a table) → END
           │                                       └─ retrieve → rerank → generate → END
           ├─ local ─→ local (graph context) ─→ generate → END   (no entity: END)
           └─ global ─→ global (map-reduce over community reports) → END

``route`` takes the mode asked for, or with ``auto`` picks one (app.graphrag.router). The nodes are
:mod:`app.workflow.nodes` and :mod:`app.workflow.generate`; app.graph is the spec's face over them and
builds the real context (``default_context``)."""

from __future__ import annotations

from collections.abc import Callable

from app.errors import QuestionTooLongError
from app.models.resources import cached
from app.workflow.generate import generate_node
from app.workflow.nodes import (
    after_local,
    after_route,
    after_table,
    global_node,
    local_node,
    rerank_node,
    retrieve,
    route_node,
    table_node,
)
from app.workflow.prompts import build_prompt, system_prompt
from app.workflow.state import RAGContext, RAGState


def build_rag_graph():
    """Build and compile a new StateGraph: route, then retrieve → rerank → generate, local → generate,
    or global (see the module docstring)."""
    from langgraph.graph import END, START, StateGraph

    workflow = StateGraph(RAGState, context_schema=RAGContext)
    workflow.add_node("route", route_node)
    workflow.add_node("table", table_node)
    workflow.add_node("retrieve", retrieve)
    workflow.add_node("rerank", rerank_node)
    workflow.add_node("generate", generate_node)
    workflow.add_node("local", local_node)
    workflow.add_node("global", global_node)
    workflow.add_edge(START, "route")
    workflow.add_conditional_edges("route", after_route, ["table", "local", "global"])
    workflow.add_conditional_edges("table", after_table, ["retrieve", END])
    workflow.add_edge("retrieve", "rerank")
    workflow.add_edge("rerank", "generate")
    workflow.add_conditional_edges("local", after_local, ["generate", END])
    workflow.add_edge("generate", END)
    workflow.add_edge("global", END)
    return workflow.compile()


def get_graph():
    """Return the compiled graph, built once per process."""
    return cached("graph", None, build_rag_graph)


def check_question_fits(
    query: str, count_tokens: Callable[[str], int] | None, budget: int | None, style: str = "cited"
) -> None:
    """QuestionTooLongError if the prompt with no context at all is already over ``budget`` tokens."""
    if count_tokens is None or budget is None:
        return
    system = system_prompt(style)
    needed = count_tokens((f"{system}\n" if system else "") + build_prompt(query, [], style=style))
    if needed > budget:
        raise QuestionTooLongError(
            f"the question is too long: the prompt needs {needed} tokens without any document text, but only "
            f"{budget} fit (LLM_N_CTX - LLM_MAX_TOKENS); shorten the question or raise LLM_N_CTX"
        )


def run_rag(query: str, context: RAGContext, graph=None) -> RAGState:
    """Run the workflow for one question and return the final state; ``graph``: a compiled workflow
    (default :func:`get_graph`'s; the spec's name).

    ValueError for a blank question, QuestionTooLongError for one that leaves no
    room for any document text in the model's context.
    """
    if not query or not query.strip():
        raise ValueError("query must be a non-empty string")
    check_question_fits(query.strip(), context.count_tokens, context.token_budget, context.prompt_style)
    workflow = graph or get_graph()
    return workflow.invoke({"query": query.strip()}, context=context)
