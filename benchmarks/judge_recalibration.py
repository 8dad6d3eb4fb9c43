"""Which recalibration of the judge's acceptance to a user's annotators: the candidates measured.

For each human-judged set (cross-set verdicts, as in ``benchmarks/judge_guarantee.py``: the
acceptance model fitted without the set), random splits grouped by question: fit each candidate
on ``n`` labelled answers (100, 300, 1,000 as the set allows), and measure on the rest the
log-loss of the recalibrated acceptance (graded answers; lower is better) and the agreement of the
verdicts that follow it (acceptance ≥ 0.5) with people, next to the rules' agreement:

- ``shipped``: no recalibration;
- ``shift``: an intercept shift of the log-odds (one number);
- ``platt``: ``a + b · logit(acceptance)`` (two), penalised toward the shipped model as the package's;
- ``platt-verdict``: the package's (:mod:`answer_eval.evaluators.judge.calibration`), with the
  rules' verdict as a third input;
- ``isotonic``: isotonic regression of the shipped acceptance (scikit-learn);
- ``full refit``: the 28-feature logistic model refitted on the labels (``scripts/train_judge.py``'s
  fit, L2 1 on standardised features).

Run: python benchmarks/judge_recalibration.py [--splits 50] [--markdown] (about a minute; scikit-learn).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from judge_guarantee import JudgedSet, _split, judged_sets
from train_judge import fit_logistic

from answer_eval.evaluators.judge.calibration import PENALTY, fit_recalibration

SIZES = (100, 300, 1000)
Fit = Callable[[JudgedSet, np.ndarray, np.ndarray], np.ndarray]


def _logit(p: np.ndarray) -> np.ndarray:
    clipped = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(clipped / (1 - clipped))


def _penalised(design: np.ndarray, y: np.ndarray, prior: np.ndarray) -> np.ndarray:
    theta = prior.copy()
    for _ in range(100):
        q = 1 / (1 + np.exp(-np.clip(design @ theta, -700, 700)))
        gradient = design.T @ (q - y) + PENALTY * (theta - prior)
        hessian = design.T @ (design * (q * (1 - q))[:, None]) + PENALTY * np.eye(len(theta))
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return theta


def shipped(s: JudgedSet, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    return s.acceptance[test]


def shift(s: JudgedSet, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    z = _logit(s.acceptance)
    a = 0.0
    for _ in range(100):  # the one-number fit, unpenalised (it cannot diverge with both classes present)
        q = 1 / (1 + np.exp(-(z[train] + a)))
        a -= (q - s.human[train]).sum() / max((q * (1 - q)).sum(), 1e-9)
    return 1 / (1 + np.exp(-(z[test] + a)))


def platt(s: JudgedSet, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    design = np.column_stack([np.ones(len(s.acceptance)), _logit(s.acceptance)])
    theta = _penalised(design[train], s.human[train].astype(float), np.array([0.0, 1.0]))
    return 1 / (1 + np.exp(-design[test] @ theta))


def platt_verdict(s: JudgedSet, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    fitted = fit_recalibration(s.acceptance[train], s.rules[train], s.human[train])
    return np.array([fitted.acceptance(a, r) for a, r in zip(s.acceptance[test], s.rules[test], strict=True)])


def isotonic(s: JudgedSet, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(out_of_bounds="clip", y_min=1e-3, y_max=1 - 1e-3)
    return model.fit(s.acceptance[train], s.human[train]).predict(s.acceptance[test])


def full_refit(s: JudgedSet, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    x = s.features
    mean, scale = x[train].mean(axis=0), x[train].std(axis=0)
    scale[scale == 0] = 1.0
    coef = fit_logistic((x[train] - mean) / scale, s.human[train].astype(float))
    z = ((x[test] - mean) / scale) @ coef[:-1] + coef[-1]
    return 1 / (1 + np.exp(-z))


CANDIDATES: dict[str, Fit] = {
    "shipped": shipped, "shift": shift, "platt": platt, "platt-verdict": platt_verdict,
    "isotonic": isotonic, "full refit": full_refit,
}  # fmt: skip


def measure(s: JudgedSet, size: int, splits: int, rng: np.random.Generator) -> dict[str, Any] | None:
    """Mean log-loss and verdict agreement of each candidate over the splits."""
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in CANDIDATES}
    rules: list[float] = []
    for _ in range(splits):
        calibrate = _split(s, size, rng)
        if calibrate is None:
            return None
        rest = ~calibrate
        train, test = calibrate & s.graded, rest & s.graded
        for name, fit in CANDIDATES.items():
            p = np.clip(fit(s, train, test), 1e-6, 1 - 1e-6)
            y = s.human[test]
            loss = float(-np.mean(np.where(y, np.log(p), np.log(1 - p))))
            verdict = s.rules.copy()
            verdict[test] = p >= 0.5
            found[name].append((loss, float((verdict[rest] == s.human[rest]).mean())))
        rules.append(float((s.rules[rest] == s.human[rest]).mean()))
    return {"rules": float(np.mean(rules)), **{k: tuple(np.mean(v, axis=0)) for k, v in found.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(27)
    header = ["set", "n", "rules' agreement", *(f"{name}: log-loss / agreement" for name in CANDIDATES)]
    lines = []
    for s in judged_sets():
        for size in SIZES:
            result = measure(s, size, args.splits, rng)
            if result is not None:
                cells = [f"{result[name][0]:.3f} / {result[name][1]:.3f}" for name in CANDIDATES]
                lines.append([s.name, str(size), f"{result['rules']:.3f}", *cells])
    sep = " | " if args.markdown else "  "
    print(("| " if args.markdown else "") + sep.join(header) + (" |" if args.markdown else ""))
    if args.markdown:
        print("|" + "|".join(" --- " for _ in header) + "|")
    for line in lines:
        print(("| " if args.markdown else "") + sep.join(line) + (" |" if args.markdown else ""))


if __name__ == "__main__":
    main()
