"""Where the judge's time goes: cProfile of AnswerJudge on EVOUNA LLM sentences with questions.

    python benchmarks/judge_profile.py                    # this tree, 4,000 answers
    python benchmarks/judge_profile.py --against 0d10fbb  # main before the speed-up of issue 30
    python benchmarks/judge_profile.py --answers 6000 --top 40 --sort tottime

One batch, caches emptied first (as a new batch finds them), after a warm-up batch that pays the
imports and the patterns' compilation. The earlier commit is imported beside this tree under
another name (``benchmarks/code_versions.py``). cProfile's overhead grows with the number of
Python calls, so its seconds overstate the code with many small calls: the shares guide, the
timings of ``run.py --only judge_speed`` measure.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import code_versions  # noqa: E402
import section_judge_speed  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Profile one batch of the judge and print the functions that cost most."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", help="profile this earlier commit instead of this tree")
    parser.add_argument("--answers", type=int, default=4_000)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="cumulative", choices=["cumulative", "tottime"])
    args = parser.parse_args(argv)
    if args.against:
        tag = "v" + "".join(c for c in args.against if c.isalnum())
        judge_class = code_versions.module(args.against, tag, "answer_eval.evaluators.judge.cascade").AnswerJudge
        prefix = f"answer_eval_{tag}"
    else:
        from answer_eval.evaluators.judge.cascade import AnswerJudge as judge_class

        prefix = "answer_eval"
    truths, predictions, questions = section_judge_speed.llm_sentences(args.answers)
    judge_class().judge_batch(truths, predictions, questions)  # imports, patterns: untimed
    code_versions.clear_caches(prefix)
    judge = judge_class()
    started = time.process_time()
    judge.judge_batch(truths, predictions, questions)
    plain = time.process_time() - started
    code_versions.clear_caches(prefix)
    judge = judge_class()
    profile = cProfile.Profile()
    profile.enable()
    judge.judge_batch(truths, predictions, questions)
    profile.disable()
    print(f"{args.against or 'this tree'}: {len(truths):,} answers in {plain:.2f} CPU s unprofiled")
    pstats.Stats(profile).sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
