"""app.web.rewrite: follow-ups rewritten by the LLM, with the rules as gate and fallback (exact values;
the real model's rewrites are measured by scripts/followup_eval.py, one runs in the integration tests)."""

import pytest
from starlette.testclient import TestClient

from app.config import Settings
from app.web.app import create_app
from app.web.followup import leans_on_previous, standalone
from app.web.rewrite import SYSTEM, llm_standalone, read_rewrite, rewrite_prompt
from app.web.server import followup_rewriter
from tests.test_web_app import FakeService, events


class Model:
    """``complete(prompt, system)`` answering ``reply`` and keeping what it was asked."""

    def __init__(self, reply: str):
        self.reply, self.asked = reply, []

    def __call__(self, prompt: str, system: str) -> str:
        self.asked.append((prompt, system))
        return self.reply


@pytest.mark.parametrize(
    "question, leans",
    [
        ("それはいつまでに？", True),
        ("韓国は？", True),
        ("では、返品はできますか", True),
        ("その処理時間の上限は何秒？", True),
        ("社員は何人いますか？", False),
        ("アップロードに元の tar アーカイブを含めるオプションは？", False),
    ],
)
def test_leans_on_previous(question, leans):
    assert leans_on_previous(question) is leans


def test_the_prompt_ends_with_the_conversation_after_two_examples():
    prompt = rewrite_prompt("それはいつまでに？", "ノートPCをなくしたら誰に知らせますか？")
    assert prompt.count("書き換え:") == 3 and prompt.count("\n\n") == 2
    assert prompt.endswith(
        "前の質問: ノートPCをなくしたら誰に知らせますか？\n最後の質問: それはいつまでに？\n書き換え:"
    )


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("ノートPCの紛失はいつまでに報告しますか？", "ノートPCの紛失はいつまでに報告しますか？"),
        ("書き換え: 「韓国の3文字の国コードは？」\n説明: …", "韓国の3文字の国コードは？"),
        ("  韓国の3文字の国コードは何ですか  ", "韓国の3文字の国コードは何ですか"),
        ("", None),
        ("\n\n", None),
        ("KORです。", None),  # an answer, not a question
        ("社外から社内システムを使うには、入力する数字は4桁です。", None),  # an answer, with から in it
        ("韓国の" * 40 + "？", None),  # a runaway line
        ("日本の3文字の国コードは", None),  # the previous question again
        ("その費用は会社が出しますか？", None),  # an example copied
    ],
)
def test_read_rewrite(reply, expected):
    assert read_rewrite(reply, "韓国は？", "日本の3文字の国コードは？") == expected


def test_the_model_rewrites_a_follow_up_that_leans_on_the_previous_question():
    model = Model("韓国の3文字の国コードは？")
    assert llm_standalone("韓国は？", ["日本の3文字の国コードは？"], model) == "韓国の3文字の国コードは？"
    assert model.asked == [(rewrite_prompt("韓国は？", "日本の3文字の国コードは？"), SYSTEM)]


def test_the_model_is_not_asked_when_the_question_stands_alone_or_begins_a_conversation():
    model = Model("使われない")
    assert llm_standalone("社員は何人いますか？", ["設立はいつですか？"], model) == "社員は何人いますか？"
    assert llm_standalone("それはいつまでに？", [], model) == "それはいつまでに？"
    assert model.asked == []


def test_an_unusable_reply_falls_back_to_the_rules():
    history = ["サポート窓口の受付時間は？"]
    assert llm_standalone("それは土日も？", history, Model("休業です。")) == standalone("それは土日も？", history)
    assert standalone("それは土日も？", history) == "サポート窓口の受付時間は土日も？"


def test_a_failing_model_falls_back_to_the_rules(caplog):
    def broken(prompt, system):
        raise RuntimeError("llama_decode returned -3")

    assert (
        llm_standalone("それは土日も？", ["サポート窓口の受付時間は？"], broken) == "サポート窓口の受付時間は土日も？"
    )
    assert "the follow-up rewrite failed (RuntimeError)" in caplog.text


def test_follow_up_rewrite_setting_picks_the_rules_or_the_model():
    class Service(FakeService):
        def complete(self, prompt, system=None):
            return "サポート窓口の受付時間は土日も同じですか？"

    service = Service()
    assert followup_rewriter(service, Settings.from_env({})) is standalone
    rewrite = followup_rewriter(service, Settings.from_env({"FOLLOWUP_REWRITE": "llm"}))
    app = create_app(service, followup=rewrite)
    body = {"question": "それは土日も？", "history": ["サポート窓口の受付時間は？"]}
    got = events(TestClient(app).post("/api/ask", json=body).text)
    assert got[0] == ("searched", {"question": "サポート窓口の受付時間は土日も同じですか？", "rewritten": True})
    assert service.asked == [("サポート窓口の受付時間は土日も同じですか？", "hybrid")]
    with pytest.raises(ValueError, match="FOLLOWUP_REWRITE must be one of rules, llm"):
        Settings.from_env({"FOLLOWUP_REWRITE": "gpt"})
