"""app.workflow.evidence.answer: the grammar of ``answer[n]`` / the refusal (exact values), compiled by llama.cpp."""

from __future__ import annotations

from app.workflow.evidence.answer import grammar_text, with_grammar


def test_grammar_ends_the_answer_with_one_existing_passage_or_refuses():
    assert grammar_text(3) == (
        'root ::= answer ref | "資料に記載がありません" "。"?\n'
        'answer ::= line ("\\n" "\\n"? line)*\n'
        "line ::= [^\\n\\[\\]［］【】]+\n"
        'ref ::= "[1]" | "[2]" | "[3]"\n'
    )
    assert grammar_text(0).endswith('ref ::= "[1]"\n')


def test_the_grammar_compiles_in_llama_cpp():
    from llama_cpp import LlamaGrammar

    assert LlamaGrammar.from_string(grammar_text(6), verbose=False) is not None


def test_with_grammar_gives_a_server_client_the_grammar_and_leaves_other_models_as_they_are():
    from langchain_openai import ChatOpenAI

    model = object()
    assert with_grammar(model, 3) is model
    client = ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", model="m", extra_body={"max_tokens": 5})
    constrained = with_grammar(client, 2)
    assert constrained.extra_body == {"max_tokens": 5, "grammar": grammar_text(2)}
    assert client.extra_body == {"max_tokens": 5}


def test_a_cited_refusal_is_a_refusal():
    from app.workflow.evidence.answer import refusal_cited

    assert refusal_cited("資料に記載がありません。[1]") == "資料に記載がありません。"
    assert refusal_cited("データに記載がありません[2]") == "データに記載がありません"
    assert refusal_cited("受付は9時からです[1]") == "受付は9時からです[1]"
