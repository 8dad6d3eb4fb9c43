"""The "answer contains" verdict: right or wrong, and why an answer is wrong."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from typing import Any, cast

from answer_eval.errors import FAILURE_KINDS, FailureKind, count_failures
from answer_eval.inputs.labels import (
    LEFT,
    NEVER,
    NOT_FOUND_LABEL,
    PLAIN,
    RIGHT,
    LabelEntry,
    LabelReader,
    assign,
)
from answer_eval.inputs.reading import MAX_ANSWER_CHARS, ReadOutput, acceptable_answers, check_batch_shape, read_output
from answer_eval.text.folding import fold, fold_many
from answer_eval.text.matching import contains_number
from answer_eval.text.not_found import NOT_IN_DOCUMENT, NotFoundDetector

__all__ = [
    "FAILURE_KINDS",
    "AnswerContainsScorer",
    "BatchResult",
    "FailureKind",
    "ScoreColumns",
    "Verdict",
    "check_batch",
]

ScoreColumns = tuple[list[int], list[str | None], list[str | None]]
"""A batch's verdicts as columns: ``(individual_scores, failure_kinds, outcomes)``, the scores 0/1."""


@dataclass(frozen=True)
class Verdict:
    """The verdict on one answer.

    :param correct: Whether the answer is right.
    :param failure_kind: ``None`` when right, otherwise why it is wrong (see :class:`FailureKind`).
    :param outcome: The answer's folded text, ``None`` when there is no answer text.
    """

    correct: bool
    failure_kind: str | None
    outcome: str | None

    @property
    def score(self) -> int:
        """1 when right, 0 when wrong."""
        return 1 if self.correct else 0


@dataclass(frozen=True)
class BatchResult:
    """Verdicts on a batch of answers and their summary."""

    verdicts: list[Verdict]
    failure_counts: dict[str, int] = field(default_factory=dict)

    @property
    def individual_scores(self) -> list[int]:
        """1 or 0 per answer."""
        return [verdict.score for verdict in self.verdicts]

    @property
    def score(self) -> float:
        """The share of right answers."""
        return sum(self.individual_scores) / len(self.verdicts)

    @property
    def failure_kinds(self) -> list[str | None]:
        """The failure kind per answer, ``None`` where right."""
        return [verdict.failure_kind for verdict in self.verdicts]

    @property
    def outcomes(self) -> list[str | None]:
        """The folded answer text per answer."""
        return [verdict.outcome for verdict in self.verdicts]


_SCORE_OF_KIND: dict[str | None, int] = {None: 1}  # a right answer has no failure kind
# No acceptable answer found in a text with no flags: the not-found detector settles it.
_NO_MATCH = "\x00no match"
_NO_MATCH_ACCEPTS_NOT_FOUND = "\x00no match, not found accepted"
_UNDECIDED = frozenset({_NO_MATCH, _NO_MATCH_ACCEPTS_NOT_FOUND})


# (undecided kind, the detector says not found) -> failure kind: a report of absence is right for
# an unanswerable question and not_in_document otherwise.
_DECISION: dict[tuple[str | None, bool], str | None] = {
    (_NO_MATCH, False): FailureKind.WRONG,
    (_NO_MATCH, True): FailureKind.NOT_IN_DOCUMENT,
    (_NO_MATCH_ACCEPTS_NOT_FOUND, False): FailureKind.WRONG,
    (_NO_MATCH_ACCEPTS_NOT_FOUND, True): None,
}
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)


def check_batch(ground_truth_answers: Any, predicted_answers: Any) -> None:
    """Two lists (or tuples) of one length, not empty; `TypeError`/`ValueError` otherwise (a component's check too)."""
    check_batch_shape(ground_truth_answers, predicted_answers)
    if not ground_truth_answers:
        raise ValueError("ground_truth_answers and predicted_answers are empty: there is nothing to score")


def _decide(undecided: str | None, says_not_found: bool) -> str | None:
    return _DECISION[undecided, says_not_found]


def _plain_text(prediction: Any) -> bool:
    """Whether a prediction is a plain ``str`` short enough to grade (so needs no full read)."""
    return type(prediction) is str and len(prediction) <= MAX_ANSWER_CHARS


def _plain_texts(predictions: Sequence[Any]) -> list[bool] | None:
    """``_plain_text`` of every prediction, or ``None`` when all of them are plain texts.

    Computed with C-level maps: a Python call per prediction costs as much as folding it.
    """
    is_str = list(map(operator.is_, map(type, predictions), repeat(str)))
    longest = max(map(len, compress(predictions, is_str)), default=0)
    if longest > MAX_ANSWER_CHARS:
        return list(map(_plain_text, predictions))  # a text too long to read: rare, checked one by one
    return None if all(is_str) else is_str


class AnswerContainsScorer:
    """Scores answers with the "answer contains" rules; the framework-free core of the component.

    An answer is right when its folded text contains any acceptable answer under the number rules
    (:func:`answer_eval.contains_answer`). A question whose acceptable answers include
    ``not_found_label`` also accepts an answer that reports the document does not hold the answer
    (:class:`answer_eval.NotFoundDetector`), unless that answer comes from a run a limit stopped or
    a model refused: a reader that ran out of budget did not look.

    Precedence for a wrong answer: a failure kind the output carries, ``error`` for a failed
    result, then ``parse_failure``, ``budget_stop``, ``refusal``, ``not_in_document``, ``wrong``. A
    carried failure kind and a failed result are wrong even when their text holds an answer: the
    producer already said the run failed.

    :param not_found_label: The label of an unanswerable question.
    :param extra_not_found_phrases: More phrases that report absence, matched as folded substrings.

    >>> scorer = AnswerContainsScorer()
    >>> scorer.score("Sheffield produced 12,400 units.", "12400").correct
    True
    >>> scorer.score("NOT_IN_DOCUMENT", "12400").failure_kind
    'not_in_document'
    """

    def __init__(self, not_found_label: str = NOT_IN_DOCUMENT, extra_not_found_phrases: Iterable[str] = ()) -> None:
        self.detector = NotFoundDetector(label=not_found_label, extra_phrases=extra_not_found_phrases)
        self.not_found_label = not_found_label
        self._folded_not_found_label = fold(not_found_label)
        self._reader = LabelReader(self._folded_not_found_label)

    def score(self, prediction: Any, acceptable: Any) -> Verdict:
        """Score one prediction (any form :func:`answer_eval.read_output` reads) against its labels."""
        return self.score_read(read_output(prediction), acceptable_answers(acceptable))

    def folded_label(self, label: str) -> str:
        """A label folded as the rules compare it, from the scorer's label cache."""
        return self._reader.entry(label)[0]

    def score_read(self, output: ReadOutput, acceptable: Sequence[str]) -> Verdict:
        """Score an already read prediction against already checked acceptable answers."""
        return Verdict(*self._judge(output, tuple(map(self._reader.entry, acceptable))))

    def score_columns(self, ground_truth_answers: Sequence[Any], predicted_answers: Sequence[Any]) -> ScoreColumns:
        """Score a batch into columns: ``(individual_scores, failure_kinds, outcomes)``.

        The same verdicts as :meth:`score_batch` without a :class:`Verdict` object per answer: the
        fast path for large batches. Raises as :meth:`score_batch` does.
        """
        check_batch(ground_truth_answers, predicted_answers)
        # Column by column, each step a C-level map over the batch rather than a Python loop with
        # many steps per answer: this is what makes large batches fast.
        labels = self._reader.batch(ground_truth_answers)
        predictions = predicted_answers if type(predicted_answers) in (list, tuple) else list(predicted_answers)
        plain = _plain_texts(predictions)
        texts = predictions if plain is None else [p if ok else "" for p, ok in zip(predictions, plain, strict=True)]
        folded = fold_many(texts)
        # Most right answers hold their first label, as plain text: found with C-level maps alone.
        firsts = list(map(_FIRST, labels))
        first_found = map(operator.contains, folded, map(_FIRST, firsts))
        right_at_once = list(map(operator.and_, first_found, map(operator.not_, map(_SECOND, firsts))))
        kinds: list[str | None] = [None] * len(folded)
        rest = list(compress(count(), map(operator.not_, right_at_once)))
        assign(kinds, rest, map(self._match_kind, map(folded.__getitem__, rest), map(labels.__getitem__, rest)))
        # The answers no label matched: the not-found detector decides, over all of them at once.
        undecided = list(compress(count(), map(_UNDECIDED.__contains__, kinds)))
        says_absent = self.detector.folded_many(list(map(folded.__getitem__, undecided)))
        decisions = list(map(_DECISION.__getitem__, zip(map(kinds.__getitem__, undecided), says_absent, strict=True)))
        assign(kinds, undecided, decisions)
        # The folded texts become the outcomes column in place: a copy, or a pass reading every
        # text again, costs a visit to each text's memory, which is what large batches pay for.
        outcomes = cast("list[str | None]", folded)
        for position in compress(count(), map(operator.is_, kinds, repeat(FailureKind.PARSE_FAILURE))):
            outcomes[position] = None  # blank text: parse_failure, and no outcome
        if plain is not None:
            # Anything but a plain string of a gradable length may carry flags or an error: read it in full.
            for position in compress(count(), map(operator.not_, plain)):
                _, kinds[position], outcomes[position] = self._judge(
                    read_output(predictions[position]), labels[position]
                )
        scores = list(map(_SCORE_OF_KIND.get, kinds, repeat(0)))
        return scores, kinds, outcomes

    def score_batch(self, ground_truth_answers: Sequence[Any], predicted_answers: Sequence[Any]) -> BatchResult:
        """Score a batch; raises ``ValueError``/``TypeError`` for bad inputs, naming the position.

        An empty batch is refused with ``ValueError``: a score over no answers has no meaning, and
        0.0 would read as "all wrong".
        """
        scores, kinds, outcomes = self.score_columns(ground_truth_answers, predicted_answers)
        verdicts = [
            Verdict(score == 1, kind, outcome) for score, kind, outcome in zip(scores, kinds, outcomes, strict=False)
        ]
        return BatchResult(verdicts, count_failures(kinds))

    def _match_kind(self, outcome: str, labels: tuple[LabelEntry, ...]) -> str | None:
        """The failure kind of a folded answer with no flags, before the not-found detector.

        ``parse_failure`` for blank text, ``None`` (right) when an acceptable answer is found,
        else ``_NO_MATCH`` or ``_NO_MATCH_ACCEPTS_NOT_FOUND`` for :func:`_decide` to settle.
        """
        if not outcome:
            return FailureKind.PARSE_FAILURE
        accepts_not_found = False
        for folded, code in labels:
            if code == PLAIN:
                if folded in outcome:
                    return None
            elif code == NOT_FOUND_LABEL:
                accepts_not_found = True
            elif (
                code != NEVER
                and folded in outcome
                and contains_number(outcome, folded, code & LEFT != 0, code & RIGHT != 0)
            ):
                return None
        return _NO_MATCH_ACCEPTS_NOT_FOUND if accepts_not_found else _NO_MATCH

    def _text_kind(self, outcome: str, labels: tuple[LabelEntry, ...]) -> str | None:
        """The failure kind of a folded answer with no flags (``None`` when right).

        The rules of :meth:`score_read` for an output with no flags: blank is ``parse_failure``;
        an acceptable answer found is right; else the not-found detector decides between right
        (an unanswerable question), ``not_in_document`` and ``wrong``.
        """
        kind = self._match_kind(outcome, labels)
        if kind in _UNDECIDED:
            return _decide(kind, self.detector.folded(outcome))
        return kind

    def _judge(self, output: ReadOutput, labels: tuple[LabelEntry, ...]) -> tuple[bool, str | None, str | None]:
        """``(correct, failure_kind, outcome)`` for a read prediction."""
        text = output.text
        outcome = fold(text) if text is not None else None
        if outcome == "":
            outcome = None
        if output.failure_kind is not None:
            return False, output.failure_kind, outcome
        if output.error is not None:
            return False, FailureKind.ERROR, outcome
        if outcome is None:
            return False, FailureKind.PARSE_FAILURE, None
        if output.limit_stopped or output.was_refused:
            # A stopped or refused run is right only when its text holds an acceptable answer: a
            # not-found report from it does not count, so the detector need not run.
            for folded, code in labels:
                if code == PLAIN:
                    if folded in outcome:
                        return True, None, outcome
                elif code not in (NOT_FOUND_LABEL, NEVER) and contains_number(
                    outcome, folded, code & LEFT != 0, code & RIGHT != 0
                ):
                    return True, None, outcome
            kind = FailureKind.BUDGET_STOP if output.limit_stopped else FailureKind.REFUSAL
            return False, kind, outcome
        text_kind = self._text_kind(outcome, labels)
        return text_kind is None, text_kind, outcome
