"""What the LLM-backed components share: their chat generator, its limits, its serialisation and its cache."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from haystack import default_from_dict
from haystack.core.serialization import component_to_dict
from haystack.utils.deserialization import deserialize_chatgenerator_inplace

from answer_eval.failure_kinds import count_failures
from answer_eval.llm.calls import Usage
from answer_eval.llm.grading import Grade, PairGrade
from answer_eval.llm.options import SamplingOptions

__all__ = [
    "GraderComponent",
    "LLMLimits",
    "check_generator",
    "default_generator",
    "deserialize_generator",
    "grader_outputs",
]

T = TypeVar("T")


def default_generator() -> Any:
    """The generator used when none is given, as Haystack's own LLM evaluators do: OpenAI, key from the environment."""
    from haystack.components.generators.chat import OpenAIChatGenerator

    return OpenAIChatGenerator()


def deserialize_generator(data: dict[str, Any], key: str = "chat_generator") -> dict[str, Any]:
    """A copy of ``data`` with ``init_parameters[key]`` turned back into a generator (``data`` itself untouched).

    :raises TypeError: When it is not a serialised component (naming ``key``).
    """
    parameters = dict(data.get("init_parameters") or {})
    copied = {**data, "init_parameters": parameters}
    value = parameters.get(key)
    if value is None:
        return copied
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise TypeError(f"{key} must be a serialised chat generator (a dict with 'type'), got {type(value).__name__}")
    # A deep copy: some Haystack releases turn the nested secrets into objects where they find them.
    parameters[key] = copy.deepcopy(value)
    deserialize_chatgenerator_inplace(parameters, key=key)
    return copied


def check_generator(name: str, value: Any) -> None:
    """Raise ``TypeError`` naming ``name`` unless ``value`` looks like a Haystack chat generator (has ``run``)."""
    if not callable(getattr(value, "run", None)) or isinstance(value, type):
        raise TypeError(f"{name} must be a Haystack chat generator, got {type(value).__name__}")


class LLMLimits:
    """A chat generator with the limits of its use (concurrency, retries, a call budget, a reply cache).

    The limits are a :class:`~answer_eval.llm.options.SamplingOptions`, checked when made, as the
    command line's rubric grader and the judge's escalation hold them; their caller is made by
    :meth:`~answer_eval.llm.options.LLMOptions.caller`, as theirs is.

    :param chat_generator: Any Haystack chat generator (default: ``OpenAIChatGenerator()``).
    :param options: The limits and how several samples are drawn (each option's meaning: there).
    :param name: The generator's parameter name, for the errors.
    """

    def __init__(self, chat_generator: Any, options: SamplingOptions, name: str = "chat_generator") -> None:
        """Check the generator; ``TypeError`` naming it when it is not one."""
        self.options = options
        self.chat_generator = default_generator() if chat_generator is None else chat_generator
        check_generator(name, self.chat_generator)
        self.caller = options.caller(self.chat_generator)  # its cache opened at warm-up

    def to_dict(self) -> dict[str, Any]:
        """The generator (serialised as Haystack serialises components: secrets as their env var names) and limits."""
        limits = self.options.to_dict()
        limits["timeout"] = limits.pop("timeout")  # last, where the components' saved pipelines have it
        return {"chat_generator": component_to_dict(obj=self.chat_generator, name="chat_generator"), **limits}

    def warm_up(self) -> None:
        """Open the reply cache (``CacheError`` when it cannot serve) and warm the generator up."""
        if self.caller.cache is not None:
            self.caller.cache.open()
        if hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()

    def run_sync(self, work: Callable[[], Awaitable[T]]) -> tuple[T, Usage]:
        """Run ``work`` from a sync ``run`` (its own budget and usage): its result and what it cost."""
        self.warm_up()
        return self.caller.run_sync(work)

    async def run_async(self, work: Callable[[], Awaitable[T]]) -> tuple[T, Usage]:
        """Run ``work`` from ``run_async`` (its own budget and usage): its result and what it cost."""
        self.warm_up()
        return await self.caller.run_async(work)


_G = TypeVar("_G", bound="GraderComponent")


class GraderComponent:
    """What the rubric components share: their generator's warm-up and their deserialisation."""

    _llm: LLMLimits

    def warm_up(self) -> None:
        """Warm the chat generator up."""
        self._llm.warm_up()

    @classmethod
    def from_dict(cls: type[_G], data: dict[str, Any]) -> _G:
        """Deserialize this component from a dictionary (its chat generator as Haystack deserialises components).

        :param data: The dictionary from `to_dict`.
        :returns: The deserialized component.
        """
        return default_from_dict(cls, deserialize_generator(data))


def grader_outputs(grades: Sequence[Grade | PairGrade], usage: Usage, signature: str) -> dict[str, Any]:
    """The outputs every LLM grader has: explanations, confidences, failure kinds and counts, usage, signature."""
    kinds = [grade.failure_kind for grade in grades]
    return {
        "explanations": [grade.explanation for grade in grades],
        "confidences": [grade.confidence for grade in grades],
        "failure_kinds": kinds,
        "failure_counts": count_failures(kinds),
        "usage": usage.as_dict(),
        "signature": signature,
    }
