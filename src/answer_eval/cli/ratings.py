"""``answer-eval agreement --rating-field NAME``: a rubric output (``answer-eval rubric``) against human ratings.

A graded scale gets Spearman, Kendall's tau-b, quadratic-weighted kappa, exact and within-one
agreement; pairwise choices get accuracy against the human preference (a tie half), accuracy on
the rows where both chose a side, and exact agreement; each with a percentile bootstrap interval
(:func:`answer_eval.stats.rating_agreement.rating_agreement`). Weighed grades (``rubric --scoring logprobs``,
``4.0853``) are ranked as they are and binned to the nearest point for the figures of categories
(:data:`~answer_eval.stats.rating_agreement.BIN_RULE`). A scale has at most
:data:`~answer_eval.stats.rating_agreement.MAX_SCALE_POINTS` points, counted before it is built.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from answer_eval.cli.options_and_output import MAX_RESAMPLES, count, fixed, short
from answer_eval.errors import InputError

if TYPE_CHECKING:
    from answer_eval.stats.rating_agreement import RatingAgreement

__all__ = ["add_rating_options", "run_ratings"]

_MISSING = object()


def add_rating_options(parser: argparse.ArgumentParser) -> None:
    """``--rating-field`` and the options that go with it (the grade's field, the scale, the bootstrap)."""
    group = parser.add_argument_group(
        "a rubric output against human ratings",
        "With --rating-field, FILE is a file `answer-eval rubric` wrote, and no evaluator runs.",
    )
    group.add_argument(
        "--rating-field",
        metavar="NAME",
        help="field holding the human rating on the metric's scale (or, for a --pairwise output, the human "
        "preference: CANDIDATE, BASELINE or TIE); compares the file's grades with it",
    )
    group.add_argument(
        "--grade-field",
        metavar="NAME",
        help="field holding the grader's grade (default: 'score', or 'choice' when the file has that and no 'score')",
    )
    scale = group.add_mutually_exclusive_group()
    scale.add_argument("--metric", metavar="NAME", help="take the scale from this catalogue metric")
    scale.add_argument(
        "--scale",
        metavar="VALUES",
        help="the scale's values, '1..5' or '-2,-1,0,1,2', at most 101 points (default: every whole number from "
        "the lowest value read to the highest, when that is at most 101 points)",
    )
    group.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: %(default)s)")
    group.add_argument(
        "--resamples", type=count(1, MAX_RESAMPLES), default=1000, help="bootstrap resamples (default: %(default)s)"
    )


@dataclass
class _Read:
    grades: list[Any] = field(default_factory=list)
    ratings: list[Any] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    rows: int = 0
    not_graded: int = 0
    no_rating: int = 0
    has_grade: bool = False
    has_rating: bool = False


def _shown(value: Any) -> str:
    """A value as a message shows it: its repr, cut (a 4,000-digit number is named, not printed)."""
    return short(repr(value) if isinstance(value, str) else str(value), 40)


def _number(value: Any, what: str, path: str, line: int) -> int | float | None:
    """A graded value as a finite number (an ``int`` when whole); ``None`` when missing; an error otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = value
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise InputError(f"{what} {_shown(value)} is not a number: a number on the scale is expected", path, line)
    if isinstance(number, float) and not math.isfinite(number):
        raise InputError(f"{what} {_shown(value)} is not a finite number", path, line)
    return int(number) if number == int(number) else float(number)


def _whole(value: Any, what: str, path: str, line: int) -> int | None:
    """A human rating as a whole number (a point of the scale); ``None`` when missing; an error otherwise."""
    number = _number(value, what, path, line)
    if isinstance(number, float):
        raise InputError(f"{what} {_shown(value)} is not a whole number: a rating is a point of the scale", path, line)
    return number


def _preference(value: Any, what: str, path: str, line: int) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and value.strip().upper() in ("CANDIDATE", "BASELINE", "TIE"):
        return value.strip().upper()
    raise InputError(f"{what} {value!r} is not a preference: CANDIDATE, BASELINE or TIE (any case)", path, line)


def _rows(args: argparse.Namespace) -> Iterator[tuple[int, dict[str, Any]]]:
    from answer_eval.inputs.formats import InputFile, iter_rows

    source = InputFile.of(args.file, args.input_format, delimiter=args.delimiter)
    for line, row in iter_rows(source):
        if isinstance(row, InputError):
            raise row
        yield line, row


def _read(args: argparse.Namespace, grade_field: str | None) -> tuple[_Read, str, bool]:
    from answer_eval.stats.rating_agreement import PREFERENCES

    read, path = _Read(), str(args.file)
    pairwise: bool | None = None
    for line, row in _rows(args):
        if grade_field is None:  # told by the first row: a pairwise output has 'choice' and no 'score'
            grade_field = "choice" if "choice" in row and "score" not in row else "score"
        grade, rating = row.get(grade_field, _MISSING), row.get(args.rating_field, _MISSING)
        read.rows += 1
        read.has_grade |= grade is not _MISSING
        read.has_rating |= rating is not _MISSING
        if grade in (_MISSING, None):  # a failed grade: left out, its rating unread
            read.not_graded += 1
            continue
        if pairwise is None:
            pairwise = grade_field == "choice" or (isinstance(grade, str) and grade.strip().upper() in PREFERENCES)
        grade = (_preference if pairwise else _number)(grade, f"the grade ({grade_field})", path, line)
        rating = (_preference if pairwise else _whole)(
            None if rating is _MISSING else rating, f"the rating ({args.rating_field})", path, line
        )
        if grade is None:
            read.not_graded += 1
        elif rating is None:
            read.no_rating += 1
        else:
            read.grades.append(grade)
            read.ratings.append(rating)
            read.lines.append(line)
    return read, grade_field or "score", bool(pairwise)


def _given_scale(text: str) -> tuple[int, ...]:
    """``--scale``'s values: ``LOW..HIGH`` or whole numbers with commas, at most ``MAX_SCALE_POINTS`` of them."""
    from answer_eval.stats.rating_agreement import MAX_SCALE_POINTS

    bad = f"--scale {short(text, 40)!r}"
    text = text.replace(" ", "")
    parts = text.split("..") if ".." in text else text.split(",")
    try:
        numbers = [int(part) for part in parts[: MAX_SCALE_POINTS + 1]]  # no more read than the bound takes
    except ValueError:
        raise InputError(f"{bad}: give LOW..HIGH or whole numbers with commas") from None
    if ".." in text:
        if len(parts) != 2:
            raise InputError(f"{bad}: give LOW..HIGH or whole numbers with commas")
        points = numbers[1] - numbers[0] + 1  # counted, never built: 1..300000000 is refused, not made
    else:
        points = len(set(parts))
    if points > MAX_SCALE_POINTS:
        raise InputError(f"{bad}: {points:,} points, more than the {MAX_SCALE_POINTS} a scale may have")
    values = tuple(range(numbers[0], numbers[1] + 1)) if ".." in text else tuple(sorted(set(numbers)))
    if len(values) < 2:
        raise InputError(f"{bad}: a scale has two values at least")
    return values


def _distance(a: float, b: float) -> float:
    try:
        return abs(a - b)
    except OverflowError:  # a whole number of hundreds of digits less a float: farther than any float
        return math.inf


def _inferred_scale(args: argparse.Namespace, read: _Read, grade_field: str) -> tuple[int, ...]:
    """Every whole number from the lowest value read to the highest, when that is a scale at all.

    Past :data:`~answer_eval.stats.rating_agreement.MAX_SCALE_POINTS` points, the value farthest from the
    middle one (a typo of ``100000000`` among 1..5) is named with its line, off the scale.
    """
    from answer_eval.stats.rating_agreement import MAX_SCALE_POINTS

    seen = (*read.grades, *read.ratings)
    low, high = math.floor(min(seen)), math.ceil(max(seen))
    if high - low + 1 <= MAX_SCALE_POINTS:
        return tuple(range(low, high + 1))
    middle = sorted(seen)[len(seen) // 2]
    rows = len(read.grades)
    far = max(range(2 * rows), key=lambda n: _distance(seen[n], middle))
    what = f"the grade ({grade_field})" if far < rows else f"the rating ({args.rating_field})"
    others = [value for n, value in enumerate(seen) if n != far]
    near = f"the other values read span {math.floor(min(others))}..{math.ceil(max(others))}" if others else ""
    raise InputError(
        f"{what} {_shown(seen[far])} is off the scale: {near}, and a scale inferred from the values has at most "
        f"{MAX_SCALE_POINTS} points; correct the value, or name the scale with --scale or --metric",
        str(args.file),
        read.lines[far % rows],
    )


def _scale(args: argparse.Namespace, read: _Read, grade_field: str) -> tuple[int, ...]:
    if args.metric:
        from answer_eval.llm.rubric_prompts import rubric

        try:
            return rubric(args.metric).values
        except ValueError as exc:
            raise InputError(f"--metric: {exc}") from None
    if args.scale:
        return _given_scale(args.scale)
    return _inferred_scale(args, read, grade_field)


def _check_scale(read: _Read, scale: tuple[int, ...], args: argparse.Namespace, grade_field: str) -> None:
    from answer_eval.stats.rating_agreement import nearest_point

    allowed = set(scale)
    for grade, rating, line in zip(read.grades, read.ratings, read.lines, strict=True):
        # A weighed grade (not whole) between two points is binned; a whole one must be a point.
        if grade not in allowed and (isinstance(grade, int) or nearest_point(grade, scale) is None):
            raise InputError(
                f"the grade ({grade_field}) {_shown(grade)} is off the scale {_shown_scale(scale)}",
                str(args.file),
                line,
            )
        if rating not in allowed:
            raise InputError(
                f"the rating ({args.rating_field}) {_shown(rating)} is off the scale {_shown_scale(scale)}",
                str(args.file),
                line,
            )


def _shown_scale(scale: tuple[Any, ...]) -> str:
    whole = all(isinstance(value, int) for value in scale)
    if whole and len(scale) > 2 and list(scale) == list(range(scale[0], scale[-1] + 1)):
        return f"{scale[0]}..{scale[-1]}"
    return ", ".join(map(str, scale))


def _refuse_evaluator_options(args: argparse.Namespace) -> None:
    if args.evaluator or args.label_field:
        used = "--evaluator" if args.evaluator else "--label-field"
        raise InputError(f"{used} is not used with --rating-field, which compares a rubric output with ratings")


_TITLES = {
    "spearman": "Spearman's rho",
    "kendall_tau_b": "Kendall's tau-b",
    "quadratic_kappa": "kappa, quadratic weights",
    "exact": "exact agreement",
    "within_one": "within one point",
    "accuracy": "accuracy (a tie counts half)",
    "decisive_accuracy": "accuracy, ties left out",
}

_TIES = (
    "accuracy: the same choice scores 1, a tie against a side (either way round) 0.5, opposite sides 0; "
    "decisive_accuracy: only the rows where both chose a side; exact: the same of the three choices"
)


def _missing_field(read: _Read, grade_field: str, args: argparse.Namespace) -> None:
    if read.rows == 0:
        raise InputError("no rows to compare: the file is empty", str(args.file))
    if not read.has_grade:
        raise InputError(
            f"no row has the grade field {grade_field!r}: give a file `answer-eval rubric` wrote, "
            "or name the field with --grade-field",
            str(args.file),
        )
    if not read.has_rating:
        raise InputError(f"no row has the rating field {args.rating_field!r}", str(args.file))
    if not read.grades:
        raise InputError(
            f"no row to compare: {read.not_graded} not graded, {read.no_rating} without a rating", str(args.file)
        )


def _json(result: RatingAgreement, read: _Read, grade_field: str, args: argparse.Namespace) -> str:
    from answer_eval.stats.rating_agreement import BIN_RULE

    figures = {
        name: {"value": figure.value, "low": figure.low, "high": figure.high, "resamples": figure.resamples}
        for name, figure in result.figures.items()
    }
    return json.dumps(
        {
            "path": str(args.file),
            "kind": "pairwise" if result.pairwise else "graded",
            "grade_field": grade_field,
            "rating_field": args.rating_field,
            "scale": list(result.scale),
            "rows": read.rows,
            "compared": result.compared,
            "not_graded": read.not_graded,
            "no_rating": read.no_rating,
            "figures": figures,
            "ties": _TIES if result.pairwise else None,
            "binned": result.binned,
            "bin_rule": None if result.pairwise else BIN_RULE,
            "resamples": result.n_resamples,
            "confidence": result.confidence,
            "seed": result.seed,
        },
        ensure_ascii=False,
    )


def _print_text(result: RatingAgreement, read: _Read, grade_field: str, args: argparse.Namespace) -> None:
    from answer_eval.stats.rating_agreement import MIN_ROWS_FOR_INTERVAL

    on = "pairwise choices" if result.pairwise else f"the scale {_shown_scale(result.scale)}"
    print(f"answer-eval agreement: {args.file} ({grade_field!r} against {args.rating_field!r}, {on})")
    print(
        f"  rows {read.rows:,}: {result.compared:,} compared, {read.not_graded:,} not graded, "
        f"{read.no_rating:,} without a rating"
    )
    print(f"  {'figure':<30} {'value':>7}  {round(result.confidence * 100):g}% interval")
    for name, figure in result.figures.items():
        value = "-" if figure.value is None else fixed(figure.value)
        low, high = figure.low, figure.high
        interval = "-" if low is None or high is None else f"{fixed(low)} .. {fixed(high)}"
        print(f"  {_TITLES[name]:<30} {value:>7}  {interval}")
    if result.n_resamples == 0:
        print(f"  no interval: fewer than {MIN_ROWS_FOR_INTERVAL} rows compared")
    else:
        print(f"  percentile bootstrap over rows: {result.n_resamples:,} resamples, seed {result.seed}")
    if result.binned:
        print(
            f"  {result.binned:,} grades between two points of the scale (weighed): Spearman and tau-b rank them as "
            "they are; kappa, exact and within-one take each at its nearest point (a half rounds up)"
        )
    if any(figure.value is None for figure in result.figures.values()):
        print("  -: undefined here (one side gives a single value, or no row where both chose a side)")


def run_ratings(args: argparse.Namespace) -> int:
    """Compare the file's grades with its human ratings and print the figures (text or JSON)."""
    from answer_eval.stats.rating_agreement import PREFERENCES, rating_agreement

    _refuse_evaluator_options(args)
    read, grade_field, pairwise = _read(args, args.grade_field)
    _missing_field(read, grade_field, args)
    scale: tuple[Any, ...] = PREFERENCES if pairwise else _scale(args, read, grade_field)
    if not pairwise:
        _check_scale(read, scale, args, grade_field)
    result = rating_agreement(
        read.grades, read.ratings, scale, pairwise=pairwise, n_resamples=args.resamples, seed=args.seed
    )
    if args.format == "json":
        print(_json(result, read, grade_field, args))
    else:
        _print_text(result, read, grade_field, args)
    return 0
