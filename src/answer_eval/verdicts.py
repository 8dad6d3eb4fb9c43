"""The "answer contains" verdict: right or wrong, and why an answer is wrong."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_eval.folding import fold
from answer_eval.labels import acceptable_answers, check_ground_truths
from answer_eval.matching import contains_folded
from answer_eval.not_found import NOT_IN_DOCUMENT, NotFoundDetector
from answer_eval.reading import ReadOutput, read_output

__all__ = ["FAILURE_KINDS", "AnswerContainsScorer", "BatchResult", "FailureKind", "Verdict"]


class FailureKind:
    """The failure kinds a wrong answer can get, as plain strings."""

    PARSE_FAILURE = "parse_failure"
    """No answer text: the output is not a string and carries none, or the text is blank."""
    BUDGET_STOP = "budget_stop"
    """A limit stopped the run: a partial answer with a limit note, or a length finish reason."""
    REFUSAL = "refusal"
    """A step of the run was refused or content-filtered, or the output is a refused result."""
    NOT_IN_DOCUMENT = "not_in_document"
    """An answer was expected and the reader said the document does not hold one."""
    WRONG = "wrong"
    """Anything else, an answer given to an unanswerable question included."""
    ERROR = "error"
    """The output is a failed result: an exception, or a mapping with ``error`` or ``status: error``."""


FAILURE_KINDS = (
    FailureKind.PARSE_FAILURE,
    FailureKind.BUDGET_STOP,
    FailureKind.REFUSAL,
    FailureKind.NOT_IN_DOCUMENT,
    FailureKind.WRONG,
    FailureKind.ERROR,
)
"""Every failure kind the package assigns, in the order they are tried."""


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


def count_failures(kinds: Iterable[str | None]) -> dict[str, int]:
    """Count failure kinds: every standard kind is present (0 when absent), carried kinds appended."""
    counts = dict.fromkeys(FAILURE_KINDS, 0)
    for kind in kinds:
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


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

    def score(self, prediction: Any, acceptable: Any) -> Verdict:
        """Score one prediction (any form :func:`answer_eval.read_output` reads) against its labels."""
        return self.score_read(read_output(prediction), acceptable_answers(acceptable))

    def score_read(self, output: ReadOutput, acceptable: Sequence[str]) -> Verdict:
        """Score an already read prediction against already checked acceptable answers."""
        text = output.text
        outcome = fold(text) if text is not None else None
        if outcome == "":
            outcome = None
        if output.failure_kind is not None:
            return Verdict(False, output.failure_kind, outcome)
        if output.error is not None:
            return Verdict(False, FailureKind.ERROR, outcome)
        if outcome is None:
            return Verdict(False, FailureKind.PARSE_FAILURE, None)

        accepts_not_found = False
        for label in acceptable:
            folded_label = fold(label)
            if folded_label == self._folded_not_found_label:
                accepts_not_found = True
            elif contains_folded(outcome, folded_label):
                return Verdict(True, None, outcome)

        stopped = output.limit_stopped
        refused = output.was_refused
        says_not_found = self.detector.folded(outcome)
        if accepts_not_found and says_not_found and not (stopped or refused):
            return Verdict(True, None, outcome)
        if stopped:
            return Verdict(False, FailureKind.BUDGET_STOP, outcome)
        if refused:
            return Verdict(False, FailureKind.REFUSAL, outcome)
        if says_not_found and not accepts_not_found:
            return Verdict(False, FailureKind.NOT_IN_DOCUMENT, outcome)
        return Verdict(False, FailureKind.WRONG, outcome)

    def score_batch(self, ground_truth_answers: Sequence[Any], predicted_answers: Sequence[Any]) -> BatchResult:
        """Score a batch; raises ``ValueError``/``TypeError`` for bad inputs, naming the position.

        An empty batch is refused with ``ValueError``: a score over no answers has no meaning, and
        0.0 would read as "all wrong".
        """
        labels = check_ground_truths(ground_truth_answers, predicted_answers)
        if not labels:
            raise ValueError("ground_truth_answers and predicted_answers are empty: there is nothing to score")
        verdicts = [
            self.score_read(read_output(prediction), acceptable)
            for prediction, acceptable in zip(predicted_answers, labels, strict=False)
        ]
        return BatchResult(verdicts, count_failures(verdict.failure_kind for verdict in verdicts))
