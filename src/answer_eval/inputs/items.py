"""Reading a JSONL file of answers into memory, for commands that look at every item at once.

``compare``, ``agreement`` and ``report`` need all the items of a file together (paired tests, an
agreement matrix, a page of items); :func:`read_items` reads them with the same line-numbered
errors as the streaming commands.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from answer_eval.engine.files import InputError
from answer_eval.engine.runner import require_fields
from answer_eval.inputs.formats import InputFile, iter_rows
from answer_eval.inputs.labels import acceptable_answers
from answer_eval.inputs.reading import read_output

__all__ = ["DEFAULT_LABEL_FIELD", "Items", "display_text", "read_items"]

DEFAULT_LABEL_FIELD = "human_acceptable"
"""The human verdict column looked for when no label field is named."""


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

    def __len__(self) -> int:
        return len(self.lines)


def _label(value: Any, positives: Collection[str], path: str, number: int) -> bool:
    if positives:
        return str(value) in positives
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
) -> Items:
    """Read every row of a file: question, acceptable answers, prediction and, when present, a label.

    The file is in any format of :mod:`answer_eval.inputs.formats` (``input_format`` overrides its
    extension, ``delimiter`` a CSV's delimiter told from its header; ``"-"`` is standard input); in
    a CSV or TSV the prediction and question columns are read as text and the answers as values
    (:func:`answer_eval.inputs.formats.read_cell`).

    The label column is ``label_field`` (default :data:`DEFAULT_LABEL_FIELD`); it is read when
    ``require_label`` is true or the first row has it, and then every row must have it. A label
    is true/false, or any value listed in ``positives`` (compared as text) means acceptable.
    Without ``require_answers`` (evaluators that read other fields: typed, tools) a row may lack
    ``answers_field``; its acceptable answers are then none.

    :raises InputError: For a missing or empty file, a malformed line, a missing field or bad
        acceptable answers, naming the file and line.
    """
    source = InputFile.of(path, input_format, (prediction_field, question_field), (answers_field,), delimiter=delimiter)
    source.check()
    name = source.name
    label_name = label_field or DEFAULT_LABEL_FIELD
    use_label: bool | None = True if require_label else None
    lines: list[int] = []
    questions: list[str | None] = []
    golds: list[tuple[str, ...]] = []
    predictions: list[Any] = []
    labels: list[bool] = []
    rows: list[dict[str, Any]] = []
    with contextlib.closing(iter_rows(source)) as rows_read:  # closed here, before an error propagates
        for number, row in rows_read:
            if isinstance(row, InputError):
                raise row
            if use_label is None:
                use_label = label_name in row
            answers = require_answers or answers_field in row
            fields: tuple[str, ...] = (answers_field,) if answers else ()
            fields += (prediction_field, label_name) if use_label else (prediction_field,)
            try:
                require_fields(row, fields)
                acceptable = acceptable_answers(row[answers_field]) if answers else ()
            except InputError as exc:
                raise InputError(exc.message, name, number) from None
            except (TypeError, ValueError) as exc:
                raise InputError(f"field {answers_field!r}: {exc}", name, number) from None
            if use_label:
                labels.append(_label(row[label_name], positives, name, number))
            question = row.get(question_field)
            lines.append(number)
            questions.append(question if isinstance(question, str) else None)
            golds.append(acceptable)
            predictions.append(row[prediction_field])
            rows.append(row)
    if not lines:
        raise InputError("no rows to compare", name)
    return Items(
        path=name,
        lines=tuple(lines),
        questions=tuple(questions),
        golds=tuple(golds),
        predictions=tuple(predictions),
        labels=tuple(labels) if use_label else None,
        rows=tuple(rows),
        answers_field=answers_field,
    )


def display_text(prediction: Any) -> str:
    """A prediction as a person reads it: its text (lists joined, objects read), or a note when it has none."""
    output = read_output(prediction)
    if output.text is not None:
        return output.text
    if output.error is not None:
        return f"(error: {output.error})"
    return "(no answer text)"
