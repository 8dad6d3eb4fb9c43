"""EvaluatorComponent: the base of the components that are adapters over a core evaluator (no LLM).

A component holds its core evaluator (``answer_eval.evaluators.*.evaluator``), built from the
evaluator's ``Options``, so every option is declared and checked once, there. This base gives:

- ``to_dict``/``from_dict`` from the options (the init parameters are the options, by name);
- ``_run``: the input sockets checked as a batch, mapped to the evaluator's roles, scored by the
  evaluator, an ``ItemError`` turned into the ``TypeError``/``ValueError`` naming the position,
  and the outputs built by the component's ``_outputs``;
- the aggregation: :func:`scores_outputs` (``score``, ``individual_scores``, ``failure_kinds``,
  ``failure_counts``) and :func:`metrics_outputs` (the same from per-metric columns, plus ``metrics``).

A component keeps its explicit, documented ``__init__`` (Haystack reads it, and ``Pipeline.loads``
calls it) and explicit ``run``/``run_async`` signatures (Haystack makes the input sockets from them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from haystack import default_from_dict, default_to_dict

from answer_eval.errors import ItemError
from answer_eval.evaluators.base import Evaluator
from answer_eval.evaluators.item_errors import positioned
from answer_eval.failure_kinds import count_failures
from answer_eval.inputs.labels import check_batch_shape

__all__ = ["METRICS_OUTPUTS", "EvaluatorComponent", "check_batch", "metrics_outputs", "scores_outputs"]

METRICS_OUTPUTS: dict[str, Any] = {
    "metrics": dict[str, dict[str, Any]],
    "score": float,
    "individual_scores": list[float],
    "failure_kinds": list[str | None],
    "failure_counts": dict[str, int],
}
"""The output sockets of the metric components (`ReferenceMetricsEvaluator`, `ToolCallEvaluator`)."""

_C = TypeVar("_C", bound="EvaluatorComponent")


def check_batch(ground_truth_answers: Any, predicted_answers: Any) -> None:
    """Two lists (or tuples) of one length, not empty; `TypeError`/`ValueError` otherwise."""
    check_batch_shape(ground_truth_answers, predicted_answers)
    if not ground_truth_answers:
        raise ValueError("ground_truth_answers and predicted_answers are empty: there is nothing to score")


def scores_outputs(individual_scores: list[Any], failure_kinds: list[str | None], **more: Any) -> dict[str, Any]:
    """`score` (the mean, a plain float), `individual_scores`, `failure_kinds`, ``more``, then `failure_counts`."""
    return {
        "score": sum(individual_scores) / len(individual_scores),
        "individual_scores": individual_scores,
        "failure_kinds": failure_kinds,
        **more,
        "failure_counts": count_failures(failure_kinds),
    }


def metrics_outputs(
    columns: Mapping[str, list[Any]], metrics: Sequence[str], corpus: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """The outputs of a metric component, from per-metric columns and `failure_kind`.

    `metrics` (name to `{"score", "individual_scores"}`, and `"corpus_score"` where ``corpus`` has
    one), then `score` and `individual_scores` of the first metric (so `EvaluationRunResult` takes
    them unchanged), `failure_kinds` and `failure_counts`.
    """
    table: dict[str, dict[str, Any]] = {}
    for name in metrics:
        values = list(columns[name])
        table[name] = {"score": float(sum(values) / len(values)), "individual_scores": values}
        if corpus and name in corpus:
            table[name]["corpus_score"] = corpus[name]
    first = table[metrics[0]]
    kinds = columns["failure_kind"]
    return {
        "metrics": table,
        "score": first["score"],
        "individual_scores": first["individual_scores"],
        "failure_kinds": kinds,
        "failure_counts": count_failures(kinds),
    }


class EvaluatorComponent:
    """The base of a component over a core evaluator (see the module docstring).

    A subclass sets :attr:`sockets` (input socket to the evaluator's role), sets ``self._evaluator``
    in its documented ``__init__`` and defines ``_outputs``. (Not through ``super().__init__``:
    ``@component`` makes the class anew, so a zero-argument ``super()`` in it fails.)
    """

    sockets: ClassVar[dict[str, str]] = {"ground_truth_answers": "answers", "predicted_answers": "prediction"}
    """Input socket to the evaluator's role, for the sockets the evaluator reads."""

    _evaluator: Evaluator
    """The core evaluator, whose options are the component's init parameters."""

    def __getattr__(self, name: str) -> Any:
        """An option by name (`component.metrics`), as `to_dict` gives it: read, as before, by `PairwiseEvaluator`."""
        evaluator = vars(self).get("_evaluator")
        options = {} if evaluator is None or name.startswith("_") else evaluator.options.to_dict()
        if name not in options:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return options[name]

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary: its type and its options.

        :returns: The serialized component.
        """
        return default_to_dict(self, **self._evaluator.options.to_dict())

    @classmethod
    def from_dict(cls: type[_C], data: dict[str, Any]) -> _C:
        """Deserialize this component from a dictionary.

        :param data: The dictionary from `to_dict`.
        :returns: The deserialized component.
        """
        return default_from_dict(cls, data)

    def _check(self, inputs: Mapping[str, Any]) -> None:
        """Refuse a batch that is not lists of one length, or empty (by socket name)."""
        check_batch(inputs["ground_truth_answers"], inputs["predicted_answers"])

    def _score(self, columns: Mapping[str, Sequence[Any]]) -> Any:
        """The evaluator's result for the input columns by role: by default its output columns."""
        return self._evaluator.score(columns)

    def _outputs(self, result: Any) -> dict[str, Any]:
        """The component's outputs from :meth:`_score`'s result."""
        raise NotImplementedError

    def _run(self, **inputs: Any) -> dict[str, Any]:
        """Check the batch, score it by role, and build the outputs; an item's error names its position."""
        self._check(inputs)
        columns = {role: inputs[socket] for socket, role in self.sockets.items() if inputs.get(socket) is not None}
        try:
            result = self._score(columns)
        except ItemError as error:
            raise positioned(error) from None
        return self._outputs(result)
