"""Which labelled rows ``answer-eval calibrate`` counts, and why it leaves the others out.

A label is JSON true/false, or with ``--positive`` and ``--negative`` named values; a row with no
label, a label of neither kind, or a copy of a (question, answers, answer) already counted is left
out and counted (:class:`LeftOut`), never guessed. :func:`labelled_rows` reads the file and
refuses what cannot calibrate: fewer than :data:`MIN_LABELS` answers, or labels of one kind.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from answer_eval.cli.common import items_from_args
from answer_eval.errors import InputError
from answer_eval.inputs.item_files import DEFAULT_LABEL_FIELD, Items

__all__ = ["FEW_LABELS", "MIN_LABELS", "LeftOut", "counted_rows", "label_values", "labelled_rows"]

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
