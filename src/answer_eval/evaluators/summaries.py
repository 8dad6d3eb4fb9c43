"""The summaries of a run: what every evaluator's results add up to, printed and saved the same way everywhere.

A :class:`Summary` adds scored rows (:meth:`Summary.add_rows`: input columns by role, output
columns by name), merges the summary of the rows that follow (:meth:`Summary.merge`, exact: the
partitions of a Dask run add up to the local run's summary, bit for bit), goes to JSON data and
back (:meth:`Summary.snapshot`, :meth:`Summary.restore`: what a Dask partition sends back, never a
pickle) and prints itself (:meth:`Summary.text`, :meth:`Summary.to_json`).

The summaries of evaluators that give values rather than verdicts (:class:`TypedSummary`: rewards by
question type; :class:`MetricsSummary`: metric means) hold exact sums
(:class:`answer_eval.stats.written_numbers.ExactSum`), so a mean is the same however the rows were split
(``--jobs`` chunks, Dask partitions, a resumed run).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from answer_eval.errors import count_failures
from answer_eval.stats.significance import wilson_interval
from answer_eval.stats.written_numbers import ExactSum

__all__ = ["FileSummary", "MetricsSummary", "Summary", "TypedSummary", "add_kinds", "count_of"]


_S = TypeVar("_S", bound="Summary")


MAX_COUNT = 2**53
"""The largest count a saved summary may hold: every count up to it is exact as a float, and no file has more rows."""


def count_of(value: Any) -> int:
    """A count from saved state (a checkpoint's record): an int from 0 to :data:`MAX_COUNT`; else ``ValueError``.

    The record is a file that can be edited or damaged: a count of 400 digits, a negative one or
    ``1e999`` would make every figure built on it wrong, or raise deep inside the statistics.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise ValueError("a count is not a whole number from 0 to 2**53")
    return value


def exact_state(total: ExactSum) -> list[Any]:
    """An exact sum as JSON data (its count, scaled integer and non-finite part)."""
    return list(total.__getstate__())


def from_exact_state(state: Sequence[Any]) -> ExactSum:
    """The exact sum :func:`exact_state` gave."""
    total = ExactSum()
    total.__setstate__((int(state[0]), int(state[1]), float(state[2])))
    return total


def add_kinds(counts: dict[str, int], kinds: Mapping[str, int]) -> None:
    """Add failure-kind counts into ``counts`` (a kind new to it goes last)."""
    for kind, number in kinds.items():
        counts[kind] = counts.get(kind, 0) + number


@dataclass
class Summary(ABC):
    """The base of every summary: the input file, the results file and the lines skipped as invalid."""

    path: str = ""
    output: str | None = None
    items: int = 0
    """Rows scored."""
    invalid_lines: int = 0
    signature: str = ""
    """The signature of the evaluator whose results these are (see :meth:`Options.signature`)."""
    reads: tuple[str, ...] = ()
    """The input roles :meth:`add_rows` reads (besides the output columns)."""

    @abstractmethod
    def add_rows(self, inputs: Mapping[str, Sequence[Any]], outputs: Mapping[str, Sequence[Any]]) -> None:
        """Count scored rows: their input columns by role and their output columns by name."""

    @abstractmethod
    def merge(self, other: Any) -> None:
        """Add the rows another summary counted (the summary of the rows that follow these)."""

    @abstractmethod
    def counts(self) -> dict[str, Any]:
        """The summary's own figures as one JSON-ready mapping (:meth:`to_json` adds the signature)."""

    @abstractmethod
    def lines(self, command: str) -> list[str]:
        """The summary's own lines of text (:meth:`text` adds the signature)."""

    def output_columns(self, names: Sequence[str]) -> list[str]:
        """Of the evaluator's output columns ``names``, those :meth:`add_rows` reads (all by default)."""
        return list(names)

    def finish(self) -> None:  # noqa: B027 - a hook: only corpus metrics have something to finish
        """Compute what is known only once every row is in (a corpus value); nothing by default."""

    def to_json(self) -> dict[str, Any]:
        """The summary as one JSON-ready mapping (what ``--format json`` prints), with the signature."""
        data = self.counts()
        if self.signature:
            data["signature"] = self.signature
        return data

    def text(self, command: str) -> str:
        """The summary as aligned text, headed ``answer-eval <command>: <path>``, the signature last."""
        lines = self.lines(command)
        if self.signature:
            lines.append(f"  signature        {self.signature}")
        return "\n".join(lines)

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """The counts as JSON data (see :meth:`snapshot`)."""

    @abstractmethod
    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""

    def snapshot(self) -> dict[str, Any]:
        """The counts as JSON data, which :meth:`restore` reads back (the run's names are its own)."""
        return {"invalid_lines": self.invalid_lines, **self.state()}

    def restore(self, data: Mapping[str, Any]) -> None:
        """Take the counts of a :meth:`snapshot` (of a summary of the same evaluator).

        The counts replace this summary's; its input, output and signature stay this run's own.
        """
        self.invalid_lines = count_of(data["invalid_lines"])
        self.load(data)


@dataclass
class FileSummary(Summary):
    """Right answers and failure kinds (``answer-eval score``), and the deciding stages (``judge``).

    :param correct: Rows whose answer is right.
    :param failure_counts: Failure kind to count, every standard kind present.
    :param stages: The judge's deciding stage to count; ``None`` for an evaluator without stages.
    """

    correct: int = 0
    failure_counts: dict[str, int] = field(default_factory=lambda: count_failures(()))
    stages: dict[str, int] | None = None

    @property
    def score(self) -> float:
        """The share of right answers."""
        return self.correct / self.items

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Wilson confidence interval of the score."""
        return wilson_interval(self.correct, self.items, confidence)

    def output_columns(self, names: Sequence[str]) -> list[str]:
        """``correct``, ``failure_kind`` (and ``stage``): not the long ``evidence`` and ``outcome``."""
        wanted = ("correct", "failure_kind", "stage") if self.stages is not None else ("correct", "failure_kind")
        return [name for name in names if name in wanted]

    def add_rows(self, inputs: Mapping[str, Sequence[Any]], outputs: Mapping[str, Sequence[Any]]) -> None:
        """Count the ``correct`` and ``failure_kind`` columns (and ``stage`` when counting stages)."""
        correct = outputs["correct"]
        self.items += len(correct)
        self.correct += sum(map(bool, correct))
        counts = self.failure_counts
        # Mostly one row at a time (a command counts each row it writes): a plain loop, no Counter.
        for kind in outputs["failure_kind"]:
            if kind is not None:
                counts[kind] = counts.get(kind, 0) + 1
        if self.stages is not None:
            for stage in outputs["stage"]:
                self.stages[stage] = self.stages.get(stage, 0) + 1

    def merge(self, other: Any) -> None:
        """Add another summary's rows."""
        self.items += other.items
        self.correct += other.correct
        self.invalid_lines += other.invalid_lines
        add_kinds(self.failure_counts, other.failure_counts)
        if self.stages is not None and other.stages is not None:
            add_kinds(self.stages, other.stages)

    def counts(self) -> dict[str, Any]:
        """Items, right answers, score with its Wilson interval, failure kinds (and stages)."""
        low, high = self.interval()
        data = {
            "path": self.path,
            "items": self.items,
            "correct": self.correct,
            "score": self.score,
            "interval": [low, high],
            "confidence": 0.95,
            "failure_counts": self.failure_counts,
            "invalid_lines": self.invalid_lines,
            "output": self.output,
        }
        if self.stages is not None:
            data["stages"] = dict(sorted(self.stages.items()))
        return data

    def lines(self, command: str) -> list[str]:
        """Items, right answers, the score with its interval, failure kinds (and stages)."""
        low, high = self.interval()
        lines = [
            f"answer-eval {command}: {self.path}",
            f"  items            {self.items}",
            f"  correct          {self.correct}",
            f"  score            {self.score:.4f}   95% CI [{low:.4f}, {high:.4f}] (Wilson)",
        ]
        if self.invalid_lines:
            lines.append(f"  invalid lines    {self.invalid_lines} (skipped)")
        lines.append("  failure kinds")
        lines.extend(f"    {kind:<16} {number}" for kind, number in self.failure_counts.items())
        if self.output:
            lines.append(f"  output           {self.output}")
        if self.stages is not None:
            lines.append("  stages")
            lines.extend(f"    {stage:<16} {number}" for stage, number in sorted(self.stages.items()))
        return lines

    def state(self) -> dict[str, Any]:
        """Items, right answers, failure kinds and stages."""
        return {"items": self.items, "correct": self.correct, "failures": self.failure_counts, "stages": self.stages}

    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""
        self.items, self.correct = count_of(state["items"]), count_of(state["correct"])
        if self.correct > self.items:
            raise ValueError(f"{self.correct} right answers of {self.items}")
        self.failure_counts = dict(state["failures"])
        self.stages = None if state["stages"] is None else dict(state["stages"])


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
