"""The options of an LLM grader's use, declared once for every layer, and the one way to build its caller.

:class:`LLMOptions` holds the limits every LLM grader shares: the deadline of a request
(``timeout``), the requests in flight (``concurrency``), the retries and their backoff, the call
budget (``max_calls``) and the reply cache (``cache_path``, ``--cache`` on the command line).
:class:`SamplingOptions` adds how several samples are drawn (``sampling``), for the graders that
draw several (the rubric graders; the judge's escalation draws one reply per answer). The rubric
command's and the judge's options inherit them, and the LLM components build them from their
init parameters, so each option has one name, one check and one meaning in every layer;
:meth:`LLMOptions.caller` is the one way to make a :class:`~answer_eval.llm.calls.ChatCaller` of them.

None of them can change a grade, so none is signed (``signed=False``): changing one does not stop
a ``--resume``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.errors import OptionError
from answer_eval.evaluators.base import Options, check_number, check_str, option
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.deadline import MAX_DEADLINE, check_seconds
from answer_eval.llm.generators import check_cacheable

__all__ = ["SAMPLING", "SERVER_TIMEOUT", "LLMOptions", "SamplingOptions"]

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
        from answer_eval.llm.cache import ReplyCache

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
