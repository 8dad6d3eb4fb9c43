"""``answer-eval calibrate``: calibrate the judge on the user's own labelled answers and write the calibration file.

It reads a file of answers a person judged (every input format and field flag of ``judge``; a
label is JSON true/false, or with ``--positive`` and ``--negative`` named values), leaves out and
counts the rows it cannot use (:mod:`answer_eval.cli.calibration_rows`), judges the rest, and
prints the judge's agreement with the labels (95% Wilson interval, Cohen's kappa), the
agreement-coverage curve, the threshold each target agreement gets (0.85, 0.9, 0.95 by default) or
what the labels can promise, and the rules against the recalibrated verdicts under grouped
cross-validation. With ``--escalate-model`` it also grades, with an LLM, the answers the judge
would not keep and records the cascade's LLM level (:mod:`answer_eval.cli.calibration_rows`).
``-o FILE`` writes the calibration
(:mod:`answer_eval.evaluators.judge.user_calibration`) atomically; ``--check FILE`` reads one
instead and measures it on these labels (fresh labels: a held-out check of its promise).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from answer_eval.cli.calibration_rows import (
    LeftOut,
    add_escalation_flags,
    check_escalation_flags,
    labelled_rows,
    print_cascade,
)
from answer_eval.cli.options_and_output import (
    INPUT_HELP,
    add_field_options,
    add_format_option,
    add_label_options,
    fixed,
    probability,
    written_path,
)
from answer_eval.errors import InputError
from answer_eval.inputs.item_files import DEFAULT_LABEL_FIELD, Items

__all__ = ["TARGETS", "calibration_bytes", "register", "run"]

logger = logging.getLogger(__name__)

TARGETS = (0.85, 0.9, 0.95)
"""The target agreements reported by default."""


def register(commands: Any) -> None:
    """Add the ``calibrate`` sub-command."""
    parser = commands.add_parser(
        "calibrate",
        help="calibrate the judge on answers a person judged: agreement, coverage curve, thresholds, calibration file",
        description=(
            "Judge answers a person has judged (typically 200 to 1,000 of your own, drawn like the data to be judged) "
            "and print the judge's agreement with them, the agreement-coverage curve and, for each target agreement, "
            "the confidence threshold that keeps verdicts agreeing at least that often (with probability 1 - delta). "
            "The judge's acceptance is refitted to these annotators; a verdict follows it only when grouped "
            "cross-validation shows more agreement than the rules. -o writes the calibration file that "
            "`answer-eval judge --calibration` and AnswerJudgeEvaluator(calibration=...) load."
        ),
    )
    parser.add_argument("file", help=f"the labelled answers: {INPUT_HELP}")
    add_label_options(parser, f"the person's verdict field (default: {DEFAULT_LABEL_FIELD!r}); every row must have it")
    parser.add_argument(
        "--negative",
        action="append",
        default=[],
        metavar="VALUE",
        help="with --positive, a label value that means not acceptable (repeatable; default: the one other value "
        "the labels hold); a label neither, null or blank is left out and counted",
    )
    add_field_options(parser, question=True)
    _add_judge_flags(parser)
    parser.add_argument(
        "--delta", type=probability, default=0.1, help="allowed failure probability of the promise (default: 0.1)"
    )
    parser.add_argument(
        "--target",
        type=probability,
        action="append",
        metavar="A",
        help=f"a target agreement to report (repeatable; default: {', '.join(map(str, TARGETS))})",
    )
    parser.add_argument(
        "--output", "-o", metavar="FILE", type=written_path, help="write the calibration file here (JSON, atomic)"
    )
    parser.add_argument(
        "--check",
        metavar="FILE",
        help="read this calibration file instead of fitting one, and measure it on these labels (held-out check)",
    )
    add_format_option(parser)
    add_escalation_flags(parser)
    parser.set_defaults(handler=run)


def _add_judge_flags(parser: argparse.ArgumentParser) -> None:
    """The judge's options that change its verdicts (those a calibration is tied to), as ``judge`` spells them."""
    import dataclasses

    from answer_eval.cli.file_commands import flag_of
    from answer_eval.evaluators.judge.judge_core import JudgeOptions

    fields = {item.name: item for item in dataclasses.fields(JudgeOptions)}
    label, phrases = fields["not_found_label"], fields["extra_not_found_phrases"]
    parser.add_argument(flag_of(label), dest=label.name, default=label.default, help=label.metadata.get("help"))
    parser.add_argument(
        flag_of(phrases), dest=phrases.name, action="append", metavar="PHRASE", help=phrases.metadata.get("help")
    )


def _judge(items: Items, options: Any) -> list[Any]:
    from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore

    evaluator = AnswerJudgeCore(options)
    evaluator.warm_up()
    try:
        return evaluator.judge.judge_batch(list(items.golds), list(items.predictions), list(items.questions))
    except (TypeError, ValueError) as exc:
        raise InputError(f"cannot judge the answers: {exc}", items.path) from None


def _source(items: Items, labels: Sequence[bool], args: argparse.Namespace, left_out: LeftOut) -> dict[str, Any]:
    digest = hashlib.sha256()
    for row in items.rows:  # the rows as read: one digest for the same rows in any format
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "replace"))
        digest.update(b"\n")
    return {
        "file": Path(items.path).name,
        "rows_sha256": digest.hexdigest(),
        "rows": len(items),
        "positives": sum(labels),
        "label_field": args.label_field,
        "positive_values": list(args.positive),
        "negative_values": sorted(args.negative),
        "left_out": left_out.to_dict(),
    }


def _number(value: float) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else round(value, 6)


def _target(target: float, delta: float, calibration: Any) -> dict[str, Any]:
    """The threshold a target gets on the calibration; or, when none passes, why, and how many labels would do."""
    from answer_eval.evaluators.judge.calibration import GRID_STEPS
    from answer_eval.evaluators.judge.guarantee import choose_threshold, threshold_bounds

    selection = choose_threshold(target, delta, calibration)
    entry: dict[str, Any] = {"target": target, "threshold": None, "kept_share": 0.0, "kept_agreement": None}
    if selection.guarantee_met:
        entry.update(
            threshold=selection.threshold,
            kept_share=round(selection.kept_share, 6),
            kept_agreement=_number(selection.kept_agreement),
            reason=None,
            labels_needed=None,
        )
        return entry
    bounds = threshold_bounds(calibration, delta)
    highest, k = bounds.best()
    needed = bounds.labels_needed(target)
    entry["labels_needed"] = needed
    best = (
        f"the most any threshold promises here is {highest:.3f} (threshold {k / GRID_STEPS:g} keeps "
        f"{bounds.kept[k] / bounds.total:.3f} of the answers)"
        if k >= 0
        else "no threshold is tested"
    )
    if needed is None:
        more = f"no threshold's answers agree more than {target:g} here, so more labels like these would not do"
    else:
        extra = max(0, needed - bounds.total)
        more = f"about {needed:,} labelled answers ({extra:,} more) would, if they agree as these do"
    entry["reason"] = f"none keeps any: {best}; {more}"
    return entry


def _promise(delta: float, calibration: Any) -> dict[str, Any]:
    """The highest target these labels can promise, at the threshold that keeps the most for it."""
    from answer_eval.evaluators.judge.calibration import GRID_STEPS
    from answer_eval.evaluators.judge.guarantee import threshold_bounds

    bounds = threshold_bounds(calibration, delta)
    highest, k = bounds.best()
    if k < 0:
        return {"highest_target": None, "threshold": None, "kept_share": 0.0}
    return {
        "highest_target": math.floor(highest * 1000) / 1000,
        "threshold": k / GRID_STEPS,
        "kept_share": round(bounds.kept[k] / bounds.total, 6),
    }


def _curve(counts: Any, delta: float) -> list[dict[str, Any]]:
    """The curve's points as the report gives them: a threshold above the first start is not tested (``None``).

    Its corrected bound is 0, which reads as "agrees 0% of the time"; ``answer-eval report`` says "not tested" too.
    """
    from answer_eval.evaluators.judge.calibration import GRID_STEPS
    from answer_eval.evaluators.judge.guarantee import coverage_curve, threshold_bounds

    starts = threshold_bounds(counts, delta).starts
    highest = starts[0] / GRID_STEPS if starts else -1.0
    return [
        {
            **asdict(point),
            "kept_agreement": _number(point.kept_agreement),
            "lower_bound": round(point.lower_bound, 6) if point.threshold <= highest else None,
        }
        for point in coverage_curve(counts, delta)
    ]


def _report(
    items: Items,
    labels: Sequence[bool],
    verdicts: Sequence[Any],
    calibration: Any,
    args: argparse.Namespace,
    counted: Any = None,
) -> dict[str, Any]:
    """What the command prints; the curve of ``counted`` (default: the calibration's own counts)."""
    from answer_eval.stats.rater_agreement import agreement, cohen_kappa
    from answer_eval.stats.significance import wilson_interval

    rules = [verdict.correct for verdict in verdicts]
    agreeing = sum(rule == label for rule, label in zip(rules, labels, strict=True))
    low, high = wilson_interval(agreeing, len(labels))
    curve = _curve(counted or calibration.calibration, args.delta)
    return {
        "path": items.path,
        "answers": len(items),
        "acceptable": sum(labels),
        "label_field": args.label_field,
        "judge": calibration.judge_signature,
        "agreement": {
            "value": round(agreement(rules, labels), 6),
            "interval_95": [round(low, 6), round(high, 6)],
            "kappa": round(cohen_kappa(rules, labels), 6),
        },
        "cross_validation": calibration.cross_validation,
        "verdict": calibration.verdict,
        "recalibration": calibration.recalibration,
        "delta": args.delta,
        "curve": curve,
        "targets": [_target(target, args.delta, calibration.calibration) for target in args.target or TARGETS],
        "promise": _promise(args.delta, calibration.calibration),
    }


def _check(report: dict[str, Any], applied: Sequence[Any], labels: Sequence[bool]) -> None:
    """Measure a calibration file's thresholds on these labels (fresh labels: a held-out check)."""
    agrees = [verdict.correct == label for verdict, label in zip(applied, labels, strict=True)]
    report["checked"] = {"verdict_agreement": round(sum(agrees) / len(agrees), 6), "targets": []}
    for entry in report["targets"]:
        threshold = entry["threshold"]
        kept = (
            [] if threshold is None else [a for v, a in zip(applied, agrees, strict=True) if v.confidence >= threshold]
        )
        report["checked"]["targets"].append(
            {
                "target": entry["target"],
                "threshold": threshold,
                "kept_share": round(len(kept) / len(agrees), 6),
                "kept_agreement": round(sum(kept) / len(kept), 6) if kept else None,
            }
        )


def run(args: argparse.Namespace) -> int:
    """Judge the labelled answers, print what the calibration promises, and write or check the file."""
    from answer_eval.errors import CalibrationFileError
    from answer_eval.evaluators.judge.judge_core import JudgeOptions
    from answer_eval.evaluators.judge.user_calibration import (
        read_user_calibration,
        verdict_signature,
    )

    output = None if args.output is None else Path(args.output)
    if output is not None:
        from answer_eval.engine.output_files import check_output_path

        inputs = [Path(args.file)] if args.file != "-" else []
        check_output_path(output, [*inputs, *([Path(args.check)] if args.check else [])], stdin=args.file == "-")
    if output is not None and args.check:
        raise InputError("--check reads a calibration file and -o writes one: give one of them")
    check_escalation_flags(args)
    try:
        options = JudgeOptions(
            not_found_label=args.not_found_label,
            extra_not_found_phrases=tuple(dict.fromkeys(args.extra_not_found_phrases or ())),
        )
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None
    signature = verdict_signature(options)
    checked = None
    if args.check:
        try:
            checked = read_user_calibration(args.check, signature)
        except CalibrationFileError as exc:
            raise InputError(str(exc)) from None
    items, labels, left_out = labelled_rows(args)
    verdicts = _judge(items, options)
    if checked is None:
        fitted = _fit(args, items, labels, verdicts, left_out, signature, options)
        if fitted is None:
            return 0  # a dry run: its estimate printed, nothing sent or written
        calibration, report = fitted
    else:
        from answer_eval.evaluators.judge.calibration import Calibration

        applied = checked.apply(verdicts)
        agrees = [verdict.correct == label for verdict, label in zip(applied, labels, strict=True)]
        counted = Calibration.from_pairs([verdict.confidence for verdict in applied], agrees, "checked")
        calibration = checked
        report = _report(items, labels, verdicts, checked, args, counted)
        _check(report, applied, labels)
    report["left_out"] = left_out.to_dict()
    report["left_out_reason"] = left_out.sentence(args.label_field) if left_out.total else None
    if output is not None:
        from answer_eval.engine.output_files import write_bytes_atomically

        write_bytes_atomically(output, calibration_bytes(calibration.to_dict(), output))
    report["output"] = None if output is None else str(output)
    if args.format == "json":
        print(json.dumps(report, ensure_ascii=False))
    else:
        _print(report, args.check)
    return 0


def _fit(
    args: argparse.Namespace,
    items: Items,
    labels: Sequence[bool],
    verdicts: Sequence[Any],
    left_out: LeftOut,
    signature: str,
    options: Any,
) -> tuple[Any, dict[str, Any]] | None:
    """The calibration fitted on the labels (``--escalate-model``: with its LLM level), the report; None: dry run."""
    from answer_eval.cli.calibration_rows import cascade_report, escalate_labelled
    from answer_eval.evaluators.judge.user_calibration import fit_with_answers

    source = _source(items, labels, args, left_out)
    groups = items.question_groups()
    calibration, confidences = fit_with_answers(verdicts, labels, groups, signature, source)
    cascade = None
    if args.escalate_model is not None:
        targets = args.target or TARGETS
        escalated = escalate_labelled(args, items, labels, calibration, confidences, groups, options, targets)
        if escalated is None:
            return None
        calibration, cascade = escalated
    report = _report(items, labels, verdicts, calibration, args)
    if cascade is not None:
        report["cascade"] = cascade_report(calibration, cascade, args.target or TARGETS, args.delta)
    return calibration, report


def _file_text(content: dict[str, Any]) -> str:
    """The calibration file: indented JSON, one answer a line (the judge's, and the LLM level's ``escalation``)."""
    content = dict(content)
    lists = {"__ANSWERS__": (content.pop("answers"), 1)}
    if isinstance(content.get("escalation"), dict):  # nested one level deeper: indented one more
        escalation = dict(content["escalation"])
        lists["__LEVEL_ANSWERS__"] = (escalation.pop("answers"), 2)
        content["escalation"] = {**escalation, "answers": "__LEVEL_ANSWERS__"}
    text = json.dumps({**content, "answers": "__ANSWERS__"}, indent=1, ensure_ascii=False)
    for marker, (answers, depth) in lists.items():
        rows = ",\n".join(" " * (depth + 1) + json.dumps(row) for row in answers)
        text = text.replace(f'"{marker}"', "[\n" + rows + "\n" + " " * depth + "]" if rows else "[]")
    return text + "\n"


def calibration_bytes(content: dict[str, Any], output: Path | str) -> bytes:
    """The calibration file's bytes (:func:`_file_text`), refused (``InputError``) past the size the judge reads.

    Refused here, before anything is written: a file the judge would refuse to read is no calibration.
    """
    from answer_eval.evaluators.judge.user_calibration import _MAX_FILE_BYTES

    data = _file_text(content).encode("utf-8")
    if len(data) > _MAX_FILE_BYTES:
        raise InputError(
            f"the calibration file would be {len(data) / 2**20:.1f} MiB, past the {_MAX_FILE_BYTES >> 20} MiB "
            "a calibration file may be (the judge refuses to read it): calibrate on a random sample of these "
            "labelled answers",
            output,
        )
    return data


def _print(report: dict[str, Any], check: str | None) -> None:
    agreement = report["agreement"]
    low, high = agreement["interval_95"]
    print(f"answer-eval calibrate: {report['path']} ({report['answers']} answers, {report['acceptable']} acceptable)")
    if report["left_out_reason"]:
        print(f"  {report['left_out_reason']}")
    print(
        f"  the judge's agreement with these labels: {fixed(agreement['value'])} "
        f"(95% interval {fixed(low)}-{fixed(high)}), kappa {fixed(agreement['kappa'])}"
    )
    cross = report["cross_validation"]
    if cross is not None:
        whose = "the file's grouped (on the labels it was made from)" if check else "grouped"
        print(
            f"  {whose} cross-validation ({cross['folds']} folds by question): rules "
            f"{fixed(cross['rules_agreement'])}, recalibrated verdicts {fixed(cross['recalibrated_agreement'])}"
        )
    where = f"the calibration file {check}" if check else "the file"
    print(f"  verdicts {where} records: {report['verdict']}")
    print(
        f"\n  agreement-coverage curve (delta {report['delta']:g}; lower bound: the test's, by question, "
        "corrected for its sequences)"
    )
    print(f"  {'threshold':>9} {'kept':>6} {'share':>6} {'agreement':>9} {'lower bound':>11}")
    # The curve down to the first threshold that keeps every answer (the lower ones repeat it).
    last = next((point for point in report["curve"] if point["kept"] == report["answers"]), None)
    for point in report["curve"]:
        if point["kept"] and (point["threshold"] == 1.0 or point["kept"] < report["answers"] or point is last):
            print(
                f"  {point['threshold']:>9.2f} {point['kept']:>6} {fixed(point['kept_share']):>6} "
                f"{fixed(point['kept_agreement']):>9} {_bound_text(point['lower_bound']):>11}"
            )
    print("\n  target agreements" + (" (thresholds from the file)" if check else ""))
    for entry in report["targets"]:
        if entry["threshold"] is None:
            print(f"  {entry['target']:g}: {entry['reason']}")
        else:
            print(
                f"  {entry['target']:g}: threshold {entry['threshold']:g} keeps {fixed(entry['kept_share'])} of the "
                f"answers (they agree {fixed(entry['kept_agreement'])} here)"
            )
    promise = report["promise"]
    if promise["highest_target"] is not None:
        print(
            f"  the most these labels promise: {promise['highest_target']:.3f} (threshold {promise['threshold']:g} "
            f"keeps {fixed(promise['kept_share'])} of the answers)"
        )
    if "checked" in report:
        print(f"\n  on these labels the file's verdicts agree {fixed(report['checked']['verdict_agreement'])}")
        for entry in report["checked"]["targets"]:
            kept = "-" if entry["kept_agreement"] is None else fixed(entry["kept_agreement"])
            print(f"  {entry['target']:g}: kept {fixed(entry['kept_share'])}, kept agreement {kept}")
    if "cascade" in report:
        print_cascade(report["cascade"])
    if report["output"]:
        print(f"\n  calibration written to {report['output']}")


def _bound_text(bound: float | None) -> str:
    return "not tested" if bound is None else fixed(bound)
