"""Measure the judge and its candidate learned stages honestly: grouped cross-validation and cross-set figures.

For every human-judged set in ``data/judge`` (NQ301 dev, EfficientQA, EVOUNA TriviaQA) this
reports, for the current rule-based judge and each candidate model over the interpretable
features of :mod:`answer_eval.evaluators.judge.acceptance_model`:

- **cross-set** agreement (fit on the other sets, test on this one: the figure to publish and
  decide by), and fit on the NQ sets / test on TriviaQA and the reverse;
- **same-set** agreement, grouped 5-fold cross-validation by question (labelled as such);
- Cohen's kappa, agreement per answer form (short spans vs sentences) and per answering system
  where the set names it, each with a 95% interval from a bootstrap over questions;
- expected calibration error of the predicted probabilities (cross-set).

EfficientQA's "possibly correct" counts as acceptable (its annotators' looser category).
Nothing is written but ``--json`` output; ``scripts/train_judge.py`` fits and writes the model.

Run: python scripts/judge_study.py [--json out.json] [--models rules logistic boosted]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared set readers live beside this script

from judged_sets import SETS, SetSpec, rows
from train_judge import balanced_weights, calibration, fit_acceptance, predict

from answer_eval.evaluators.judge.acceptance_model import FEATURES
from answer_eval.evaluators.judge.cascade import AnswerJudge

SEED = 20261201
FOLDS = 5
BOOTSTRAP = 1000


@dataclass
class JudgedSet:
    """One human-judged set as arrays: features, labels, question groups, answer form, system."""

    name: str
    features: np.ndarray
    human: np.ndarray
    groups: np.ndarray
    short: np.ndarray
    systems: np.ndarray
    rules: np.ndarray  # the current rule-based judge's verdicts (lexical stages)


def load_set(spec: SetSpec, questions: int | None = None) -> JudgedSet:
    """Read a set (its first ``questions`` questions, when given) and compute everything the study needs."""
    data = rows(spec)
    if questions is not None:
        kept = set(list(dict.fromkeys(str(row[spec.group_key]) for row in data))[:questions])
        data = [row for row in data if str(row[spec.group_key]) in kept]
    judge = AnswerJudge()
    truths, predictions = [r["answers"] for r in data], [r["prediction"] for r in data]
    asked = [r.get("question") for r in data]
    verdicts, table = judge.judge_with_features(truths, predictions, asked)
    short = np.array([len(str(row["prediction"]).split()) <= 5 for row in data])
    return JudgedSet(
        spec.name,
        np.array([[row[name] for name in FEATURES] for row in table]),
        np.array([spec.label(row) for row in data]),
        np.array([str(row[spec.group_key]) for row in data]),
        short,
        np.array(
            [row.get("model", "short" if is_short else "sentence") for row, is_short in zip(data, short, strict=True)]
        ),
        np.array([verdict.correct for verdict in verdicts]),
    )


def load_all() -> list[JudgedSet]:
    """The three sets."""
    return [load_set(spec) for spec in SETS]


# ---- candidate models -------------------------------------------------------------------------

Predictor = Callable[[np.ndarray], np.ndarray]
Fit = Callable[[np.ndarray, np.ndarray, Sequence[int]], Predictor]


def fit_shipped(x: np.ndarray, y: np.ndarray, sizes: Sequence[int]) -> Predictor:
    """The shipped acceptance model: L2 logistic, standardised, each training set weighted equally."""
    model = fit_acceptance(x, y, balanced_weights(sizes))
    return lambda z: predict(model, z)


def fit_logistic(x: np.ndarray, y: np.ndarray, sizes: Sequence[int], c: float = 1.0) -> Predictor:
    """L2 logistic regression on standardised features, every answer weighted alike (scikit-learn)."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return lambda z: model.predict_proba((z - mean) / scale)[:, 1]


def fit_boosted(x: np.ndarray, y: np.ndarray, sizes: Sequence[int]) -> Predictor:
    """Gradient-boosted trees (scikit-learn), small and regularised."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(
        max_iter=200, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=40, l2_regularization=1.0,
        random_state=SEED,
    ).fit(x, y)  # fmt: skip
    return lambda z: model.predict_proba(z)[:, 1]


CANDIDATES: dict[str, Fit] = {"shipped": fit_shipped, "logistic": fit_logistic, "boosted": fit_boosted}


# ---- measures ---------------------------------------------------------------------------------


def kappa(predicted: np.ndarray, human: np.ndarray) -> float:
    """Cohen's kappa between two 0/1 columns."""
    observed = float((predicted == human).mean())
    p, q = predicted.mean(), human.mean()
    expected = p * q + (1 - p) * (1 - q)
    return 0.0 if expected == 1 else (observed - expected) / (1 - expected)


def interval(correct: np.ndarray, groups: np.ndarray, seed: int = SEED) -> tuple[float, float]:
    """95% interval of an agreement from a bootstrap over questions (answers to one question resampled together)."""
    unique, index = np.unique(groups, return_inverse=True)
    sums = np.bincount(index, weights=correct.astype(float), minlength=len(unique))
    counts = np.bincount(index, minlength=len(unique))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(unique), size=(BOOTSTRAP, len(unique)))
    values = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))


def calibration_error(probability: np.ndarray, human: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over ten equal-width bins of the probability that a person accepts."""
    return calibration(probability, human.astype(float), bins)[0]


def summary(predicted: np.ndarray, data: JudgedSet, probability: np.ndarray | None = None) -> dict[str, Any]:
    """Agreement (with interval), kappa, per form and per system, and calibration when probabilities are given."""
    correct = predicted == data.human
    low, high = interval(correct, data.groups)
    result: dict[str, Any] = {
        "agreement": round(float(correct.mean()), 4),
        "interval": [round(low, 4), round(high, 4)],
        "kappa": round(kappa(predicted, data.human), 4),
        "by_form": {
            form: round(float(correct[mask].mean()), 4)
            for form, mask in (("short spans", data.short), ("sentences", ~data.short))
            if mask.any()
        },
        "by_system": {
            str(system): round(float(correct[data.systems == system].mean()), 4) for system in np.unique(data.systems)
        },
    }
    if probability is not None:
        result["calibration_error"] = round(calibration_error(probability, data.human), 4)
    return result


def same_set(fit: Fit, data: JudgedSet) -> np.ndarray:
    """Out-of-fold probabilities: grouped 5-fold cross-validation by question within the set."""
    questions = np.unique(data.groups)
    order = np.random.default_rng(SEED).permutation(questions)
    probability = np.zeros(len(data.human))
    for fold in np.array_split(order, FOLDS):
        test = np.isin(data.groups, fold)
        train = ~test
        probability[test] = fit(data.features[train], data.human[train], [int(train.sum())])(data.features[test])
    return probability


def cross_set(fit: Fit, train: Sequence[JudgedSet], test: JudgedSet) -> np.ndarray:
    """Probabilities on ``test`` from a model fitted on ``train`` only."""
    x = np.vstack([data.features for data in train])
    y = np.concatenate([data.human for data in train])
    return fit(x, y, [len(data.human) for data in train])(test.features)


def _overruled(fit: Fit, sets: Sequence[JudgedSet], data: JudgedSet, margin: float) -> float:
    """Agreement when a model fitted on the other sets overrules the rules only beyond ``margin`` from 0.5."""
    probability = cross_set(fit, [other for other in sets if other is not data], data)
    verdicts = data.rules.copy()
    verdicts[data.rules & (probability < 0.5 - margin)] = False
    verdicts[~data.rules & (probability > 0.5 + margin)] = True
    return round(float((verdicts == data.human).mean()), 4)


def _unshared_misses(data: JudgedSet) -> dict[str, Any]:
    """Answers people accept and the rules refuse that share no content word and few letters with any gold."""
    recall, letters = FEATURES.index("recall"), FEATURES.index("char_recall")
    missed = data.human & ~data.rules
    unshared = missed & (data.features[:, recall] == 0) & (data.features[:, letters] < 0.3)
    return {
        "accepted_by_people_refused_by_rules": int(missed.sum()),
        "sharing_no_word": int(unshared.sum()),
        "share": round(float(unshared.sum() / max(1, missed.sum())), 3),
    }


def study(sets: list[JudgedSet], models: Sequence[str]) -> dict[str, Any]:
    """Every figure, by model and set."""
    report: dict[str, Any] = {"features": list(FEATURES), "seed": SEED, "sets": {}}
    for data in sets:
        others = [other for other in sets if other is not data]
        entry: dict[str, Any] = {"answers": len(data.human), "questions": len(np.unique(data.groups))}
        entry["rules (today's judge, not fitted)"] = summary(data.rules, data)
        for name in models:
            fit = CANDIDATES[name]
            crossed = cross_set(fit, others, data)
            entry[f"{name}, cross-set (fit on {'+'.join(o.name for o in others)})"] = summary(
                crossed >= 0.5, data, crossed
            )
            inside = same_set(fit, data)
            entry[f"{name}, same-set 5-fold by question (in-distribution)"] = summary(inside >= 0.5, data, inside)
        report["sets"][data.name] = entry
    report["override sweep (exploratory: the rules, overruled only when a cross-set model is sure)"] = {
        f"{name}, margin {margin}": {data.name: _overruled(CANDIDATES[name], sets, data, margin) for data in sets}
        for name in models
        for margin in (0.1, 0.2, 0.3, 0.4)
    }
    report["misses with no shared word (world knowledge or paraphrase)"] = {
        data.name: _unshared_misses(data) for data in sets
    }
    nq = [data for data in sets if data.name != "evouna-tq"]
    tq = [data for data in sets if data.name == "evouna-tq"]
    for name in models:
        fit = CANDIDATES[name]
        for train, test in ((nq, tq[0]), (tq, nq[0]), (tq, nq[1])):
            crossed = cross_set(fit, train, test)
            key = f"{name}: fit on {'+'.join(d.name for d in train)}, test on {test.name}"
            report[key] = summary(crossed >= 0.5, test, crossed)
    return report


def main() -> None:
    """Print the study as JSON (and write it with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--models", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    args = parser.parse_args()
    report = study(load_all(), args.models)
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
