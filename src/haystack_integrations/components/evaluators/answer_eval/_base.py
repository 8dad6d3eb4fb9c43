"""EvaluatorComponent: the base of the components that are adapters over a core evaluator.

A component holds its core evaluator (``answer_eval.evaluators.*.evaluator``), built from the
evaluator's ``Options``, so every option is declared and checked once, there. This base gives:

- ``to_dict``/``from_dict`` from the options (the init parameters are the options, by name), and
  the chat generator a component may give its evaluator (:attr:`EvaluatorComponent.generator_parameter`,
  the judge's ``escalate_to``), saved as Haystack saves components;
- ``_run`` (and ``_run_async``, for an evaluator whose work awaits, as the judge's escalation): the
  input sockets checked as a batch, mapped to the evaluator's roles, scored by the evaluator, an
  ``ItemError`` turned into the ``TypeError``/``ValueError`` naming the position, and the outputs
  built by the component's ``_outputs``; an LLM grader's run that stops once the server answered
  some request returns what it answered, the rest ``error`` (:func:`~answer_eval.llm.call_limits.keeping_answered`);
- the aggregation: :func:`scores_outputs` (``score``, ``individual_scores``, ``failure_kinds``,
  ``failure_counts``) and :func:`metrics_outputs` (the same from per-metric columns, plus ``metrics``);
- :func:`progress_bar`: the LLM-backed components' ``progress_bar`` (tqdm, as Haystack's ``LLMEvaluator``).

A component keeps its explicit, documented ``__init__`` (Haystack reads it, and ``Pipeline.loads``
calls it) and explicit ``run``/``run_async`` signatures (Haystack makes the input sockets from them).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

from haystack import default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict

from answer_eval.errors import ItemError, count_failures
from answer_eval.evaluators.base import Evaluator, check_bool, positioned
from answer_eval.inputs.reading import check_batch_shape
from answer_eval.llm.call_limits import keeping_answered
from haystack_integrations.components.evaluators.answer_eval._generators import deserialize_generator

__all__ = [
    "METRICS_OUTPUTS",
    "EvaluatorComponent",
    "check_batch",
    "check_progress_bar",
    "metrics_outputs",
    "progress_bar",
    "scores_outputs",
]

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


def check_progress_bar(value: Any) -> bool:
    """``progress_bar`` as given, after checking it is a bool (`TypeError` otherwise)."""
    check_bool("progress_bar", value)
    return bool(value)


@contextmanager
def progress_bar(shown: bool, total: int, name: str) -> Iterator[Callable[[], None] | None]:
    """A tqdm bar over ``total`` items, as Haystack's ``LLMEvaluator`` shows one; what moves it on by one item.

    tqdm is imported only here (Haystack depends on it); ``shown`` false or nothing to do: no bar, ``None``.
    The callback is given to :meth:`~answer_eval.llm.calls.ChatCaller.run_sync` (``progress``), so the core
    itself never prints.
    """
    if not shown or total <= 0:
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=name) as bar:
        yield lambda: bar.update(1)


class EvaluatorComponent:
    """The base of a component over a core evaluator (see the module docstring).

    A subclass sets :attr:`sockets` (input socket to the evaluator's role), sets ``self._evaluator``
    in its documented ``__init__`` and defines ``_outputs``. (Not through ``super().__init__``:
    ``@component`` makes the class anew, so a zero-argument ``super()`` in it fails.)
    """

    sockets: ClassVar[dict[str, str]] = {"ground_truth_answers": "answers", "predicted_answers": "prediction"}
    """Input socket to the evaluator's role, for the sockets the evaluator reads."""

    generator_parameter: ClassVar[str | None] = None
    """The init parameter that takes a chat generator the evaluator is given (the judge's ``escalate_to``), if any.

    The one init parameter that is not an option: saved as Haystack saves components, first, and it
    makes a saved component that is not its evaluator's options alone (for Dask: ``evaluator_of``)."""

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
        """Serialize this component to a dictionary: its type, its chat generator if it takes one, and its options.

        :returns: The serialized component.
        """
        taken = inspect.signature(type(self).__init__).parameters
        # Options the component does not take (the judge's command-line server) are the evaluator's alone.
        options = {key: value for key, value in self._evaluator.options.to_dict().items() if key in taken}
        name = self.generator_parameter
        if name is None:
            return default_to_dict(self, **options)
        generator = getattr(self._evaluator, "generator", None)
        saved = None if generator is None else component_to_dict(obj=generator, name=name)
        return default_to_dict(self, **{name: saved}, **options)

    @classmethod
    def from_dict(cls: type[_C], data: dict[str, Any]) -> _C:
        """Deserialize this component from a dictionary (its chat generator as Haystack deserialises components).

        :param data: The dictionary from `to_dict`.
        :returns: The deserialized component.
        """
        data = {**data, "init_parameters": cls._saved_parameters(dict(data.get("init_parameters") or {}))}
        if cls.generator_parameter is not None:
            data = deserialize_generator(data, key=cls.generator_parameter)
        return default_from_dict(cls, data)

    @classmethod
    def _saved_parameters(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        """The init parameters of a saved component, as ``__init__`` takes them (a hook: an older save's upgrade)."""
        return parameters

    def _check(self, inputs: Mapping[str, Any]) -> None:
        """Refuse a batch that is not lists of one length, or empty (by socket name)."""
        check_batch(inputs["ground_truth_answers"], inputs["predicted_answers"])

    def _score(self, columns: Mapping[str, Sequence[Any]]) -> Any:
        """The evaluator's result for the input columns by role: by default its output columns."""
        return self._evaluator.score(columns)

    def _outputs(self, result: Any) -> dict[str, Any]:
        """The component's outputs from :meth:`_score`'s result."""
        raise NotImplementedError

    async def _score_async(self, columns: Mapping[str, Sequence[Any]]) -> Any:
        """As :meth:`_score`, for ``run_async``: an evaluator whose work awaits (an LLM's) overrides it."""
        return self._score(columns)

    def _columns(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The checked batch's columns by role (the sockets given)."""
        self._check(inputs)
        return {role: inputs[socket] for socket, role in self.sockets.items() if inputs.get(socket) is not None}

    def _run(self, **inputs: Any) -> dict[str, Any]:
        """Check the batch, score it by role, and build the outputs; an item's error names its position."""
        columns = self._columns(inputs)
        try:
            with keeping_answered():  # a component has no --resume: a stop must not throw the answered items away
                result = self._score(columns)
        except ItemError as error:
            raise positioned(error) from None
        return self._outputs(result)

    async def _run_async(self, **inputs: Any) -> dict[str, Any]:
        """As :meth:`_run`, the scoring awaited (:meth:`_score_async`), so the event loop is not blocked."""
        columns = self._columns(inputs)
        try:
            with keeping_answered():
                result = await self._score_async(columns)
        except ItemError as error:
            raise positioned(error) from None
        return self._outputs(result)
