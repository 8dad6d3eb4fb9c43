"""The judge asks an LLM only when it is unsure: answers below a confidence threshold go to an LLM correctness check.

The judge's ``confidence`` is the probability that a person agrees with its verdict. Answers it
is sure of keep its verdict; the others are sent to an LLM grader (question, acceptable
answers, candidate) whose yes or no replaces the judge's verdict, so most answers cost nothing
and the hard ones get the stronger grader. The threshold is given (``escalate_below``) or chosen
for a target agreement with people (:mod:`answer_eval.evaluators.judge.selective`). An LLM that
fails on an answer (error, refusal, budget, unreadable reply) leaves the judge's verdict in place,
with the failure reported. The reply is read knowing the question, the acceptable answers and the
candidate it was shown, so a verdict it only quotes from the candidate is not the LLM's
(:mod:`answer_eval.llm.replies`); an unreadable reply's explanation says why it was not read.

Structured output (``structured``, as the rubric graders': :mod:`answer_eval.llm.structured`): by
default (``auto``) an OpenAI-compatible server is asked for the verdict's JSON schema
(:func:`~answer_eval.llm.structured.verdict_schema`: ``explanation``, then ``correct``, a boolean),
then ``json_object``, then the prompt alone, each after the server refused the one before. The reply
is read as any reply is, structured or not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.errors import FailureKind
from answer_eval.inputs.reading import read_output
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.grading import Cost, Draw
from answer_eval.llm.prompts import correctness_messages, correctness_words
from answer_eval.llm.replies import Read, Shown, read_yes_no, refused
from answer_eval.llm.structured import StructuredOutput, verdict_schema

__all__ = [
    "Escalation",
    "LLMVerdict",
    "check_answers",
    "gold_texts",
    "merge_verdicts",
    "needs_escalation",
    "yes_no_reader",
]


@dataclass(frozen=True)
class LLMVerdict:
    """What the LLM said of one escalated answer.

    :param correct: Its verdict; ``None`` when it gave none.
    :param explanation: Its reply (or reasoning, from a JSON reply); a reply that could not be read
        comes after why (``reply not read (two verdicts, ...): <the reply>``).
    :param failure_kind: ``None``, or why there is no verdict (``error``, ``refusal``, ``budget_stop``...).
    :param cost: The requests and tokens spent.
    :param confidence: How sure the LLM is of ``correct``, the LLM level of the cascade's threshold
        (:mod:`answer_eval.evaluators.judge.llm_level`): 1.0 for one LLM's one reply (so that level
        keeps every verdict or none), a jury's majority share (2 of 3 judges: 0.667); 0.0 without a verdict.
    """

    correct: bool | None
    explanation: str | None
    failure_kind: str | None
    cost: Cost
    confidence: float = 1.0

    def __post_init__(self) -> None:
        """No verdict, no confidence: a verdict that is not there is never kept."""
        if self.correct is None and self.confidence:
            object.__setattr__(self, "confidence", 0.0)  # frozen: set once, while being made


def needs_escalation(confidences: Sequence[float], threshold: float) -> list[bool]:
    """Which verdicts are below the threshold (the judge is unsure of them)."""
    return [confidence < threshold for confidence in confidences]


def gold_texts(golds: Any) -> list[str]:
    """A question's acceptable answers as text (one label or a list of them)."""
    labels = golds if isinstance(golds, list | tuple) else [golds]
    return [label if isinstance(label, str) else str(label) for label in labels]


def yes_no_reader(question: str | None, golds: Sequence[str], candidate: str) -> Callable[[str], Read[bool]]:
    """How a reply to the correctness check of ``candidate`` is read (``reader(text).readable``: it said yes or no)."""
    shown = Shown([question, *golds, candidate], correctness_words())
    return lambda text: read_yes_no(text, shown)


async def _check(draw: Draw, question: str | None, golds: list[str], prediction: Any) -> LLMVerdict:
    candidate = read_output(prediction).text
    if candidate is None or not candidate.strip():
        return LLMVerdict(None, None, FailureKind.PARSE_FAILURE, Cost())
    reader = yes_no_reader(question, golds, candidate)
    # Only a reply that says yes or no is cached: a failed one is asked again next time.
    drawn = await draw(correctness_messages(question, golds, candidate), 1, lambda s: reader(s.text).readable)
    cost = Cost().plus(drawn)
    if not drawn.samples:
        return LLMVerdict(None, drawn.detail, drawn.failure or FailureKind.ERROR, cost)
    sample = drawn.samples[0]
    read = reader(sample.text)
    if read.value is not None:
        return LLMVerdict(read.value, read.explanation, None, cost)
    if sample.finish_reason == "length":
        kind = FailureKind.BUDGET_STOP
    elif refused(sample.text) or sample.finish_reason in ("content_filter", "refusal"):
        kind = FailureKind.REFUSAL
    else:
        kind = FailureKind.PARSE_FAILURE
    why = f"reply not read ({read.problem}): " if kind == FailureKind.PARSE_FAILURE and read.problem else ""
    return LLMVerdict(None, why + read.explanation, kind, cost)


async def check_answers(
    caller: ChatCaller,
    questions: Sequence[str | None],
    golds: Sequence[Any],
    predictions: Sequence[Any],
    structured: StructuredOutput | None = None,
) -> list[LLMVerdict]:
    """Ask the LLM whether each answer is correct, at most ``caller.concurrency`` requests in flight.

    :param structured: The formats of structured output to ask in (:func:`verdict_schema`; ``None``: the prompt alone).
    """
    asked = list(zip(questions, golds, predictions, strict=True))
    draw: Draw = caller.draw if structured is None else structured.drawer(caller, "verdict", verdict_schema()).draw
    return await caller.each(lambda one: _check(draw, one[0], gold_texts(one[1]), one[2]), asked)


@dataclass
class Escalation:
    """The judge's verdicts after escalation, column by column, and what the LLM said.

    :param scores: 1 or 0 per answer: the LLM's verdict where it gave one, the judge's elsewhere.
    :param stages: The deciding stage (``llm`` where the LLM decided).
    :param evidence: Why (the LLM's words where it decided).
    :param failure_kinds: ``None`` where right; the judge's kind where wrong (``wrong`` when the LLM overruled a yes).
    :param escalated: Whether each answer was sent to the LLM.
    :param llm_verdicts: The LLM's verdict (``None``: not asked, or no verdict).
    :param llm_explanations: The LLM's reply (an unreadable one after why it was not read).
    :param llm_failures: Why the LLM gave no verdict (the judge's verdict then stands).
    """

    scores: list[int]
    stages: list[str]
    evidence: list[str]
    failure_kinds: list[str | None]
    escalated: list[bool]
    llm_verdicts: list[bool | None]
    llm_explanations: list[str | None]
    llm_failures: list[str | None]


def merge_verdicts(verdicts: Sequence[Any], unsure: Sequence[bool], answers: Sequence[LLMVerdict]) -> Escalation:
    """The judge's ``verdicts`` with the LLM's ``answers`` (one per unsure verdict, in order) put in."""
    merged = Escalation(
        [verdict.score for verdict in verdicts],
        [verdict.stage for verdict in verdicts],
        [verdict.evidence for verdict in verdicts],
        [verdict.failure_kind for verdict in verdicts],
        list(unsure),
        [None] * len(verdicts),
        [None] * len(verdicts),
        [None] * len(verdicts),
    )
    asked = iter(answers)
    for index, escalated in enumerate(unsure):
        if not escalated:
            continue
        answer = next(asked)
        merged.llm_verdicts[index], merged.llm_explanations[index] = answer.correct, answer.explanation
        merged.llm_failures[index] = answer.failure_kind
        if answer.correct is None:
            continue
        merged.scores[index], merged.stages[index] = int(answer.correct), "llm"
        merged.evidence[index] = f"LLM ({'yes' if answer.correct else 'no'}): {answer.explanation or ''}".strip()
        if answer.correct:
            merged.failure_kinds[index] = None
        elif merged.failure_kinds[index] is None:
            merged.failure_kinds[index] = FailureKind.WRONG
    return merged
