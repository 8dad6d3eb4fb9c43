"""What the LLM-backed components share: their chat generator, its limits, its serialisation and its cache."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from haystack import default_from_dict
from haystack.core.serialization import component_to_dict
from haystack.utils.deserialization import deserialize_chatgenerator_inplace

from answer_eval.failure_kinds import count_failures
from answer_eval.llm.cache import ReplyCache
from answer_eval.llm.calls import ChatCaller, Usage
from answer_eval.llm.grading import Grade, PairGrade
from answer_eval.llm.limits import check_limits

__all__ = [
    "GraderComponent",
    "LLMLimits",
    "check_generator",
    "check_limits",
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
    """A chat generator with the limits of its use: concurrency, retries, a call budget, a reply cache.

    :param chat_generator: Any Haystack chat generator (default: ``OpenAIChatGenerator()``).
    :param concurrency: Requests in flight at most (``run`` and ``run_async`` alike).
    :param max_retries: Retries of a request after HTTP 429, 5xx, a timeout or a lost connection
        (on top of any the generator makes itself).
    :param retry_backoff: Seconds before the first retry, doubled each time (at most 30 s).
    :param max_calls: Requests one ``run`` may send (``None``: no limit); the items left get ``budget_stop``.
    :param cache_path: A JSONL file of replies: a prompt asked again is answered from it, at no cost.
        Opened (made, checked, read) at :meth:`warm_up`, before any request.
    :param sampling: ``auto``, ``n`` or ``calls``: how several samples are drawn (see ``ChatCaller``).
    :param name: The generator's parameter name, for the errors.
    :param timeout: Seconds one request may take in all (``None``: the generator's own timeout, else 600).
    """

    def __init__(
        self,
        chat_generator: Any,
        concurrency: int,
        max_retries: int,
        retry_backoff: float,
        max_calls: int | None,
        cache_path: str | None,
        sampling: str,
        name: str = "chat_generator",
        timeout: float | None = None,
    ) -> None:
        """Check the generator and the limits; ``TypeError``/``ValueError`` naming a bad one."""
        check_limits(concurrency, max_retries, retry_backoff, max_calls, cache_path, sampling, timeout)
        self.chat_generator = default_generator() if chat_generator is None else chat_generator
        check_generator(name, self.chat_generator)
        self.parameters: dict[str, Any] = {
            "concurrency": concurrency,
            "max_retries": max_retries,
            "retry_backoff": retry_backoff,
            "max_calls": max_calls,
            "cache_path": cache_path,
            "sampling": sampling,
            "timeout": timeout,
        }
        self.caller = ChatCaller(
            self.chat_generator,
            sampling=sampling,
            concurrency=concurrency,
            retries=max_retries,
            backoff=retry_backoff,
            max_calls=max_calls,
            cache=None if cache_path is None else ReplyCache(cache_path),  # opened at warm-up
            timeout=timeout,
        )

    def to_dict(self) -> dict[str, Any]:
        """The generator (serialised as Haystack serialises components: secrets as their env var names) and limits."""
        return {"chat_generator": component_to_dict(obj=self.chat_generator, name="chat_generator"), **self.parameters}

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
