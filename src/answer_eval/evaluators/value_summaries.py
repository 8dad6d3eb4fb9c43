"""The summaries of evaluators that give values rather than verdicts: rewards by question type, metric means.

Both hold exact sums (:class:`answer_eval.stats.written_numbers.ExactSum`), so a mean is the same however the
rows were split (``--jobs`` chunks, Dask partitions, a resumed run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_eval.errors import count_failures
from answer_eval.evaluators.summaries import Summary, add_kinds, exact_state, from_exact_state
from answer_eval.stats.written_numbers import ExactSum

__all__ = ["MetricsSummary", "TypedSummary"]


@dataclass
class TypedSummary(Summary):
    """What scoring by question type found (``answer-eval typed``).

    :param total: The exact sum of the rewards (see :class:`answer_eval.stats.written_numbers.ExactSum`).
    :param per_type: Question type to the exact sum (and count) of its rewards, in order of first appearance.
    :param failure_counts: Failure kind to count.
    :param type_name: Names a row's question type as the summary counts it (the canonical name).
    """

    total: ExactSum = field(default_factory=ExactSum)
    per_type: dict[str, ExactSum] = field(default_factory=dict)
    failure_counts: dict[str, int] = field(default_factory=lambda: count_failures(()))
    type_name: Callable[[Any], str] = field(default=str, repr=False, compare=False)

    def add(self, question_type: str, reward: float, failure_kind: str | None) -> None:
        """Count one scored row."""
        self.items += 1
        self.total.add(reward)
        sums = self.per_type.get(question_type)
        if sums is None:
            sums = self.per_type[question_type] = ExactSum()
        sums.add(reward)
        if failure_kind is not None:
            self.failure_counts[failure_kind] = self.failure_counts.get(failure_kind, 0) + 1

    def add_rows(self, inputs: Mapping[str, Sequence[Any]], outputs: Mapping[str, Sequence[Any]]) -> None:
        """Count each row's ``reward`` and ``failure_kind`` under its question type (role ``type``)."""
        rewards = outputs["reward"]
        types = inputs.get("type") or [None] * len(rewards)
        for given, reward, kind in zip(types, rewards, outputs["failure_kind"], strict=True):
            self.add(self.type_name(given), reward, kind)

    def merge(self, other: Any) -> None:
        """Add another summary's rows."""
        self.items += other.items
        self.total.merge(other.total)
        for name, sums in other.per_type.items():
            self.per_type.setdefault(name, ExactSum()).merge(sums)
        add_kinds(self.failure_counts, other.failure_counts)
        self.invalid_lines += other.invalid_lines

    @property
    def score(self) -> float:
        """The mean reward."""
        return self.total.value / self.items

    def type_means(self) -> dict[str, dict[str, float | int]]:
        """Question type to ``{"score": mean reward, "count": rows}``."""
        return {name: {"score": sums.value / sums.count, "count": sums.count} for name, sums in self.per_type.items()}

    def counts(self) -> dict[str, Any]:
        """Items, the mean reward, per-type means, failure kinds."""
        return {
            "path": self.path,
            "items": self.items,
            "score": self.score,
            "per_type": self.type_means(),
            "failure_counts": self.failure_counts,
            "invalid_lines": self.invalid_lines,
            "output": self.output,
        }

    def lines(self, command: str) -> list[str]:
        """The mean reward, per-type means and counts, failure kinds."""
        width = max([24, *(len(name) + 4 for name in self.per_type)])
        lines = [
            f"answer-eval {command}: {self.path}",
            f"  {'items':<{width}} {self.items}",
            f"  {'mean reward':<{width}} {self.score:.4f}",
            f"  {'per type':<{width}} {'mean':<8} count",
        ]
        for name, means in self.type_means().items():
            lines.append(f"    {name:<{width - 2}} {means['score']:.4f}   {means['count']}")
        if self.invalid_lines:
            lines.append(f"  {'invalid lines':<{width}} {self.invalid_lines} (skipped)")
        failures = {kind: number for kind, number in self.failure_counts.items() if number}
        lines.append(f"  {'failure kinds':<{width}}" + ("" if failures else " none"))
        lines.extend(f"    {kind:<{width - 2}} {number}" for kind, number in failures.items())
        if self.output:
            lines.append(f"  {'output':<{width}} {self.output}")
        return lines

    def state(self) -> dict[str, Any]:
        """Items, the exact sums and the failure kinds."""
        per_type = {name: exact_state(sums) for name, sums in self.per_type.items()}
        return {
            "items": self.items,
            "total": exact_state(self.total),
            "per_type": per_type,
            "failures": self.failure_counts,
        }

    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""
        self.items, self.total = int(state["items"]), from_exact_state(state["total"])
        self.per_type = {str(name): from_exact_state(sums) for name, sums in state["per_type"].items()}
        self.failure_counts = dict(state["failures"])


@dataclass
class MetricsSummary(Summary):
    """Per-row metrics (``answer-eval metrics`` and ``tools``): each metric's mean, corpus values, failure kinds.

    :param metrics: The metric names, in column order.
    :param sums: Metric name to the exact sum of its values.
    :param failure_counts: Failure kind to count.
    :param corpus: Corpus-level values (``bleu``), filled in by :meth:`finish`.
    :param notes: Metric name to a note printed beside it (the ROUGE type).
    :param corpus_stats: Adds a batch's corpus statistics (``(state, inputs)``; ``None``: no corpus value).
    :param corpus_value: The corpus values from the statistics.
    """

    metrics: Sequence[str] = ()
    sums: dict[str, ExactSum] = field(default_factory=dict)
    failure_counts: dict[str, int] = field(default_factory=lambda: count_failures(()))
    corpus: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    stats: list[int] | None = None
    """Corpus statistics that add up over rows (BLEU's n-gram matches and totals, lengths), if any."""
    corpus_stats: Callable[[list[int], Mapping[str, Sequence[Any]]], None] | None = field(default=None, repr=False)
    corpus_value: Callable[[list[int]], dict[str, float]] | None = field(default=None, repr=False)

    def add(self, row: Mapping[str, Any]) -> None:
        """Count one output row: its metric columns and its ``failure_kind``."""
        self.items += 1
        for name in self.metrics:
            sums = self.sums.get(name)
            if sums is None:
                sums = self.sums[name] = ExactSum()
            sums.add(row[name])
        kind = row.get("failure_kind")
        if kind is not None:
            self.failure_counts[kind] = self.failure_counts.get(kind, 0) + 1

    def add_rows(self, inputs: Mapping[str, Sequence[Any]], outputs: Mapping[str, Sequence[Any]]) -> None:
        """Count each row's metric columns and failure kind, and add its corpus statistics."""
        names = list(outputs)
        for values in zip(*outputs.values(), strict=True):
            self.add(dict(zip(names, values, strict=True)))
        if self.corpus_stats is not None and self.stats is not None:
            self.corpus_stats(self.stats, inputs)

    def merge(self, other: Any) -> None:
        """Add another summary's rows (and corpus statistics)."""
        self.items += other.items
        for name, sums in other.sums.items():
            self.sums.setdefault(name, ExactSum()).merge(sums)
        add_kinds(self.failure_counts, other.failure_counts)
        self.invalid_lines += other.invalid_lines
        if self.stats is not None and other.stats is not None:
            self.stats = [mine + theirs for mine, theirs in zip(self.stats, other.stats, strict=True)]

    def finish(self) -> None:
        """Fill in the corpus values from the statistics added up."""
        if self.corpus_value is not None and self.stats is not None:
            self.corpus.update(self.corpus_value(self.stats))

    def means(self) -> dict[str, float]:
        """Metric name to its mean over the rows."""
        return {name: (self.sums[name].value if name in self.sums else 0.0) / self.items for name in self.metrics}

    def counts(self) -> dict[str, Any]:
        """Items, the means, corpus values, notes, failure kinds."""
        return {
            "path": self.path,
            "items": self.items,
            "metrics": self.means(),
            "corpus": self.corpus,
            "notes": self.notes,
            "failure_counts": self.failure_counts,
            "invalid_lines": self.invalid_lines,
            "output": self.output,
        }

    def lines(self, command: str) -> list[str]:
        """The mean of every metric, corpus values, failure kinds."""
        lines = [f"answer-eval {command}: {self.path}", f"  items{' ' * 20}{self.items}"]
        for name, mean in self.means().items():
            line = f"  {name:<24} {mean:.4f}"
            if name in self.corpus:
                line += f"   corpus {self.corpus[name]:.4f}"
            if name in self.notes:
                line += f"   ({self.notes[name]})"
            lines.append(line)
        if self.invalid_lines:
            lines.append(f"  invalid lines{' ' * 12}{self.invalid_lines} (skipped)")
        failures = {kind: number for kind, number in self.failure_counts.items() if number}
        lines.append("  failure kinds" + ("" if failures else "            none"))
        lines.extend(f"    {kind:<22} {number}" for kind, number in failures.items())
        if self.output:
            lines.append(f"  output{' ' * 19}{self.output}")
        return lines

    def state(self) -> dict[str, Any]:
        """Items, the exact sums, the failure kinds and the corpus statistics."""
        sums = {name: exact_state(total) for name, total in self.sums.items()}
        return {"items": self.items, "sums": sums, "failures": self.failure_counts, "stats": self.stats}

    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""
        self.items = int(state["items"])
        self.sums = {str(name): from_exact_state(total) for name, total in state["sums"].items()}
        self.failure_counts = dict(state["failures"])
        self.stats = None if state["stats"] is None else [int(value) for value in state["stats"]]
