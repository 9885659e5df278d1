"""A served question's reads as who asks, within its scope (app.storage.scope.Scope: folders, formats, a
date): the scope checked as the asker before anything is searched, and the workflow's context made to
read as them and within it (the search, the top source's chunks, the graph search, the tables)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from app.config import SEARCH_MODES, Settings
from app.graph import table_answerer
from app.retrieval.reader import GLOBAL_SCOPE
from app.storage.scope import Scope, missing_folder_message, missing_folders


def narrowed(scope: Scope | None) -> dict[str, Scope]:
    """``{"scope": scope}`` for a scope that narrows something, ``{}`` otherwise: the keyword argument a
    read takes, left out without one (the calls as before scopes existed)."""
    return {"scope": scope} if scope else {}


def checked_scope(
    store: Any, settings: Settings, scope: Scope | None, principals: Sequence[str], mode: str | None = None
) -> Scope | None:
    """``scope`` when it narrows something (None otherwise); ValueError with the command line's one line
    (app.storage.scope.missing_folder_message) when one of its folders holds no document ``principals`` may
    read, the same whether the folder does not exist or holds only what others may read; and for ``mode``
    global (community reports span every folder)."""
    if not scope:
        return None
    if mode == "global":
        raise ValueError(GLOBAL_SCOPE)
    if scope.folders:
        missing = missing_folders(store.engine, settings.retrieval.collection_name, scope, principals)
        if missing:
            raise ValueError(missing_folder_message(missing))
    return scope


def asker_context(
    ctx: Any, store: Any, settings: Settings, mode: str, principals: Sequence[str], scope: Scope | None = None
) -> Any:
    """The served context ``ctx`` reading as ``principals`` within ``scope`` (None: every document): the
    search in ``mode`` (the graph modes: hybrid chunks and the graph search with the context's LLM and its
    tokenizer), the top source's other chunks (TOP_SOURCE_CHARS), the table path's tables."""
    within = narrowed(scope)
    ctx = replace(ctx, read_source=partial(store.source_chunks, principals=principals, vectors=True))
    if mode in SEARCH_MODES:
        ctx = replace(ctx, search=store.search_function(mode, principals, **within), mode=mode)
    else:  # local, global, auto
        graph = store.graph_search(llm=ctx.llm, count_tokens=ctx.count_tokens, principals=principals, **within)
        ctx = replace(ctx, search=store.search_function("hybrid", principals, **within), mode=mode, graph_search=graph)
    if getattr(ctx, "tables", None) is not None:  # the table path reads its tables as who asks too
        ctx = replace(ctx, tables=table_answerer(settings, store, ctx.llm, principals, scope))
    return replace(ctx, scope=scope) if scope else ctx
