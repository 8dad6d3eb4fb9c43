"""``answer-eval agreement``: how often each evaluator agrees with a human label column."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from answer_eval.agreement import agreement, best_threshold, cohen_kappa
from answer_eval.files import InputError, iter_jsonl
from answer_eval.labels import acceptable_answers
from answer_eval.runner import require_fields

__all__ = ["AgreementRow", "register", "run_agreement"]


@dataclass(frozen=True)
class AgreementRow:
    """One evaluator's agreement with the human labels.

    :param evaluator: The evaluator's name.
    :param agreement: Share of answers on which it agrees with the label.
    :param kappa: Cohen's kappa against the label.
    :param positive_rate: Share of answers it calls right.
    :param answers_per_second: Throughput of its ``run`` on the file (model loading excluded).
    :param note: How a graded score became a verdict, or why the evaluator was left out.
    """

    evaluator: str
    agreement: float | None
    kappa: float | None
    positive_rate: float | None
    answers_per_second: float | None
    note: str = ""


@dataclass(frozen=True)
class _Items:
    questions: list[str | None]
    golds: list[tuple[str, ...]]
    predictions: list[Any]
    labels: list[bool]


def register(commands: Any) -> None:
    """Add the ``agreement`` sub-command."""
    parser = commands.add_parser(
        "agreement",
        help="agreement and Cohen's kappa of every evaluator with a human label column",
        description=(
            "Run Haystack's AnswerExactMatchEvaluator and SASEvaluator and this package's evaluators on a "
            "labelled JSONL file and print, side by side, their agreement with the human label, Cohen's kappa, "
            "the share they call right, and their throughput."
        ),
    )
    parser.add_argument("file", help="JSONL input with a prediction, acceptable answers and a human label")
    parser.add_argument("--label-field", default="human_acceptable", help="human verdict field (default: %(default)s)")
    parser.add_argument(
        "--positive",
        action="append",
        default=[],
        metavar="VALUE",
        help="a label value that means acceptable (repeatable); default: JSON true",
    )
    parser.add_argument("--prediction-field", default="prediction")
    parser.add_argument("--answers-field", default="answers")
    parser.add_argument("--question-field", default="question")
    parser.add_argument("--no-semantic", action="store_true", help="leave out SAS and the judge's semantic stage")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=run)


def _read(args: argparse.Namespace) -> _Items:
    items = _Items([], [], [], [])
    positives = set(args.positive)
    for number, row in iter_jsonl(args.file):
        if isinstance(row, InputError):
            raise row
        try:
            require_fields(row, (args.answers_field, args.prediction_field, args.label_field))
            golds = acceptable_answers(row[args.answers_field])
        except InputError as exc:
            raise InputError(exc.message, args.file, number) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"field {args.answers_field!r}: {exc}", args.file, number) from None
        label = row[args.label_field]
        if positives:
            verdict = str(label) in positives
        elif isinstance(label, bool):
            verdict = label
        else:
            raise InputError(
                f"label {label!r} is not true/false: name the values that mean acceptable with --positive",
                args.file,
                number,
            )
        question = row.get(args.question_field)
        items.questions.append(question if isinstance(question, str) else None)
        items.golds.append(golds)
        items.predictions.append(row[args.prediction_field])
        items.labels.append(verdict)
    if not items.labels:
        raise InputError("no rows to compare", args.file)
    return items


def _text(prediction: Any) -> str:
    from answer_eval.reading import read_output

    return read_output(prediction).text or ""


def _best_over_golds(run_one: Callable[[list[str], list[str]], list[float]], items: _Items) -> list[float]:
    """Run a one-reference Haystack evaluator once per gold position and keep each item's best score."""
    texts = [_text(prediction) for prediction in items.predictions]
    best = [float("-inf")] * len(texts)
    for position in range(max(len(golds) for golds in items.golds)):
        rows = [i for i, golds in enumerate(items.golds) if len(golds) > position]
        scores = run_one([items.golds[i][position] for i in rows], [texts[i] for i in rows])
        for i, score in zip(rows, scores, strict=False):
            best[i] = max(best[i], float(score))
    return best


def _timed(evaluate: Callable[[], Sequence[float]], count: int) -> tuple[list[float], float]:
    start = time.perf_counter()
    scores = list(evaluate())
    elapsed = time.perf_counter() - start
    return scores, count / elapsed if elapsed > 0 else float("inf")


def _row(name: str, verdicts: Sequence[bool], labels: Sequence[bool], speed: float, note: str = "") -> AgreementRow:
    return AgreementRow(
        name, agreement(verdicts, labels), cohen_kappa(verdicts, labels), sum(verdicts) / len(verdicts), speed, note
    )


def run_agreement(items: _Items, semantic: bool) -> list[AgreementRow]:
    """Every evaluator's agreement with the labels, each timed on the same items."""
    from haystack.components.evaluators import AnswerExactMatchEvaluator

    from haystack_integrations.components.evaluators.answer_eval import (
        AnswerContainsEvaluator,
        AnswerJudgeEvaluator,
    )

    n = len(items.labels)
    rows: list[AgreementRow] = []
    exact = AnswerExactMatchEvaluator()
    scores, speed = _timed(
        lambda: _best_over_golds(
            lambda g, p: exact.run(ground_truth_answers=g, predicted_answers=p)["individual_scores"], items
        ),
        n,
    )
    rows.append(
        _row("AnswerExactMatchEvaluator (Haystack)", [s >= 1 for s in scores], items.labels, speed, "best over golds")
    )

    if semantic:
        from answer_eval.semantic import default_model_path, semantic_available

        if semantic_available():
            from haystack.components.evaluators import SASEvaluator

            sas = SASEvaluator(model=default_model_path())
            sas.warm_up()
            scores, speed = _timed(
                lambda: _best_over_golds(
                    lambda g, p: cast(
                        list[float], sas.run(ground_truth_answers=g, predicted_answers=p)["individual_scores"]
                    ),
                    items,
                ),
                n,
            )
            threshold, _ = best_threshold(scores, items.labels)
            rows.append(
                _row(
                    "SASEvaluator (Haystack, all-MiniLM-L6-v2)",
                    [s >= threshold for s in scores],
                    items.labels,
                    speed,
                    f"best over golds; score >= {threshold:.3f}, the best threshold on this file (in-sample)",
                )
            )
        else:
            rows.append(AgreementRow("SASEvaluator (Haystack)", None, None, None, None, "semantic extra not installed"))

    contains = AnswerContainsEvaluator()
    golds = [list(g) for g in items.golds]
    scores, speed = _timed(
        lambda: contains.run(ground_truth_answers=golds, predicted_answers=items.predictions)["individual_scores"], n
    )
    rows.append(_row("AnswerContainsEvaluator", [s == 1 for s in scores], items.labels, speed))

    judge = AnswerJudgeEvaluator(semantic=semantic)
    judge.warm_up()
    questions = [q or "" for q in items.questions]
    scores, speed = _timed(
        lambda: judge.run(ground_truth_answers=golds, predicted_answers=items.predictions, questions=questions)[
            "individual_scores"
        ],
        n,
    )
    rows.append(
        _row(
            "AnswerJudgeEvaluator", [s == 1 for s in scores], items.labels, speed, "" if semantic else "lexical stages"
        )
    )
    return rows


def _print(rows: list[AgreementRow], path: str, n: int, positives: int) -> None:
    print(f"answer-eval agreement: {path} ({n} answers, {positives} acceptable to people)")
    print(f"  {'evaluator':<42} {'agreement':>9} {'kappa':>7} {'says right':>10} {'answers/s':>10}")
    for row in rows:
        if row.agreement is None:
            print(f"  {row.evaluator:<42} {'-':>9} {'-':>7} {'-':>10} {'-':>10}  {row.note}")
            continue
        assert row.kappa is not None
        assert row.positive_rate is not None
        assert row.answers_per_second is not None
        print(
            f"  {row.evaluator:<42} {row.agreement:>9.3f} {row.kappa:>7.3f} {row.positive_rate:>10.3f} "
            f"{row.answers_per_second:>10.0f}" + (f"  {row.note}" if row.note else "")
        )


def run(args: argparse.Namespace) -> int:
    """Compare every evaluator with the human labels and print the table."""
    items = _read(args)
    rows = run_agreement(items, semantic=not args.no_semantic)
    if args.format == "json":
        print(
            json.dumps(
                {
                    "path": str(args.file),
                    "items": len(items.labels),
                    "acceptable": sum(items.labels),
                    "evaluators": [row.__dict__ for row in rows],
                }
            )
        )
    else:
        _print(rows, str(args.file), len(items.labels), sum(items.labels))
    return 0
