"""The answer-contains evaluator (``answer-eval score``): right when the folded answer holds an acceptable answer.

The rules themselves are :mod:`answer_eval.evaluators.contains_rules`; :func:`score_file` scores a
JSONL file with them from Python, which is what ``answer-eval score`` runs.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from answer_eval.engine.row_transforms import AddedColumns, default_fields
from answer_eval.engine.runner import run_file
from answer_eval.errors import ItemError
from answer_eval.evaluators.base import (
    Columns,
    Evaluator,
    Options,
    Role,
    Socket,
    check_names,
    check_str,
    item_error,
    list_option,
    option,
)
from answer_eval.evaluators.contains_rules import AnswerContainsScorer, ScoreColumns
from answer_eval.evaluators.summaries import FileSummary
from answer_eval.inputs.reading import acceptable_answers
from answer_eval.text.not_found import NOT_IN_DOCUMENT

__all__ = [
    "ANSWERS",
    "PREDICTION",
    "SCORE_COLUMNS",
    "AnswerContainsCore",
    "ContainsOptions",
    "locate_bad_answers",
    "score_file",
]


PREDICTION = Role("prediction", "prediction", "the answer")
ANSWERS = Role("answers", "answers", "the acceptable answer(s)", kinds=frozenset({"string", "int", "float", "list"}))


@dataclass(frozen=True)
class ContainsOptions(Options):
    """The options of :class:`AnswerContainsCore` (each option's help says what it is)."""

    not_found_label: str = option(
        NOT_IN_DOCUMENT, flag="--not-found-label", help="the label that marks an unanswerable question"
    )
    extra_not_found_phrases: tuple[str, ...] = list_option(
        (),
        flag="--not-found-phrase",
        metavar="PHRASE",
        help="more phrases (any language) that report the document does not hold the answer, added to the "
        "built-in English ones; each is folded and matched as a plain substring (repeatable)",
    )

    def check(self) -> None:
        """The label is a str, the phrases a list of str (blank ones are refused by the scorer)."""
        check_str("not_found_label", self.not_found_label)
        check_names("extra_not_found_phrases", self.extra_not_found_phrases, optional=True)


def locate_bad_answers(answers: Sequence[Any], error: Exception, role: str = "answers") -> ItemError:
    """The first item whose acceptable answers cannot be read, as an :class:`ItemError` (the batch's error else)."""
    for position, value in enumerate(answers):
        try:
            acceptable_answers(value)
        except (TypeError, ValueError) as exc:
            return item_error(functools.partial(acceptable_answers, value), role, position, exc)
    return ItemError(str(error))


class AnswerContainsCore(Evaluator):
    """Number-aware "the answer contains an acceptable answer", with a failure kind for every wrong answer."""

    name = "contains"
    component = "AnswerContainsEvaluator"
    options_type = ContainsOptions
    roles = (ANSWERS, PREDICTION)
    sockets: ClassVar[dict[str, Socket]] = {
        "score": Socket(float),
        "individual_scores": Socket(list[int], "correct"),
        "failure_kinds": Socket(list[str | None], "failure_kind"),
        "outcomes": Socket(list[str | None], "outcome"),
        "failure_counts": Socket(dict[str, int]),
    }
    options: ContainsOptions

    def __init__(self, options: ContainsOptions | None = None) -> None:
        """Make the evaluator; ``ValueError`` for a blank label or phrase."""
        super().__init__(options)
        self.scorer = AnswerContainsScorer(self.options.not_found_label, self.options.extra_not_found_phrases)

    def outputs(self) -> dict[str, str]:
        """``correct`` (bool), ``failure_kind`` and ``outcome`` (the folded answer)."""
        return {"correct": "bool", "failure_kind": "object", "outcome": "object"}

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """The answer-contains verdicts of a batch (the column-wise fast path)."""
        scores, kinds, outcomes = self.score_columns(inputs)
        return {"correct": list(map(bool, scores)), "failure_kind": kinds, "outcome": outcomes}

    def socket_columns(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """:meth:`score`'s columns with ``correct`` as the scorer's 0/1 (as ``AnswerExactMatchEvaluator``'s).

        The bool column and back to int would cost two passes over a large batch.
        """
        scores, kinds, outcomes = self.score_columns(inputs)
        return {"correct": scores, "failure_kind": kinds, "outcome": outcomes}

    def score_columns(self, inputs: Mapping[str, Sequence[Any]]) -> ScoreColumns:
        """:meth:`score` as the scorer's columns, ``(individual_scores, failure_kinds, outcomes)``, scores 0/1.

        The component's path: its outputs are these columns, with no pass to ``bool`` and back.
        Raises :class:`ItemError` as :meth:`score` does.
        """
        answers = inputs["answers"]
        try:
            return self.scorer.score_columns(answers, inputs["prediction"])
        except (TypeError, ValueError) as exc:
            raise locate_bad_answers(answers, exc) from None

    def new_summary(self) -> FileSummary:
        """Right answers and failure kinds."""
        return FileSummary()


SCORE_COLUMNS = ("correct", "failure_kind", "outcome")
"""The columns :func:`score_file` adds to every row."""


def score_file(
    path: str | os.PathLike[str],
    scorer: AnswerContainsScorer,
    *,
    prediction_field: str = "prediction",
    answers_field: str = "answers",
    output: str | os.PathLike[str] | None = None,
    columns: AddedColumns | None = None,
    **run: Any,
) -> FileSummary:
    """Score every row of a JSONL file with the answer-contains rules (what ``answer-eval score`` runs).

    The output (``.jsonl`` or ``.csv``), when asked for, holds every input row in order with
    ``correct``, ``failure_kind`` and ``outcome`` added (default ``columns``: those names, a row
    that already has one refused); ``run`` (``skip_invalid``, ``progress``, ``jobs``, ``resume``,
    ``max_line_bytes``, ``checkpoint_seconds``) goes to :func:`~answer_eval.engine.runner.process_jsonl`,
    which says how rows stream, are written atomically, run in workers, stop and resume.
    """
    options = ContainsOptions(scorer.not_found_label, tuple(scorer.detector.extra_phrases))
    evaluator = AnswerContainsCore(options)
    fields = default_fields(evaluator, {"prediction": prediction_field, "answers": answers_field})
    summary = run_file(path, evaluator, fields, output=output, columns=columns, **run)
    assert isinstance(summary, FileSummary)
    return summary
