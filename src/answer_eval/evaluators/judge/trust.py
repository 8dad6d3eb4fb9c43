"""Which of the judge's verdicts are trusted: the confidence threshold its options give, and the calibration behind it.

A verdict is trusted when its ``confidence`` is at least the threshold; the others are abstained
(left for a person) or escalated to an LLM. The threshold is, in order:

1. ``escalate_below``, as given (no promise attached);
2. with ``target_agreement``, chosen by fixed-sequence testing
   (:func:`~answer_eval.evaluators.judge.guarantee.choose_threshold`) on the user's calibration
   (``calibration``: their own labels, the promise holding on data like theirs), else on the
   shipped calibration (:func:`default_selection`: NQ301 and EVOUNA, or ``calibration_sets``,
   each on its own);
3. with an LLM and neither, :data:`~answer_eval.evaluators.judge.judge_options.DEFAULT_ESCALATE_BELOW`;
4. else none: every verdict is trusted.

The cascade (:mod:`answer_eval.evaluators.judge.escalation`): with ``target_agreement``, an LLM, and
a user calibration holding an LLM level, the judge's threshold and the LLM's are chosen each at
``delta / 2``; an LLM verdict below the LLM's threshold is abstained (for a person). The LLM must be
the grader the level was calibrated with (:func:`~answer_eval.evaluators.judge.escalation.check_grader`).

The summary of ``answer-eval judge`` with trust (:class:`JudgeSummary`): a plain judge's summary is
:class:`~answer_eval.evaluators.summaries.FileSummary` with its stages; with a threshold
(``--target-agreement``, ``--escalate-below``, ``--escalate-model``) the same figures, then the
threshold and where it was chosen, the agreement promised, the rows kept (trusted) and abstained,
and with an LLM the rows escalated, the LLM's verdicts and failures and the requests spent (a
jury's: its judges' agreement too). A cascade (an LLM level in the calibration) says the share
decided by the judge, by the LLM and left for a person, the requests and tokens, and the agreement
promised over every kept verdict with its delta. Counts only (a jury's: the rows every judge gave a
verdict on), so Dask's partitions add up exactly and ``--resume`` restores them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_eval.evaluators.judge.calibration import Calibration
from answer_eval.evaluators.judge.escalation import cascade_thresholds, check_grader, verdicts_agreement
from answer_eval.evaluators.judge.guarantee import Selection, choose_threshold
from answer_eval.evaluators.judge.judge_options import DEFAULT_ESCALATE_BELOW, JudgeOptions
from answer_eval.evaluators.judge.user_calibration import (
    UserCalibration,
)
from answer_eval.evaluators.judge.user_calibration import default_selection as shipped_default
from answer_eval.evaluators.summaries import FileSummary, add_kinds, count_of

__all__ = ["JudgeSummary", "Trust", "choose_trust", "default_selection"]

logger = logging.getLogger(__name__)


def default_selection(target_agreement: float, delta: float, sets: Sequence[str] | None) -> Selection:
    """The threshold for a target without a calibration of the user's.

    With ``sets`` (``calibration_sets``), the named shipped sets, each tested on its own. Without,
    :func:`~answer_eval.evaluators.judge.user_calibration.default_selection`: the shipped NQ301 and
    EVOUNA sets (EfficientQA's stricter annotators let no threshold pass), with a warning that the
    promise assumes annotators like theirs and to calibrate on your own labels. Every layer (the
    component, ``answer-eval judge``, Dask) comes through here.
    """
    if sets is None:
        return shipped_default(target_agreement, delta)
    return choose_threshold(target_agreement, delta, Calibration.load_sources(sets=sets))


@dataclass(frozen=True)
class Trust:
    """The threshold the judge's options give, and where it comes from.

    :param threshold: Trust a verdict when ``confidence >= threshold``; ``None``: every verdict is
        trusted; ``math.inf``: none is (no threshold reaches the target).
    :param selection: With ``target_agreement``, the test's choice and what it keeps of the calibration.
    :param source: Where the threshold comes from: chosen on ``"yours"`` or the ``"shipped"``
        calibration, ``"given"`` (``escalate_below``), the ``"default"`` with an LLM, or ``None``.
    :param llm_selection: The cascade's LLM level (``None``: every LLM verdict is trusted, as without a
        cascade); :attr:`selection` is then the judge level's, both at ``delta / 2``.
    """

    threshold: float | None
    selection: Selection | None = None
    source: str | None = None
    llm_selection: Selection | None = None

    @property
    def cascade(self) -> bool:
        """Whether the LLM's verdicts pass a threshold of their own (the cascade)."""
        return self.llm_selection is not None

    @property
    def promised(self) -> float | None:
        """The agreement promised for the trusted verdicts (``None``: no promise, or no threshold passed).

        A cascade promises it whenever either level keeps verdicts: each level that keeps some agrees at
        least the target (each at ``delta / 2``), and so does their mixture.
        """
        levels = [self.selection, self.llm_selection] if self.cascade else [self.selection]
        if not any(level is not None and level.guarantee_met for level in levels):
            return None
        assert self.selection is not None
        return self.selection.target_agreement

    def llm_keeps(self, confidence: float) -> bool:
        """Whether an LLM verdict with this confidence is kept (every one without a cascade)."""
        return self.llm_selection is None or confidence >= self.llm_selection.threshold

    def unsure(self, confidences: Sequence[float]) -> list[bool]:
        """Which verdicts are not trusted (none without a threshold)."""
        if self.threshold is None:
            return [False] * len(confidences)
        return [confidence < self.threshold for confidence in confidences]

    def as_dict(self) -> dict[str, Any]:
        """The figures a summary shows (JSON-ready: no infinity, ``guarantee_met`` says when nothing is trusted)."""
        selection = self.selection
        finite = self.threshold is not None and math.isfinite(self.threshold)
        data: dict[str, Any] = {"threshold": self.threshold if finite else None, "source": self.source}
        if selection is not None:
            data.update(
                target_agreement=selection.target_agreement,
                delta=selection.delta,
                guarantee_met=selection.guarantee_met,
                calibration_answers=selection.total,
                calibration_kept_share=selection.kept_share,
            )
        llm = self.llm_selection
        if llm is not None:
            data.update(
                cascade=True,
                delta=llm.delta * 2,  # the whole promise's: each level is chosen at half of it
                level_delta=llm.delta,
                llm_threshold=llm.threshold if math.isfinite(llm.threshold) else None,
                llm_guarantee_met=llm.guarantee_met,
                llm_calibration_answers=llm.total,
                llm_calibration_kept_share=llm.kept_share,
            )
        return data


def choose_trust(
    options: JudgeOptions, user: UserCalibration | None, escalating: bool, grader: Mapping[str, Any] | None = None
) -> Trust:
    """The threshold of ``options`` (see the module docstring); a warning when no threshold reaches the target.

    :param grader: The escalation's grader signature
        (:func:`~answer_eval.evaluators.judge.escalation.grader_signature`), checked against a calibration's LLM level.
    :raises CalibrationFileError: For a cascade whose grader differs from the level's, or a target above the level's.
    """
    if options.escalate_below is not None:
        return Trust(options.escalate_below, source="given")
    if options.target_agreement is None:
        return Trust(DEFAULT_ESCALATE_BELOW, source="default") if escalating else Trust(None)
    if escalating and user is not None and user.escalation is not None:
        check_grader(user.escalation.grader, grader or {})
        cascade = cascade_thresholds(user.calibration, user.escalation, options.target_agreement, options.delta)
        if not (cascade.judge.guarantee_met or cascade.llm.guarantee_met):
            logger.warning(
                "the judge: neither the judge's nor the LLM's verdicts agree with people %.0f%% of the time with "
                "probability %.0f%% on the user's calibration; every verdict is abstained",
                100 * options.target_agreement,
                100 * (1 - options.delta / 2),
            )
        return Trust(cascade.judge_threshold, cascade.judge, "yours", cascade.llm)
    if user is not None:
        selection, source = choose_threshold(options.target_agreement, options.delta, user.calibration), "yours"
    else:
        sets = None if options.calibration_sets is None else list(options.calibration_sets)
        selection, source = default_selection(options.target_agreement, options.delta, sets), "shipped"
    if not selection.guarantee_met:
        advice = (
            ""
            if user is not None
            else "; calibrate on about 300 of your own labelled answers (answer-eval "
            "calibrate) and give the file as calibration"
        )
        logger.warning(
            "the judge: no threshold keeps verdicts that agree with people %.0f%% of the time with probability "
            "%.0f%% on the %s calibration data; every verdict is %s%s",
            100 * options.target_agreement,
            100 * (1 - options.delta),
            "user's" if user is not None else "shipped",
            "escalated" if escalating else "abstained",
            advice,
        )
    return Trust(selection.threshold, selection, source)


_COUNTED = ("abstained", "escalated", "llm_verdict", "llm_failure", "calls", "tokens", "llm_judge_verdicts")
_WHERE = {
    "yours": "chosen on your calibration",
    "shipped": "chosen on the shipped calibration",
    "given": "given",
    "default": "the default with an LLM",
}


@dataclass
class JudgeSummary(FileSummary):
    """A judge's figures with its threshold (see the module docstring).

    :param trust: The threshold's figures (:meth:`~answer_eval.evaluators.judge.trust.Trust.as_dict`).
    :param escalating: Whether the untrusted verdicts go to an LLM (else they are abstained).
    :param abstained: Rows whose verdict was not trusted and not escalated.
    :param escalated: Rows sent to the LLM.
    :param llm_verdicts: Escalated rows the LLM gave a verdict on.
    :param llm_failures: Why the LLM gave none, kind to count.
    :param calls: Requests sent to the LLM.
    :param tokens: Tokens (prompt and completion) the LLM reported, counted in a cascade.
    :param judges: A jury's judges (0: one LLM, or none).
    :param judge_rows: A jury's verdicts (one per judge) on each escalated row every judge gave one on, in order.
    """

    trust: Mapping[str, Any] = field(default_factory=dict)
    escalating: bool = False
    abstained: int = 0
    escalated: int = 0
    llm_verdicts: int = 0
    llm_failures: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    tokens: int = 0
    judges: int = 0
    judge_rows: list[list[bool]] = field(default_factory=list)

    @property
    def cascade(self) -> bool:
        """Whether the LLM's verdicts pass a threshold of their own (abstained rows are escalated ones)."""
        return bool(self.trust.get("cascade"))

    def output_columns(self, names: Sequence[str]) -> list[str]:
        """The plain judge's columns and the trust columns (not the LLM's long explanation)."""
        plain = super().output_columns(names)
        return [name for name in names if name in plain or name in _COUNTED]

    def add_rows(self, inputs: Mapping[str, Sequence[Any]], outputs: Mapping[str, Sequence[Any]]) -> None:
        """Count the plain judge's columns, then those of trust."""
        super().add_rows(inputs, outputs)
        self.abstained += sum(map(bool, outputs.get("abstained", ())))
        if not self.escalating:
            return
        self.escalated += sum(map(bool, outputs["escalated"]))
        self.llm_verdicts += sum(1 for verdict in outputs["llm_verdict"] if verdict is not None)
        for kind in outputs["llm_failure"]:
            if kind is not None:
                self.llm_failures[kind] = self.llm_failures.get(kind, 0) + 1
        self.calls += sum(value or 0 for value in outputs["calls"])
        self.tokens += sum(value or 0 for value in outputs.get("tokens", ()))
        if self.judges:
            rows = outputs["llm_judge_verdicts"]
            self.judge_rows += [list(row) for row in rows if row and all(one is not None for one in row)]

    def merge(self, other: Any) -> None:
        """Add another summary's rows."""
        super().merge(other)
        self.abstained += other.abstained
        self.escalated += other.escalated
        self.llm_verdicts += other.llm_verdicts
        add_kinds(self.llm_failures, other.llm_failures)
        self.calls += other.calls
        self.tokens += other.tokens
        self.judge_rows += other.judge_rows

    @property
    def kept(self) -> int:
        """Rows the judge decided, trusted (neither abstained nor escalated; a cascade abstains escalated ones)."""
        return self.items - self.escalated - (0 if self.cascade else self.abstained)

    def counts(self) -> dict[str, Any]:
        """The plain judge's figures, the threshold's, and the rows kept, abstained and escalated."""
        data = super().counts()
        data.update(
            selection=dict(self.trust),
            promised_agreement=self.promised,
            kept=self.kept,
            kept_share=self.kept / self.items if self.items else 0.0,
            abstained=self.abstained,
        )
        if self.escalating:
            data.update(
                escalated=self.escalated,
                llm_verdicts=self.llm_verdicts,
                llm_failures=dict(self.llm_failures),
                calls=self.calls,
            )
        if self.judges:
            data["llm_agreement"] = self.agreement
        if self.cascade:
            data["cascade"] = self._decided()
        return data

    @property
    def agreement(self) -> dict[str, Any]:
        """A jury's Fleiss' kappa over the escalated rows every judge gave a verdict on (as the component's)."""
        return {**verdicts_agreement(self.judge_rows), "judges": self.judges}

    def _decided(self) -> dict[str, Any]:
        """A cascade's rows decided by the judge, by the LLM, left for a person (counts and shares); its cost."""
        counts = {"judge": self.kept, "llm": self.escalated - self.abstained, "person": self.abstained}
        shares = {f"{name}_share": number / self.items if self.items else 0.0 for name, number in counts.items()}
        promise = {"promised_agreement": self.promised, "delta": self.trust.get("delta")}
        return {**counts, **shares, "calls": self.calls, "tokens": self.tokens, **promise}

    @property
    def promised(self) -> float | None:
        """The agreement promised for the kept verdicts (``None``: none promised; a cascade's when a level keeps)."""
        met = self.trust.get("guarantee_met") or (self.cascade and self.trust.get("llm_guarantee_met"))
        return self.trust.get("target_agreement") if met else None

    def lines(self, command: str) -> list[str]:
        """The plain judge's lines, then the threshold, the promise and the rows kept, abstained, escalated."""
        lines = super().lines(command)
        trust = self.trust
        threshold = trust.get("threshold")
        # In a cascade the LLM's level may still keep verdicts when the judge's keeps none.
        none = "none passes: the judge keeps none" if self.cascade else "none passes: no verdict is kept"
        shown = none if threshold is None else f"{threshold:.4f}"
        lines.append(f"  threshold        {shown} ({_WHERE.get(trust.get('source') or '', 'given')})")
        if self.cascade:
            return [*lines, *self._cascade_lines()]
        if "target_agreement" in trust:
            lines.append(self._promise_line())
        share = self.kept / self.items if self.items else 0.0
        lines.append(f"  kept             {self.kept} of {self.items} ({share:.4f})")
        lines.append(f"  abstained        {self.abstained}")
        if self.escalating:
            lines.append(f"  escalated        {self.escalated} (LLM verdicts {self.llm_verdicts})")
            lines.extend(self._failures_lines())
            lines.append(f"  calls            {self.calls}")
        return [*lines, *self._jury_lines()]

    def _jury_lines(self) -> list[str]:
        if not self.judges:
            return []
        kappa = self.agreement["fleiss_kappa"]
        shown = "n/a" if kappa is None else f"{kappa:.4f}"
        rows = len(self.judge_rows)
        return [
            f"  llm agreement    fleiss kappa {shown} over {rows} rows every judge gave a verdict on "
            f"({self.judges} judges)"
        ]

    def _cascade_lines(self) -> list[str]:
        trust, decided = self.trust, self._decided()
        llm = trust.get("llm_threshold")
        lines = [
            f"  llm threshold    {'none passes: no LLM verdict is kept' if llm is None else f'{llm:.4f}'} "
            f"(the cascade: each level chosen at delta {trust['level_delta']:g} on your calibration)",
        ]
        target, delta = trust["target_agreement"], trust["delta"]
        if self.promised is None:
            lines.append(f"  promised         nothing: neither level reaches {target:g} at delta {delta:g}")
        else:
            lines.append(
                f"  promised         agreement >= {target:g} over every kept verdict (judge and LLM) with "
                f"probability >= {1 - delta:g}"
            )
        for name, words in (("judge", "by the judge"), ("llm", "by the LLM"), ("person", "for a person")):
            lines.append(f"  {words:<17}{decided[name]} of {self.items} ({decided[name + '_share']:.4f})")
        lines.extend(self._failures_lines())
        lines.append(f"  calls            {self.calls} ({self.tokens} tokens)")
        return [*lines, *self._jury_lines()]

    def _failures_lines(self) -> list[str]:
        if not self.llm_failures:
            return []
        failures = ", ".join(f"{kind} {number}" for kind, number in sorted(self.llm_failures.items()))
        return [f"  llm failures     {failures}"]

    def _promise_line(self) -> str:
        trust = self.trust
        target, delta = trust["target_agreement"], trust["delta"]
        if not trust.get("guarantee_met"):
            return f"  promised         nothing: no threshold reaches {target:g} at delta {delta:g}"
        kept = trust.get("calibration_kept_share", 0.0)
        return (
            f"  promised         agreement >= {target:g} with probability >= {1 - delta:g} "
            f"(kept {kept:.4f} of {trust.get('calibration_answers')} calibration answers)"
        )

    def state(self) -> dict[str, Any]:
        """The plain judge's counts and trust's."""
        return {
            **super().state(),
            "abstained": self.abstained,
            "escalated": self.escalated,
            "llm_verdicts": self.llm_verdicts,
            "llm_failures": self.llm_failures,
            "calls": self.calls,
            "tokens": self.tokens,
            **({"judge_rows": self.judge_rows} if self.judges else {}),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""
        super().load(state)
        self.abstained, self.escalated = count_of(state["abstained"]), count_of(state["escalated"])
        self.llm_verdicts, self.calls = count_of(state["llm_verdicts"]), count_of(state["calls"])
        self.tokens = count_of(state.get("tokens", 0))  # a checkpoint written before tokens were counted
        self.llm_failures = {str(kind): count_of(number) for kind, number in dict(state["llm_failures"]).items()}
        if self.judges:
            self.judge_rows = [_verdict_row(row, self.judges) for row in state.get("judge_rows", [])]


def _verdict_row(row: Any, judges: int) -> list[bool]:
    """A jury's row of a saved state: one verdict per judge (``ValueError`` for an edited record)."""
    if not isinstance(row, list) or len(row) != judges or not all(isinstance(one, bool) for one in row):
        raise ValueError(f"a jury's row holds one verdict per judge ({judges}), got {str(row)[:80]}")
    return row
