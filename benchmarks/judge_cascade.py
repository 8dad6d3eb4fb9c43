"""The cascade judge -> LLM -> person under one promise, simulated on NQ301 with GPT-4's recorded replies.

The user simulated as in ``benchmarks/judge_guarantee.py``: many random splits of NQ301 dev grouped
by question; the calibration part is 40% of the questions, the rest is judged. Per split and
target ``a`` (delta 0.1):

- **judge alone** (today's procedure): ``answer-eval calibrate`` on the calibration part
  (:func:`~answer_eval.evaluators.judge.user_calibration.fit_with_answers`), the threshold
  ``choose_threshold(a, delta, file)``, the rest judged with the file's recalibration and verdict;
  what it keeps is decided, the rest goes to a person.
- **the cascade**: the judge's level at ``delta / 2`` on the same file, ``t_J``; the LLM's level
  calibrated on the calibration answers the judge does not keep (their out-of-fold confidence, the
  one the file counts, below ``t_J``): each with the LLM's verdict confidence, whether the person
  agrees with the LLM's verdict, and its question; ``t_L = choose_threshold(a, delta / 2, that)``.
  On the rest: judge confidence ``>= t_J`` keeps the judge's verdict, else the LLM is asked (one
  call per answer) and its verdict is kept when its confidence ``>= t_L``, else a person decides.
  Each level agrees ``>= a`` with probability ``>= 1 - delta / 2``, so all the kept verdicts do
  with ``>= 1 - delta`` (caveat: ``t_J`` is chosen on the labels that define the LLM's subset).
  Both thresholds are the package's: the level is an :class:`~answer_eval.evaluators.judge.escalation.LLMLevel`
  of the calibration answers below the highest target's ``t_J`` (as ``calibrate --escalate-model``
  records it), ``t_J`` and ``t_L`` from :func:`~answer_eval.evaluators.judge.escalation.cascade_thresholds`.

Two LLMs, both from GPT-4's recorded replies (``benchmarks/data/nq301-dev-gpt4-judge.jsonl``, rows
aligned with NQ301 dev; a reply starting with "Yes" accepts):

- **GPT-4, one reply**: its verdict's confidence is 1.0 for every answer, so its level is
  all-or-nothing: ``t_L`` keeps every escalated verdict or none, and it keeps them only when
  GPT-4's agreement on the escalated calibration answers passes the test for ``a`` as a whole.
- **jury of 3 (scripted)**: a SIMULATION, not a measurement of any model: three graders each return
  the recorded verdict, flipped independently with probability ``--flip-right`` when GPT-4's
  recorded verdict agrees with the person and ``--flip-wrong`` when it does not (defaults 0.05 and
  0.35: assumed, not fitted; a grader that errs is less consistent, so the majority's share, 3/3 ->
  1.0 or 2/3 -> 0.667, carries information about being right). Votes are drawn anew for each split.
  Its figures show what the procedure does with such a jury; a real jury's flip rates decide.

Per target and LLM, means over the splits of the rest's shares: **judge alone** (decided by the
judge-only procedure), **judge level** and **LLM level** (decided by the cascade's levels), **for a
person** (the cascade's abstentions); **kept agreement** (the cascade's kept verdicts agreeing with
people, mean over splits that keep some); **reached a** (share of splits whose kept verdicts agree
``>= a``; none kept reaches it vacuously; the promise asks ``>= 0.9``); **LLM level open** (share of
splits where some ``t_L`` passed); **LLM on escalated** (the LLM's majority verdict agreeing with
people on all the rest's escalated answers, kept or not); **calls** (answers sent to the LLM on the
rest, mean; a jury sends 3 requests each) and **calibration calls** (calibration answers the LLM
grades: those escalated at the highest target, as ``calibrate --escalate-model`` does); **ratio**:
mean cascade-decided share over mean judge-alone-decided share (issue 39's target: >= 1.5 at
a = 0.85 with kept agreement >= 0.85).

The acceptance model is the cross-set one (fitted without NQ301), so no figure is in-sample for it.

Run: python benchmarks/judge_cascade.py [--splits 200] [--seed 39] [--markdown] [--json PATH]
[--flip-right 0.05] [--flip-wrong 0.35]  (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from common import print_cells  # benchmarks/ is on the path: run as a script
from judge_guarantee import JudgedSet, _rest_confidences, _split, judged_sets
from judged_sets import SETS, rows  # scripts/ is on the path: judge_guarantee puts it there

from answer_eval.evaluators.judge.calibration import Recalibration, _bin
from answer_eval.evaluators.judge.escalation import LLMLevel, cascade_thresholds, judge_bin_of
from answer_eval.evaluators.judge.guarantee import choose_threshold
from answer_eval.evaluators.judge.user_calibration import fit_with_answers

ROOT = Path(__file__).resolve().parent.parent
GPT4 = ROOT / "benchmarks" / "data" / "nq301-dev-gpt4-judge.jsonl"
TARGETS = (0.8, 0.85, 0.9)
DELTA = 0.1
JURY = 3
FLIP_RIGHT, FLIP_WRONG = 0.05, 0.35
LLMS = ("GPT-4, one reply", "jury of 3 (scripted)")
SINGLE_REPLY_NOTE = (
    "One recorded reply per answer gives the LLM's verdict a confidence of 1.0 (all-or-nothing): its level keeps "
    "every escalated verdict when GPT-4's agreement on the escalated calibration answers passes the test for a, "
    "and none otherwise; a jury's majority share (or self-consistency samples) lets it keep the unanimous ones only."
)


@dataclass(frozen=True)
class Grader:
    """An LLM's verdicts on every answer of the set: accepts or not, and the verdict's confidence."""

    name: str
    accepts: np.ndarray
    confidence: np.ndarray


def gpt4_accepts(judged: JudgedSet, path: Path = GPT4) -> np.ndarray:
    """GPT-4's recorded verdicts (a reply starting with "Yes" accepts), checked to be aligned with the set's rows."""
    replies = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    spec = next(spec for spec in SETS if spec.name == judged.name)
    keys = [(row["qid"], row["prediction"], bool(row["human_acceptable"])) for row in rows(spec)]
    if keys != [(reply["qid"], reply["prediction"], bool(reply["human_acceptable"])) for reply in replies]:
        raise SystemExit(f"{path} is not aligned with {judged.name}")
    return np.array([str(reply["gpt4_reply"]).strip().lower().startswith("yes") for reply in replies])


def jury(accepts: np.ndarray, human: np.ndarray, flips: tuple[float, float], rng: np.random.Generator) -> Grader:
    """Three scripted graders: each flips the recorded verdict with a probability set by whether it was right."""
    right = accepts == human
    chance = np.where(right, flips[0], flips[1])[:, None]
    votes = accepts[:, None] ^ (rng.random((len(accepts), JURY)) < chance)
    yes = votes.sum(axis=1)
    return Grader(LLMS[1], yes * 2 > JURY, np.maximum(yes, JURY - yes) / JURY)


def llm_level(grader: Grader, judged: JudgedSet, index: np.ndarray, own: np.ndarray, below: int) -> LLMLevel:
    """The LLM level ``answer-eval calibrate --escalate-model`` records: the calibration answers under ``below``.

    Each with the LLM's verdict confidence's bin, whether the person agrees with the LLM, its question
    (any numbering: it only groups) and the judge's bin (``own``: the out-of-fold confidence the file counts).
    """
    numbers: dict[str, int] = {}
    rows = []
    for i, confidence in zip(index, own, strict=True):
        judge = _bin(float(confidence))
        if judge < below:
            question = numbers.setdefault(str(judged.groups[i]), len(numbers))
            agreed = bool(grader.accepts[i] == judged.human[i])
            rows.append((_bin(float(grader.confidence[i])), agreed, question, judge))
    return LLMLevel({}, tuple(rows), len(rows), 0, below)


def one_split(judged: JudgedSet, graders: Sequence[Grader], calibrate: np.ndarray) -> dict[tuple[float, str], Any]:
    """Calibrate on one split, judge the rest alone and through the cascade: per target and LLM, the shares."""
    index, rest = np.flatnonzero(calibrate), ~calibrate
    groups = [str(judged.groups[i]) for i in index]
    file, confidences = fit_with_answers(
        [judged.verdicts[i] for i in index], [bool(judged.human[i]) for i in index], groups, "benchmark"
    )
    own = np.array(confidences)
    recalibration = None if file.recalibration is None else Recalibration.from_dict(file.recalibration)
    correct, confidence = _rest_confidences(judged, rest, recalibration, file.verdict == "recalibrated")
    human = judged.human[rest]
    judge_agrees = correct == human
    highest = choose_threshold(max(TARGETS), DELTA / 2, file.calibration).threshold
    levels = {grader.name: llm_level(grader, judged, index, own, judge_bin_of(highest)) for grader in graders}
    found: dict[tuple[float, str], Any] = {}
    for target in TARGETS:
        alone = confidence >= choose_threshold(target, DELTA, file.calibration).threshold
        for grader in graders:
            # The shipped cascade's thresholds: t_J at delta / 2 on the file, t_L on the level's answers below it.
            cascade = cascade_thresholds(file.calibration, levels[grader.name], target, DELTA)
            judge_threshold, llm_threshold = cascade.judge_threshold, cascade.llm_threshold
            judge_kept = confidence >= judge_threshold
            llm_kept = ~judge_kept & (grader.confidence[rest] >= llm_threshold)
            llm_agrees = grader.accepts[rest] == human
            agreeing = judge_agrees[judge_kept].sum() + llm_agrees[llm_kept].sum()
            decided = judge_kept.sum() + llm_kept.sum()
            found[target, grader.name] = {
                "alone": float(alone.mean()),
                "alone_agreement": float(judge_agrees[alone].mean()) if alone.any() else math.nan,
                "judge": float(judge_kept.mean()),
                "llm": float(llm_kept.mean()),
                "person": float(1.0 - decided / len(human)),
                "agreement": float(agreeing / decided) if decided else math.nan,
                "open": math.isfinite(llm_threshold),
                "escalated_agreement": float(llm_agrees[~judge_kept].mean()) if (~judge_kept).any() else math.nan,
                "calls": int((~judge_kept).sum()),
                "calibration_calls": int((own < highest).sum()),
            }
    return found


def _reached(agreements: np.ndarray, target: float) -> float:
    return float(np.mean(np.isnan(agreements) | (agreements >= target)))


def _nanmean(values: np.ndarray) -> float:
    return float(np.nanmean(values)) if not np.isnan(values).all() else math.nan


def summarise(splits: Sequence[dict[tuple[float, str], Any]]) -> list[dict[str, Any]]:
    """One row per target and LLM over the splits."""
    table = []
    for target in TARGETS:
        for name in LLMS:
            per = [split[target, name] for split in splits]

            def mean(key: str, per: list[dict[str, Any]] = per) -> float:
                return float(np.mean([p[key] for p in per]))

            def values(key: str, per: list[dict[str, Any]] = per) -> np.ndarray:
                return np.array([p[key] for p in per], dtype=float)

            agreements, alone_agreements = values("agreement"), values("alone_agreement")
            cascade = mean("judge") + mean("llm")
            table.append({
                "target": target, "llm": name, "splits": len(per),
                "alone": mean("alone"), "alone_agreement": _nanmean(alone_agreements),
                "alone_reached": _reached(alone_agreements, target),
                "judge": mean("judge"), "llm_level": mean("llm"), "person": mean("person"),
                "agreement": _nanmean(agreements), "reached": _reached(agreements, target),
                "open": mean("open"), "escalated_agreement": _nanmean(values("escalated_agreement")),
                "calls": mean("calls"), "calibration_calls": mean("calibration_calls"),
                "ratio": cascade / mean("alone") if mean("alone") else math.inf,
            })  # fmt: skip
    return table


HEADER = (
    "a", "LLM", "judge alone", "alone: kept agreement", "alone: reached a", "judge level", "LLM level",
    "for a person", "kept agreement", "reached a", "LLM level open", "LLM on escalated", "calls",
    "calibration calls", "ratio",
)  # fmt: skip
KEYS = (
    "target", "llm", "alone", "alone_agreement", "alone_reached", "judge", "llm_level",
    "person", "agreement", "reached", "open", "escalated_agreement", "calls", "calibration_calls", "ratio",
)  # fmt: skip


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else ("inf" if math.isinf(value) else f"{value:.3f}")
    return str(value)


def print_table(table: list[dict[str, Any]], markdown: bool) -> None:
    """The rows, as Markdown or aligned text, and what one recorded reply allows."""
    lines = [[f"{row[key]:.1f}" if "calls" in key else _cell(row[key]) for key in KEYS] for row in table]
    print_cells([list(HEADER), *lines], markdown)
    print(f"\n{SINGLE_REPLY_NOTE}")


def nq301() -> JudgedSet:
    """NQ301 dev judged by the acceptance model fitted on the other sets (cross-set: data it never saw)."""
    return next(found for found in judged_sets() if found.name == "nq301-dev")


def run(
    splits: int, seed: int, flips: tuple[float, float] = (FLIP_RIGHT, FLIP_WRONG), judged: JudgedSet | None = None
) -> list[dict[str, Any]]:
    """The simulation: ``splits`` grouped splits of NQ301 dev (or ``judged``), calibrated on 40% of its questions."""
    judged = nq301() if judged is None else judged
    accepts = gpt4_accepts(judged)
    single = Grader(LLMS[0], accepts, np.ones(len(accepts)))
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(splits):
        calibrate = _split(judged, "40%", rng)
        assert calibrate is not None
        results.append(one_split(judged, [single, jury(accepts, judged.human, flips, rng)], calibrate))
    return summarise(results)


def main() -> None:
    """Run the splits and print the table (``--json``: also write the rows)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--flip-right", type=float, default=FLIP_RIGHT, help="a juror's flip chance when GPT-4 is right"
    )
    parser.add_argument(
        "--flip-wrong", type=float, default=FLIP_WRONG, help="a juror's flip chance when GPT-4 is wrong"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    table = run(args.splits, args.seed, (args.flip_right, args.flip_wrong))
    print_table(table, args.markdown)
    if args.json:
        args.json.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"\n{time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
