"""An on-disk cache of grader replies, so that re-running an evaluation costs nothing and gives the same grades.

A JSON Lines file. Its first line marks it as this package's (:data:`MARKER`); then one
``{"key": ..., "samples": [{"text": ..., "finish_reason": ...}, ...]}`` a line, appended as
replies arrive (a later line for a key holds all its samples so far). The key is the SHA-256 of
the prompt, the generator's type and model, and its generation options (the number of samples
excepted: asking for more samples reuses the ones cached); never the API key. Only replies the
grader could read are cached (the caller decides: see :meth:`answer_eval.llm.calls.ChatCaller.draw`),
never errors, and their text has its secrets redacted before it gets here. A sample of a request
that asked for log-probabilities keeps them too, bounded (``"logprobs"``:
:func:`answer_eval.llm.logprobs.to_cache`), so that a logprob-scored grade replays; when read back
they are checked within the same bounds (every number a finite float: a JSON integer of hundreds of
digits is none), and a line whose log-probabilities are not as written is a damaged line (below).

The path is a file of the user's choosing, or a pipeline's, so it is opened as the run's own work
files are (:mod:`answer_eval.engine.output_files`): never through a symbolic link, only a regular
file with one link (a FIFO is refused without waiting on it), checked on the open descriptor, and
appended to through that descriptor only. A file that is not a cache of this package is refused:
one whose first line is neither the marker nor a cache entry (a cache of an earlier version,
which had no marker, is read and appended to as it is). An existing empty file is taken as an
empty cache (what ``mktemp`` or ``touch`` leaves). Everything is checked when the cache is opened,
before any request (:meth:`ReplyCache.open`: a component's warm-up, the command line's start), so
an unreadable file, a folder that cannot be written or a foreign file stops the run before it pays
for anything (:class:`CacheError`).

**What a server accepted.** Beside the replies, the cache keeps which structured output each server
(its generator's type, URL and model) answered (:mod:`answer_eval.llm.structured`), so that a rerun
asks in that format at once rather than in one the server refused before: an entry of the same form,
under a key of its own (:func:`format_key`), its one sample's text the format. An earlier version
reads it as a reply no prompt asks for.

A damaged line (not UTF-8, not JSON, nested too deeply, longer than :data:`MAX_LINE_BYTES`, not an
entry, log-probabilities not as written; a line cut by a crash) is skipped and counted, and said
once (a warning naming the file): its prompt is asked again. A failed write later in the run (a
full disk) stops caching, with a warning, rather than the run: the grades are written to the output
anyway.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import logging
import os
import stat
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from answer_eval.errors import InputError
from answer_eval.llm.logprobs import from_cache

__all__ = ["MARKER", "MAX_LINE_BYTES", "CacheError", "ReplyCache", "cache_key", "format_key"]

logger = logging.getLogger(__name__)

MARKER: dict[str, Any] = {"format": "answer-eval reply cache", "version": 1}
"""The first line of a cache file."""

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line read (and written): a reply longer than this is not cached."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_KEY_CHARS = frozenset("0123456789abcdef")


class CacheError(InputError):
    """The reply cache cannot be used: a link, a special or foreign file, or a file or folder it cannot read or write.

    Raised when the cache is opened, before any request; the command line exits 2 naming the path.
    """

    skippable = False


def cache_key(messages: Sequence[tuple[str, str]], generator: Mapping[str, Any]) -> str:
    """The key of a prompt sent to a generator described by ``generator`` (type, model, options)."""
    text = json.dumps({"messages": [list(m) for m in messages], "generator": generator}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def format_key(server: Mapping[str, Any]) -> str:
    """The key under which the structured output ``server`` (type, URL, model) accepted is kept: never a prompt's."""
    text = json.dumps({"structured output accepted by": server}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _entry(data: Any) -> tuple[str, list[dict[str, Any]]] | None:
    """The key and samples of a cache line's data; ``None`` when it is not an entry."""
    if not isinstance(data, dict) or set(data) != {"key", "samples"}:
        return None
    key, samples = data["key"], data["samples"]
    if not isinstance(key, str) or len(key) != 64 or not set(key) <= _KEY_CHARS or not isinstance(samples, list):
        return None
    kept = []
    for sample in samples:
        if not (
            isinstance(sample, dict)
            and isinstance(sample.get("text"), str)
            and isinstance(sample.get("finish_reason"), str | None)
        ):
            continue
        if "logprobs" in sample and from_cache(sample["logprobs"]) is None:
            # Not as this package writes them (a 400-digit integer, NaN, a string): the line is damaged, and its
            # prompt asked again, as any damaged line's.
            return None
        kept.append(_sample(sample))
    return key, kept


def _sample(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A cached sample's text, finish reason and log-probabilities (only when they are as this package writes them)."""
    kept = {"text": sample["text"], "finish_reason": sample.get("finish_reason")}
    if "logprobs" in sample and from_cache(sample["logprobs"]) is not None:
        kept["logprobs"] = sample["logprobs"]
    return kept


def _decoded(line: bytes) -> Any:
    """A line's JSON data; ``ValueError`` when it is not UTF-8 JSON, or nested too deeply to read."""
    try:
        return json.loads(line.decode("utf-8"))
    except RecursionError:  # raised cleanly by the C decoder, at the interpreter's depth limit
        raise ValueError("nested too deeply") from None


def _lines(handle: io.BufferedReader) -> Iterator[bytes | None]:
    """The file's lines (without their end); ``None`` for one over :data:`MAX_LINE_BYTES` (skipped, never held)."""
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            yield None  # first: a reader that stops here (a foreign file) never scans the rest
            while line and not line.endswith(b"\n"):  # the rest of the long line, a piece at a time
                line = handle.readline(1024 * 1024)
            continue
        yield line.rstrip(b"\r\n")


class ReplyCache:
    """Replies by key, read from and appended to a JSONL file (made, with its folder, when first opened).

    Nothing is read or made until :meth:`open` (called again, it does nothing); :meth:`get` and
    :meth:`put` open it when it is not yet open.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """A cache at ``path`` (nothing read or made yet)."""
        self.path = Path(path)
        self.damaged = 0
        """Lines skipped when the file was read."""
        self._lock = threading.RLock()
        self._entries: dict[str, list[dict[str, Any]]] = {}
        self._file: io.FileIO | None = None  # closed with the object: no descriptor to close by hand
        self._opened = False
        self._writable = True

    def open(self) -> ReplyCache:
        """Open (or make) the file and read it: :class:`CacheError` for a file or folder that cannot serve."""
        with self._lock:
            if not self._opened:
                self._file = io.FileIO(self._open_checked(), "r+", closefd=True)
                try:
                    self._read()
                except BaseException:
                    self.close()
                    raise
                self._opened = True
        return self

    def close(self) -> None:
        """Close the file (a later :meth:`get` or :meth:`put` opens it again)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
            self._file, self._opened = None, False
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> list[dict[str, Any]]:
        """The samples cached for ``key`` (none: an empty list)."""
        with self._lock:
            self.open()
            return list(self._entries.get(key, ()))

    def put(self, key: str, samples: Sequence[Mapping[str, Any]]) -> None:
        """Record every sample known for ``key`` (appended to the file at once; not when the line would be too long)."""
        kept = [_sample(s) for s in samples]
        entry = {"key": key, "samples": kept}
        try:
            line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: as a JSON escape, which reads back as it was
            line = (json.dumps(entry) + "\n").encode("ascii")
        with self._lock:
            self.open()
            self._entries[key] = kept
            if len(line) <= MAX_LINE_BYTES and self._writable:
                self._append(line)

    def accepted(self, server: Mapping[str, Any], kinds: Sequence[str]) -> str | None:
        """The format of ``kinds`` that ``server`` was last found to answer in (``None``: none recorded, or unknown)."""
        with self._lock:  # not through get(): no prompt is asked (a dry run counts the prompts it finds)
            self.open()
            samples = self._entries.get(format_key(server), [])
        said = samples[-1]["text"] if samples else None
        return said if said in kinds else None  # a hand-edited line naming something else is no record

    def remember_accepted(self, server: Mapping[str, Any], kind: str) -> None:
        """Record that ``server`` answered in the format ``kind`` (see the module docstring)."""
        self.put(format_key(server), [{"text": kind, "finish_reason": "accepted"}])

    # -- opening ------------------------------------------------------------------------------------------------

    def _refusal(self, why: str) -> CacheError:
        return CacheError(
            f"cannot be the reply cache: it {why}; give --cache (cache_path) a file of its own", self.path
        )

    def _open_checked(self) -> int:
        """A descriptor on the cache file, read and append, never through a link; made new when absent."""
        flags = os.O_RDWR | os.O_APPEND | _NOFOLLOW | _CLOEXEC | _NONBLOCK
        for _ in range(3):  # a file made or removed by another process between two tries
            try:
                status = os.lstat(self.path)
            except FileNotFoundError:
                status = None
            except OSError as exc:
                raise self._refusal(f"cannot be looked at ({exc.strerror})") from None
            if status is not None:
                self._check(status)
            else:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:  # a file where the folder should be, a folder that cannot be written
                    raise self._refusal(f"cannot be made: its folder cannot be made ({exc.strerror})") from None
            try:
                if status is None:
                    descriptor = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o666)
                else:
                    descriptor = os.open(self.path, flags)
            except (FileExistsError, FileNotFoundError):
                continue
            except OSError as exc:  # EACCES, EROFS, ELOOP (a link swapped in after the check), ENOSPC...
                doing = "be made in its folder" if status is None else "be opened for reading and appending"
                raise self._refusal(f"cannot {doing} ({exc.strerror})") from None
            try:
                self._check(os.fstat(descriptor))
            except BaseException:
                os.close(descriptor)
                raise
            return descriptor
        raise self._refusal("keeps changing while this run opens it (is another program writing there?)")

    def _check(self, status: os.stat_result) -> None:
        if stat.S_ISLNK(status.st_mode):
            raise self._refusal("is a symbolic link, which a cache never follows")
        if not stat.S_ISREG(status.st_mode):
            raise self._refusal("is not a regular file")
        if status.st_nlink != 1:
            raise self._refusal(f"has {status.st_nlink} hard links (another name shares its contents)")

    def _read(self) -> None:
        """Read every entry (the first line must say the file is a cache); mark a new or empty file as one."""
        assert self._file is not None
        self.damaged = 0
        size = os.fstat(self._file.fileno()).st_size
        if size == 0:
            self._append((json.dumps(MARKER) + "\n").encode("utf-8"))
            return
        with open(self._file.fileno(), "rb", closefd=False) as handle:
            try:
                self._read_lines(handle)
            except OSError as exc:
                raise self._refusal(f"cannot be read ({exc.strerror})") from None
            handle.seek(size - 1)
            ends_open = handle.read(1) != b"\n"
        if ends_open:  # a line cut by a crash: the next entry starts on a line of its own
            self._append(b"\n")
        if self.damaged:
            logger.warning(
                "answer-eval: the reply cache %s has %d damaged line%s (skipped: their prompts are asked again)",
                self.path,
                self.damaged,
                "" if self.damaged == 1 else "s",
            )

    def _read_lines(self, handle: io.BufferedReader) -> None:
        for number, line in enumerate(_lines(handle), start=1):
            try:
                data = None if line is None else _decoded(line)
            except ValueError:
                data = None
            if data == MARKER:  # the first line; anywhere else (two caches joined), nothing
                continue
            if number == 1:
                if isinstance(data, dict) and data.get("format") == MARKER["format"]:
                    version = data.get("version")
                    shown = f" (format {version})" if isinstance(version, int) and not isinstance(version, bool) else ""
                    raise self._refusal(f"was written by another version of answer-eval{shown}")
                if _entry(data) is None:  # not ours; an unmarked file of entries is an earlier version's
                    raise self._refusal("is not a file answer-eval wrote (its first line is not a reply cache's)")
            found = _entry(data)
            if found is None:
                if line:  # a blank line is nothing
                    self.damaged += 1
                continue
            self._entries[found[0]] = found[1]

    # -- writing ------------------------------------------------------------------------------------------------

    def _append(self, data: bytes) -> None:
        assert self._file is not None
        try:
            view = memoryview(data)
            while view:
                written = self._file.write(view)
                if not written:
                    raise OSError(errno.EIO, "nothing could be written")
                view = view[written:]
        except OSError as exc:
            if not self._opened:  # at open: the run has paid for nothing yet, so it stops here
                raise self._refusal(f"cannot be written ({exc.strerror})") from None
            self._writable = False
            logger.warning(
                "answer-eval: cannot write the reply cache %s (%s); the run goes on without caching",
                self.path,
                exc.strerror,
            )
