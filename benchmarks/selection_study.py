"""Which threshold-selection procedure? The candidates of issue 39 on the same grouped splits.

Each candidate chooses a confidence threshold on the calibration part of a split (as ``answer-eval
calibrate`` makes it: recalibrated, out-of-fold confidences, answers grouped by question) and the
rest of the set is judged at it. Reported per set, size and target: the mean share of the rest
kept, how often a split keeps nothing, and **reached a** (the share of splits whose kept verdicts
on the rest agree at least ``a`` of the time; the promise asks at least ``1 - delta`` = 0.9).

Candidates (``delta`` = 0.1):

- ``old``: the procedure before issue 39: one fixed sequence from the first threshold keeping 100
  answers, exact binomial test counting every answer as independent;
- ``starts-J`` (J = 1, 2, 3, 5): the package's bound (design effect by question, exact binomial on
  the effective counts), fixed sequences from J starts at kept shares spread over (0, 1), each at
  ``delta / J``; ``starts-2`` (30% and 70%) is what ``choose_threshold`` does;
- ``betting``: questions as the units of a betting test (Waudby-Smith and Ramdas 2023; valid for
  any dependence within a question, no design effect to estimate), fixed sequences from 30% and 70%;
- ``split``: choose on half of the calibration questions (the lowest threshold whose bound passes
  there), test that one threshold once on the other half at ``delta``;
- ``bisect``: binary search over the grid with a Bonferroni correction over its 8 steps.

Run: python benchmarks/selection_study.py [--splits 40] [--seed 1] [--markdown] (about 2 minutes).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_cells
from judge_guarantee import JudgedSet, _split, calibrate_on, judged_sets

from answer_eval.evaluators.judge.binomial import binomial_cdf, disagreement_upper_bound
from answer_eval.evaluators.judge.calibration import GRID_STEPS, Calibration
from answer_eval.evaluators.judge.guarantee import _design_effects, _running_sums

DELTA = 0.1
ROWS = (("nq301-dev", "40%", 0.9), ("nq301-dev", "40%", 0.85), ("nq301-dev", 300, 0.9), ("evouna-tq", 300, 0.95))
SHARES = {1: (0.5,), 2: (0.3, 0.7), 3: (0.25, 0.5, 0.75), 5: (0.15, 0.3, 0.5, 0.7, 0.9)}
Chooser = Callable[[Calibration, float], float]


def _each_bound(calibration: Calibration, level: float) -> tuple[list[float], list[int]]:
    """Each grid threshold's bound (design effect by question, as the package's) at ``level``, and its kept count."""
    sums = _running_sums(calibration.answers())
    bounds = []
    for row, effect in zip(sums, _design_effects(sums), strict=True):
        n, e = row.kept / effect, row.disagreeing / effect
        bounds.append(1 - disagreement_upper_bound(n, e, level) if row.kept else 0.0)
    return bounds, [row.kept for row in sums]


def _starts(kept: list[int], shares: tuple[float, ...]) -> list[int]:
    total = kept[0]
    return sorted({max(k for k in range(GRID_STEPS + 1) if kept[k] >= math.ceil(s * total)) for s in shares})


def _sequences(bounds: list[float], starts: list[int], target: float) -> float:
    """The lowest threshold some sequence reaches with every test on its way passing."""
    passed = [k for start in starts for k in _walk(bounds, start, target)]
    return min(passed) / GRID_STEPS if passed else math.inf


def _walk(bounds: list[float], start: int, target: float) -> list[int]:
    reached = []
    for k in range(start, -1, -1):
        if bounds[k] < target:
            break
        reached.append(k)
    return reached


def starts(count: int) -> Chooser:
    """Fixed sequences from ``count`` starts, each at delta / count."""

    def choose(calibration: Calibration, target: float) -> float:
        _, kept = _each_bound(calibration, DELTA)
        chosen = _starts(kept, SHARES[count])
        bounds, _ = _each_bound(calibration, DELTA / len(chosen))
        return _sequences(bounds, chosen, target)

    return choose


def old(calibration: Calibration, target: float) -> float:
    """One sequence from the first threshold keeping 100 answers, answers counted as independent."""
    kept = disagreeing = 0
    lowest, started = None, False
    for k in range(GRID_STEPS, -1, -1):
        kept += calibration.agree[k] + calibration.disagree[k]
        disagreeing += calibration.disagree[k]
        if not started and (kept < 100 or binomial_cdf(0, kept, 1 - target) > DELTA):
            continue
        started = True
        if binomial_cdf(disagreeing, kept, 1 - target) > DELTA:
            break
        lowest = k
    return math.inf if lowest is None else lowest / GRID_STEPS


def betting(calibration: Calibration, target: float) -> float:
    """Questions as betting units: reject "risk >= 1 - target" when the capital reaches 1 / level."""
    answers = calibration.answers()
    questions = sorted({q for _, _, q in answers})
    index = {q: i for i, q in enumerate(np.random.default_rng(0).permutation(questions))}
    n = np.zeros((len(questions), GRID_STEPS + 1))
    e = np.zeros_like(n)
    for k, agreed, question in answers:
        n[index[question], k] += 1
        e[index[question], k] += not agreed
    n, e = np.cumsum(n[:, ::-1], 1)[:, ::-1], np.cumsum(e[:, ::-1], 1)[:, ::-1]
    largest = max(1.0, n[:, 0].max())
    chosen = _starts([int(v) for v in n.sum(0)], SHARES[2])
    level = DELTA / len(chosen)
    risk = 1 - target
    count = n.shape[0]
    rate = np.vstack([np.full((1, n.shape[1]), 0.5), (np.cumsum(e, 0)[:-1] + 0.5) / (np.cumsum(n, 0)[:-1] + 1)])
    spread = (e - rate * n) ** 2
    variance = (largest**2 / 4 + np.vstack([np.zeros((1, n.shape[1])), np.cumsum(spread, 0)[:-1]])) / np.arange(
        1, count + 1
    )[:, None]
    bet = np.minimum(np.sqrt(2 * math.log(1 / level) / (count * variance)), 0.75 / largest)
    capital = np.cumsum(np.log1p(-bet * (e - risk * n)), 0).max(0)
    bounds = [target if capital[k] >= math.log(1 / level) else 0.0 for k in range(GRID_STEPS + 1)]
    return _sequences(bounds, chosen, target)


def split(calibration: Calibration, target: float) -> float:
    """Choose on half of the questions, test the chosen threshold once on the other half."""
    answers = calibration.answers()
    half = {q for q in {q for _, _, q in answers} if q % 2 == 0}
    choose_on = Calibration.from_answers([a for a in answers if a[2] in half])
    test_on = Calibration.from_answers([a for a in answers if a[2] not in half])
    bounds, _ = _each_bound(choose_on, DELTA)
    passing = [k for k in range(GRID_STEPS + 1) if bounds[k] >= target]
    if not passing:
        return math.inf
    checked, _ = _each_bound(test_on, DELTA)
    return min(passing) / GRID_STEPS if checked[min(passing)] >= target else math.inf


def bisect(calibration: Calibration, target: float) -> float:
    """Binary search over the grid, each of its steps at delta / 8."""
    bounds, _ = _each_bound(calibration, DELTA / 8)
    low, high, best = 0, GRID_STEPS, math.inf
    while low <= high:
        middle = (low + high) // 2
        if bounds[middle] >= target:
            best, high = middle / GRID_STEPS, middle - 1
        else:
            low = middle + 1
    return best


CANDIDATES: dict[str, Chooser] = {
    "old": old,
    "starts-1": starts(1),
    "starts-2": starts(2),
    "starts-3": starts(3),
    "starts-5": starts(5),
    "betting": betting,
    "split": split,
    "bisect": bisect,
}


def one_row(
    judged: JudgedSet, size: int | str, target: float, splits: int, rng: np.random.Generator
) -> list[list[str]]:
    """Every candidate over ``splits`` splits of one set."""
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in CANDIDATES}
    for _ in range(splits):
        calibrate = _split(judged, size, rng)
        assert calibrate is not None
        file, correct, confidence = calibrate_on(judged, calibrate)
        agrees = correct == judged.human[~calibrate]
        for name, choose in CANDIDATES.items():
            kept = confidence >= choose(file.calibration, target)
            found[name].append((float(kept.mean()), float(agrees[kept].mean()) if kept.any() else math.nan))
    lines = []
    for name, rows in found.items():
        shares = np.array([share for share, _ in rows])
        agreements = np.array([agreement for _, agreement in rows])
        none = np.isnan(agreements)
        reached = float(np.mean(none | (agreements >= target)))
        cells = [judged.name, str(size), f"{target:g}", name, f"{shares.mean():.3f}", f"{none.mean():.2f}"]
        lines.append([*cells, f"{reached:.3f}"])
    return lines


def main() -> None:
    """Run every candidate on the rows of :data:`ROWS`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    sets = {judged.name: judged for judged in judged_sets()}
    rng = np.random.default_rng(args.seed)
    table = [["set", "n", "a", "procedure", "kept (mean)", "none kept", "reached a"]]
    for name, size, target in ROWS:
        table.extend(one_row(sets[name], size, target, args.splits, rng))
        print(f"  {name} {size} {target}: done", file=sys.stderr)
    print_cells(table, args.markdown)


if __name__ == "__main__":
    main()
