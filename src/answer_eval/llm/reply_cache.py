"""What is kept of a grader's replies: their tokens' log-probabilities, bounded and weighed, and the reply cache.

**Log-probabilities** (G-Eval-style scores, ``scoring="logprobs"``): the server is asked for ``logprobs:
true, top_logprobs: 20``, and Haystack's ``OpenAIChatGenerator`` puts them in the reply's
``meta["logprobs"]`` (``{"content": [{"token", "logprob", "top_logprobs": [...]}, ...]}``, one entry a
token). The server is not trusted: :func:`from_meta` keeps the first :data:`MAX_POSITIONS` tokens
(``cut`` says when there were more) and the first :data:`MAX_ALTERNATIVES` alternatives of a token
holding a digit (nothing else is weighed). A token is at most :data:`MAX_TOKEN_CHARS` characters and a
log-probability a finite number at most 0 (up to a rounding error); anything else makes the whole
unusable, with the reason (:attr:`Logprobs.problem`); read from the cache, they are then dropped and
the prompt asked again. Nothing recurses: the shape is read level by level.

The score's token is where the value of the last score key starts (a JSON ``"score"``, ``"rating"``
or ``"grade"`` key, or a named score such as ``Score: 4``), else the reply's first token; it must
state the score the reply reader read, so the two readings agree; else, or when a value spans
several tokens (``10`` as ``1``, ``0``), there is no score (:func:`weigh` says why). Each of its
alternatives that states a value of the scale adds its probability to that value (``4`` and `` 4``
add up), renormalised over the values found; the score is the probability-weighted mean, the
confidence the probability of the most likely value.

**The reply cache**, so that re-running an evaluation costs nothing and gives the same grades: a
JSON Lines file, its first line this package's marker (:data:`MARKER`), then one ``{"key": ...,
"samples": [{"text": ..., "finish_reason": ...}, ...]}`` a line, appended as replies arrive (a later
line for a key holds all its samples so far). The key is the SHA-256 of the prompt, the generator's
type and model, and its generation options (the number of samples excepted); never the API key.
Only replies the grader could read are cached (:meth:`answer_eval.llm.calls.ChatCaller.draw`), their
secrets redacted; a sample that asked for log-probabilities keeps them, bounded (:func:`to_cache`),
checked within the same bounds when read back.

The path is the user's, so it is opened as the run's work files are
(:mod:`answer_eval.engine.output_files`): never through a symbolic link, only a regular file with one
link (a FIFO refused without waiting), appended to through the checked descriptor only. A file that
is not a cache of this package is refused (a cache of an earlier version, without a marker, is read
as it is; an empty file is an empty cache). All of it is checked when the cache is opened, before
any request (:meth:`ReplyCache.open`), so a bad file stops the run before it pays for anything
(:class:`CacheError`). Beside the replies, the cache keeps the structured output each server (type,
URL, model) answered in (:mod:`answer_eval.llm.caller_setup`), an entry under a key of its own
(:func:`format_key`). A damaged line (not UTF-8, not JSON, nested too deeply, over
:data:`MAX_LINE_BYTES`, not an entry; a line cut by a crash) is skipped, counted and said once: its
prompt is asked again. A failed write later (a full disk) stops caching, with a warning, not the run.
"""

from __future__ import annotations

import bisect
import errno
import hashlib
import io
import json
import logging
import math
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from answer_eval.errors import InputError

__all__ = [
    "LOGPROB_REQUEST",
    "MARKER",
    "MAX_ALTERNATIVES",
    "MAX_POSITIONS",
    "CacheError",
    "Logprobs",
    "ReplyCache",
    "TokenChoice",
    "Weighed",
    "cache_key",
    "format_key",
    "from_cache",
    "from_meta",
    "to_cache",
    "weigh",
]

TOP_LOGPROBS = 20
"""The alternatives asked per token (OpenAI's most)."""

LOGPROB_REQUEST: Mapping[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
"""The generation options a logprob-scored request adds (sent as the generator's ``generation_kwargs``)."""

MAX_POSITIONS = 4096
"""The most tokens of a reply whose log-probabilities are kept (a score lies within a grade's first few hundred)."""

MAX_ALTERNATIVES = TOP_LOGPROBS
"""The most alternatives kept per token."""

MAX_TOKEN_CHARS = 64
"""The longest token read; a longer one is no tokenizer's, and the log-probabilities are not used."""

_ROUNDING = 1e-6  # a log-probability a hair above 0 is a rounding error of a certain token
_ANCHOR = re.compile(
    r'"(?:score|rating|grade)"\s*:\s*"?\s*(?=[-+]?\d)|\b(?:score|rating|grade)\s*(?:is|:|=)\s*(?=[-+]?\d)',
    re.IGNORECASE,
)
_LEAD = " \t\r\n\"'*:"
_TRAIL = " \t\r\n\"'*,.}"


@dataclass(frozen=True)
class TokenChoice:
    """One token of a reply: its text, its log-probability, and its top alternatives (kept for a digit only).

    :param token: The token's text.
    :param logprob: Its natural-log probability (at most 0).
    :param alternatives: ``(token, logprob)`` pairs, the server's top alternatives at this position.
    """

    token: str
    logprob: float
    alternatives: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Logprobs:
    """A reply's log-probabilities, as kept (see the module's bounds).

    :param positions: One :class:`TokenChoice` a token, at most :data:`MAX_POSITIONS`.
    :param cut: Whether the server sent more tokens than were kept.
    :param problem: Why they cannot be used (then ``positions`` is empty); ``None`` when they can.
    """

    positions: tuple[TokenChoice, ...] = ()
    cut: bool = False
    problem: str | None = None


@dataclass(frozen=True)
class Weighed:
    """A score weighed from the score token's alternatives.

    :param score: The probability-weighted mean of the scale's values.
    :param confidence: The probability of the most likely value (renormalised over the scale's values).
    :param probabilities: Each value of the scale found among the alternatives, and its probability.
    """

    score: float
    confidence: float
    probabilities: dict[int, float]


def _number(value: Any) -> float | None:
    """A log-probability (a finite number at most 0, a rounding error above it read as 0); else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # a JSON integer of hundreds of digits: no float holds it, so no log-probability
        return None
    if not math.isfinite(number) or number > _ROUNDING:
        return None
    return min(number, 0.0)


def _token(value: Any) -> str | None:
    return value if isinstance(value, str) and len(value) <= MAX_TOKEN_CHARS else None


def _alternatives(raw: Any, pair: Any) -> tuple[tuple[str, float], ...] | str:
    """The first alternatives of ``raw`` (a list), each read by ``pair``; a problem in words when one is wrong."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return "its top_logprobs is not a list"
    kept = []
    for one in raw[:MAX_ALTERNATIVES]:
        token, logprob = pair(one)
        token, number = _token(token), _number(logprob)
        if token is None or number is None:
            return "an alternative is not a token of at most 64 characters with a log-probability at most 0"
        kept.append((token, number))
    return tuple(kept)


def _positions(entries: Any, entry: Any, pair: Any) -> Logprobs:
    """The positions of ``entries`` (a list), each read by ``entry`` as (token, logprob, alternatives)."""
    if not isinstance(entries, list):
        return Logprobs(problem="their content is not a list")
    kept = []
    for index, raw in enumerate(entries[:MAX_POSITIONS]):
        token, logprob, alternatives = entry(raw)
        token, number = _token(token), _number(logprob)
        if token is None or number is None:
            why = "not a token of at most 64 characters with a log-probability (a finite number at most 0)"
            return Logprobs(problem=f"token {index + 1} is {why}")
        read = _alternatives(alternatives, pair) if any(c.isdigit() for c in token) else ()
        if isinstance(read, str):
            return Logprobs(problem=f"token {index + 1}: {read}")
        kept.append(TokenChoice(token, number, read))
    return Logprobs(tuple(kept), cut=len(entries) > MAX_POSITIONS)


def _from_dict(raw: Any) -> tuple[Any, Any, Any]:
    if not isinstance(raw, dict):
        return None, None, None
    return raw.get("token"), raw.get("logprob"), raw.get("top_logprobs")


def _pair_from_dict(raw: Any) -> tuple[Any, Any]:
    return (raw.get("token"), raw.get("logprob")) if isinstance(raw, dict) else (None, None)


def _from_list(raw: Any) -> tuple[Any, Any, Any]:
    return (raw[0], raw[1], raw[2]) if isinstance(raw, list) and len(raw) == 3 else (None, None, None)


def _pair_from_list(raw: Any) -> tuple[Any, Any]:
    return (raw[0], raw[1]) if isinstance(raw, list) and len(raw) == 2 else (None, None)


def from_meta(meta: Mapping[str, Any]) -> Logprobs | None:
    """The log-probabilities of a reply's ``meta`` (Haystack's ``meta["logprobs"]``); ``None`` when it has none."""
    raw = meta.get("logprobs")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        return Logprobs(problem="the reply's logprobs is not an object")
    content = raw.get("content")
    if content is None:
        return None
    return _positions(content, _from_dict, _pair_from_dict)


def to_cache(logprobs: Logprobs) -> dict[str, Any]:
    """``logprobs`` as JSON data for the reply cache (compact: ``[token, logprob, [[token, logprob], ...]]``)."""
    positions = [[p.token, p.logprob, [list(a) for a in p.alternatives]] for p in logprobs.positions]
    return {"positions": positions, "cut": logprobs.cut}


def from_cache(data: Any) -> Logprobs | None:
    """What :func:`to_cache` wrote, checked within the same bounds; ``None`` when it is not that (a damaged entry)."""
    if not isinstance(data, dict) or set(data) != {"positions", "cut"} or not isinstance(data["cut"], bool):
        return None
    read = _positions(data["positions"], _from_list, _pair_from_list)
    return None if read.problem is not None else Logprobs(read.positions, data["cut"] or read.cut)


def _bare(token: str) -> str:
    return token.lstrip(_LEAD).rstrip(_TRAIL)


def _score_position(positions: Sequence[TokenChoice]) -> int | None:
    """The index of the token where the reply's last score key's value starts (else its first token with text)."""
    starts, text, offset = [], [], 0
    for position in positions:
        starts.append(offset)
        text.append(position.token)
        offset += len(position.token)
    joined = "".join(text)
    anchor = None
    for anchor in _ANCHOR.finditer(joined):  # noqa: B007 - the last one is wanted
        pass
    if anchor is not None:
        return bisect.bisect_right(starts, anchor.end()) - 1
    return next((index for index, position in enumerate(positions) if position.token.strip()), None)


def _mass(choice: TokenChoice, values: Iterable[int]) -> dict[int, float]:
    by_text = {str(value): value for value in values}
    seen: dict[str, float] = {}
    for token, logprob in (*choice.alternatives, (choice.token, choice.logprob)):
        seen.setdefault(token, logprob)  # the same token twice (the chosen one among its alternatives): once
    mass: dict[int, float] = {}
    for token, logprob in seen.items():
        value = by_text.get(_bare(token))
        if value is not None:
            mass[value] = mass.get(value, 0.0) + math.exp(logprob)
    return mass


def weigh(logprobs: Logprobs | None, score: int, values: Sequence[int]) -> Weighed | str:
    """The weighted score of a reply the reader read as ``score``, on a scale of ``values``; why not, in words."""
    if logprobs is None:
        return "the server returned no log-probabilities (it ignores logprobs: true; see docs/model-based-metrics.md)"
    if logprobs.problem is not None:
        return f"the server's log-probabilities cannot be used: {logprobs.problem}"
    kept = f" (only the first {MAX_POSITIONS:,} tokens' are kept)" if logprobs.cut else ""
    index = _score_position(logprobs.positions)
    if index is None:
        return f"the log-probabilities hold no token{kept}"
    choice = logprobs.positions[index]
    bare = _bare(choice.token)
    if bare != str(score):
        split = bare and str(score).startswith(bare)
        why = " (a value written over several tokens cannot be weighed)" if split else ""
        return (
            f"the score's token (token {index + 1}, {choice.token!r}) does not state the score read, {score}{why}{kept}"
        )
    mass = _mass(choice, values)
    total = math.fsum(mass.values())
    if not total > 0:
        return f"the score's token (token {index + 1}) gives no probability to a value of the scale"
    probabilities = {value: mass[value] / total for value in sorted(mass)}
    mean = math.fsum(value * p for value, p in probabilities.items())
    return Weighed(mean, max(probabilities.values()), probabilities)


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
