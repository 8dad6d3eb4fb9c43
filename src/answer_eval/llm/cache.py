"""An on-disk cache of grader replies, so that re-running an evaluation costs nothing and gives the same grades.

A JSON Lines file: one ``{"key": ..., "samples": [{"text": ..., "finish_reason": ...}, ...]}`` a
line, appended as replies arrive (a later line for a key holds all its samples so far). The key is
the SHA-256 of the prompt, the generator's type and model, and its generation options (the
number of samples excepted: asking for more samples reuses the ones cached); never the API key.
A line cut by a crash is ignored when the file is read again. Only replies are kept, never errors.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["ReplyCache", "cache_key"]


def cache_key(messages: Sequence[tuple[str, str]], generator: Mapping[str, Any]) -> str:
    """The key of a prompt sent to a generator described by ``generator`` (type, model, options)."""
    text = json.dumps({"messages": [list(m) for m in messages], "generator": generator}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ReplyCache:
    """Replies by key, read from and appended to a JSONL file (made, with its folder, when first written)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Read the cache at ``path`` (none yet is an empty cache)."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self._entries: dict[str, list[dict[str, Any]]] = {}
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        with open(self.path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    data = json.loads(line)
                    key, samples = data["key"], data["samples"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a crash, or not ours: the call is made again
                if isinstance(key, str) and isinstance(samples, list):
                    self._entries[key] = [s for s in samples if isinstance(s, dict) and isinstance(s.get("text"), str)]

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> list[dict[str, Any]]:
        """The samples cached for ``key`` (none: an empty list)."""
        with self._lock:
            return list(self._entries.get(key, ()))

    def put(self, key: str, samples: Sequence[Mapping[str, Any]]) -> None:
        """Record every sample known for ``key`` (appended to the file at once)."""
        kept = [{"text": s["text"], "finish_reason": s.get("finish_reason")} for s in samples]
        line = json.dumps({"key": key, "samples": kept}, ensure_ascii=False) + "\n"
        with self._lock:
            self._entries[key] = kept
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
