"""``answer-eval typed``: score each row of a JSONL file by its question type, writing a reward per row."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import Any

from answer_eval.commands.common_files import process_file
from answer_eval.commands.dask_run import run_on_dask, uses_dask
from answer_eval.commands.score import add_file_options
from answer_eval.files import InputError
from answer_eval.runner import require_fields
from answer_eval.stats import ExactSum
from answer_eval.text_metrics import DEFAULT_ROUGE_TYPES
from answer_eval.typed import TypedAnswerScorer
from answer_eval.verdicts import count_failures

__all__ = ["TypedSummary", "print_typed_summary", "register", "typed_options"]

_ROUGE_CHOICES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL")


@dataclass
class TypedSummary:
    """What scoring a file by question type found.

    :param path: The input file.
    :param items: Rows scored.
    :param total: The sum of the rewards, exact (see :class:`answer_eval.stats.ExactSum`), so the mean
        is the same however the rows were split (``--engine dask`` adds up one summary per partition).
    :param per_type: Question type to the exact sum (and count) of its rewards, in order of first appearance.
    :param failure_counts: Failure kind to count.
    :param invalid_lines: Lines skipped as invalid (only with ``--skip-invalid``).
    :param output: The results file written, if any.
    """

    path: str
    items: int = 0
    total: ExactSum = field(default_factory=ExactSum)
    per_type: dict[str, ExactSum] = field(default_factory=dict)
    failure_counts: dict[str, int] = field(default_factory=lambda: count_failures(()))
    invalid_lines: int = 0
    output: str | None = None

    def add(self, question_type: str, reward: float, failure_kind: str | None) -> None:
        """Count one scored row."""
        self.items += 1
        self.total.add(reward)
        sums = self.per_type.get(question_type)
        if sums is None:
            sums = self.per_type[question_type] = ExactSum()
        sums.add(reward)
        if failure_kind is not None:
            self.failure_counts[failure_kind] = self.failure_counts.get(failure_kind, 0) + 1

    def merge(self, other: TypedSummary) -> None:
        """Add the rows another summary counted (the summary of the rows that follow these)."""
        self.items += other.items
        self.total.merge(other.total)
        for name, sums in other.per_type.items():
            self.per_type.setdefault(name, ExactSum()).merge(sums)
        for kind, count in other.failure_counts.items():
            self.failure_counts[kind] = self.failure_counts.get(kind, 0) + count
        self.invalid_lines += other.invalid_lines

    @property
    def score(self) -> float:
        """The mean reward."""
        return self.total.value / self.items

    def type_means(self) -> dict[str, dict[str, float | int]]:
        """Question type to ``{"score": mean reward, "count": rows}``."""
        return {name: {"score": sums.value / sums.count, "count": sums.count} for name, sums in self.per_type.items()}

    def to_json(self) -> dict[str, Any]:
        """The summary as one JSON-ready mapping."""
        return {
            "path": self.path,
            "items": self.items,
            "score": self.score,
            "per_type": self.type_means(),
            "failure_counts": self.failure_counts,
            "invalid_lines": self.invalid_lines,
            "output": self.output,
        }


def print_typed_summary(summary: TypedSummary) -> None:
    """Print the summary as aligned text: mean reward, per-type means and counts, failure kinds."""
    width = max([24, *(len(name) + 4 for name in summary.per_type)])
    lines = [
        f"answer-eval typed: {summary.path}",
        f"  {'items':<{width}} {summary.items}",
        f"  {'mean reward':<{width}} {summary.score:.4f}",
        f"  {'per type':<{width}} {'mean':<8} count",
    ]
    for name, means in summary.type_means().items():
        lines.append(f"    {name:<{width - 2}} {means['score']:.4f}   {means['count']}")
    if summary.invalid_lines:
        lines.append(f"  {'invalid lines':<{width}} {summary.invalid_lines} (skipped)")
    failures = {kind: count for kind, count in summary.failure_counts.items() if count}
    lines.append(f"  {'failure kinds':<{width}}" + ("" if failures else " none"))
    lines.extend(f"    {kind:<{width - 2}} {count}" for kind, count in failures.items())
    if summary.output:
        lines.append(f"  {'output':<{width}} {summary.output}")
    print("\n".join(lines))


def register(commands: Any) -> None:
    """Add the ``typed`` sub-command."""
    parser = commands.add_parser(
        "typed",
        help="score answers by question type (multiple choice, numerical, OCR, free-form, regression)",
        description=(
            "Score one answer a line by the rule of its question type and write every row back with a "
            "reward in [0, 1] and a failure_kind. Answers are read from <answer>...</answer> spans when "
            'present. Needs: pip install "answer-eval-haystack[typed]".'
        ),
    )
    parser.add_argument("file", help="JSONL input, one JSON object a line")
    fields = parser.add_argument_group("fields")
    fields.add_argument("--prediction-field", default="model_output", help="the model output (default: %(default)s)")
    fields.add_argument("--solution-field", default="solution", help="the reference solution (default: %(default)s)")
    fields.add_argument("--type-field", default="problem_type", help="the question type (default: %(default)s)")
    fields.add_argument("--reward-field", default="reward", help="the score written back (default: %(default)s)")
    fields.add_argument("--default-type", help="the question type of rows without a type field (or with null)")
    add_file_options(parser)
    rules = parser.add_argument_group("scoring")
    rules.add_argument(
        "--on-unknown", choices=("raise", "zero"), default="raise", help="an unknown type: stop (exit 2) or score 0"
    )
    rules.add_argument("--decimals", type=int, default=2, help="numerical: decimal places to round to (default: 2)")
    rules.add_argument("--no-rounding", action="store_true", help="numerical: compare numbers exactly")
    rules.add_argument("--rel-tol", type=float, default=0.0, help="numerical: relative tolerance (default: 0)")
    rules.add_argument("--abs-tol", type=float, default=0.0, help="numerical: absolute tolerance (default: 0)")
    rules.add_argument(
        "--number", choices=("last", "first", "only"), default="last", help="which number an answer gives"
    )
    rules.add_argument(
        "--percent", choices=("unit", "fraction", "either"), default="unit", help="how 45%% reads (default: unit, 45)"
    )
    rules.add_argument("--ocr-ignore-case", action="store_true", help="OCR: compare words case-insensitively")
    rules.add_argument("--ocr-ignore-punctuation", action="store_true", help="OCR: remove punctuation from words")
    rules.add_argument("--no-stemmer", action="store_true", help="free-form: no Porter stemming before ROUGE")
    rules.add_argument(
        "--rouge-type",
        action="append",
        choices=_ROUGE_CHOICES,
        help=f"free-form: a ROUGE variant to average (repeatable; default: {', '.join(DEFAULT_ROUGE_TYPES)})",
    )
    parser.set_defaults(handler=run)


def typed_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :class:`answer_eval.typed.TypedAnswerScorer` (and its component) the flags set, but ROUGE's."""
    return {
        "use_stemmer": not args.no_stemmer,
        "decimals": None if args.no_rounding else args.decimals,
        "rel_tol": args.rel_tol,
        "abs_tol": args.abs_tol,
        "number": args.number,
        "percent": args.percent,
        "ocr_ignore_case": args.ocr_ignore_case,
        "ocr_ignore_punctuation": args.ocr_ignore_punctuation,
        "on_unknown": args.on_unknown,
    }


def _scorer(args: argparse.Namespace) -> TypedAnswerScorer:
    try:
        scorer = TypedAnswerScorer(**typed_options(args), rouge_types=args.rouge_type or DEFAULT_ROUGE_TYPES)
    except (ValueError, ImportError) as exc:
        raise InputError(str(exc)) from None
    if args.default_type is not None and scorer.registry.resolve(args.default_type) is None:
        known = ", ".join(repr(name) for name in scorer.registry.known_types)
        raise InputError(f"--default-type {args.default_type!r} is not a known question type; known types: {known}")
    inputs = (args.prediction_field, args.solution_field, args.type_field)
    if args.reward_field in (*inputs, "failure_kind"):
        raise InputError(f"--reward-field {args.reward_field!r} would overwrite an input field or failure_kind")
    if args.type_field == "failure_kind":
        raise InputError("--type-field 'failure_kind' would be overwritten by the failure kind written back")
    return scorer


def run(args: argparse.Namespace) -> int:
    """Score the file and print the summary."""
    scorer = _scorer(args)
    if uses_dask(args):
        return run_on_dask(args, "typed")
    summary = TypedSummary(path=str(args.file), output=args.output)

    def transform(row: dict[str, Any], number: int) -> dict[str, Any]:
        needed = [args.prediction_field, args.solution_field]
        if args.default_type is None:
            needed.append(args.type_field)
        require_fields(row, needed)
        question_type = row.get(args.type_field)
        if question_type is None and args.default_type is not None:
            question_type = args.default_type
        try:
            result = scorer.score(row[args.prediction_field], row[args.solution_field], question_type)
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc)) from None
        return {**row, args.reward_field: result.score, "failure_kind": result.failure_kind}

    def collect(result: dict[str, Any]) -> None:
        # From the output row alone, so that --resume can count the rows already written again.
        question_type = result.get(args.type_field)
        if question_type is None:
            question_type = args.default_type
        summary.add(scorer.type_name(question_type), result[args.reward_field], result["failure_kind"])

    stats = process_file(args, "typed", transform, collect, (args.reward_field, "failure_kind"))
    summary.invalid_lines = stats.invalid_lines
    if args.format == "json":
        print(json.dumps(summary.to_json()))
    else:
        print_typed_summary(summary)
    return 0
