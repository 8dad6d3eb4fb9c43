"""What a run of an LLM grader would cost, counted before any call: requests, tokens and money, as bounds.

Pure functions over the requests a dry run recorded (:mod:`answer_eval.llm.dry_run`):

- **prompt tokens** are estimated by one stated rule, :data:`TOKEN_RULE`: the characters of every
  message of a request, divided by 4, rounded up. No tokenizer is used: the model behind an
  OpenAI-compatible server is unknown here (a llama.cpp or vLLM model has its own), and a
  tokenizer that downloads its tables at run time would break the promise that a dry run sends
  nothing. A request for ``n`` replies is one prompt, counted once (as OpenAI bills it);
- **completion tokens** have an upper bound only, ``max_tokens`` per reply asked; without
  ``max_tokens`` there is none (the server's own limit applies);
- **money** is the tokens at a price per million tokens, prompt and completion apart (``IN OUT``);
  with no completion bound, only the prompt's part is known. A price is a finite number of 0 or
  more (``-0`` is 0), and a cost always finite: prices whose cost no float holds (``1e308``) are
  refused (:class:`CostTooLarge`), never printed as ``inf`` or written as ``Infinity``.

With a call budget (``max_calls``), the figures are also given for the first ``max_calls``
requests, the ones the run would send before the rest become ``budget_stop``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "TOKEN_RULE",
    "CostTooLarge",
    "Estimate",
    "Planned",
    "Price",
    "estimate",
    "estimated_tokens",
    "figures",
    "price",
]

TOKEN_RULE = "characters/4"
"""The rule prompt tokens are estimated by (see the module docstring)."""

_CHARACTERS_PER_TOKEN = 4


def estimated_tokens(texts: Sequence[str]) -> int:
    """Prompt tokens of one request whose messages are ``texts``: their characters / 4, rounded up."""
    return math.ceil(sum(len(text) for text in texts) / _CHARACTERS_PER_TOKEN)


@dataclass(frozen=True)
class Planned:
    """One request a run would send.

    :param prompt_tokens: Its prompt's estimated tokens (:func:`estimated_tokens`).
    :param replies: The replies it asks for (``n``; 1 when it asks for one).
    """

    prompt_tokens: int
    replies: int = 1


@dataclass(frozen=True)
class Price:
    """A price per million tokens: of the prompt, and of the completion."""

    prompt: float
    completion: float


def price(values: Sequence[Any]) -> Price:
    """The price of two numbers (``IN OUT``, per million tokens); ``ValueError`` unless both are finite and >= 0."""
    if len(values) != 2:
        raise ValueError(f"takes two numbers, the prices of a million prompt and completion tokens; got {len(values)}")
    numbers = []
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"takes numbers, got {value!r}") from None
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"takes finite numbers of 0 or more, got {value}")
        numbers.append(number + 0.0)  # -0 is 0: a price is never printed as "-0"
    return Price(numbers[0], numbers[1])


@dataclass(frozen=True)
class Estimate:
    """What some requests would cost.

    :param requests: Requests sent.
    :param replies: Replies asked for (a request for ``n`` asks ``n``).
    :param prompt_tokens: Prompt tokens, by :data:`TOKEN_RULE`.
    :param completion_tokens_max: At most this many completion tokens (``max_tokens`` a reply); ``None``: no bound.
    :param prompt_cost: The prompt tokens' price (``None``: no price given).
    :param completion_cost_max: The completion tokens' price at most (``None``: no price, or no bound).
    :param cost_max: Both together, at most (``None`` when either is unknown).
    """

    requests: int
    replies: int
    prompt_tokens: int
    completion_tokens_max: int | None
    prompt_cost: float | None = None
    completion_cost_max: float | None = None
    cost_max: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON object (every field, by name)."""
        return asdict(self)


class CostTooLarge(ValueError):
    """The tokens at the prices given make a cost no float holds (prices near 1e308): no figure is printed."""


def _money(tokens: int, per_million: float) -> float:
    """``tokens`` at ``per_million`` a million tokens; :class:`CostTooLarge` when that is past the largest float."""
    try:
        cost = tokens * per_million / 1_000_000
    except OverflowError:  # a count too large for a float
        cost = math.inf
    if not math.isfinite(cost):
        raise CostTooLarge(f"{tokens:,} tokens at {per_million:g} a million cost more than any float holds")
    return cost + 0.0


def estimate(requests: Sequence[Planned], max_tokens: int | None, paid: Price | None = None) -> Estimate:
    """The cost of ``requests``, their completions bounded by ``max_tokens`` a reply, at ``paid`` when given.

    Every cost is a finite number of 0 or more: :class:`CostTooLarge` (a ``ValueError``) when the
    prices make one past the largest float, rather than an infinite cost printed or ``Infinity`` written.
    """
    replies = sum(request.replies for request in requests)
    prompt = sum(request.prompt_tokens for request in requests)
    completion = None if max_tokens is None else max_tokens * replies
    if paid is None:
        return Estimate(len(requests), replies, prompt, completion)
    prompt_cost = _money(prompt, paid.prompt)
    completion_cost = None if completion is None else _money(completion, paid.completion)
    total = None if completion_cost is None else prompt_cost + completion_cost
    if total is not None and not math.isfinite(total):
        both = f"a prompt cost of {prompt_cost:g} and a completion cost of {completion_cost:g}"
        raise CostTooLarge(f"{both} add up to more than any float holds")
    return Estimate(len(requests), replies, prompt, completion, prompt_cost, completion_cost, total)


def figures(
    requests: Sequence[Planned], max_tokens: int | None, paid: Price | None, max_calls: int | None
) -> tuple[Estimate, Estimate | None]:
    """The estimate of every request, and of the first ``max_calls`` (``None`` without a budget)."""
    every = estimate(requests, max_tokens, paid)
    within = None if max_calls is None else estimate(requests[:max_calls], max_tokens, paid)
    return every, within
