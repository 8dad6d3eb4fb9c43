"""``answer-eval calibrate --escalate-model``: the cascade's LLM level, graded on the answers the judge would not keep.

The judge's threshold for the highest target asked is chosen at ``delta / 2`` (as the cascade
chooses it, :mod:`answer_eval.evaluators.judge.escalation`); the labelled answers below it (the
largest set any target escalates: a lower target escalates a subset) are sent to the LLM with the
judge's escalation machinery (:class:`~answer_eval.evaluators.judge.judge_core.AnswerJudgeCore`'s
caller, budget, reply cache and structured output, :func:`~answer_eval.evaluators.judge.escalation.check_answers`).
Each graded answer is recorded with the LLM's verdict confidence, whether the person agrees with the
LLM, its question and the judge's bin, in the file's ``escalation`` object, with the grader's
signature (never the API key) and the highest target and delta it was graded for. The answers are
sent in a seeded random order (:data:`ORDER_SEED`: the same order every run), so a budget stop
(``--max-calls``) leaves a uniformly random subset graded, not the first rows of the file. A budget
stop or a failure leaves an answer ungraded: the level then counts the graded answers only, and the
output says so. ``--dry-run`` sends nothing and writes
nothing: how many answers would be sent, and the estimate of :mod:`answer_eval.cli.dry_run`.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from answer_eval.errors import InputError, OptionError

__all__ = [
    "ESCALATION_FIELDS",
    "ORDER_SEED",
    "add_escalation_flags",
    "cascade_report",
    "check_escalation_flags",
    "escalate_labelled",
    "print_cascade",
]

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
    from answer_eval.cli.dry_run import add_dry_run_options
    from answer_eval.cli.option_flags import add_option_flags
    from answer_eval.evaluators.judge.judge_options import JudgeOptions

    group = parser.add_argument_group("the cascade's LLM level (grades the answers the judge would not keep)")
    add_option_flags(group, JudgeOptions, only=ESCALATION_FIELDS)  # type: ignore[arg-type]
    add_dry_run_options(parser)


def check_escalation_flags(args: argparse.Namespace) -> None:
    """The escalation's flags need ``--escalate-model``, and it needs labels to fit (not ``--check``)."""
    from answer_eval.cli.option_flags import flag_value
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
            from answer_eval.cli.option_flags import flag_of

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
    from answer_eval.cli.option_flags import as_input_error, flag_value
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
    from answer_eval.llm.calls import GraderUnavailable, Usage
    from answer_eval.llm.servers import unavailable_advice

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
    from answer_eval.cli.dry_run import print_estimate, recording

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
