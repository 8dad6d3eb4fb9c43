"""AnswerJudge: a verdict close to a person's, offline, from a cascade of explainable stages.

1. **contains**: the strict answer-contains rules (:class:`answer_eval.AnswerContainsScorer`); when
   they say right, the answer is right at once, unless every gold they found is a near miss: named
   only to be denied, only as one of several candidates ("probably Saturn or Jupiter"), or naming
   someone else. Such a verdict is the rule's, with acceptance 0.5 (:data:`NEAR_MISS_ACCEPTANCE`):
   the human-judged sets hold too few such answers to grade it.
2. **lexical**: lenient evidence people accept and the strict rules miss
   (:func:`answer_eval.evaluators.judge.lenient.lexical_evidence`): the gold's words in another order or form, a
   less or more specific form of the gold, a number inside the gold's range, words written
   together, a name without its middle name, a number without its unit, footnote marks glued on.
An answer with no such evidence is wrong. (The deprecated semantic stage, MiniLM similarity to the
closest acceptable answer, was removed: it changed no verdict with the shipped model. For semantic
similarity, run Haystack's ``SASEvaluator`` beside the judge.)

Every verdict then gets its **acceptance**: the probability that a person accepts the answer, from
a logistic model over the interpretable features of :mod:`answer_eval.evaluators.judge.acceptance_model`, fitted on
human verdicts of three sources (``model.json``, written by ``scripts/train_judge.py`` with
its data hashes, options and cross-set figures). ``confidence`` is the probability that a person
agrees with the verdict. The model grades; it does not overrule the rules, because no override
raised cross-set agreement on every set (docs/answer-judge.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from typing import Any

from answer_eval.errors import FailureKind
from answer_eval.evaluators.contains_rules import AnswerContainsScorer, Verdict
from answer_eval.evaluators.judge.acceptance_model import (
    DEFAULT_MODEL_PATH,
    AcceptanceModel,
    JudgeModel,
    Reading,
    feature_values,
)
from answer_eval.evaluators.judge.lenient import LexicalEvidence, lexical_evidence
from answer_eval.evaluators.judge.reasons import (
    GoldBook,
    QuestionGolds,
    lexical_reason,
    near_miss_reason,
    no_evidence_reason,
    other_slot_reason,
)
from answer_eval.inputs.reading import check_ground_truths, read_output
from answer_eval.text.denials import asked
from answer_eval.text.folding import fold, separate_citation_marks
from answer_eval.text.not_found import NOT_IN_DOCUMENT, is_not_found_folded
from answer_eval.text.question_slots import other_slot

__all__ = ["DEFAULT_MODEL_PATH", "AnswerJudge", "JudgeModel", "JudgeVerdict", "Stage"]

# Wrong answers whose text is still weighed by the lenient stages. The others (no text, a failed
# result, a reader that found nothing, a kind the output carries) have no answer to weigh.
_WEIGHED_KINDS = frozenset({FailureKind.WRONG, FailureKind.BUDGET_STOP, FailureKind.REFUSAL})
NEAR_MISS_ACCEPTANCE = 0.5
"""The acceptance of an answer that names its gold only as a near miss: unknown (docs/answer-judge.md)."""
NEAR_MISS_UNMEASURED = (
    "the human-judged sets hold too few such answers to measure how often a person agrees, so confidence 0.5"
)


class Stage:
    """The stage of the cascade that decided a verdict."""

    CONTAINS = "contains"
    """The strict answer-contains rules said right."""
    LEXICAL = "lexical"
    """Lenient lexical evidence said right."""
    NO_EVIDENCE = "no_evidence"
    """No lexical evidence: wrong."""
    NO_ANSWER = "no_answer"
    """No answer to weigh: no text, a failed result, or a reader that found nothing."""


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's verdict on one answer.

    :param correct: Whether a person would most likely accept the answer.
    :param confidence: The probability that a person agrees with this verdict (``acceptance`` when
        right, ``1 - acceptance`` when wrong).
    :param stage: The stage that decided (see :class:`Stage`).
    :param evidence: Why, in words a person can check: the rule, then the features that weighed most.
    :param failure_kind: ``None`` when right, otherwise exactly the kind AnswerContainsEvaluator gives.
    :param outcome: The answer's folded text, ``None`` when there is none.
    :param acceptance: The probability that a person accepts the answer.
    :param graded: Whether ``acceptance`` is an estimate (the acceptance model's). ``False`` when a
        rule fixes it: no answer to weigh (certain), or a gold named only as a near miss (denied,
        among rival candidates, someone else), which the human-judged data holds too few of to
        measure (0.5: unsure, so escalated at any threshold).
    """

    correct: bool
    confidence: float
    stage: str
    evidence: str
    failure_kind: str | None
    outcome: str | None
    acceptance: float
    graded: bool = True

    @property
    def score(self) -> int:
        """1 when right, 0 when wrong."""
        return 1 if self.correct else 0


@dataclass
class _Read:
    """One answer as the stages read it: the verdict so far and what the acceptance model weighs."""

    verdict: JudgeVerdict | None
    text: str
    strict_contains: bool
    golds: list[str]
    question: str | None
    evidence: LexicalEvidence | None = None
    found: list[str] | None = None  # the golds the strict rules found, when they accept
    weighed: bool = True  # False when there is no answer (or no gold) to weigh: the verdict is certain
    near_miss: str | None = None  # why the golds the strict rules found are no answer (denied, hedged, someone else)
    folded: str | None = None  # fold(text), when the strict rules folded the same text
    labels: QuestionGolds | None = None  # the question's golds as read once for all its answers
    denials: dict[str, bool] | None = None  # folded golds the near-miss rule read in ``folded``: denied or not


def _strict(kind: str | None, outcome: str | None) -> Verdict:
    return Verdict(kind is None, kind, outcome)


def _verdict(correct: bool, acceptance: float, stage: str, reason: str, strict: Verdict) -> JudgeVerdict:
    return JudgeVerdict(
        correct,
        acceptance if correct else 1.0 - acceptance,
        stage,
        reason,
        None if correct else strict.failure_kind,
        strict.outcome,
        acceptance,
    )


class AnswerJudge:
    """Judges answers like a person would, offline; the framework-free core of AnswerJudgeEvaluator.

    :param model: The learned numbers; default the model shipped with the package.
    :param not_found_label: The label of an unanswerable question.
    :param extra_not_found_phrases: More phrases that report absence (see :class:`answer_eval.NotFoundDetector`).

    >>> judge = AnswerJudge()
    >>> verdict = judge.judge("Nixon", ["Richard Nixon"])
    >>> verdict.correct, verdict.stage
    (True, 'lexical')
    >>> judge.judge("Dolly Mapp", ["Dollree Mapp"]).correct  # a shared surname is not enough
    False
    """

    def __init__(
        self,
        model: JudgeModel | None = None,
        not_found_label: str = NOT_IN_DOCUMENT,
        extra_not_found_phrases: Sequence[str] = (),
    ) -> None:
        self.model = model or JudgeModel.load()
        self.contains = AnswerContainsScorer(not_found_label, extra_not_found_phrases)
        self._golds = GoldBook(self.contains.folded_label, fold(not_found_label))

    def judge(self, prediction: Any, acceptable: Any, question: str | None = None) -> JudgeVerdict:
        """Judge one prediction (any form :func:`answer_eval.read_output` reads)."""
        return self.judge_batch([acceptable], [prediction], None if question is None else [question])[0]

    def judge_batch(
        self,
        ground_truth_answers: Sequence[Any],
        predicted_answers: Sequence[Any],
        questions: Sequence[str | None] | None = None,
    ) -> list[JudgeVerdict]:
        """Judge a batch.

        :raises TypeError, ValueError: For bad inputs, naming the position (as AnswerContainsEvaluator).
        """
        return self._judge_reads(self._read_batch(ground_truth_answers, predicted_answers, questions), None)

    def judge_with_features(
        self,
        ground_truth_answers: Sequence[Any],
        predicted_answers: Sequence[Any],
        questions: Sequence[str | None] | None = None,
    ) -> tuple[list[JudgeVerdict], list[dict[str, float]]]:
        """The verdicts of :meth:`judge_batch` and what the acceptance model weighs for each (for training and study).

        Answers with nothing to weigh (stage ``no_answer``) get a row too; the model does not grade
        them (their verdict is certain), so training leaves them out.
        """
        rows: list[dict[str, float]] = []
        verdicts = self._judge_reads(self._read_batch(ground_truth_answers, predicted_answers, questions), rows)
        return verdicts, rows

    def feature_rows(
        self,
        ground_truth_answers: Sequence[Any],
        predicted_answers: Sequence[Any],
        questions: Sequence[str | None] | None = None,
    ) -> list[dict[str, float]]:
        """What the acceptance model weighs for each answer (the rows of :meth:`judge_with_features`)."""
        return self.judge_with_features(ground_truth_answers, predicted_answers, questions)[1]

    def _judge_reads(self, reads: list[_Read], rows: list[dict[str, float]] | None) -> list[JudgeVerdict]:
        """Grade the verdicts with the acceptance model, collecting feature rows when asked."""
        acceptance = self.model.acceptance
        verdicts = []
        for read in reads:
            assert read.verdict is not None
            verdict = read.verdict
            if not read.weighed:
                verdict = replace(verdict, graded=False)
            graded = acceptance is not None and read.weighed
            if graded or rows is not None:
                values = self._features(read, verdict.correct)
                if rows is not None:
                    rows.append(values)
                if graded:
                    assert acceptance is not None
                    verdict = self._graded(verdict, values, acceptance)
            verdicts.append(verdict)
        return verdicts

    def _read_batch(
        self,
        ground_truth_answers: Sequence[Any],
        predicted_answers: Sequence[Any],
        questions: Sequence[str | None] | None,
    ) -> list[_Read]:
        labels = check_ground_truths(ground_truth_answers, predicted_answers)
        if not labels:
            raise ValueError("ground_truth_answers and predicted_answers are empty: there is nothing to judge")
        if questions is not None:
            if not isinstance(questions, (list, tuple)) or len(questions) != len(labels):
                raise ValueError(f"questions must be a list of {len(labels)} items, one per answer")
            for position, question in enumerate(questions):
                if question is not None and not isinstance(question, str):
                    raise TypeError(f"question at position {position} must be a str or None")
        # The strict rules over the whole batch at once (their column path: the same verdicts as
        # one at a time, in a fraction of the time).
        _, kinds, outcomes = self.contains.score_columns(ground_truth_answers, predicted_answers)
        asked = questions if questions is not None else repeat(None)
        return list(map(self._lexical_stages, predicted_answers, labels, asked, map(_strict, kinds, outcomes)))

    def _features(self, read: _Read, correct: bool) -> dict[str, float]:
        golds = read.golds
        # An accepted answer is weighed against the golds the strict rules found in it: the best
        # support there is, and a fraction of the work when a question has dozens of aliases.
        evidence = read.evidence or lexical_evidence(
            read.text, read.found or golds, read.question, read.folded, read.denials
        )
        absence = is_not_found_folded(evidence.folded_answer) if read.text else False
        return feature_values(
            Reading(read.text, read.strict_contains, absence, evidence, correct),
            golds,
            read.question,
            read.labels.letters if read.labels is not None else None,
        )

    @staticmethod
    def _graded(verdict: JudgeVerdict, values: dict[str, float], acceptance: AcceptanceModel) -> JudgeVerdict:
        probability, weighed = acceptance.explain(values, toward=verdict.correct)
        reason = f"{verdict.evidence}; a person accepts such an answer with probability {probability:.0%}"
        if weighed:
            reason += f" (weighed most: {'; '.join(weighed)})"
        confidence = probability if verdict.correct else 1.0 - probability
        return JudgeVerdict(
            verdict.correct, confidence, verdict.stage, reason, verdict.failure_kind, verdict.outcome, probability
        )

    def _lexical_stages(
        self, prediction: Any, acceptable: tuple[str, ...], question: str | None, strict: Verdict
    ) -> _Read:
        output = read_output(prediction)
        labels = self._golds.read(acceptable, question)  # the scorer has just folded these labels: cached
        golds = labels.golds
        text = separate_citation_marks(output.text or "")
        read = _Read(None, text, strict.correct, labels.weighed, question, labels=labels)
        if output.text is not None and text == output.text:
            read.folded = strict.outcome or ""  # the strict rules' outcome is fold(output.text), None when blank
        found = self._found(strict, labels)
        if read.folded is not None:
            read.denials = {}
        read.near_miss = self._near_miss(output.text or "", strict, found, labels, read.denials, question)
        if read.near_miss is not None:
            # "Not Paris, but Lyon.", "probably Saturn or Jupiter", "Elizabeth II" for "Elizabeth I":
            # the strict rules find the gold, a person reads a denial, a hedge or another person.
            strict = Verdict(False, FailureKind.WRONG, strict.outcome)
        if strict.correct:
            read.found = [gold for gold, _ in found]
            reason = self._contains_reason(read.found)
            read.verdict = _verdict(True, self.model.confidence_contains, Stage.CONTAINS, reason, strict)
            slot = other_slot(output.text or "", found, question, strict.outcome) if found and question else None
            if slot is not None:
                # "Lyon is twinned with Saint-Aubin." to "Which city is Birmingham twinned with?": the
                # rule cannot tell a wrong pairing from an extra fact, so the verdict stands, unsure.
                read.weighed = False
                reason = f"{other_slot_reason(slot)}; {NEAR_MISS_UNMEASURED}"
                read.verdict = _verdict(True, NEAR_MISS_ACCEPTANCE, Stage.CONTAINS, reason, strict)
        elif strict.failure_kind not in _WEIGHED_KINDS:
            reason = self._no_answer_reason(strict, output.error)
            read.verdict = _verdict(False, 0.0, Stage.NO_ANSWER, reason, strict)
            read.weighed = False
        elif not golds:
            read.verdict = _verdict(False, 0.0, Stage.CONTAINS, "gives an answer where the document holds none", strict)
            read.weighed = False
        else:
            read.verdict = self._weighed(read, strict, acceptable, labels, unglued=text != (output.text or ""))
        return read

    def _weighed(
        self, read: _Read, strict: Verdict, acceptable: tuple[str, ...], golds: QuestionGolds, unglued: bool
    ) -> JudgeVerdict:
        """The lexical stage for an answer the strict rules refuse."""
        confident = self.model.confidence_lexical
        if unglued:
            again = self.contains.score(read.text, acceptable)
            found = self._found(again, golds)
            if again.correct and self._near_miss(read.text, again, found, golds, None, read.question) is None:
                reason = self._contains_reason([gold for gold, _ in found])
                reason += ", once footnote marks glued to it are taken apart"
                return _verdict(True, confident, Stage.LEXICAL, reason, strict)
        read.evidence = evidence = lexical_evidence(read.text, read.golds, read.question, read.folded)
        accepted = lexical_reason(evidence)
        if accepted is not None:
            return _verdict(True, confident, Stage.LEXICAL, accepted, strict)
        if read.near_miss is not None:
            # A rule's call on a form the human-judged sets hold almost none of: no estimate to give.
            read.weighed = False
            reason = f"{read.near_miss}; {NEAR_MISS_UNMEASURED}"
            return _verdict(False, NEAR_MISS_ACCEPTANCE, Stage.NO_EVIDENCE, reason, strict)
        acceptance = self.model.no_evidence_acceptance
        reason = no_evidence_reason(evidence, asked=bool((read.question or "").strip()))
        return _verdict(False, acceptance, Stage.NO_EVIDENCE, reason, strict)

    @staticmethod
    def _near_miss(
        text: str,
        strict: Verdict,
        found: list[tuple[str, str]],
        golds: QuestionGolds,
        denials: dict[str, bool] | None = None,
        question: str | None = None,
    ) -> str | None:
        """Why the golds the strict rules found in an answer they accept are no answer, or ``None``."""
        if not strict.correct:
            return None
        return near_miss_reason(text, strict.outcome or "", found, golds.folded, denials, asked(question))

    @staticmethod
    def _found(strict: Verdict, golds: QuestionGolds) -> list[tuple[str, str]]:
        """The golds (and their folded forms) the strict rules find in the answer they accept."""
        return golds.found(strict.outcome or "") if strict.correct else []

    @staticmethod
    def _contains_reason(found: list[str]) -> str:
        if found:
            return f'contains the acceptable answer "{found[0]}" (strict rules: folded text, numbers whole)'
        return "reports that the document does not hold the answer, as the unanswerable label expects"

    @staticmethod
    def _no_answer_reason(strict: Verdict, error: str | None) -> str:
        kind = strict.failure_kind
        if kind == FailureKind.PARSE_FAILURE:
            return "no answer text"
        if kind == FailureKind.ERROR:
            return f"a failed result ({error})" if error else "a failed result"
        if kind == FailureKind.NOT_IN_DOCUMENT:
            return "the reader said the document does not hold the answer, but it does"
        return f"the output carries the failure kind {kind!r}"
