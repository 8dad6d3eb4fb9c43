"""Train the AnswerJudge's acceptance model on human verdicts and write it with its cross-set figures.

What is learned (the verdicts themselves are the rules'):
- the **acceptance model**: the probability that a person accepts an answer, an L2-penalised
  logistic regression (Newton's method, deterministic) over the standardised features of
  :mod:`answer_eval.evaluators.judge.acceptance_model`, fitted on the three human-judged sets with each set weighted
  equally (so 9,690 TriviaQA answers do not drown 804 NQ ones);
- the per-stage shares (contains, lexical, no evidence) kept for format-1 readers;
- the removed semantic stage's two weights are copied from the current model file, unused (so
  that retraining on unchanged data writes the same file, and its digest, which calibrations are
  tied to, stays).

The figures written with the model are **cross-set**: for each set, the model fitted on the other
two sets judges it (agreement of the verdicts, calibration error of ``acceptance`` and of
``confidence``, and a reliability table). They are the estimate to expect on data like none of the
three; the shipped model is then fitted on all three.

Run: python scripts/train_judge.py [--out src/answer_eval/evaluators/judge/model.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # judged_sets lives beside this script

from judged_sets import ROOT, SETS, SetSpec, rows, sha256

from answer_eval import __version__
from answer_eval.evaluators.judge.acceptance_model import DEFAULT_MODEL_PATH, FEATURES, AcceptanceModel
from answer_eval.evaluators.judge.cascade import AnswerJudge, JudgeModel, Stage

L2 = 1.0
BINS = 10


def fit_logistic(
    features: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None, l2: float = L2
) -> np.ndarray:
    """Newton's method for weighted L2-penalised logistic regression; the intercept (last weight) is not penalised."""
    design = np.hstack([features, np.ones((len(features), 1))])
    sample = np.ones(len(labels)) if weights is None else weights
    coef = np.zeros(design.shape[1])
    penalty = l2 * np.eye(len(coef))
    penalty[-1, -1] = 0.0
    for _ in range(100):
        probability = 1.0 / (1.0 + np.exp(-design @ coef))
        hessian = design.T @ (design * (sample * probability * (1 - probability))[:, None]) + penalty
        gradient = design.T @ (sample * (probability - labels)) + penalty @ coef
        step = np.linalg.solve(hessian, gradient)
        coef -= step
        if np.abs(step).max() < 1e-10:
            break
    return coef


def balanced_weights(sizes: Sequence[int]) -> np.ndarray:
    """Sample weights that give each set the same total weight, summing to the number of rows."""
    total = sum(sizes)
    return np.concatenate([np.full(size, total / (len(sizes) * size)) for size in sizes])


def fit_acceptance(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> AcceptanceModel:
    """The acceptance model over standardised features."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    coef = fit_logistic((x - mean) / scale, y.astype(float), weights)
    return AcceptanceModel(
        tuple(FEATURES), tuple(map(float, mean)), tuple(map(float, scale)), tuple(map(float, coef[:-1])),
        float(coef[-1]),
    )  # fmt: skip


def predict(model: AcceptanceModel, x: np.ndarray) -> np.ndarray:
    """Acceptance probabilities for a feature matrix (the judge's formula, vectorised)."""
    z = ((x - np.array(model.mean)) / np.array(model.scale)) @ np.array(model.weights) + model.bias
    return 1.0 / (1.0 + np.exp(-z))


def calibration(probability: np.ndarray, outcome: np.ndarray, bins: int = BINS) -> tuple[float, list[dict[str, Any]]]:
    """Expected calibration error over equal-width bins, and the reliability table behind it."""
    index = np.minimum((probability * bins).astype(int), bins - 1)
    error, table = 0.0, []
    for b in range(bins):
        inside = index == b
        if inside.any():
            predicted, observed = float(probability[inside].mean()), float(outcome[inside].mean())
            error += float(inside.mean()) * abs(predicted - observed)
            table.append(
                {"bin": f"{b / bins:.1f}-{(b + 1) / bins:.1f}", "answers": int(inside.sum()),
                 "predicted": round(predicted, 3), "observed": round(observed, 3)}
            )  # fmt: skip
    return round(error, 4), table


class Judged:
    """One set read by the judge: features, verdicts, stages, people's labels, groups."""

    def __init__(self, spec: SetSpec, judge: AnswerJudge) -> None:
        data = rows(spec)
        truths = [row["answers"] for row in data]
        predictions = [row["prediction"] for row in data]
        questions = [row.get("question") for row in data]
        verdicts, table = judge.judge_with_features(truths, predictions, questions)
        self.spec = spec
        self.x = np.array([[row[name] for name in FEATURES] for row in table])
        self.rules = np.array([verdict.correct for verdict in verdicts])
        self.stages = np.array([verdict.stage for verdict in verdicts])
        self.human = np.array([spec.label(row) for row in data])
        self.groups = np.array([str(row[spec.group_key]) for row in data])
        # The model grades these; a rule fixes the others' acceptance (no answer: certain; a near miss: 0.5).
        self.weighed = np.array([verdict.graded for verdict in verdicts])
        self.fixed = np.array([verdict.acceptance for verdict in verdicts])

    def probability(self, model: AcceptanceModel) -> np.ndarray:
        """Every answer's acceptance under ``model``, as the judge gives it (the fixed ones kept)."""
        return np.where(self.weighed, predict(model, self.x), self.fixed)


def _fit(sets: Sequence[Judged]) -> AcceptanceModel:
    """The acceptance model on the weighed answers of ``sets``, each set weighted equally."""
    return fit_acceptance(
        np.vstack([s.x[s.weighed] for s in sets]),
        np.concatenate([s.human[s.weighed] for s in sets]),
        balanced_weights([int(s.weighed.sum()) for s in sets]),
    )


def cross_set(sets: list[Judged]) -> dict[str, Any]:
    """For each set: the model fitted on the other two judges it."""
    figures: dict[str, Any] = {}
    for held in sets:
        train = [other for other in sets if other is not held]
        model = _fit(train)
        probability = held.probability(model)
        confidence = np.where(held.rules, probability, 1 - probability)
        acceptance_error, _ = calibration(probability, held.human.astype(float))
        confidence_error, table = calibration(confidence, (held.rules == held.human).astype(float))
        figures[held.spec.name] = {
            "fitted_on": [s.spec.name for s in train],
            "agreement": round(float((held.rules == held.human).mean()), 4),
            "acceptance_calibration_error": acceptance_error,
            "confidence_calibration_error": confidence_error,
            "reliability_of_confidence": table,
        }
    return figures


def _semantic_section() -> dict[str, float]:
    return dict(json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))["semantic"])


def train() -> dict[str, Any]:
    """Fit everything and return the model file's content."""
    judge = AnswerJudge(model=JudgeModel(0.5, 0.5, 0.5, 0.0, 0.0, 0.0))  # verdicts do not depend on it
    sets = [Judged(spec, judge) for spec in SETS]
    human = np.concatenate([s.human for s in sets])
    stages = np.concatenate([s.stages for s in sets])
    model = _fit(sets)

    def share(stage: str) -> float:
        return float(human[stages == stage].mean())

    return {
        "format": 2,
        "acceptance": model.to_dict(),
        "confidence": {
            "contains": share(Stage.CONTAINS),
            "lexical": share(Stage.LEXICAL),
            "no_evidence_acceptance": share(Stage.NO_EVIDENCE),
        },
        "semantic": _semantic_section(),
        "trained_by": "scripts/train_judge.py",
        "package_version": __version__,
        "data": [
            {
                "file": f"data/judge/{s.spec.file}",
                "sha256": sha256(s.spec),
                "answers": len(s.human),
                "questions": len(np.unique(s.groups)),
                "acceptable_when": s.spec.label_rule,
            }
            for s in sets
        ],
        "options": {
            "model": "logistic",
            "l2": L2,
            "standardised": True,
            "sets_weighted_equally": True,
            "fit": "Newton's method, deterministic (no random state)",
            "calibration_bins": BINS,
        },
        "cross_set": cross_set(sets),
    }


def main() -> None:
    """Train and write the model file; print the cross-set figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = ROOT / "src" / "answer_eval" / "evaluators" / "judge" / "model.json"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args()
    content = train()
    args.out.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    JudgeModel.load(args.out)  # the checks the package applies when loading
    for name, figures in content["cross_set"].items():
        print(name, {k: v for k, v in figures.items() if k != "reliability_of_confidence"})


if __name__ == "__main__":
    main()
