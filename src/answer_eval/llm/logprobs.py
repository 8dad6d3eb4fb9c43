"""Log-probabilities of a reply's tokens, for G-Eval-style scores: read within bounds, cached, weighed.

A grader scoring by log-probabilities (``scoring="logprobs"``) asks the server for ``logprobs:
true, top_logprobs: 20``. Haystack's ``OpenAIChatGenerator`` puts the choice's log-probabilities
in the reply's ``meta["logprobs"]``: ``{"content": [{"token", "logprob", "top_logprobs": [{"token",
"logprob"}, ...]}, ...]}``, one entry a token of the reply.

**Bounds.** The server is not trusted: :func:`from_meta` keeps the first :data:`MAX_POSITIONS`
tokens (``cut`` says when there were more) and the first :data:`MAX_ALTERNATIVES` alternatives of
a token, and those only for a token holding a digit (a score is written in digits: nothing else is
weighed). A token is a string of at most :data:`MAX_TOKEN_CHARS` characters and a log-probability
a finite number at most 0 (up to a rounding error, then 0); anything else (NaN, a string, a list
where an object belongs, a JSON integer too large for a float) makes the whole unusable, with the
reason (:attr:`Logprobs.problem`); read from the reply cache, they are dropped and the prompt asked
again. Nothing recurses: the shape is read level by level, so a deeply nested value is only a wrong type.

**Where the score is.** The tokens are joined (their text is the reply's, as the server split
it). The score's token is the one where the value of the last score key starts: a JSON
``"score"``, ``"rating"`` or ``"grade"`` key (what the prompt asks for), or a named score such as
``Score: 4``, ``rating = 4`` or ``the grade is 4`` (case aside); a reply with neither (one that
opens with its grade, ``4 - good``) has it at its first token. That token must state the score the
reply reader read (its text, without spaces, quotes, ``*`` or a ``:`` before and ``,``, ``.`` or
``}`` after, is the score's digits), so the two readings agree; else, or when a value is written
over several tokens (``10`` as ``1``, ``0``), there is no score (:func:`weigh` says why).

**The score.** Each of the token's alternatives (and the token itself) that states a value of the
scale adds its probability to that value (two spellings, ``4`` and `` 4``, add up); the values'
probabilities are renormalised to sum to 1 over the scale's values found among the alternatives.
The score is their probability-weighted mean, and the confidence the probability of the most
likely value (renormalised). A value the top alternatives do not hold has probability 0.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LOGPROB_REQUEST",
    "MAX_ALTERNATIVES",
    "MAX_POSITIONS",
    "MAX_TOKEN_CHARS",
    "Logprobs",
    "TokenChoice",
    "Weighed",
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
