"""Hostile texts handed to the components from Python: the time they take, and whether it grows linearly.

The timings the test suite used to assert live here (the suite checks behaviour, never speed):

- a 100 MB prediction through every component (contains, judge, typed, metrics, tools, pairwise): it is
  refused by its length, never read, so the whole loop takes seconds (target: under 30 s; folding it
  would take minutes);
- a label of 1 MB, then of 10 MB, given to ``AnswerContainsEvaluator``: linear, not limited (target: the
  10 MB label under 40 times the 1 MB one, plus 0.5 s for timer noise).

Run: .venv/bin/python benchmarks/hostile_texts.py   (about half a minute; exit 1 when a target is missed)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # the components as tests/test_bad_inputs.py runs them
from tests.test_bad_inputs import COMPONENTS, label_for  # noqa: E402


def big_prediction_seconds() -> float:
    """Seconds for a 100 MB prediction through every component, one call each."""
    big = "Sheffield produced 12,400 units. " * (100_000_000 // 33)
    started = time.perf_counter()
    for name, run in COMPONENTS.items():
        run([label_for(name)], [big])
    return time.perf_counter() - started


def label_seconds(size: int, seed: str) -> float:
    """Seconds for one ``AnswerContainsEvaluator`` call on a new label of ``size`` characters."""
    evaluator = AnswerContainsEvaluator()
    label = (f"{seed} 12,400 units " * (size // 13 + 1))[:size]  # a new label each time: no cache
    started = time.perf_counter()
    evaluator.run(ground_truth_answers=[label], predicted_answers=["12400 units"])
    return time.perf_counter() - started


def main() -> int:
    """Print the figures and the targets; exit 1 when one is missed."""
    missed = 0
    seconds = big_prediction_seconds()
    met = seconds < 30
    missed += not met
    print(f"100 MB prediction through every component: {seconds:.2f} s (target < 30 s: {'met' if met else 'MISSED'})")
    small = min(label_seconds(1_000_000, seed) for seed in ("a", "b"))
    large = label_seconds(10_000_000, "c")
    met = large < 40 * small + 0.5
    missed += not met
    print(
        f"contains label of 1 MB: {small:.3f} s; of 10 MB: {large:.3f} s, {large / max(small, 1e-9):.1f}x "
        f"(target < 40x + 0.5 s: {'met' if met else 'MISSED'})"
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
