"""Structured output: the rubric graders ask the server for a JSON schema where it takes one, else prompt-only.

The prompts already ask for one JSON object, the explanation first; a server that takes a
``response_format`` can hold the model to it (a grammar, or OpenAI's structured outputs), which
removes most unreadable replies of small models. What is asked (``structured``):

- ``json_schema``: OpenAI's form, ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``
  (OpenAI, vLLM, Ollama);
- ``json_object``: ``{"type": "json_object", "schema": ...}``, the form llama.cpp's server takes
  (it answers HTTP 500 to ``json_schema``); a server that ignores ``schema`` still returns JSON;
- ``off``: no ``response_format``, the prompt alone (as before structured output);
- ``auto`` (the default): for an OpenAI-compatible generator (``OpenAIChatGenerator`` and its
  subclasses, the command line's own), ``json_schema``, then ``json_object``, then ``off``, each
  next one only once the server refused the one before; for any other generator, ``off``.

The schema: an object with ``explanation`` (a string) first, then ``score`` (an integer of the
rubric's scale) or ``choice`` (``A``, ``B`` or ``TIE``), both required, nothing else. The reply
is read as any reply is (:mod:`answer_eval.llm.replies`): structured output changes what the
server is asked, never how a reply is read or graded.

**A refusal** is a request that failed with HTTP 400, 422 or 5xx whose error names
``response_format``, ``json_schema`` or ``schema``; it is not retried (every try would get the
same: :func:`~answer_eval.llm.call_failures.refuses_option`). Under ``auto`` the grader then moves
to the next format for the rest of the run, once, and asks the refused item again in it (it is
not lost). Until the server has answered a request in a format, one item at a time is asked in
it, so a run sends at most one refused request per format, whatever its concurrency (a first
request that timed out or found no server settles the format too: such a server is not asked one
item at a time; should it refuse the format later, at most the requests then in flight are
refused). Each move is counted (``structured_fallbacks`` in the usage and the summary) and logged
once. Whether a refusal names ``response_format`` is read on the error's whole message (its body is
bounded), not on the detail cut for display: a long message that names it late is a refusal too.

**A format given explicitly** (``json_schema``, ``json_object``) is not left. It is probed as ``auto``'s
are (one item until the server answers it), and a refusal then ends the run at once
(:class:`~answer_eval.llm.call_failures.StructuredRefused`, an ``OptionError`` of ``structured``; the
command line exits 2) with the values to give instead, rather than fail every item one by one. Once the
server has answered in it, a later refusal is that item's ``error``.

**Remembered in the reply cache.** With a cache (``cache_path``, ``--cache``), the format a server
answered in is kept there (:meth:`~answer_eval.llm.cache.ReplyCache.remember_accepted`, per generator
type, URL and model). Under ``auto`` a later run starts from it, proven: it neither asks again in a format
the server refused nor probes, so a rerun whose replies are all cached sends nothing.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from answer_eval.errors import FailureKind
from answer_eval.llm.call_failures import StructuredRefused
from answer_eval.llm.calls import ChatCaller, Drawn, Sample
from answer_eval.llm.generators import openai_compatible

__all__ = [
    "STRUCTURED",
    "StructuredOutput",
    "choice_schema",
    "openai_compatible",
    "refused_format",
    "response_format",
    "score_schema",
    "verdict_schema",
]

logger = logging.getLogger(__name__)

STRUCTURED = ("auto", "json_schema", "json_object", "off")
"""The values of the ``structured`` option."""


def score_schema(values: Sequence[int]) -> dict[str, Any]:
    """The JSON schema of a pointwise reply: ``explanation`` first, then ``score``, one of ``values``."""
    return _object({"explanation": {"type": "string"}, "score": {"type": "integer", "enum": list(values)}})


def choice_schema() -> dict[str, Any]:
    """The JSON schema of a pairwise reply: ``explanation`` first, then ``choice``: ``A``, ``B`` or ``TIE``."""
    return _object({"explanation": {"type": "string"}, "choice": {"type": "string", "enum": ["A", "B", "TIE"]}})


def verdict_schema() -> dict[str, Any]:
    """The JSON schema of the judge's escalation reply: ``explanation`` first, then ``correct``, a boolean."""
    return _object({"explanation": {"type": "string"}, "correct": {"type": "boolean"}})


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    # Every property required and no other: what OpenAI's strict mode demands.
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def response_format(kind: str, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` of ``kind`` (``json_schema``, ``json_object``) for ``schema``; ``None`` for ``off``."""
    if kind == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if kind == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def refused_format(drawn: Drawn) -> bool:
    """Whether ``drawn`` failed because the server refused its ``response_format`` (see the module docstring)."""
    return not drawn.samples and drawn.failure == FailureKind.ERROR and drawn.refused_format


class StructuredOutput:
    """The formats a grader asks in, for one evaluator: the one in use moves on when the server refuses it.

    Thread-safe: two runs of one component share what the server was found to refuse.

    :param structured: ``auto``, ``json_schema``, ``json_object`` or ``off``.
    :param generator: The chat generator asked (``auto`` asks for a schema only from an OpenAI-compatible one).
    """

    def __init__(self, structured: str, generator: Any) -> None:
        """The formats ``structured`` allows for ``generator``, in the order they are tried."""
        if structured not in STRUCTURED:
            raise ValueError(f"structured is one of {', '.join(STRUCTURED)}, got {structured!r}")
        if structured == "auto":
            formats = ["json_schema", "json_object", "off"] if openai_compatible(generator) else ["off"]
        else:
            formats = [structured]
        self.explicit = structured != "auto"
        self._formats = formats
        self._offered = tuple(formats)
        self._confirmed: set[str] = set()
        self._recorded: set[str] = set()  # formats written to the reply cache as the server's (once each)
        self._recalled = False
        self._lock = threading.Lock()
        self.fallbacks = 0
        """Formats left after the server refused them (this evaluator's, over its runs)."""

    @property
    def current(self) -> str:
        """The format asked now."""
        with self._lock:
            return self._formats[0]

    def settled(self, kind: str) -> bool:
        """Whether ``kind`` needs no probing: the prompt alone, or a format the server answered (or the cache said)."""
        with self._lock:
            return kind == "off" or kind in self._confirmed

    def last(self, kind: str) -> bool:
        """Whether ``kind`` is the last format left to ask in (``off`` under ``auto``, the one given otherwise)."""
        with self._lock:
            return kind == self._formats[-1]

    def confirm(self, kind: str) -> None:
        """The server answered a request in ``kind``: every item may be asked in it at once."""
        with self._lock:
            self._confirmed.add(kind)

    def recall(self, caller: ChatCaller) -> None:
        """Under ``auto``, start from the format the reply cache says this server answered in (once; see the module)."""
        cache = caller.cache
        with self._lock:
            if self._recalled or self.explicit or cache is None or len(self._formats) == 1:
                return
            self._recalled = True
            known = cache.accepted(caller.server, self._formats)
            if known is None:
                return
            del self._formats[: self._formats.index(known)]  # the formats before it were refused: not asked again
            self._confirmed.add(known)
            self._recorded.add(known)
        logger.debug("The reply cache says the server answers structured output %s: asked so.", known)

    def record(self, caller: ChatCaller, kind: str) -> None:
        """The server answered a request in ``kind``: kept in the reply cache for the next run (once a format)."""
        if caller.cache is None or (len(self._offered) == 1 and kind == "off"):  # no format was asked: nothing learnt
            return
        with self._lock:
            if kind in self._recorded:
                return
            self._recorded.add(kind)
        caller.cache.remember_accepted(caller.server, kind)

    def refused(self, kind: str, detail: str | None) -> StructuredRefused:
        """The stop of a run whose explicit format ``kind`` the server refused, saying what to give instead."""
        others = [name for name in STRUCTURED if name != kind]
        return StructuredRefused(
            f"the server refused structured output {kind} (structured={kind!r}, --structured {kind}): "
            f"{detail or 'no detail'}. Every item would be refused alike, so nothing more is asked: give "
            f"structured (--structured) {', '.join(others[:-1])} or {others[-1]} instead (auto moves to the next "
            "format the server takes: json_schema, then json_object, then the prompt alone)"
        )

    def fall_back(self, kind: str, detail: str | None) -> bool:
        """The server refused ``kind``: the next format is asked from now on. Whether this call moved it (once)."""
        with self._lock:
            if self._formats[0] != kind or len(self._formats) == 1:
                return False
            self._formats.pop(0)
            self.fallbacks += 1
            after = self._formats[0]
        shown = "the prompt alone (no response_format)" if after == "off" else f"response_format {after}"
        logger.warning(
            "The server refused structured output (%s); the rest of the run asks with %s. It said: %s",
            kind,
            shown,
            detail or "no detail",  # whole: the caller cut it at a word already (at most 300 characters)
        )
        return True

    def drawer(
        self, caller: ChatCaller, name: str, schema: dict[str, Any], extra: Mapping[str, Any] | None = None
    ) -> Drawer:
        """A drawer for one run (made in its event loop) of replies of ``schema``; ``extra``: more request options."""
        self.recall(caller)
        return Drawer(self, caller, name, schema, extra)


class Drawer:
    """One run's draws in the format in use: one item at a time while the format is unproven, then all at once.

    The items keep their order (the call budget goes to the first): while any waits for a format to
    be proven, a later item queues behind it rather than go first once it is.
    """

    def __init__(
        self,
        formats: StructuredOutput,
        caller: ChatCaller,
        name: str,
        schema: dict[str, Any],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Draw through ``caller``, asking for ``schema`` (named ``name``) as ``formats`` says, and ``extra``."""
        self.formats, self.caller, self.name, self.schema = formats, caller, name, schema
        self.extra = dict(extra or {})  # asked in every format (log-probabilities)
        self._probe = asyncio.Lock()  # made in the run's own loop (a lock is bound to one); first come, first served
        self._queued = 0  # items waiting for the lock

    async def draw(
        self, messages: Sequence[tuple[str, str]], samples: int, readable: Callable[[Sample], bool]
    ) -> Drawn:
        """As :meth:`ChatCaller.draw`, in the format in use; a refused format is left and the item asked again.

        :raises StructuredRefused: When the server refused a format given explicitly before it answered one.
        """
        spent = 0  # the refused requests are the item's cost too: counted in its calls
        while True:
            kind = self.formats.current
            drawn: Drawn | None = None
            if self.formats.settled(kind) and not self._queued:
                drawn = await self._draw(kind, messages, samples, readable)
            else:
                self._queued += 1
                async with self._probe:
                    self._queued -= 1
                    kind = self.formats.current
                    if not self.formats.settled(kind):  # one item at a time until the server answers the format
                        drawn = await self._draw(kind, messages, samples, readable)
                        self._stop_if_refused(kind, drawn)
                # Nothing between the lock and the request's turn for a slot: the items ask in the order they came.
                drawn = drawn or await self._draw(kind, messages, samples, readable)
            if self._kept(kind, drawn):
                drawn.calls += spent
                return drawn
            spent += drawn.calls

    def _stop_if_refused(self, kind: str, drawn: Drawn) -> None:
        """Stop the run when the server refused, on its probe, a format given explicitly (see the module docstring)."""
        if self.formats.explicit and refused_format(drawn):
            raise self.caller.halt(self.formats.refused(kind, drawn.detail))

    def _kept(self, kind: str, drawn: Drawn) -> bool:
        """Whether ``drawn`` is the item's draw: not when the server refused ``kind`` and another format is left."""
        if refused_format(drawn) and not self.formats.last(kind):
            if self.formats.fall_back(kind, drawn.detail):
                self.caller.count("structured_fallbacks")
            return False
        # Any other outcome of a request settles the format, a failure too: a server refuses a format at once,
        # and one that times out or is down would otherwise be asked one item at a time. A draw that sent
        # nothing (the budget spent, the run stopped) says nothing of the format: the next run probes it again.
        if drawn.calls or drawn.samples:
            self.formats.confirm(kind)
        if drawn.samples and drawn.cached < len(drawn.samples):  # the server answered in it
            self.formats.record(self.caller, kind)
        return True

    async def _draw(
        self, kind: str, messages: Sequence[tuple[str, str]], samples: int, readable: Callable[[Sample], bool]
    ) -> Drawn:
        asked = response_format(kind, self.name, self.schema)
        request = self.extra if asked is None else {**self.extra, "response_format": asked}
        return await self.caller.draw(messages, samples, readable, request or None)
