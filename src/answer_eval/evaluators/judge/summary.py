"""The summary of ``answer-eval judge`` with trust: the threshold, what it kept, abstained or escalated, and the cost.

A plain judge's summary is :class:`~answer_eval.evaluators.summaries.FileSummary` with its stages;
with a threshold (``--target-agreement``, ``--escalate-below``, ``--escalate-model``) it is a
:class:`JudgeSummary`: the same figures, then the threshold and where it was chosen, the agreement
promised, the rows kept (trusted) and abstained, and with an LLM the rows escalated, the LLM's
verdicts and failures and the requests spent. A cascade (an LLM level in the calibration) says
the share decided by the judge, by the LLM and left for a person, the requests and tokens, and the
agreement promised over every kept verdict with its delta. Counts only, so Dask's partitions add up exactly and
``--resume`` restores them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_eval.evaluators.summaries import FileSummary, add_kinds, count_of

__all__ = ["JudgeSummary"]

_COUNTED = ("abstained", "escalated", "llm_verdict", "llm_failure", "calls", "tokens")
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
    """

    trust: Mapping[str, Any] = field(default_factory=dict)
    escalating: bool = False
    abstained: int = 0
    escalated: int = 0
    llm_verdicts: int = 0
    llm_failures: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    tokens: int = 0

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

    def merge(self, other: Any) -> None:
        """Add another summary's rows."""
        super().merge(other)
        self.abstained += other.abstained
        self.escalated += other.escalated
        self.llm_verdicts += other.llm_verdicts
        add_kinds(self.llm_failures, other.llm_failures)
        self.calls += other.calls
        self.tokens += other.tokens

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
        if self.cascade:
            data["cascade"] = self._decided()
        return data

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
        return lines

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
        return lines

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
        }

    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""
        super().load(state)
        self.abstained, self.escalated = count_of(state["abstained"]), count_of(state["escalated"])
        self.llm_verdicts, self.calls = count_of(state["llm_verdicts"]), count_of(state["calls"])
        self.tokens = count_of(state.get("tokens", 0))  # a checkpoint written before tokens were counted
        self.llm_failures = {str(kind): count_of(number) for kind, number in dict(state["llm_failures"]).items()}
