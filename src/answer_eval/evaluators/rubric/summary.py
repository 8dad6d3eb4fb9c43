"""The summary of ``answer-eval rubric``: the grades (or the pairwise wins), the failure kinds and what the run cost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_eval.evaluators.summaries import Summary, add_kinds
from answer_eval.failure_kinds import count_failures
from answer_eval.llm.grading import BASELINE, CANDIDATE, TIE, win_figures

__all__ = ["RubricSummary"]

_COSTS = ("calls", "prompt_tokens", "completion_tokens")


@dataclass
class RubricSummary(Summary):
    """Scores by value and their mean (or wins, losses, ties and flips), failure kinds, calls and tokens.

    :param pairwise: Whether the rows hold pairwise choices rather than scores.
    :param swap: Whether each pair was asked in both orders (so flips can be seen).
    :param grades: Score (or choice) to count, as text (JSON keys).
    :param flips: Pairs whose choice changed with the order.
    :param failure_counts: Failure kind to count.
    :param costs: Requests and tokens spent, over the rows.
    """

    pairwise: bool = False
    swap: bool = True
    grades: dict[str, int] = field(default_factory=dict)
    flips: int = 0
    failure_counts: dict[str, int] = field(default_factory=lambda: count_failures(()))
    costs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COSTS, 0))

    def output_columns(self, names: Sequence[str]) -> list[str]:
        """The grade, the flip, the failure kind and the costs (not the explanation)."""
        wanted = {"score", "choice", "flipped", "failure_kind", *_COSTS}
        return [name for name in names if name in wanted]

    def add_rows(self, inputs: Mapping[str, Sequence[Any]], outputs: Mapping[str, Sequence[Any]]) -> None:
        """Count each row's grade, failure kind and costs."""
        grades = outputs["choice" if self.pairwise else "score"]
        self.items += len(grades)
        for grade in grades:
            if grade is not None:
                self.grades[str(grade)] = self.grades.get(str(grade), 0) + 1
        for kind in outputs["failure_kind"]:
            if kind is not None:
                self.failure_counts[kind] = self.failure_counts.get(kind, 0) + 1
        if self.pairwise:
            self.flips += sum(1 for flipped in outputs["flipped"] if flipped)
        for name in _COSTS:
            self.costs[name] += sum(value or 0 for value in outputs[name])

    def merge(self, other: Any) -> None:
        """Add another summary's rows."""
        self.items += other.items
        self.invalid_lines += other.invalid_lines
        self.flips += other.flips
        add_kinds(self.grades, other.grades)
        add_kinds(self.failure_counts, other.failure_counts)
        add_kinds(self.costs, other.costs)

    @property
    def graded(self) -> int:
        """Rows that got a grade."""
        return sum(self.grades.values())

    def _figures(self) -> dict[str, Any]:
        if self.pairwise:
            wins, losses, ties = (self.grades.get(name, 0) for name in (CANDIDATE, BASELINE, TIE))
            graded = wins + losses + ties
            rate = self.flips / graded if graded and self.swap else None
            flips = {"position_flips": self.flips if self.swap else None, "flip_rate": rate}
            return {**win_figures(wins, losses, ties), **flips}
        total = sum(int(value) * count for value, count in self.grades.items())
        return {
            "mean_score": total / self.graded if self.graded else None,
            "scores": dict(sorted(self.grades.items(), key=lambda pair: int(pair[0]))),
        }

    def counts(self) -> dict[str, Any]:
        """Items, graded rows, the figures, failure kinds and costs."""
        return {
            "path": self.path,
            "items": self.items,
            "graded": self.graded,
            **self._figures(),
            "failure_counts": self.failure_counts,
            **self.costs,
            "invalid_lines": self.invalid_lines,
            "output": self.output,
        }

    def lines(self, command: str) -> list[str]:
        """The counts as aligned text."""
        lines = [f"answer-eval {command}: {self.path}", f"  items            {self.items}"]
        lines.append(f"  graded           {self.graded}")
        for name, value in self._figures().items():
            shown = f"{value:.4f}" if isinstance(value, float) else "n/a" if value is None else str(value)
            if isinstance(value, dict):
                shown = "  ".join(f"{grade}: {count}" for grade, count in value.items()) or "none"
            lines.append(f"  {name:<16} {shown}")
        if self.invalid_lines:
            lines.append(f"  invalid lines    {self.invalid_lines} (skipped)")
        lines.append("  failure kinds")
        lines.extend(f"    {kind:<16} {number}" for kind, number in self.failure_counts.items())
        lines.append("  " + "  ".join(f"{name} {self.costs[name]}" for name in _COSTS))
        if self.output:
            lines.append(f"  output           {self.output}")
        return lines

    def state(self) -> dict[str, Any]:
        """Items, grades, flips, failure kinds and costs."""
        return {
            "items": self.items,
            "grades": self.grades,
            "flips": self.flips,
            "failures": self.failure_counts,
            "costs": self.costs,
        }

    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""
        self.items, self.flips = int(state["items"]), int(state["flips"])
        self.grades = {str(k): int(v) for k, v in state["grades"].items()}
        self.failure_counts = dict(state["failures"])
        self.costs = {name: int(state["costs"][name]) for name in _COSTS}
