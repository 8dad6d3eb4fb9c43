"""EvaluatorComponent: the base of the components that are adapters over a core evaluator.

A component holds its core evaluator (:attr:`EvaluatorComponent.core`), built from the evaluator's
``Options``, so every option is declared, documented and checked once, there:

- the ``__init__`` parameters' defaults are the options' own (``strict: bool = ToolCallsOptions.strict``,
  ``None`` for a list), their ``:param`` text the options' help (:func:`documented`), and
  :meth:`EvaluatorComponent._build` makes the core from them;
- ``to_dict``/``from_dict`` from the options (the init parameters are the options, by name), and
  the chat generator a component may give its evaluator (:attr:`EvaluatorComponent.generator_parameter`,
  the judge's ``escalate_to``), saved as Haystack saves components;
- ``_run`` (and ``_run_async``, for an evaluator whose work awaits, as the judge's escalation): the
  input sockets checked as a batch, mapped to the evaluator's roles, scored by the evaluator, an
  ``ItemError`` turned into the ``TypeError``/``ValueError`` naming the position, and the outputs
  built from the sockets the core declares (:func:`socket_outputs`); an LLM grader's run that stops
  once the server answered some request returns what it answered, the rest ``error``
  (:func:`~answer_eval.llm.call_limits.keeping_answered`);
- :func:`progress_bar`: the LLM-backed components' ``progress_bar`` (tqdm, as Haystack's ``LLMEvaluator``).

A component keeps its explicit ``__init__`` (Haystack reads it, and ``Pipeline.loads`` calls it) and
explicit ``run``/``run_async`` signatures (Haystack makes the input sockets from them).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar, cast

from haystack import default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict

from answer_eval.errors import ItemError, count_failures
from answer_eval.evaluators.base import Evaluator, Options, Socket, check_bool, positioned
from answer_eval.evaluators.contains_rules import check_batch
from answer_eval.llm.call_limits import keeping_answered
from haystack_integrations.components.evaluators.answer_eval._generators import deserialize_generator

__all__ = [
    "EvaluatorComponent",
    "check_progress_bar",
    "documented",
    "progress_bar",
    "socket_outputs",
    "socket_types",
]

_C = TypeVar("_C", bound="EvaluatorComponent")
_F = TypeVar("_F", bound=Callable[..., None])


def _shown(value: Any) -> str:
    return str(list(value) if isinstance(value, tuple) else value)


def option_doc(item: dataclasses.Field[Any]) -> str:
    """An option's ``:param`` text: its help (``%(default)s`` and ``%(choices)s`` filled in), and its default.

    The help serves the command line too: what a ``--no-...`` flag does for a negated option (said
    here of ``False``), "repeatable" for a list (dropped here).
    """
    meta = item.metadata
    choices = [str(choice) for choice in meta.get("choices") or ()]
    text = str(meta["help"]) % {"default": _shown(item.default), "choices": ", ".join(choices)}
    if meta.get("repeat"):
        text = text.replace("repeatable; ", "").replace(" (repeatable)", "")
    if meta.get("negate"):
        return f"`True` by default; `False`: {text}."
    words = set(re.findall(r"[\w-]+", text))
    if choices and not words.issuperset(choices):
        text += f"; one of {', '.join(f'`{choice}`' for choice in choices)}"
    if "default" not in text:
        text += f" (default: `{_shown(item.default)}`)"
    return text + "."


def documented(options_type: type[Options], **own: str) -> Callable[[_F], _F]:
    """Give a component's ``__init__`` the ``:param`` lines of its parameters, before its ``:raises`` lines.

    An option's text is its help in ``options_type`` (:func:`option_doc`); a parameter that is not an
    option (a chat generator, ``progress_bar``) is documented in ``own``, by name.
    """
    fields = {item.name: item for item in dataclasses.fields(options_type)}

    def document(init: _F) -> _F:
        names = list(inspect.signature(init).parameters)[1:]
        lines = [f":param {name}: {own[name] if name in own else option_doc(fields[name])}" for name in names]
        summary, raises, more = inspect.cleandoc(init.__doc__ or "").partition(":raises")
        init.__doc__ = "\n".join([summary.rstrip(), "", *lines, *([raises + more] if raises else [])])
        return init

    return document


def socket_types(sockets: Mapping[str, Socket]) -> dict[str, Any]:
    """A core's output sockets by name, with their types (for ``component.output_types``)."""
    return {name: socket.type for name, socket in sockets.items()}


def metrics_table(
    columns: Mapping[str, Any], metrics: Sequence[str], corpus: Mapping[str, float] | None
) -> dict[str, dict[str, Any]]:
    """Metric name to `{"score", "individual_scores"}`, and `"corpus_score"` where ``corpus`` has one."""
    table: dict[str, dict[str, Any]] = {}
    for name in metrics:
        values = list(columns[name])
        table[name] = {"score": float(sum(values) / len(values)), "individual_scores": values}
        if corpus and name in corpus:
            table[name]["corpus_score"] = corpus[name]
    return table


def socket_outputs(
    sockets: Mapping[str, Socket], columns: Mapping[str, Any], metrics: Sequence[str] = ()
) -> dict[str, Any]:
    """A component's outputs, in the order of ``sockets``, from the core's :meth:`~Evaluator.socket_columns`.

    A socket with a column is that column (each item converted, where it says so); the aggregates:
    `metrics` (per ``metrics`` name, whose first gives `individual_scores`), `score` (the mean of
    `individual_scores`, a plain float) and `failure_counts` (of `failure_kinds`).
    """
    values: dict[str, Any] = {}
    for name, socket in sockets.items():
        if socket.column is not None:
            column = columns[socket.column]
            values[name] = column if socket.convert is None else list(map(socket.convert, column))
    built = {name for name, socket in sockets.items() if socket.column is None}
    if "metrics" in built:
        values["metrics"] = metrics_table(columns, metrics, columns.get("corpus"))
        values["individual_scores"] = values["metrics"][metrics[0]]["individual_scores"]
    if "score" in built:
        values["score"] = sum(values["individual_scores"]) / len(values["individual_scores"])
    if "failure_counts" in built:
        values["failure_counts"] = count_failures(values["failure_kinds"])
    return {name: values[name] for name in sockets}


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

    A subclass sets :attr:`core` and :attr:`sockets` (input socket to the evaluator's role), and its
    ``__init__`` (documented by :func:`documented`) sets ``self._evaluator = self._build(locals())``.
    (Not through ``super().__init__``: ``@component`` makes the class anew, so a zero-argument
    ``super()`` in it fails.)
    """

    core: ClassVar[type[Evaluator]]
    """The core evaluator's class: its options are the component's init parameters, its sockets the outputs."""

    sockets: ClassVar[dict[str, str]] = {"ground_truth_answers": "answers", "predicted_answers": "prediction"}
    """Input socket to the evaluator's role, for the sockets the evaluator reads."""

    generator_parameter: ClassVar[str | None] = None
    """The init parameter that takes a chat generator the evaluator is given (the judge's ``escalate_to``), if any.

    The one init parameter that is not an option: saved as Haystack saves components, first, and it
    makes a saved component that is not its evaluator's options alone (for Dask: ``evaluator_of``)."""

    _evaluator: Evaluator
    """The core evaluator, whose options are the component's init parameters."""

    def _build(self, parameters: Mapping[str, Any], *more: Any, **named: Any) -> Any:
        """The core evaluator from the init ``parameters`` that are its options (``locals()``), checked there.

        :param more: What the core takes besides its options (the typed evaluator's custom types; the
            judge's chat generator, by name).
        """
        options_type = self.core.options_type
        names = {item.name for item in dataclasses.fields(options_type)}
        options = options_type.from_dict({name: value for name, value in parameters.items() if name in names})
        return cast(Any, self.core)(options, *more, **named)

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
        if cls.generator_parameter is not None:
            data = deserialize_generator(data, key=cls.generator_parameter)
        return default_from_dict(cls, data)

    def _check(self, inputs: Mapping[str, Any]) -> None:
        """Refuse a batch that is not lists of one length, or empty (by socket name).

        A component without references (its evaluator reads the answers alone) checks its answers alone.
        """
        if "ground_truth_answers" in self.sockets:
            check_batch(inputs["ground_truth_answers"], inputs["predicted_answers"])
            return
        answers = inputs["predicted_answers"]
        if not isinstance(answers, list | tuple):
            raise TypeError(f"predicted_answers must be a list, got {type(answers).__name__}")
        if not answers:
            raise ValueError("predicted_answers is empty: there is nothing to score")

    def _score(self, columns: Mapping[str, Sequence[Any]]) -> Any:
        """The evaluator's result for the input columns by role: by default its socket columns."""
        return self._evaluator.socket_columns(columns)

    def _outputs(self, result: Any) -> dict[str, Any]:
        """The outputs from :meth:`_score`'s result: by default the core's sockets (:func:`socket_outputs`)."""
        sockets = self._evaluator.output_sockets()
        return socket_outputs(sockets, result, getattr(self._evaluator.options, "metrics", ()))

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
