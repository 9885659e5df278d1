"""Time to the first token in a warm process with and without llama.cpp's kept prefix (issue 29,
item 7): the MCP server's and the web page's service (app.serving.service.RagService: models loaded once)
answers each question twice, once as it runs (llama-cpp-python evaluates only what follows the tokens
it already holds: the system text, and the chat template's head), once after ``Llama.reset()`` (the
whole prompt evaluated, as in a fresh process). One run, the same store and model.

    DB_NAME=sampleeval python scripts/warm_prefix.py [--data-dir data] [--questions 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

QUESTIONS = (
    "サポート窓口の受付時間を教えてください。",
    "エラーコードE3010が出たときの対処方法は？",
    "有給休暇は入社後いつから取得できますか？",
    "ミナトVPNに接続するときに必要なものは何ですか？",
    "出張のときの宿泊費の上限はいくらですか？",
    "バックアップは何日間保持されますか？",
)


def main() -> int:
    """Print the medians (and each question's pair) as JSON."""
    from app.config import get_settings
    from app.evaluation.run import collection_for
    from app.serving.service import RagService
    from app.users.identity import FULL
    from app.workflow.prompts import CITED_SYSTEM

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    args = parser.parse_args()
    settings = get_settings().changed(retrieval={"collection_name": collection_for(args.data_dir)})
    service = RagService.create(settings, data_dir=args.data_dir, preload_llm=False)
    client = service.context().llm.client  # llama_cpp.Llama
    service.ask("テスト", who=FULL)  # warm: the model loaded, the system text evaluated once
    rows = []
    for question in QUESTIONS[: args.questions]:
        kept = service.ask(question, who=FULL)["timings"].get("first_token")
        client.reset()  # forget every evaluated token: the next prompt is evaluated whole
        whole = service.ask(question, who=FULL)["timings"].get("first_token")
        rows.append({"question": question, "kept_prefix_s": kept, "whole_prompt_s": whole})
    kept = [r["kept_prefix_s"] for r in rows if r["kept_prefix_s"]]
    whole = [r["whole_prompt_s"] for r in rows if r["whole_prompt_s"]]
    print(
        json.dumps(
            {
                "system_tokens": len(client.tokenize(CITED_SYSTEM.encode("utf-8"), add_bos=False)),
                "median_first_token_kept_prefix_s": round(statistics.median(kept), 2) if kept else None,
                "median_first_token_whole_prompt_s": round(statistics.median(whole), 2) if whole else None,
                "rows": rows,
            },
            ensure_ascii=False,
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
