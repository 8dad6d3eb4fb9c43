"""Train the AnswerJudge's few numbers on human verdicts and report cross-validated agreement.

What is learned (everything else in the judge is fixed rules):
- the confidence of the contains and lexical stages: the share of answers they accept that people
  accept;
- the semantic stage: a logistic model with two weights (MiniLM similarity to the closest
  acceptable answer, and "the gold's numbers are missing") plus an intercept, fitted on the answers
  that reach that stage (no lexical evidence), with L2 penalty 1.0.

Agreement is cross-validated by question (every answer to a question is in the same fold, so no
question is seen in training and testing), 5 folds, repeated with 10 seeds. The model is then
fitted on all the data and written to src/answer_eval/judge_model.json.

Run: python scripts/train_judge.py [--data data/judge/nq301-dev.jsonl] [--out src/answer_eval/judge_model.json]
(needs the semantic extra; HF_HUB_OFFLINE=1 is set, the model is the packaged MiniLM)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from answer_eval.judge import AnswerJudge, JudgeModel, Stage
from answer_eval.lenient import lexical_evidence
from answer_eval.semantic import MiniLMSimilarity

ROOT = Path(__file__).resolve().parent.parent
SEED = 20261130
FOLDS = 5
REPEATS = 10
L2 = 1.0


def fit_logistic(features: np.ndarray, labels: np.ndarray, l2: float = L2, iterations: int = 50) -> np.ndarray:
    """Newton's method for L2-penalised logistic regression; the intercept (last weight) is not penalised."""
    design = np.hstack([features, np.ones((len(features), 1))])
    weights = np.zeros(design.shape[1])
    penalty = l2 * np.eye(len(weights))
    penalty[-1, -1] = 0.0
    for _ in range(iterations):
        probability = 1.0 / (1.0 + np.exp(-design @ weights))
        hessian = design.T @ (design * (probability * (1 - probability))[:, None]) + penalty
        gradient = design.T @ (probability - labels) + penalty @ weights
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-10:
            break
    return weights


def load(path: Path) -> list[dict]:
    """The rows of a JSONL file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def stage_table(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per answer: the lexical cascade's stage, the similarity and the numbers-missing flag."""
    # The stages do not depend on the learned numbers: any model will do here.
    neutral = JudgeModel(0.5, 0.5, 0.5, 0.0, 0.0, 0.0)
    judge = AnswerJudge(model=neutral, similarity=None)
    verdicts = judge.judge_batch(
        [row["answers"] for row in rows], [row["prediction"] for row in rows], [row["question"] for row in rows]
    )
    stages = np.array([verdict.stage for verdict in verdicts])
    pending = [i for i, verdict in enumerate(verdicts) if verdict.stage == Stage.NO_EVIDENCE]
    similarity = np.zeros(len(rows))
    missing = np.zeros(len(rows))
    encoder = MiniLMSimilarity()
    scores = encoder.best_similarity([rows[i]["prediction"] for i in pending], [rows[i]["answers"] for i in pending])
    for i, score in zip(pending, scores, strict=False):
        similarity[i] = score
        evidence = lexical_evidence(rows[i]["prediction"], rows[i]["answers"], rows[i]["question"])
        missing[i] = float(evidence.numbers_missing)
    return stages, similarity, missing


def fit_all(stages: np.ndarray, similarity: np.ndarray, missing: np.ndarray, human: np.ndarray) -> dict:
    """Fit the stage confidences and the semantic stage's logistic model."""

    def rate(mask: np.ndarray) -> float:
        return float(human[mask].mean()) if mask.any() else 0.5

    waiting = stages == Stage.NO_EVIDENCE
    weights = fit_logistic(np.column_stack([similarity[waiting], missing[waiting]]), human[waiting])
    return {
        "confidence": {
            "contains": rate(stages == Stage.CONTAINS),
            "lexical": rate(stages == Stage.LEXICAL),
            "no_evidence_acceptance": rate(waiting),
        },
        "semantic": {"similarity": float(weights[0]), "numbers_missing": float(weights[1]), "bias": float(weights[2])},
    }


def predict(
    params: dict, stages: np.ndarray, similarity: np.ndarray, missing: np.ndarray, semantic: bool
) -> np.ndarray:
    """The cascade's verdicts given fitted parameters (semantic stage optional)."""
    accepted = (stages == Stage.CONTAINS) | (stages == Stage.LEXICAL)
    if semantic:
        s = params["semantic"]
        z = s["similarity"] * similarity + s["numbers_missing"] * missing + s["bias"]
        accepted |= (stages == Stage.NO_EVIDENCE) & (1 / (1 + np.exp(-z)) >= 0.5)
    return accepted


def cross_validate(
    groups: np.ndarray, stages: np.ndarray, similarity: np.ndarray, missing: np.ndarray, human: np.ndarray
) -> list[float]:
    """Agreement per repeat of grouped K-fold cross-validation (questions never split across folds)."""
    scores = []
    questions = np.unique(groups)
    for repeat in range(REPEATS):
        order = np.random.default_rng(SEED + repeat).permutation(questions)
        predicted = np.zeros(len(human), dtype=bool)
        for fold in np.array_split(order, FOLDS):
            test = np.isin(groups, fold)
            params = fit_all(stages[~test], similarity[~test], missing[~test], human[~test])
            predicted[test] = predict(params, stages[test], similarity[test], missing[test], semantic=True)
        scores.append(float((predicted == human).mean()))
    return scores


def main() -> None:
    """Train, cross-validate and write the model file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "judge" / "nq301-dev.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "src" / "answer_eval" / "judge_model.json")
    args = parser.parse_args()

    rows = load(args.data)
    human = np.array([bool(row["human_acceptable"]) for row in rows])
    groups = np.array([row["qid"] for row in rows])
    stages, similarity, missing = stage_table(rows)
    cv = cross_validate(groups, stages, similarity, missing, human)
    lexical_only = float((predict({}, stages, similarity, missing, semantic=False) == human).mean())
    params = fit_all(stages, similarity, missing, human)
    try:
        data_name = str(args.data.resolve().relative_to(ROOT))
    except ValueError:
        data_name = args.data.name
    model = {
        "format": 1,
        **params,
        "trained_by": "scripts/train_judge.py",
        "data": {
            "file": data_name,
            "sha256": hashlib.sha256(args.data.read_bytes()).hexdigest(),
            "answers": len(rows),
            "questions": len(np.unique(groups)),
        },
        "cross_validation": {
            "grouped_by": "qid",
            "folds": FOLDS,
            "repeats": REPEATS,
            "seed": SEED,
            "l2": L2,
            "agreement_mean": round(float(np.mean(cv)), 4),
            "agreement_std": round(float(np.std(cv)), 4),
            "lexical_only_agreement": round(lexical_only, 4),
        },
        "stage_counts": {str(stage): int((stages == stage).sum()) for stage in np.unique(stages)},
    }
    JudgeModel(
        confidence_contains=params["confidence"]["contains"],
        confidence_lexical=params["confidence"]["lexical"],
        no_evidence_acceptance=params["confidence"]["no_evidence_acceptance"],
        similarity_weight=params["semantic"]["similarity"],
        numbers_missing_weight=params["semantic"]["numbers_missing"],
        bias=params["semantic"]["bias"],
    )  # the same checks the package applies when loading
    args.out.write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
    json.dump(model["cross_validation"], sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
