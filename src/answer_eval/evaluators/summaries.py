"""The summaries of a run: what every evaluator's results add up to, printed and saved the same way everywhere.

A :class:`Summary` adds scored rows (:meth:`Summary.add_rows`: input columns by role, output
columns by name), merges the summary of the rows that follow (:meth:`Summary.merge`, exact: the
partitions of a Dask run add up to the local run's summary, bit for bit), goes to JSON data and
back (:meth:`Summary.snapshot`, :meth:`Summary.restore`: what a Dask partition sends back, never a
pickle) and prints itself (:meth:`Summary.text`, :meth:`Summary.to_json`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from answer_eval.errors import count_failures
from answer_eval.stats.significance import wilson_interval
from answer_eval.stats.written_numbers import ExactSum

__all__ = ["MAX_COUNT", "FileSummary", "Summary", "add_kinds", "count_of", "exact_state", "from_exact_state"]

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
