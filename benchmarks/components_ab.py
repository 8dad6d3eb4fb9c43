"""The Haystack components of two source trees, timed taking turns: did an adapter change make one slower?

Issue 28 made every component an adapter over its core evaluator; this checks that none got
slower. Each round runs one child process per tree (``PYTHONPATH=<tree>/src``), in alternating
order, and each child times every component's ``run`` on the bundled example data, repeated to a
batch (``--rows``), best of ``--repeats``. The table gives the median over rounds of each tree's
answers per second and the ratio new/old.

    python benchmarks/components_ab.py --old /tmp/ab-old --new . --rounds 5

An old tree is made with ``git archive <rev> src | tar -x -C /tmp/ab-old`` (it needs only ``src``).
The rubric components are left out: they wait on their server (``benchmarks/run.py --only llm_latency``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "data"


def _rows(name: str, count: int) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (EXAMPLES / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [lines[index % len(lines)] for index in range(count)]


def _cases(count: int) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Component name to (component, run keyword arguments)."""
    from haystack_integrations.components.evaluators.answer_eval import (
        AnswerContainsEvaluator,
        AnswerJudgeEvaluator,
        ReferenceMetricsEvaluator,
        ToolCallEvaluator,
        TypedAnswerEvaluator,
    )

    nq = _rows("nq301_davinci_zeroshot.jsonl", count)
    golds, predictions = [row["answers"] for row in nq], [row["prediction"] for row in nq]
    typed = _rows("typed_example.jsonl", count)
    tools = _rows("tool_calls.jsonl", count)
    return {
        "AnswerContainsEvaluator": (
            AnswerContainsEvaluator(),
            {"ground_truth_answers": golds, "predicted_answers": predictions},
        ),
        "AnswerJudgeEvaluator": (
            AnswerJudgeEvaluator(),
            {"ground_truth_answers": golds, "predicted_answers": predictions, "questions": [r["question"] for r in nq]},
        ),
        "ReferenceMetricsEvaluator": (
            ReferenceMetricsEvaluator(metrics=["exact_match", "rouge"]),
            {"ground_truth_answers": golds, "predicted_answers": predictions},
        ),
        "TypedAnswerEvaluator": (
            TypedAnswerEvaluator(),
            {
                "ground_truth_answers": [row["solution"] for row in typed],
                "predicted_answers": [row["model_output"] for row in typed],
                "question_types": [row["problem_type"] for row in typed],
            },
        ),
        "ToolCallEvaluator": (
            ToolCallEvaluator(),
            {
                "ground_truth_answers": [row["reference"] for row in tools],
                "predicted_answers": [row["prediction"] for row in tools],
            },
        ),
    }


def child(count: int, repeats: int) -> dict[str, float]:
    """Seconds of the best of ``repeats`` runs of each component on ``count`` rows (after one warm run)."""
    timings = {}
    for name, (component, inputs) in _cases(count).items():
        component.run(**inputs)  # warm: models, caches, lazy imports
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            component.run(**inputs)
            best = min(best, time.perf_counter() - start)
        timings[name] = best
    return timings


def _run_child(tree: Path, count: int, repeats: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve() / "src"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, __file__, "--child", "--rows", str(count), "--repeats", str(repeats)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=1800)
    return dict(json.loads(done.stdout.splitlines()[-1]))


def main() -> None:
    """Parse the arguments; as a child, print its timings as JSON; else take turns and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="the old tree (holding src/)")
    parser.add_argument("--new", type=Path, default=Path("."), help="the new tree (default: this one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.rows, args.repeats)))
        return
    if args.old is None:
        parser.error("--old is required")
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for round_number in range(args.rounds):
        order = ("old", "new") if round_number % 2 == 0 else ("new", "old")
        for which in order:
            runs[which].append(_run_child(getattr(args, which), args.rows, args.repeats))
    print(f"{args.rows:,} rows a run, best of {args.repeats}; median of {args.rounds} rounds taking turns")
    print("| component | old answers/s | new answers/s | new/old |\n|---|---:|---:|---:|")
    for name in runs["old"][0]:
        old = args.rows / statistics.median(run[name] for run in runs["old"])
        new = args.rows / statistics.median(run[name] for run in runs["new"])
        print(f"| {name} | {old:,.0f} | {new:,.0f} | {new / old:.3f} |")


if __name__ == "__main__":
    main()
