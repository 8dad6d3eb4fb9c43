"""The labelled rows of ``answer-eval calibrate``: which it counts, and the LLM level graded on those left to escalate.

A label is JSON true/false, or with ``--positive`` and ``--negative`` named values; a row with no
label, a label of neither kind, or a copy of a (question, answers, answer) already counted is left
out and counted (:class:`LeftOut`), never guessed. :func:`labelled_rows` reads the file and
refuses what cannot calibrate: fewer than :data:`MIN_LABELS` answers, or labels of one kind.

With ``--escalate-model``, the judge's threshold for the highest target asked is chosen at
``delta / 2`` (as the cascade chooses it, :mod:`answer_eval.evaluators.judge.escalation`); the
labelled answers below it (the largest set any target escalates: a lower target escalates a subset)
are sent to the LLM with the judge's escalation machinery
(:class:`~answer_eval.evaluators.judge.judge_core.AnswerJudgeCore`'s caller, budget, reply cache and
structured output, :func:`~answer_eval.evaluators.judge.escalation.check_answers`). Each graded
answer is recorded with the LLM's verdict confidence, whether the person agrees with the LLM, its
question and the judge's bin, in the file's ``escalation`` object, with the grader's signature
(never the API key) and the highest target and delta it was graded for. The answers are sent in a
seeded random order (:data:`ORDER_SEED`: the same order every run), so a budget stop
(``--max-calls``) leaves a uniformly random subset graded, not the first rows of the file. A budget
stop or a failure leaves an answer ungraded: the level then counts the graded answers only, and the
output says so. ``--dry-run`` sends nothing and writes nothing: how many answers would be sent, and
the estimate of :mod:`answer_eval.cli.dry_run_estimate`.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from answer_eval.cli.options_and_output import items_from_args
from answer_eval.errors import InputError, OptionError
from answer_eval.inputs.item_files import DEFAULT_LABEL_FIELD, Items

__all__ = [
    "LeftOut",
    "add_escalation_flags",
    "cascade_report",
    "check_escalation_flags",
    "escalate_labelled",
    "labelled_rows",
    "print_cascade",
]


logger = logging.getLogger(__name__)


MIN_LABELS = 50
"""The fewest labelled answers ``calibrate`` takes: below, a threshold's bound says next to nothing."""


FEW_LABELS = 300
"""Below this many labelled answers the report warns that the labels promise little."""


_SHOWN_VALUES = 20  # the unknown label values named in the report and the warning, most frequent first


_SHOWN_CHARACTERS = 80  # of one label value in a message: a label of megabytes is no label, and is not echoed


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARACTERS else text[:_SHOWN_CHARACTERS] + "..."


@dataclass(frozen=True)
class LeftOut:
    """The rows read but not counted: why each was left out (said in the report and as a warning)."""

    rows_read: int
    no_label: int
    unknown: tuple[tuple[str, int], ...]
    unknown_total: int
    copies: int
    disagreeing_copies: int

    @property
    def total(self) -> int:
        """The rows left out, for every reason."""
        return self.no_label + self.unknown_total + self.copies

    def to_dict(self) -> dict[str, Any]:
        """As the JSON report and the file's ``source.left_out`` give it."""
        return {
            "rows_read": self.rows_read,
            "no_label": self.no_label,
            "unknown_labels": self.unknown_total,
            "unknown_values": dict(self.unknown),
            "copies": self.copies,
            "disagreeing_copies": self.disagreeing_copies,
        }

    def sentence(self, label_field: str) -> str:
        """One line: how many rows were left out and why (the reasons that left none out are not named)."""
        unknown = ", ".join(f"{_shown(value)} {count}" for value, count in self.unknown)
        more = ", ..." if sum(count for _, count in self.unknown) < self.unknown_total else ""
        reasons = [
            (self.no_label, f"{self.no_label} with no {label_field!r} label (null or blank)"),
            (self.unknown_total, f"{self.unknown_total} with a label neither acceptable nor not ({unknown}{more})"),
            (self.copies, f"{self.copies} copies of a (question, answer) already counted"),
        ]
        said = "; ".join(text for count, text in reasons if count)
        if self.disagreeing_copies:
            said += f" ({self.disagreeing_copies} of them labelled otherwise than the first)"
        return f"{self.total} of {self.rows_read} rows left out, {self.rows_read - self.total} counted: {said}"


def label_values(args: argparse.Namespace, values: Sequence[Any], items: Items) -> list[bool | None]:
    """Each row's label: acceptable, not, or ``None`` (no label, or a value neither: left out and counted).

    Without ``--positive`` a label is JSON true or false, and any other value but null is refused
    naming its line. With ``--positive``, ``--negative`` names the values that mean not acceptable;
    without it the one other value the file holds is (yes/no), and two or more are refused (which
    of "no", "N/A" and "noo" means not acceptable is the user's to say).
    """
    from answer_eval.inputs.item_files import _as_label

    def missing(value: Any) -> bool:
        return value is None or (isinstance(value, str) and not value.strip())

    if not args.positive:
        if args.negative:
            raise InputError("--negative names the labels that mean not acceptable beside --positive: give both")
        for value, line in zip(values, items.lines, strict=True):
            if not missing(value) and not isinstance(value, bool):
                raise InputError(
                    f"label {_shown(value)} is not true/false: name the values that mean acceptable with --positive "
                    "(and not acceptable with --negative)",
                    items.path,
                    line,
                )
        return [None if missing(value) else bool(value) for value in values]
    positives = {_as_label(value) for value in args.positive}
    negatives = {_as_label(value) for value in args.negative or ()}
    if positives & negatives:
        both = ", ".join(repr(value) for value in sorted(positives & negatives))
        raise InputError(f"{both} given to both --positive and --negative: a label means one or the other")
    folded = [None if missing(value) else _as_label(value) for value in values]
    if not negatives:
        others = Counter(value for value in folded if value is not None and value not in positives)
        if len(others) > 1:
            named = ", ".join(f"{_shown(value)} ({count})" for value, count in others.most_common(_SHOWN_VALUES))
            raise InputError(
                f"the {args.label_field!r} labels besides --positive are {named}"
                f"{', ...' if len(others) > _SHOWN_VALUES else ''}: "
                "say which mean not acceptable with --negative (the rest are then left out and counted)",
                items.path,
            )
        negatives = set(others)
        args.negative = list(negatives)
    for value in sorted(positives - set(folded)):
        logger.warning(
            "answer-eval: --positive %s matches no %r label in %s", _shown(value), args.label_field, items.path
        )
    return [value in positives if value in positives or value in negatives else None for value in folded]


def counted_rows(items: Items, values: Sequence[Any], labels: Sequence[bool | None]) -> tuple[Items, LeftOut]:
    """The rows counted: a label of either kind, and each (question, answers, prediction) once, the first row's.

    Why: the threshold test takes its answers for independent draws. A copy of a counted answer
    adds no evidence, yet it would count again: 300 rows that are 2 answers copied "promised" 0.98
    with every verdict kept. The pair is the judge's input (question, acceptable answers, answer).
    """
    from answer_eval.inputs.item_files import _as_label

    first: dict[str, bool] = {}
    kept: list[int] = []
    no_label, copies, disagreeing = 0, 0, 0
    unknown: Counter[str] = Counter()
    for index, label in enumerate(labels):
        if label is None:
            if values[index] is None or (isinstance(values[index], str) and not values[index].strip()):
                no_label += 1
            else:
                unknown[_as_label(values[index])[:_SHOWN_CHARACTERS]] += 1  # a label of megabytes is kept short
            continue
        key = json.dumps(
            [items.questions[index], items.golds[index], items.predictions[index]],
            ensure_ascii=False,
            sort_keys=True,
            default=str,
        )
        if key in first:
            copies += 1
            disagreeing += first[key] != label
            continue
        first[key] = label
        kept.append(index)
    left_out = LeftOut(
        len(items), no_label, tuple(unknown.most_common(_SHOWN_VALUES)), sum(unknown.values()), copies, disagreeing
    )

    def pick(column: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(column[index] for index in kept)

    counted = replace(
        items,
        lines=pick(items.lines),
        questions=pick(items.questions),
        golds=pick(items.golds),
        predictions=pick(items.predictions),
        labels=pick(labels),
        rows=pick(items.rows),
    )
    return counted, left_out


def labelled_rows(args: argparse.Namespace) -> tuple[Items, tuple[bool, ...], LeftOut]:
    """The rows counted, their labels, and what was left out (said as a warning too)."""
    args.label_field = args.label_field or DEFAULT_LABEL_FIELD
    read = items_from_args(args.file, args, ["judge"], read_labels=False)
    values = [row[args.label_field] for row in read.rows]
    items, left_out = counted_rows(read, values, label_values(args, values, read))
    labels = items.labels
    assert labels is not None  # counted_rows keeps the rows with a label of either kind
    if left_out.total:
        logger.warning("answer-eval: %s: %s", items.path, left_out.sentence(args.label_field))
    if len(items) < MIN_LABELS:
        counted = f" (of {left_out.rows_read} rows)" if left_out.total else ""
        raise InputError(
            f"{len(items)} labelled answers{counted}: calibrating needs at least {MIN_LABELS} "
            f"(about {FEW_LABELS} give useful thresholds)",
            items.path,
        )
    if len(items) < FEW_LABELS:
        logger.warning(
            "answer-eval: %s: %d labelled answers promise little: the thresholds below are what they can promise; "
            "about %d give useful thresholds",
            items.path,
            len(items),
            FEW_LABELS,
        )
    acceptable = sum(labels)
    if acceptable in (0, len(labels)):
        which = "acceptable" if acceptable else "unacceptable"
        raise InputError(
            f"every one of the {len(labels)} labels says {which} (field {args.label_field!r}): agreement and "
            "recalibration need answers of both kinds; check --label-field, --positive and --negative",
            items.path,
        )
    return items, labels, left_out


ESCALATION_FIELDS = (
    "escalate_model",
    "api_base_url",
    "api_key_env",
    "structured",
    "timeout",
    "concurrency",
    "max_retries",
    "retry_backoff",
    "max_calls",
    "cache_path",
)
"""The judge's escalation options ``calibrate`` takes, as ``judge`` spells them."""


ORDER_SEED = 39
"""The seed of the order the labelled answers are sent in: a budget stop grades a random subset, the same each run."""


def add_escalation_flags(parser: argparse.ArgumentParser) -> None:
    """The escalation's flags of ``judge`` (``--escalate-model``, ``--max-calls``, ``--cache``...), ``--dry-run``."""
    from answer_eval.cli.dry_run_estimate import add_dry_run_options
    from answer_eval.cli.file_commands import add_option_flags
    from answer_eval.evaluators.judge.judge_options import JudgeOptions

    group = parser.add_argument_group("the cascade's LLM level (grades the answers the judge would not keep)")
    add_option_flags(group, JudgeOptions, only=ESCALATION_FIELDS)  # type: ignore[arg-type]
    add_dry_run_options(parser)


def check_escalation_flags(args: argparse.Namespace) -> None:
    """The escalation's flags need ``--escalate-model``, and it needs labels to fit (not ``--check``)."""
    from answer_eval.cli.file_commands import flag_value
    from answer_eval.evaluators.judge.judge_options import JudgeOptions

    fields = JudgeOptions.__dataclass_fields__
    defaults = {name: fields[name].default for name in ESCALATION_FIELDS}
    if args.escalate_model is None:
        given = [
            name
            for name, value in defaults.items()
            if flag_value(fields[name], getattr(args, name, value), args) != value
        ]
        if given or args.dry_run:
            from answer_eval.cli.file_commands import flag_of

            named = ", ".join(flag_of(fields[name]) for name in given) if given else "--dry-run"
            raise InputError(f"{named} is the cascade's LLM level: give --escalate-model too")
    elif args.check:
        raise InputError("--escalate-model grades the labels to fit a calibration, --check reads one: give one")
    elif isinstance(flag_value(fields["escalate_model"], args.escalate_model, args), tuple):
        raise InputError(
            "--escalate-model is given more than once: calibrate grades the LLM level of one model; a jury's "
            "level cannot be calibrated from the command line yet (answer-eval judge runs a jury without one)"
        )
    if args.price_per_million_tokens is not None and not args.dry_run:
        raise InputError("--price-per-million-tokens goes with --dry-run (a real run reports the tokens it used)")


def _evaluator(args: argparse.Namespace, verdict_options: Any, dry: bool) -> Any:
    """The judge with the escalation's options (a dry run's without cache or budget); ``InputError`` naming a flag."""
    from answer_eval.cli.file_commands import as_input_error, flag_value
    from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore
    from answer_eval.evaluators.judge.judge_options import JudgeOptions

    fields = JudgeOptions.__dataclass_fields__  # a field the command line does not offer keeps its default
    given = {
        name: flag_value(fields[name], getattr(args, name, fields[name].default), args) for name in ESCALATION_FIELDS
    }
    if dry:
        given.update(cache_path=None, max_calls=None)  # the budget is applied to the recorded requests instead
    try:
        return AnswerJudgeCore(replace(verdict_options, **given))
    except OptionError as exc:
        raise as_input_error(exc, JudgeOptions) from None
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None


def _questions(groups: Sequence[Any]) -> tuple[int, ...]:
    """Each answer's question number, numbered by :meth:`Calibration.from_pairs` itself (one numbering, its own).

    Every answer is placed in one bin and agreeing, so that bin's questions are the numbers in the answers' order.
    """
    from answer_eval.evaluators.judge.calibration import Calibration

    numbered = Calibration.from_pairs([0.0] * len(groups), [True] * len(groups), "questions", groups).questions
    assert numbered is not None  # groups given: the questions are recorded
    return numbered[0]


def _order(sent: Sequence[int]) -> list[int]:
    """The answers to send, in the seeded random order (:data:`ORDER_SEED`): a budget stop leaves a random subset."""
    order = list(sent)
    random.Random(ORDER_SEED).shuffle(order)
    return order


def escalate_labelled(
    args: argparse.Namespace,
    items: Any,
    labels: Sequence[bool],
    calibration: Any,
    confidences: Sequence[float],
    groups: Sequence[Any],
    verdict_options: Any,
    targets: Sequence[float],
) -> tuple[Any, dict[str, Any]] | None:
    """Grade with the LLM the answers the judge would not keep at the highest target; the calibration with its level.

    ``targets`` are the ones the report shows (``--target``, else the default ones): the highest is graded for.

    :returns: The calibration with its LLM level and what the run did, or ``None`` after a dry run (printed).
    """
    from answer_eval.evaluators.judge.calibration import _bin
    from answer_eval.evaluators.judge.escalation import LLMLevel, judge_bin_of
    from answer_eval.evaluators.judge.guarantee import choose_threshold

    highest = max(targets)
    chosen = choose_threshold(highest, args.delta / 2, calibration.calibration)
    below = judge_bin_of(chosen.threshold)
    judge_bins = [_bin(confidence) for confidence in confidences]
    sent = _order([index for index, k in enumerate(judge_bins) if k < below])
    evaluator = _evaluator(args, verdict_options, bool(getattr(args, "dry_run", False)))
    if getattr(args, "dry_run", False):
        _dry_run(args, evaluator, items, sent, highest)
        return None
    verdicts, usage = _ask(evaluator, items, sent)
    questions = _questions(groups)
    graded = sorted(  # the file lists them in the labels' order, whatever order they were sent in
        (index, _bin(verdict.confidence), verdict.correct == labels[index], questions[index], judge_bins[index])
        for index, verdict in zip(sent, verdicts, strict=True)
        if verdict.correct is not None
    )
    grader = evaluator.grader([])
    rows = tuple(row[1:] for row in graded)
    level = LLMLevel(grader, rows, len(sent), len(sent) - len(graded), below, highest, args.delta)
    failures: dict[str, int] = {}
    for verdict in verdicts:
        if verdict.failure_kind is not None:
            failures[verdict.failure_kind] = failures.get(verdict.failure_kind, 0) + 1
    tokens = sum(verdict.cost.prompt_tokens + verdict.cost.completion_tokens for verdict in verdicts)
    run = {"grader": grader, "highest_target": highest, "asked": len(sent), "graded": len(graded)}
    run.update(not_graded=len(sent) - len(graded), failures=failures, calls=usage.calls, tokens=tokens)
    return replace(calibration, escalation=level), run


def _ask(evaluator: Any, items: Any, sent: Sequence[int]) -> tuple[list[Any], Any]:
    """The LLM's verdicts on the answers ``sent`` (the judge's escalation: its caller, budget and cache)."""
    from answer_eval.evaluators.judge.escalation import check_answers
    from answer_eval.llm.caller_setup import unavailable_advice
    from answer_eval.llm.generators import GraderUnavailable
    from answer_eval.llm.spending import Usage

    if not sent:
        return [], Usage()
    evaluator.warm_up()
    caller, structured = evaluator.caller, evaluator.structured
    questions = [items.questions[index] for index in sent]
    golds, predictions = [items.golds[index] for index in sent], [items.predictions[index] for index in sent]
    work = lambda: check_answers(caller, questions, golds, predictions, structured)  # noqa: E731
    try:
        verdicts, usage = caller.run_sync(work, evaluator.budget)
    except GraderUnavailable as exc:
        advice = unavailable_advice(exc, evaluator.options.api_key_env, "--escalate-model")
        raise InputError(f"{exc}{advice}") from None
    return list(verdicts), usage


def _dry_run(args: argparse.Namespace, evaluator: Any, items: Any, sent: Sequence[int], highest: float) -> None:
    """Record the requests the grading would send (none sent, nothing written) and print the estimate."""
    from answer_eval.cli.dry_run_estimate import print_estimate, recording

    recorder, cache = recording(evaluator, args.cache_path)
    _ask(evaluator, items, sent)
    if args.format != "json":
        print(
            f"answer-eval calibrate --escalate-model: {len(sent)} of {len(items)} labelled answers would be sent "
            f"(those the judge would not keep at target {highest:g}, delta {args.delta / 2:g})"
        )
    found = 0 if cache is None else cache.prompts_found
    shown = argparse.Namespace(**{**vars(args), "max_tokens": None})
    print_estimate("calibrate", recorder.requests, rows=len(sent), invalid_lines=0, cached_prompts=found, args=shown)


def cascade_report(calibration: Any, run: dict[str, Any], targets: Sequence[float], delta: float) -> dict[str, Any]:
    """For each target, the cascade's thresholds and the labelled answers it leaves to the judge, the LLM, a person."""
    from answer_eval.evaluators.judge.calibration import GRID_STEPS
    from answer_eval.evaluators.judge.escalation import cascade_thresholds, judge_bin_of

    level, total = calibration.escalation, calibration.calibration.total
    rows = []
    for target in targets:
        cascade = cascade_thresholds(calibration.calibration, level, target, delta)
        judge = calibration.calibration.kept(cascade.judge_threshold)[0]
        below = judge_bin_of(cascade.judge_threshold)
        llm = sum(1 for k, _, _, j in level.answers if j < below and k / GRID_STEPS >= cascade.llm_threshold)
        rows.append(
            {
                "target": target,
                "judge_threshold": _finite(cascade.judge_threshold),
                "llm_threshold": _finite(cascade.llm_threshold),
                "judge_share": round(judge / total, 6),
                "llm_share": round(llm / total, 6),
                "person_share": round((total - judge - llm) / total, 6),
            }
        )
    return {**run, "delta": delta, "level_delta": delta / 2, "targets": rows}


def _finite(value: float) -> float | None:
    return value if value != float("inf") else None


def print_cascade(report: dict[str, Any]) -> None:
    """The cascade's lines of ``calibrate``'s text report."""
    grader = report["grader"]
    print(
        f"\n  the cascade judge -> LLM -> person (LLM {', '.join(map(str, grader['models']))}; each level at delta "
        f"{report['level_delta']:g}, together {report['delta']:g})"
    )
    print(
        f"  the LLM graded {report['graded']} of the {report['asked']} labelled answers the judge would not keep at "
        f"{report['highest_target']:g} ({report['calls']} calls, {report['tokens']} tokens)"
    )
    if report["not_graded"]:
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(report["failures"].items()))
        print(f"  {report['not_graded']} not graded ({kinds}): the LLM level counts the graded answers only")
    print(f"  {'target':>6} {'t_J':>7} {'t_L':>7} {'judge':>7} {'LLM':>7} {'person':>7}")
    for row in report["targets"]:
        shown = [("-" if row[name] is None else f"{row[name]:.3f}") for name in ("judge_threshold", "llm_threshold")]
        print(
            f"  {row['target']:>6g} {shown[0]:>7} {shown[1]:>7} {row['judge_share']:>7.3f} {row['llm_share']:>7.3f} "
            f"{row['person_share']:>7.3f}"
        )
