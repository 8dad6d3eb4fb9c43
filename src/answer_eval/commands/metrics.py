"""``answer-eval metrics``: exact match, BLEU and ROUGE of every row of a JSONL file against its references."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_eval.commands.common import add_field_options
from answer_eval.commands.common_files import process_file
from answer_eval.commands.dask_run import run_on_dask, uses_dask
from answer_eval.commands.score import add_file_options
from answer_eval.files import InputError
from answer_eval.labels import acceptable_answers
from answer_eval.reference_metrics import (
    BLEU_SMOOTH_METHODS,
    BLEU_TOKENIZERS,
    REFERENCE_METRICS,
    ROUGE_TYPES,
    BleuStats,
    ReferenceMetrics,
    prediction_text,
)
from answer_eval.runner import require_fields
from answer_eval.stats import ExactSum
from answer_eval.verdicts import count_failures

__all__ = ["MetricsSummary", "metric_options", "print_metrics_summary", "register"]

DEFAULT_REFERENCE_FIELDS = ("answers", "reference")
"""Where references are looked for when ``--reference-field`` is not given, in this order."""


@dataclass
class MetricsSummary:
    """What scoring a file with per-row metrics found.

    :param path: The input file.
    :param metrics: The metric names, in column order.
    :param items: Rows scored.
    :param sums: Metric name to the exact sum of its values (see :class:`answer_eval.stats.ExactSum`), so
        the means are the same however the rows were split (``--engine dask`` adds up one summary per partition).
    :param failure_counts: Failure kind to count.
    :param invalid_lines: Lines skipped as invalid (only with ``--skip-invalid``).
    :param output: The results file written, if any.
    :param corpus: Corpus-level values (``bleu``), filled in at the end.
    :param notes: Metric name to a note printed beside it (the ROUGE type).
    """

    path: str
    metrics: Sequence[str]
    items: int = 0
    sums: dict[str, ExactSum] = field(default_factory=dict)
    failure_counts: dict[str, int] = field(default_factory=lambda: count_failures(()))
    invalid_lines: int = 0
    output: str | None = None
    corpus: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def add(self, row: dict[str, Any]) -> None:
        """Count one output row: its metric columns and its ``failure_kind``."""
        self.items += 1
        for name in self.metrics:
            sums = self.sums.get(name)
            if sums is None:
                sums = self.sums[name] = ExactSum()
            sums.add(row[name])
        kind = row.get("failure_kind")
        if kind is not None:
            self.failure_counts[kind] = self.failure_counts.get(kind, 0) + 1

    def merge(self, other: MetricsSummary) -> None:
        """Add the rows another summary counted (the summary of the rows that follow these)."""
        self.items += other.items
        for name, sums in other.sums.items():
            self.sums.setdefault(name, ExactSum()).merge(sums)
        for kind, count in other.failure_counts.items():
            self.failure_counts[kind] = self.failure_counts.get(kind, 0) + count
        self.invalid_lines += other.invalid_lines

    def means(self) -> dict[str, float]:
        """Metric name to its mean over the rows."""
        return {name: (self.sums[name].value if name in self.sums else 0.0) / self.items for name in self.metrics}

    def to_json(self) -> dict[str, Any]:
        """The summary as one JSON-ready mapping."""
        return {
            "path": self.path,
            "items": self.items,
            "metrics": self.means(),
            "corpus": self.corpus,
            "notes": self.notes,
            "failure_counts": self.failure_counts,
            "invalid_lines": self.invalid_lines,
            "output": self.output,
        }


def print_metrics_summary(summary: MetricsSummary, command: str) -> None:
    """Print a metrics summary as aligned text: the mean of every metric, corpus values, failure kinds."""
    lines = [f"answer-eval {command}: {summary.path}", f"  items{' ' * 20}{summary.items}"]
    for name, mean in summary.means().items():
        line = f"  {name:<24} {mean:.4f}"
        if name in summary.corpus:
            line += f"   corpus {summary.corpus[name]:.4f}"
        if name in summary.notes:
            line += f"   ({summary.notes[name]})"
        lines.append(line)
    if summary.invalid_lines:
        lines.append(f"  invalid lines{' ' * 12}{summary.invalid_lines} (skipped)")
    failures = {kind: count for kind, count in summary.failure_counts.items() if count}
    lines.append("  failure kinds" + ("" if failures else "            none"))
    lines.extend(f"    {kind:<22} {count}" for kind, count in failures.items())
    if summary.output:
        lines.append(f"  output{' ' * 19}{summary.output}")
    print("\n".join(lines))


def register(commands: Any) -> None:
    """Add the ``metrics`` sub-command."""
    parser = commands.add_parser(
        "metrics",
        help="exact match, BLEU and ROUGE of each answer against its reference(s)",
        description=(
            "Score one answer a line against its reference answer(s) with exact match, sentence BLEU "
            "(sacrebleu, in [0, 1]) and ROUGE F-measure (rouge-score); the best value over several "
            "references. Prints each metric's mean and the corpus BLEU. BLEU and ROUGE need "
            'pip install "answer-eval-haystack[metrics]".'
        ),
    )
    parser.add_argument("file", help="JSONL input, one JSON object a line")
    parser.add_argument(
        "--metric",
        action="append",
        choices=REFERENCE_METRICS,
        help="a metric to compute (repeatable; default: all three, in this order: %(choices)s)",
    )
    add_field_options(parser, answers=False)
    parser.add_argument(
        "--reference-field",
        help="field holding the reference(s), a string or a list (default: 'answers', else 'reference')",
    )
    add_file_options(parser)
    exact = parser.add_argument_group("exact_match")
    exact.add_argument("--no-strip", action="store_true", help="white space at the ends counts")
    exact.add_argument("--ignore-case", action="store_true", help="compare case-folded text")
    exact.add_argument("--fold", action="store_true", help="compare in the package's normal form (answer_eval.fold)")
    bleu = parser.add_argument_group("bleu")
    bleu.add_argument("--bleu-tokenize", choices=BLEU_TOKENIZERS, default="13a", help="default: %(default)s")
    bleu.add_argument("--bleu-smooth-method", choices=BLEU_SMOOTH_METHODS, default="exp", help="default: %(default)s")
    bleu.add_argument("--bleu-smooth-value", type=float, help="the value for floor and add-k smoothing")
    bleu.add_argument("--bleu-lowercase", action="store_true", help="lower-case both sides first")
    bleu.add_argument(
        "--no-effective-order", action="store_true", help="sentence BLEU keeps n-gram orders a short answer lacks"
    )
    rouge = parser.add_argument_group("rouge")
    rouge.add_argument("--rouge-type", choices=ROUGE_TYPES, default="rougeLsum", help="default: %(default)s")
    rouge.add_argument("--use-stemmer", action="store_true", help="Porter-stem words first")
    rouge.add_argument(
        "--split-summaries", action="store_true", help="rougeLsum: split sentences with NLTK (needs punkt_tab)"
    )
    parser.set_defaults(handler=run)


def _references(row: dict[str, Any], field_name: str | None) -> tuple[str, tuple[str, ...]]:
    if field_name is None:
        field_name = next((name for name in DEFAULT_REFERENCE_FIELDS if name in row), None)
        if field_name is None:
            raise InputError(f"missing field 'answers' or 'reference' (fields: {', '.join(map(repr, row)) or 'none'})")
    require_fields(row, (field_name,))
    try:
        return field_name, acceptable_answers(row[field_name])
    except (TypeError, ValueError) as exc:
        raise InputError(f"field {field_name!r}: {exc}") from None


def metric_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :class:`answer_eval.reference_metrics.ReferenceMetrics` (and its component) the flags set."""
    return {
        "strip": not args.no_strip,
        "ignore_case": args.ignore_case,
        "fold": args.fold,
        "bleu_tokenize": args.bleu_tokenize,
        "bleu_smooth_method": args.bleu_smooth_method,
        "bleu_smooth_value": args.bleu_smooth_value,
        "bleu_lowercase": args.bleu_lowercase,
        "use_effective_order": not args.no_effective_order,
        "rouge_type": args.rouge_type,
        "use_stemmer": args.use_stemmer,
        "split_summaries": args.split_summaries,
    }


def run(args: argparse.Namespace) -> int:
    """Score the file and print the summary."""
    names = args.metric or list(REFERENCE_METRICS)
    try:
        scorer = ReferenceMetrics(list(dict.fromkeys(names)), **metric_options(args))
    except (ValueError, ImportError, LookupError) as exc:
        raise InputError(str(exc)) from None
    if uses_dask(args):
        return run_on_dask(args, "metrics")
    summary = MetricsSummary(path=str(args.file), metrics=scorer.metrics, output=args.output)
    if scorer.rouge is not None:
        summary.notes["rouge"] = scorer.rouge.rouge_type
    stats = BleuStats()

    def transform(row: dict[str, Any], number: int) -> dict[str, Any]:
        _, references = _references(row, args.reference_field)
        require_fields(row, (args.prediction_field,))
        text, kind = prediction_text(row[args.prediction_field])
        if scorer.bleu is not None:
            scorer.bleu.add(stats, text or "", references)
        return {**row, **scorer.score_item(text, references), "failure_kind": kind}

    state = (stats.snapshot, stats.restore) if scorer.bleu is not None else None
    added = (*scorer.metrics, "failure_kind")
    result = process_file(args, "metrics", transform, summary.add, added, state=state)
    summary.invalid_lines = result.invalid_lines
    if scorer.bleu is not None:
        summary.corpus["bleu"] = scorer.bleu.corpus(stats)
    if args.format == "json":
        print(json.dumps(summary.to_json()))
    else:
        print_metrics_summary(summary, "metrics")
    return 0
