"""The base of the Dask engine's evaluator adapters: the run's summary and the :class:`Adapter` contract.

An adapter tells the Dask engine how to run one evaluator class of the package: its input
columns, its verdict columns, and how a partition is counted into the local command's summary.
The adapters themselves are in :mod:`answer_eval.dask_adapters`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from answer_eval.runner import FileSummary
from answer_eval.verdicts import count_failures

__all__ = ["COMPONENTS", "Adapter", "Columns", "Summary"]

COMPONENTS = "haystack_integrations.components.evaluators.answer_eval"

Columns = dict[str, list[Any]]


@dataclass
class Summary:
    """The summary of a Dask run: the local command's own summary object, and the judge's stages.

    :param command: The local command whose summary this is (``score``, ``judge``, ``typed``,
        ``metrics``, ``tools``).
    :param result: A :class:`~answer_eval.runner.FileSummary` (score, judge),
        :class:`~answer_eval.commands.typed.TypedSummary` (typed) or
        :class:`~answer_eval.commands.metrics.MetricsSummary` (metrics, tools).
    :param stages: The judge's deciding stage to count, ``None`` for the others.
    """

    command: str
    result: Any
    stages: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        """The summary as the local command prints it with ``--format json``."""
        data: dict[str, Any] = self.result.to_json()
        if self.stages is not None:
            data["stages"] = dict(sorted(self.stages.items()))
        return data


@dataclass
class _Counts:
    """A partition's counts for ``score`` and ``judge``: right answers, failure kinds, stages."""

    items: int = 0
    correct: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    stages: Counter[str] = field(default_factory=Counter)
    invalid_lines: int = 0


class Adapter:
    """How the Dask engine runs one evaluator class; subclasses fill in the class attributes."""

    command: ClassVar[str]
    class_name: ClassVar[str]
    roles: ClassVar[dict[str, str]]
    """Input role to its default column (the local command's default field)."""
    optional: ClassVar[frozenset[str]] = frozenset()
    """Roles whose column may be missing."""
    blame: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(words in an error message of the evaluator, the role whose column it is about)."""
    types: ClassVar[dict[str, frozenset[str]]] = {}
    """Role to the kinds of column it may have (``string``, ``int``, ``float``, ``list``, ``null``)."""

    def component_class(self) -> Any:
        """The Haystack component class."""
        import importlib

        return getattr(importlib.import_module(COMPONENTS), self.class_name)

    def instance(self, evaluator: Any) -> Any:
        """The evaluator itself, or the one its ``to_dict()`` describes."""
        return self.component_class().from_dict(evaluator) if isinstance(evaluator, dict) else evaluator

    def required(self, evaluator: Any) -> set[str]:
        """The roles whose column must be there, and must not lack a value."""
        return set(self.roles) - self.optional

    def column(self, role: str, columns: dict[str, str], available: Sequence[str]) -> str:
        """The column of ``role``: the one given in ``columns``, else the default."""
        return columns.get(role, self.roles[role])

    def prepare(self, evaluator: Any) -> Any:
        """Helpers built once per worker beside the evaluator (``None`` when none are needed)."""
        return None

    def outputs(self, evaluator: Any) -> dict[str, str]:
        """Verdict column to its pandas dtype, in the local command's order."""
        raise NotImplementedError

    def score(self, evaluator: Any, extras: Any, inputs: Columns) -> Columns:
        """The verdict columns of a batch; the evaluator's errors propagate."""
        raise NotImplementedError

    def new_summary(self, evaluator: Any) -> Any:
        """An empty partition summary."""
        return _Counts()

    def count(self, summary: Any, evaluator: Any, extras: Any, inputs: Columns, verdicts: Columns) -> None:
        """Count a scored batch into a partition summary."""
        summary.items += len(verdicts["correct"])
        summary.correct += sum(verdicts["correct"])
        summary.kinds.update(kind for kind in verdicts["failure_kind"] if kind is not None)
        if "stage" in verdicts:
            summary.stages.update(verdicts["stage"])

    def add_invalid(self, summary: Any, count: int) -> None:
        """Count rows (or lines) skipped as invalid into a partition summary."""
        summary.invalid_lines += count

    def finish(self, parts: Sequence[Any], evaluator: Any, path: str, output: str | None) -> Summary:
        """The run's summary from the partitions' summaries, added up in partition order."""
        total = FileSummary(path=path, output=output)
        kinds: Counter[str] = Counter()
        stages: Counter[str] = Counter()
        for part in parts:
            total.items += part.items
            total.correct += part.correct
            total.invalid_lines += part.invalid_lines
            kinds.update(part.kinds)
            stages.update(part.stages)
        total.failure_counts = count_failures(kinds.elements())
        return Summary(self.command, total, dict(stages) if self.command == "judge" else None)
