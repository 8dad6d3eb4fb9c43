"""AnswerJudgeEvaluator's escalation: which verdicts go to an LLM (or are left to a person), and the columns after."""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from haystack.core.serialization import component_to_dict

from answer_eval.evaluators.judge.cascade import JudgeVerdict
from answer_eval.evaluators.judge.escalation import LLMVerdict, check_answers, merge_verdicts, needs_escalation
from answer_eval.evaluators.judge.selective import Calibration, Selection, calibration_set_names, choose_threshold
from answer_eval.llm.calls import Usage
from haystack_integrations.components.evaluators.answer_eval._checks import check_names, check_number
from haystack_integrations.components.evaluators.answer_eval._llm import LLMLimits, check_limits, deserialize_generator

__all__ = ["DEFAULT_ESCALATE_BELOW", "EscalationSettings"]

logger = logging.getLogger(__name__)

DEFAULT_ESCALATE_BELOW = 0.8
"""With an LLM to escalate to and no threshold or target: verdicts a person agrees with less than 80% of the time."""

Work = Callable[[], Awaitable[list[LLMVerdict]]]


def _unit(name: str, value: float | None, *, closed: bool) -> None:
    check_number(name, value, optional=True)
    if value is None:
        return
    inside = 0.0 <= value <= 1.0 if closed else 0.0 < value < 1.0
    if not inside or math.isnan(value):
        raise ValueError(f"{name} must be in {'[0, 1]' if closed else '(0, 1)'}, got {value}")


def _calibration_sets(value: Any, target_agreement: float | None) -> list[str] | None:
    """``calibration_sets`` checked: ``None`` (every set), or known sets, each once, with a target to choose for.

    An empty list used to mean every set, and a set name was read only with ``target_agreement``:
    both hid a mistake, so both are refused here, where ``from_dict`` passes too.
    """
    if value is None:
        return None
    names = check_names("calibration_sets", value)
    known = calibration_set_names()
    sets = f"the known sets are {', '.join(known)} (None: all of them)"
    if not names:
        raise ValueError(f"calibration_sets is empty (no sets): {sets}")
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"calibration_sets: unknown or no sets {unknown}; {sets}")
    repeated = sorted(name for name, times in Counter(names).items() if times > 1)
    if repeated:
        raise ValueError(f"calibration_sets names {', '.join(repeated)} more than once")
    if target_agreement is None:
        raise ValueError(
            "calibration_sets chooses the data target_agreement's threshold must hold on; "
            "without target_agreement it does nothing: give target_agreement, or leave calibration_sets None"
        )
    return names


class EscalationSettings:
    """The escalation options of AnswerJudgeEvaluator, the threshold they give, and the LLM's limits."""

    def __init__(
        self,
        generator: Any,
        escalate_below: float | None,
        target_agreement: float | None,
        delta: float,
        limits: dict[str, Any],
        calibration_sets: list[str] | None = None,
    ) -> None:
        """Check the options and choose the threshold (``ValueError`` naming a bad one)."""
        _unit("escalate_below", escalate_below, closed=True)
        _unit("target_agreement", target_agreement, closed=False)
        _unit("delta", delta, closed=False)
        if escalate_below is not None and target_agreement is not None:
            raise ValueError("give escalate_below or target_agreement, not both")
        self.escalate_below, self.target_agreement, self.delta = escalate_below, target_agreement, delta
        self.calibration_sets = _calibration_sets(calibration_sets, target_agreement)
        check_limits(**limits)
        self.generator = generator
        self.limits = limits
        self.llm = None if generator is None else LLMLimits(generator, sampling="calls", name="escalate_to", **limits)
        self.selection: Selection | None = None
        self.threshold = self._threshold()

    def _threshold(self) -> float | None:
        if self.escalate_below is not None:
            return self.escalate_below
        if self.target_agreement is not None:
            sources = Calibration.load_sources(sets=self.calibration_sets)
            self.selection = choose_threshold(self.target_agreement, self.delta, sources)
            if not self.selection.guarantee_met:
                logger.warning(
                    "AnswerJudgeEvaluator: no threshold keeps verdicts that agree with people %.0f%% of the time "
                    "with probability %.0f%% on the calibration data; every verdict is %s",
                    100 * self.target_agreement,
                    100 * (1 - self.delta),
                    "escalated" if self.generator is not None else "abstained",
                )
            return self.selection.threshold
        return DEFAULT_ESCALATE_BELOW if self.generator is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The init parameters (the generator serialised as Haystack serialises components)."""
        generator = None if self.generator is None else component_to_dict(obj=self.generator, name="escalate_to")
        return {
            "escalate_to": generator,
            "escalate_below": self.escalate_below,
            "target_agreement": self.target_agreement,
            "delta": self.delta,
            "calibration_sets": self.calibration_sets,
            **self.limits,
        }

    @staticmethod
    def deserialize(data: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``data`` with ``init_parameters["escalate_to"]`` made a generator again (when there is one)."""
        return deserialize_generator(data, key="escalate_to")

    def unsure(self, verdicts: Sequence[JudgeVerdict]) -> list[bool]:
        """Which verdicts are below the threshold (none without one)."""
        if self.threshold is None:
            return [False] * len(verdicts)
        return needs_escalation([verdict.confidence for verdict in verdicts], self.threshold)

    def work(
        self, verdicts: Sequence[JudgeVerdict], golds: Sequence[Any], predictions: Sequence[Any], questions: Any
    ) -> Work | None:
        """The escalation requests for the unsure verdicts (``None`` when nothing is sent to an LLM)."""
        unsure = self.unsure(verdicts)
        if self.llm is None or not any(unsure):
            return None
        llm, chosen = self.llm, [index for index, flag in enumerate(unsure) if flag]
        asked = [None if questions is None else questions[i] for i in chosen]
        return lambda: check_answers(llm.caller, asked, [golds[i] for i in chosen], [predictions[i] for i in chosen])

    def run_sync(self, work: Work | None) -> tuple[list[LLMVerdict], Usage]:
        """The LLM's verdicts, from sync code, and what they cost."""
        return ([], Usage()) if work is None or self.llm is None else self.llm.run_sync(work)

    async def run_async(self, work: Work | None) -> tuple[list[LLMVerdict], Usage]:
        """The LLM's verdicts, in the running event loop, and what they cost."""
        return ([], Usage()) if work is None or self.llm is None else await self.llm.run_async(work)

    def columns(self, verdicts: Sequence[JudgeVerdict], ran: tuple[Sequence[LLMVerdict], Usage]) -> dict[str, Any]:
        """The outputs the escalation decides: scores, stages, evidence, failure kinds, and what the LLM said."""
        answers, usage = ran
        unsure = self.unsure(verdicts)
        escalating = self.llm is not None
        merged = merge_verdicts(verdicts, unsure if escalating else [False] * len(verdicts), answers)
        abstained = [False] * len(verdicts) if escalating else unsure
        return {
            "scores": merged.scores,
            "evidence": merged.evidence,
            "stages": merged.stages,
            "failure_kinds": merged.failure_kinds,
            "escalated": merged.escalated,
            "llm_verdicts": merged.llm_verdicts,
            "llm_explanations": merged.llm_explanations,
            "llm_failures": merged.llm_failures,
            "escalated_share": sum(merged.escalated) / len(verdicts),
            "abstained": abstained,
            "abstained_share": sum(abstained) / len(verdicts),
            "threshold": self.threshold,
            "usage": usage.as_dict(),
        }
