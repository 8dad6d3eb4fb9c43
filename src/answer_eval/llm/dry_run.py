"""A dry run: the requests a :class:`~answer_eval.llm.calls.ChatCaller` would send, recorded and never sent.

The grader runs as it would (the same prompts, samples, ``n``, top-ups, repeated prompts asked
once, the reply cache read first), but its caller's generator is a :class:`RequestRecorder`: each
request is written down and answered at once with empty replies, which no reader takes for a
grade. An empty reply is never cached, so every prompt is seen as the real run would see it.

:func:`dry_caller` turns a caller made as the real run makes it (its generator described as the
server's, so the cache keys are the real run's) into one that records: the generator is replaced,
and the reply cache is read without being made, marked or written (:class:`ReadOnlyCache`). No
API key is needed (none is read to send anything), and nothing is written.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from answer_eval.llm.cache import ReplyCache
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.estimate import Planned, estimated_tokens

__all__ = ["ReadOnlyCache", "RequestRecorder", "dry_caller"]


class RequestRecorder:
    """A chat generator's stand-in that records each request (its prompt's tokens, the replies asked) and sends none."""

    def __init__(self) -> None:
        """No request recorded yet."""
        self._lock = threading.Lock()
        self.requests: list[Planned] = []
        """The requests in the order they were made (the order the run's budget is spent in)."""

    def run(self, messages: Sequence[Any], generation_kwargs: dict[str, Any] | None = None, **_more: Any) -> Any:
        """Record one request; reply with as many empty replies as it asks for."""
        from haystack.dataclasses import ChatMessage

        wanted = int((generation_kwargs or {}).get("n") or 1)
        texts = [message.text or "" for message in messages]
        with self._lock:
            self.requests.append(Planned(estimated_tokens(texts), wanted))
        return {"replies": [ChatMessage.from_assistant("") for _ in range(wanted)]}


class ReadOnlyCache(ReplyCache):
    """A reply cache read as the run would read it, but never made, marked or appended to.

    A missing file is an empty cache; a file that cannot serve is refused as the run would refuse it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """The cache at ``path`` (nothing read yet)."""
        super().__init__(path)
        self.prompts_found = 0
        """Prompts asked of the cache that it holds replies for."""

    def open(self) -> ReadOnlyCache:
        """Read the file, if there is one (through no link, a regular file only); write nothing."""
        with self._lock:
            if self._opened:
                return self
            try:
                status = os.lstat(self.path)
            except FileNotFoundError:
                self._opened = True
                return self
            except OSError as exc:
                raise self._refusal(f"cannot be looked at ({exc.strerror})") from None
            self._check(status)
            try:
                with open(self.path, "rb") as handle:
                    self._check(os.fstat(handle.fileno()))
                    self._read_lines(handle)
            except OSError as exc:
                raise self._refusal(f"cannot be read ({exc.strerror})") from None
            self._opened = True
        return self

    def get(self, key: str) -> list[dict[str, Any]]:
        """The samples cached for ``key``, counting the prompts found."""
        found = super().get(key)
        if found:
            with self._lock:
                self.prompts_found += 1
        return found

    def put(self, key: str, samples: Sequence[Any]) -> None:
        """Nothing: a dry run writes no file."""


def dry_caller(caller: ChatCaller, cache_path: str | None) -> tuple[RequestRecorder, ReadOnlyCache | None]:
    """Make ``caller`` record its requests instead of sending them, its reply cache ``cache_path`` read only.

    ``caller`` keeps its description of the real generator (the cache keys) and its way of asking
    for samples; the recorder and the cache are returned to read the figures from after the run.
    """
    recorder = RequestRecorder()
    cache = None if cache_path is None else ReadOnlyCache(cache_path)
    caller.generator = recorder
    caller.cache = cache
    return recorder, cache
