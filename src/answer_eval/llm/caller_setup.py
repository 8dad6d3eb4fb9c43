"""How a grader's caller is set up: its options, the server it talks to, and structured output.

**Options.** :class:`LLMOptions` holds the limits every LLM grader shares: the deadline of a request
(``timeout``), the requests in flight (``concurrency``), the retries and their backoff, the call
budget (``max_calls``) and the reply cache (``cache_path``, ``--cache``); :class:`SamplingOptions`
adds how several samples are drawn (``sampling``). The rubric command's and the judge's options
inherit them and the LLM components build them from their init parameters, so each option has one
name, one check and one meaning in every layer; :meth:`LLMOptions.caller` is the one way to make a
:class:`~answer_eval.llm.calls.ChatCaller` of them. None can change a grade, so none is signed
(``signed=False``): changing one does not stop a ``--resume``.

**An OpenAI-compatible server** named by options (the command line's rubric and judge escalation):
the model, the URL and the environment variable that holds the API key, never the key, read when
the grader warms up (:func:`openai_caller`) and given only to the generator and the redactor. A
variable name that cannot be one (the key itself, given by mistake) is refused unshown
(:func:`check_key_variable`); the name is shown only when that variable is set (:func:`unavailable_advice`).

**Structured output.** The prompts ask for one JSON object, the explanation first; a server that
takes a ``response_format`` can hold the model to it, which removes most unreadable replies of
small models. ``structured`` is ``json_schema`` (OpenAI's form: OpenAI, vLLM, Ollama),
``json_object`` (``{"type": "json_object", "schema": ...}``, llama.cpp's server, which answers 500 to
``json_schema``), ``off`` (the prompt alone) or ``auto``: for an OpenAI-compatible generator
``json_schema``, then ``json_object``, then ``off``, each only once the server refused the one
before; for any other generator, ``off``. The schema: ``explanation`` (a string) first, then
``score`` (an integer of the scale) or ``choice`` (``A``, ``B`` or ``TIE``), both required, nothing
else. The reply is read as any reply is: structured output changes what is asked, never how it is read.

A *refusal* is a request failed with HTTP 400, 422 or 5xx whose error (its whole bounded message)
names ``response_format``, ``json_schema`` or ``schema``; it is not retried
(:func:`~answer_eval.llm.generators.refuses_option`). Under ``auto`` the grader moves to the next
format for the rest of the run, once, and asks the refused item again in it; until the server has
answered in a format, one item at a time is asked in it, so a run sends at most one refused request
per format (a first request that timed out or found no server settles the format too). Each move is
counted (``structured_fallbacks``) and logged once. A format given explicitly is probed the same way,
and a refusal then ends the run (:class:`~answer_eval.llm.generators.StructuredRefused`, an
``OptionError``: the command line exits 2) rather than fail every item; once answered, a later
refusal is that item's ``error``. With a reply cache, the format a server answered in is kept
(:meth:`~answer_eval.llm.reply_cache.ReplyCache.remember_accepted`, per generator type, URL and
model): under ``auto`` a later run starts from it, so a rerun whose replies are all cached sends nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.errors import FailureKind, OptionError
from answer_eval.evaluators.base import Options, check_number, check_str, option
from answer_eval.llm.call_limits import MAX_DEADLINE, check_seconds
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.generators import (
    GraderUnavailable,
    ServerMisbehaves,
    StructuredRefused,
    check_cacheable,
    openai_compatible,
    plausible_variable_name,
    url_secrets,
)
from answer_eval.llm.reply_cache import ReplyCache
from answer_eval.llm.spending import Drawn, Sample

__all__ = [
    "STRUCTURED",
    "Drawer",
    "LLMOptions",
    "SamplingOptions",
    "StructuredOutput",
    "check_key_variable",
    "choice_schema",
    "openai_caller",
    "score_schema",
    "unavailable_advice",
    "verdict_schema",
]

SERVER_TIMEOUT = 60.0
"""Seconds one request to a server the options name may take when ``timeout`` is not given (the command line's)."""

SAMPLING = ("auto", "n", "calls")
"""How several samples are drawn (see :class:`~answer_eval.llm.calls.ChatCaller`)."""


def _seconds(name: str, value: Any, *, zero: bool = False, optional: bool = False) -> None:
    try:
        check_seconds(name, value, zero=zero, optional=optional)
    except ValueError as exc:  # a bad value (a bad type stays a TypeError): named as the option it is
        raise OptionError(name, str(exc).removeprefix(f"{name} ")) from None


@dataclass(frozen=True)
class LLMOptions(Options):
    """The limits of an LLM grader's use: deadline, concurrency, retries, backoff, budget, reply cache.

    :param timeout: Seconds one request may take in all, to its last byte (``None``: the
        generator's own ``timeout``, else 600; a server the options name: :data:`SERVER_TIMEOUT`).
    :param concurrency: Requests in flight at most.
    :param max_retries: Retries after HTTP 429, 5xx, a timeout or a lost connection.
    :param retry_backoff: Seconds before the first retry, doubled each time (at most 30).
    :param max_calls: Requests the run may send (a file's, across ``--resume``); then ``budget_stop``.
    :param cache_path: A JSONL file of replies, so that a rerun costs nothing (``--cache``).
    """

    timeout: float | None = option(
        None,
        help="seconds one LLM request may take in all, from sending it to its last byte, retried after as a "
        f"transient failure (default: the generator's own timeout, else 600; a server the options name: "
        f"{SERVER_TIMEOUT:g})",
        signed=False,
    )
    concurrency: int = option(4, help="LLM requests in flight at most (default: %(default)s)", signed=False)
    max_retries: int = option(
        2, help="retries after HTTP 429, 5xx, a timeout or a lost connection (default: %(default)s)", signed=False
    )
    retry_backoff: float = option(
        1.0, cli=False, help="seconds before the first retry, doubled each time (default: %(default)s)", signed=False
    )
    max_calls: int | None = option(
        None,
        help="LLM requests one run may send (a file's, across --resume); the items left get budget_stop, and a "
        "jury buys whole panels, item by item (default: no limit)",
        signed=False,
    )
    cache_path: str | None = option(
        None,
        flag="--cache",
        metavar="FILE",
        help="a JSONL file of the LLM's replies, so that a rerun costs nothing, opened before any request (a "
        "file that is not such a cache, or cannot be read or written, raises CacheError); its key names every "
        "server and model the generator reaches, and a generator that names no model is refused a cache",
        signed=False,
    )

    def check(self) -> None:
        """The base's checks, then the limits': ``TypeError`` for a wrong type, ``OptionError`` naming a bad value."""
        super().check()
        for name in ("concurrency", "max_retries"):
            check_number(name, getattr(self, name), integer=True)
        check_number("max_calls", self.max_calls, integer=True, optional=True)
        check_number("retry_backoff", self.retry_backoff)
        check_number("timeout", self.timeout, optional=True)
        check_str("cache_path", self.cache_path, optional=True)
        if self.concurrency < 1:
            raise OptionError("concurrency", f"must be at least 1, got {self.concurrency}")
        if self.max_retries < 0:
            raise OptionError("max_retries", f"must not be negative, got {self.max_retries}")
        if self.max_calls is not None and self.max_calls < 0:
            raise OptionError("max_calls", f"must not be negative, got {self.max_calls}")
        _seconds("retry_backoff", self.retry_backoff, zero=True)
        _seconds("timeout", self.timeout, optional=True)
        if self.timeout is not None and self.timeout > MAX_DEADLINE:
            raise OptionError("timeout", f"must be at most {MAX_DEADLINE:g} seconds (a day), got {self.timeout!r}")
        if self.cache_path is not None and not self.cache_path.strip():
            raise OptionError("cache_path", "must name a file, got a blank string")

    def batch_rows(self) -> int:
        """Rows per batch on the command line: four rounds of ``concurrency`` requests, at least 16.

        A batch is graded, then written, then the next is begun: its slowest request holds every
        slot at its end. With one round of requests a batch (16 rows at ``--concurrency 16``) that
        wait came after every round; with four it comes after every fourth. Few enough rows that a
        run stopped mid-batch loses little (a paid reply is written only with its batch).
        """
        return max(16, 4 * self.concurrency)

    def dask_refusal(self) -> str | None:
        """What these limits keep that worker processes cannot share, so Dask refuses them (``None``: nothing).

        A budget bounds one process's requests, not the file's across workers; the reply cache is one
        process's file (each worker would append to it and read only the replies it held when it opened).
        """
        if self.max_calls is not None:
            return "max_calls (--max-calls) bounds one process's requests, not the file's across Dask's workers"
        if self.cache_path is not None:
            return "the reply cache (cache_path, --cache) is one process's file, not shared by Dask's workers"
        urls = getattr(self, "api_base_url", None)  # the rubric's and the judge's server (one, or a jury's)
        for url in (urls,) if isinstance(urls, str) else urls or ():
            if url_secrets(url):  # the plan travels in the clear and shows in Dask's task errors
                return "a server URL holding a password travels in the Dask plan: give the key in --api-key-env"
        return None

    def caller(
        self,
        generator: Any,
        *,
        sampling: str = "auto",
        redact: Sequence[str] = (),
        default_timeout: float | None = None,
    ) -> ChatCaller:
        """A :class:`ChatCaller` of ``generator`` within these limits; its reply cache made, not opened yet.

        The cache is opened when a run starts, or earlier by whoever wants a cache that cannot
        serve to stop before any request (``caller.cache.open()``).

        :param sampling: How several samples are drawn (:class:`SamplingOptions` passes its own).
        :param redact: Strings never to show (the API key read from the environment).
        :param default_timeout: The deadline when ``timeout`` is ``None`` (``None``: the generator's own).
        :raises OptionError: With a ``cache_path``, for a generator whose model cannot be told
            (:func:`~answer_eval.llm.generators.check_cacheable`): its key would not tell two models apart.
        """
        if self.cache_path is not None:
            check_cacheable(generator)  # a key that names no model would serve another model's replies
        return ChatCaller(
            generator,
            sampling=sampling,
            concurrency=self.concurrency,
            retries=self.max_retries,
            backoff=self.retry_backoff,
            max_calls=self.max_calls,
            cache=None if self.cache_path is None else ReplyCache(self.cache_path),
            redact=redact,
            timeout=default_timeout if self.timeout is None else self.timeout,
        )


@dataclass(frozen=True)
class SamplingOptions(LLMOptions):
    """:class:`LLMOptions` and how several samples of one prompt are drawn (the rubric graders').

    :param sampling: ``auto`` (one request asking for ``n`` replies from OpenAI's generators, one
        request a sample otherwise), ``n`` or ``calls``.
    """

    sampling: str = option(
        "auto",
        cli=False,
        choices=SAMPLING,
        help="how several samples are drawn: auto, n (one request for n replies) or calls (one request a sample)",
        signed=False,
    )

    def check(self) -> None:
        """The limits' checks, then ``sampling``'s."""
        super().check()
        check_str("sampling", self.sampling)
        if self.sampling not in SAMPLING:
            raise OptionError("sampling", f"is 'auto', 'n' or 'calls', got {self.sampling!r}")

    def caller(
        self,
        generator: Any,
        *,
        sampling: str | None = None,
        redact: Sequence[str] = (),
        default_timeout: float | None = None,
    ) -> ChatCaller:
        """As :meth:`LLMOptions.caller`, sampling as ``sampling`` says (unless told otherwise)."""
        chosen = self.sampling if sampling is None else sampling
        return super().caller(generator, sampling=chosen, redact=redact, default_timeout=default_timeout)


def check_key_variable(field: str, value: object) -> None:
    """Raise :class:`OptionError` for ``field`` unless ``value`` can name an environment variable (never shown)."""
    if not plausible_variable_name(value):
        # Not echoed: the likeliest value here that is not a variable's name is the key itself.
        raise OptionError(
            field,
            "must name an environment variable (letters, digits and _, not starting with a digit); the value "
            "given is not one and is not shown. Put the key in a variable and give its name",
        )


def openai_caller(
    *,
    model: str,
    api_base_url: str | None,
    api_key_env: str,
    limits: LLMOptions,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> ChatCaller:
    """A :class:`ChatCaller` over Haystack's ``OpenAIChatGenerator``, its key read from ``api_key_env`` now.

    ``limits`` are the caller's (:meth:`LLMOptions.caller`); a request's deadline is its ``timeout``,
    else :data:`~answer_eval.llm.caller_setup.SERVER_TIMEOUT`, for the generator and the caller alike.
    The reply cache is opened here, before any request: a cache that cannot serve
    (:mod:`answer_eval.llm.reply_cache`) stops the run first.
    """
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    key = os.environ.get(api_key_env)
    # A local server (Ollama, vLLM) needs no key; OpenAI's client still wants one to send.
    secret = Secret.from_env_var(api_key_env) if key else Secret.from_token("no-key")
    generation = {"temperature": temperature, "max_tokens": max_tokens}
    timeout = SERVER_TIMEOUT if limits.timeout is None else limits.timeout
    generator = OpenAIChatGenerator(
        api_key=secret,
        model=model,
        api_base_url=api_base_url,
        generation_kwargs={name: value for name, value in generation.items() if value is not None},
        timeout=timeout,
        max_retries=0,  # the caller retries, with its own bound and backoff
    )
    caller = limits.caller(generator, redact=(key,) if key else (), default_timeout=timeout)
    if caller.cache is not None:
        caller.cache.open()
    generator.warm_up()
    return caller


def unavailable_advice(exc: GraderUnavailable, api_key_env: str, model_flag: str = "--model") -> str:
    """What to check after the server refused every request (appended to ``exc``'s words)."""
    if isinstance(exc, ServerMisbehaves | StructuredRefused):
        return ""  # its words say what to check
    if os.environ.get(api_key_env):
        return f"; check {model_flag}, --api-base-url and the key in ${api_key_env}"
    # Unset: the value may be anything but a name (it passed the name check): not shown.
    return f"; check {model_flag}, --api-base-url and --api-key-env (the variable it names is not set: no key was sent)"


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
