"""Reading a JSONL file of answers into memory, for commands that look at every item at once.

``compare``, ``agreement`` and ``report`` need all the items of a file together (paired tests, an
agreement matrix, a page of items); :func:`read_items` reads them with the same line-numbered
errors as the streaming commands.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from answer_eval.engine.runner import require_fields
from answer_eval.errors import InputError
from answer_eval.inputs.formats import InputFile, iter_rows
from answer_eval.inputs.reading import acceptable_answers, read_output

__all__ = ["DEFAULT_LABEL_FIELD", "Items", "display_text", "read_items"]

DEFAULT_LABEL_FIELD = "human_acceptable"
"""The human verdict column looked for when no label field is named."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Items:
    """The rows of one file, column by column.

    :param path: The file read.
    :param lines: Line number of each item in the file.
    :param questions: The question of each item, ``None`` where the row has none.
    :param golds: The acceptable answers of each item.
    :param predictions: Each item's prediction, as found (any form :func:`answer_eval.read_output` reads).
    :param labels: The human verdict of each item, or ``None`` when the file has no label column.
    :param rows: The rows themselves (to reuse columns a results file already holds).
    :param answers_field: The field the acceptable answers were read from.
    """

    path: str
    lines: tuple[int, ...]
    questions: tuple[str | None, ...]
    golds: tuple[tuple[str, ...], ...]
    predictions: tuple[Any, ...]
    labels: tuple[bool, ...] | None
    rows: tuple[dict[str, Any], ...]
    answers_field: str = "answers"

    def question_groups(self) -> list[str]:
        """Each row's question, as the threshold test clusters answers and cross-validation folds them.

        A row without a question is its own group (its line), never merged with another.
        """
        return [
            f"question:{question}" if question is not None else f"line:{line}"
            for question, line in zip(self.questions, self.lines, strict=True)
        ]

    def __len__(self) -> int:
        return len(self.lines)


def _as_label(value: Any) -> str:
    # Labels are matched as people write them: "Yes", "yes" and " YES" are one value.
    return str(value).strip().casefold()


def _label(value: Any, positives: Collection[str], path: str, number: int) -> bool:
    if positives:
        return _as_label(value) in positives
    if isinstance(value, bool):
        return value
    raise InputError(
        f"label {value!r} is not true/false: name the values that mean acceptable with --positive", path, number
    )


def read_items(
    path: str | os.PathLike[str],
    *,
    prediction_field: str = "prediction",
    answers_field: str = "answers",
    question_field: str = "question",
    label_field: str | None = None,
    require_label: bool = False,
    positives: Collection[str] = (),
    require_answers: bool = True,
    input_format: str | None = None,
    delimiter: str | None = None,
    read_labels: bool = True,
) -> Items:
    """Read every row of a file: question, acceptable answers, prediction and, when present, a label.

    The file is in any format of :mod:`answer_eval.inputs.formats` (``input_format`` overrides its
    extension, ``delimiter`` a CSV's delimiter told from its header; ``"-"`` is standard input); in
    a CSV or TSV the prediction and question columns are read as text and the answers as values
    (:func:`answer_eval.inputs.formats.read_cell`).

    The label column is ``label_field`` (default :data:`DEFAULT_LABEL_FIELD`); it is read when
    ``require_label`` is true or the first row has it, and then every row must have it. A label
    is true/false, or any value listed in ``positives`` (compared as text, ignoring case and
    surrounding blanks: ``yes`` matches ``Yes``) means acceptable; a value of ``positives`` that
    matches no label of the file is warned about (a typo would silently make every answer
    unacceptable).
    Without ``require_answers`` (evaluators that read other fields: typed, tools) a row may lack
    ``answers_field``; its acceptable answers are then none. With ``read_labels`` false the label
    field must still be in every row, but its values are left in ``rows`` for the caller to read
    (``labels`` is ``None``): ``calibrate`` tells missing and unknown labels apart itself.

    :raises InputError: For a missing or empty file, a malformed line, a missing field or bad
        acceptable answers, naming the file and line.
    """
    source = InputFile.of(path, input_format, (prediction_field, question_field), (answers_field,), delimiter=delimiter)
    source.check()
    fields = _Fields(prediction_field, answers_field, question_field, label_field or DEFAULT_LABEL_FIELD)
    collected = _Collected(source.name, fields, require_answers, True if require_label else None, positives)
    collected.read_labels = read_labels  # false: the label field is required, its values left to the caller
    with contextlib.closing(iter_rows(source)) as rows_read:  # closed here, before an error propagates
        for number, row in rows_read:
            if isinstance(row, InputError):
                raise row
            collected.add(number, row)
    return collected.items()


@dataclass(frozen=True)
class _Fields:
    prediction: str
    answers: str
    question: str
    label: str


class _Collected:
    """The columns of the rows read so far, each row checked as it comes (its errors name its line)."""

    def __init__(
        self, name: str, fields: _Fields, require_answers: bool, use_label: bool | None, positives: Collection[str]
    ) -> None:
        self.name, self.fields, self.require_answers, self.use_label = name, fields, require_answers, use_label
        self.wanted = {_as_label(value): str(value) for value in positives}
        self.seen: dict[str, None] = {}  # the first labels found, in order (to say which a positive value missed)
        self.matched: set[str] = set()
        self.lines: list[int] = []
        self.questions: list[str | None] = []
        self.golds: list[tuple[str, ...]] = []
        self.predictions: list[Any] = []
        self.labels: list[bool] = []
        self.rows: list[dict[str, Any]] = []
        self.read_labels = True

    def add(self, number: int, row: dict[str, Any]) -> None:
        """Check one row and add its columns."""
        fields = self.fields
        if self.use_label is None:
            self.use_label = fields.label in row
        answers = self.require_answers or fields.answers in row
        needed: tuple[str, ...] = (fields.answers,) if answers else ()
        needed += (fields.prediction, fields.label) if self.use_label else (fields.prediction,)
        try:
            require_fields(row, needed)
            acceptable = acceptable_answers(row[fields.answers]) if answers else ()
        except InputError as exc:
            raise InputError(exc.message, self.name, number) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"field {fields.answers!r}: {exc}", self.name, number) from None
        if self.use_label and self.read_labels:
            self._add_label(row[fields.label], number)
        question = row.get(fields.question)
        self.lines.append(number)
        self.questions.append(question if isinstance(question, str) else None)
        self.golds.append(acceptable)
        self.predictions.append(row[fields.prediction])
        self.rows.append(row)

    def _add_label(self, value: Any, number: int) -> None:
        self.labels.append(_label(value, self.wanted, self.name, number))
        if self.wanted:
            folded = _as_label(value)
            if folded in self.wanted:
                self.matched.add(folded)
            if len(self.seen) < 20:
                self.seen.setdefault(folded)

    def items(self) -> Items:
        """The items read; ``InputError`` when there were none."""
        if not self.lines:
            raise InputError("no rows to compare", self.name)
        if self.use_label and self.read_labels:
            _warn_unmatched(self.wanted, self.matched, self.seen, self.name, self.fields.label)
        return Items(
            path=self.name,
            lines=tuple(self.lines),
            questions=tuple(self.questions),
            golds=tuple(self.golds),
            predictions=tuple(self.predictions),
            labels=tuple(self.labels) if self.use_label and self.read_labels else None,
            rows=tuple(self.rows),
            answers_field=self.fields.answers,
        )


def _warn_unmatched(
    wanted: dict[str, str], matched: set[str], seen: dict[str, None], name: str, label_name: str
) -> None:
    for folded, given in wanted.items():
        if folded not in matched:
            labels = ", ".join(repr(label) for label in seen)
            logger.warning(
                "answer-eval: --positive %r matches no %r label in %s (its labels: %s); no answer counts as "
                "acceptable through it",
                given,
                label_name,
                name,
                labels,
            )


def display_text(prediction: Any) -> str:
    """A prediction as a person reads it: its text (lists joined, objects read), or a note when it has none."""
    output = read_output(prediction)
    if output.text is not None:
        return output.text
    if output.error is not None:
        return f"(error: {output.error})"
    return "(no answer text)"
