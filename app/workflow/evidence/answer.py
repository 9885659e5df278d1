"""The answer, then the number of the passage it was taken from: ``答え[n]``, or the refusal.

A GBNF grammar (llama.cpp's constrained decoding: LangChain's ``LlamaCpp`` takes it, and a llama.cpp
server reads it from the request body) allows only an answer (lines without brackets) ended by one citation of a
passage that exists, or ``資料に記載がありません``: the small model cannot stop without naming its
passage, cite a passage that is not there, or run on into a second turn. A model without the grammar
(another server, a test's fake) is read as the cited style reads it (app.workflow.checks.citations). A reply that
says the documents do not hold the answer is a refusal even with its citation: the grammar made the
model cite, so the number is not evidence (:func:`refusal_cited`).
"""

from __future__ import annotations

from app.workflow.checks.citations import says_not_in_documents, without_citations
from app.workflow.prompts import ABSTAIN_ANSWER

# What a line of the answer may hold: no brackets (the one citation ends the answer).
_ANSWER_CHARS = r"[^\n\[\]［］【】]"


def grammar_text(n_passages: int) -> str:
    """The GBNF grammar of a reply for ``n_passages`` numbered passages (at least 1). The answer may run over
    lines (a blank line between them at most): a one-line grammar cut numbered and bulleted answers after
    their first line, the model's newline being forbidden (issue 39)."""
    refs = " | ".join(f'"[{i}]"' for i in range(1, max(n_passages, 1) + 1))
    return (
        f'root ::= answer ref | "{ABSTAIN_ANSWER}" "。"?\n'
        f'answer ::= line ("\\n" "\\n"? line)*\nline ::= {_ANSWER_CHARS}+\nref ::= {refs}\n'
    )


def with_grammar(llm: object, n_passages: int) -> object:
    """The same model constrained to :func:`grammar_text`: a LlamaCpp copy holding the compiled grammar,
    a server client (LLM_BASE_URL) sending it in the request body as llama.cpp's ``grammar`` — a server
    that rejects unknown fields fails the call; any other object as it is."""
    text = grammar_text(n_passages)
    if getattr(llm, "client", None) is not None and hasattr(llm, "grammar"):
        from llama_cpp import LlamaGrammar

        return llm.model_copy(update={"grammar": LlamaGrammar.from_string(text, verbose=False)})
    if getattr(llm, "extra_body", None) is not None and hasattr(llm, "model_copy"):
        return llm.model_copy(update={"extra_body": {**llm.extra_body, "grammar": text}})
    return llm


def refusal_cited(answer: str) -> str:
    """``answer`` without its citations when, apart from them, it says the documents do not hold the
    answer (``資料に記載がありません。[1]`` → ``資料に記載がありません。``); otherwise ``answer`` as it is."""
    text = without_citations(answer)
    return text if says_not_in_documents(text) else answer
