"""The judge's verdicts on the 16,380 developer-set answers: this code against an earlier commit's, byte for byte.

    python benchmarks/judge_identity.py              # against 0d10fbb (main before the speed-up of issue 30)
    python benchmarks/judge_identity.py --against f00ba47
    python benchmarks/judge_identity.py --record     # also write tests/data/judge_dev_digests.json

The developer set is the three human-judged sets of ``data/judge`` the acceptance model was fitted
on (``scripts/judged_sets.py``): NQ301 dev (804 answers), EfficientQA (5,886) and EVOUNA TriviaQA
(9,690). Each set is judged in one batch, with its questions, by ``AnswerJudge`` of this tree and of
the earlier commit (imported beside it under another name: ``benchmarks/code_versions.py``). Every
field of every verdict is compared exactly: ``correct``, ``confidence`` and ``acceptance`` (their
``repr``, every bit of the float), ``stage``, ``evidence``, ``failure_kind``, ``outcome``, ``graded``.

``--record`` writes the SHA-256 of each set's verdicts, as the earlier commit gives them, to
``tests/data/judge_dev_digests.json``; ``tests/test_judge_dev_identity.py`` checks this tree against
it without git. Exit status 1 when a verdict differs. Since issue 38 the evidence of 590 verdicts
no longer names "every number of the gold is in it" for a gold with no number: against 0d10fbb
those differ in ``evidence`` alone, and the digests file records this tree's (its ``revised``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts"))

import code_versions  # noqa: E402
import judged_sets  # noqa: E402

BASELINE = "0d10fbb"
"""Main before the speed-up: the verdicts the speed-up must keep."""
DIGESTS = ROOT / "tests" / "data" / "judge_dev_digests.json"


def verdict_line(verdict: Any) -> str:
    """One verdict as a canonical line: every field, floats by ``repr`` (all their bits)."""
    return json.dumps(
        [
            verdict.correct,
            repr(verdict.confidence),
            repr(verdict.acceptance),
            verdict.stage,
            verdict.evidence,
            verdict.failure_kind,
            verdict.outcome,
            verdict.graded,
        ],
        ensure_ascii=False,
    )


def judge_set(judge_class: Any, rows: Sequence[dict[str, Any]]) -> list[str]:
    """The verdict lines of one set, judged in one batch with its questions by a new judge."""
    judge = judge_class()
    verdicts = judge.judge_batch(
        [row["answers"] for row in rows], [row["prediction"] for row in rows], [row.get("question") for row in rows]
    )
    return [verdict_line(verdict) for verdict in verdicts]


def digest(lines: Sequence[str]) -> str:
    """The SHA-256 of a set's verdict lines."""
    return hashlib.sha256("".join(line + "\n" for line in lines).encode("utf-8")).hexdigest()


def main(argv: list[str] | None = None) -> int:
    """Judge the three sets with both versions and report every verdict that differs."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default=BASELINE, help="the earlier commit (default: %(default)s)")
    parser.add_argument("--record", action="store_true", help=f"write the earlier commit's digests to {DIGESTS}")
    args = parser.parse_args(argv)
    tag = "v" + "".join(c for c in args.against if c.isalnum())
    earlier = code_versions.module(args.against, tag, "answer_eval.evaluators.judge.cascade").AnswerJudge
    from answer_eval.evaluators.judge.cascade import AnswerJudge

    differing = 0
    digests: dict[str, Any] = {"against": args.against, "sets": {}}
    for spec in judged_sets.SETS:
        rows = judged_sets.rows(spec)
        began = time.perf_counter()
        before = judge_set(earlier, rows)
        middle = time.perf_counter()
        after = judge_set(AnswerJudge, rows)
        ended = time.perf_counter()
        bad = [index for index, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
        differing += len(bad)
        print(
            f"{spec.name}: {len(rows):,} answers, {len(bad)} differ "
            f"({args.against} {middle - began:.1f} s, this tree {ended - middle:.1f} s)"
        )
        for index in bad[:5]:
            print(f"  row {index}:\n    {args.against}: {before[index]}\n    this tree: {after[index]}")
        digests["sets"][spec.name] = {
            "answers": len(rows),
            "file_sha256": judged_sets.sha256(spec),
            "verdicts_sha256": digest(before),
        }
    total = sum(entry["answers"] for entry in digests["sets"].values())
    print(f"{total:,} answers in all; {differing} verdicts differ from {args.against}'s")
    if args.record:
        DIGESTS.write_text(json.dumps(digests, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {DIGESTS}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
