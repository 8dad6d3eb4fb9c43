"""Write the calibration data of selective evaluation: the judge's cross-set confidences on human-judged answers.

For each of the three human-judged sets (:mod:`judged_sets`), the acceptance model fitted on the
other two sets (``train_judge``'s fit, the same one behind its cross-set figures) gives every
answer its confidence, the probability that a person agrees with the verdict (answers with no text
are certain and near misses 0.5, as in ``train_judge.cross_set``), and the person's verdict says whether they agree.
The answers are counted per confidence bin of :mod:`answer_eval.evaluators.judge.guarantee`'s
grid, which is all ``choose_threshold`` needs to test any grid threshold exactly.

Writes ``src/answer_eval/evaluators/judge/calibration.json`` and, for a benchmark, the per-answer
cross-set confidences of nq301-dev as JSONL (``--items``).

Run: python scripts/judge_calibration.py [--out PATH] [--items PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_judge and judged_sets live beside this script

from judged_sets import ROOT, SETS, rows, sha256
from train_judge import Judged, _fit

from answer_eval import __version__
from answer_eval.evaluators.judge.calibration import CALIBRATION_FORMAT, GRID_STEPS, Calibration
from answer_eval.evaluators.judge.cascade import AnswerJudge, JudgeModel

DEFAULT_OUT = ROOT / "src" / "answer_eval" / "evaluators" / "judge" / "calibration.json"
DEFAULT_ITEMS = ROOT / "benchmarks" / "data" / "nq301-dev-cross-set-judge.jsonl"
ITEMS_SET = "nq301-dev"

DESCRIPTION = (
    "Calibration data for selective evaluation (answer_eval.evaluators.judge.guarantee). For each human-judged set, "
    "every answer's AnswerJudge confidence (the probability that a person agrees with the verdict) from the "
    "acceptance model fitted on the other two sets (cross-set, as in scripts/train_judge.py), and whether the "
    "person agrees with the verdict. Counted per bin: each row [lower_edge, agree, disagree] counts the answers "
    "with lower_edge <= confidence < lower_edge + bin_width (the edge 1.0 holds confidences of exactly 1.0); "
    "empty bins are left out. questions: each answer's question (a number), in the order of the bins from the "
    "highest edge down, a bin's agreeing answers before its disagreeing ones: the threshold test counts answers "
    "to one question as one cluster."
)


def cross_set_confidences(sets: list[Judged]) -> dict[str, np.ndarray]:
    """For each set: every answer's confidence from the acceptance model fitted on the other sets."""
    confidences: dict[str, np.ndarray] = {}
    for held in sets:
        model = _fit([other for other in sets if other is not held])
        probability = held.probability(model)  # a rule's fixed acceptance kept (no answer: certain)
        confidences[held.spec.name] = np.where(held.rules, probability, 1 - probability)
    return confidences


def _set_entry(judged: Judged, confidence: np.ndarray, others: list[str]) -> dict[str, Any]:
    agrees = judged.rules == judged.human
    counts = Calibration.from_pairs(
        map(float, confidence), map(bool, agrees), judged.spec.name, groups=[str(group) for group in judged.groups]
    )
    bins = [
        [k / GRID_STEPS, agree, disagree]
        for k, (agree, disagree) in enumerate(zip(counts.agree, counts.disagree, strict=True))
        if agree or disagree
    ]
    return {
        "file": f"data/judge/{judged.spec.file}",
        "sha256": sha256(judged.spec),
        "confidence_from": f"acceptance model fitted on {' and '.join(others)}",
        "answers": len(agrees),
        "agree": int(agrees.sum()),
        "disagree": int((~agrees).sum()),
        "bins": bins,
        "questions": [question for _, _, question in counts.answers()],
    }


def calibration_content(sets: list[Judged], confidences: dict[str, np.ndarray]) -> dict[str, Any]:
    """The content of ``calibration.json``."""
    names = [s.spec.name for s in sets]
    return {
        "format": CALIBRATION_FORMAT,
        "generated_by": "scripts/judge_calibration.py",
        "package_version": __version__,
        "description": DESCRIPTION,
        "bin_width": 1 / GRID_STEPS,
        "sets": {
            s.spec.name: _set_entry(s, confidences[s.spec.name], [n for n in names if n != s.spec.name]) for s in sets
        },
    }


def compact_json(content: dict[str, Any]) -> str:
    """Indented JSON with every innermost list on one line (a bin row, a list of names)."""
    text = json.dumps(content, indent=1, ensure_ascii=False)
    return re.sub(r"\[\s*([^\[\]{}]*?)\s*\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text) + "\n"


def write_items(path: Path, judged: Judged, confidence: np.ndarray) -> None:
    """Write one set's per-answer cross-set confidences as JSONL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row, correct, value, human in zip(rows(judged.spec), judged.rules, confidence, judged.human, strict=True):
            item = {
                "qid": row["qid"],
                "prediction": row["prediction"],
                "judge_correct": bool(correct),
                "confidence": float(value),
                "human_acceptable": bool(human),
            }
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")


def main() -> None:
    """Compute the cross-set confidences, write calibration.json and the nq301-dev items."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--items", type=Path, default=DEFAULT_ITEMS, help=f"per-answer JSONL of {ITEMS_SET}")
    args = parser.parse_args()
    judge = AnswerJudge(model=JudgeModel(0.5, 0.5, 0.5, 0.0, 0.0, 0.0))  # verdicts do not depend on it
    sets = [Judged(spec, judge) for spec in SETS]
    confidences = cross_set_confidences(sets)
    content = calibration_content(sets, confidences)
    args.out.write_text(compact_json(content), encoding="utf-8")
    Calibration.load(args.out)  # the checks the package applies when loading
    items = next(s for s in sets if s.spec.name == ITEMS_SET)
    write_items(args.items, items, confidences[ITEMS_SET])
    for name, entry in content["sets"].items():
        print(name, {k: v for k, v in entry.items() if k not in ("bins", "sha256", "questions")})


if __name__ == "__main__":
    main()
