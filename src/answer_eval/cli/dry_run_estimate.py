"""``--dry-run``: what an LLM grader's command would send and cost, printed before any call; nothing sent or written.

Offered by the file commands whose evaluator calls an LLM (its options are
:class:`~answer_eval.llm.caller_setup.LLMOptions`: ``rubric``, and ``judge`` with ``--escalate-model``).
The command runs as it would, on every row (the judge's offline verdicts too, to know which rows
it would escalate), but its caller records the requests instead of sending them
(:mod:`answer_eval.llm.caller_setup`), after reading the reply cache (``--cache``, read only). The
figures are :mod:`answer_eval.llm.spending`'s: requests, prompt tokens by a stated rule,
completion tokens bounded by ``--max-tokens``, and with ``--price-per-million-tokens IN OUT`` the
money, as bounds; with ``--max-calls``, also what the budget lets through. Prices whose cost no
float holds (``1e308 1e308``) are refused (exit 2 naming the flag), and ``-0`` is read as 0: no
cost is ever printed as ``inf`` or ``-0``, nor written as ``Infinity``.

No API key is needed, no request is sent, and nothing is written: not ``--output`` (accepted, so a
real command line can be tried as it is, but not written), not the cache, not a checkpoint.
``--resume`` is not read: the estimate is the whole file's, an upper bound for a resumed run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from answer_eval.errors import InputError
from answer_eval.evaluators.base import Evaluator
from answer_eval.llm.caller_setup import LLMOptions
from answer_eval.llm.spending import TOKEN_RULE, CostTooLarge, Estimate, Price, figures, price

__all__ = [
    "DRY_RUN_FLAGS",
    "add_dry_run_options",
    "dry_run_args",
    "estimate_words",
    "offers_dry_run",
    "print_estimate",
    "recording",
]

DRY_RUN_FLAGS = frozenset({"dry_run", "price_per_million_tokens"})
"""The flags' destinations: a real run's checkpoint record leaves them out (they cannot change a result)."""


def offers_dry_run(evaluator: type[Evaluator]) -> bool:
    """Whether the command of ``evaluator`` calls an LLM, and so offers ``--dry-run``."""
    return isinstance(evaluator.options_type, type) and issubclass(evaluator.options_type, LLMOptions)


def _price_value(text: str) -> float:
    try:
        return price([text, 0]).prompt
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("takes", "expected")) from None


def add_dry_run_options(parser: argparse.ArgumentParser) -> None:
    """``--dry-run`` and ``--price-per-million-tokens IN OUT``."""
    group = parser.add_argument_group("cost estimate")
    group.add_argument(
        "--dry-run",
        action="store_true",
        help="send nothing and write nothing: print the LLM requests the run would send (after the reply cache), "
        f"their prompt tokens (estimated: {TOKEN_RULE}), the completion tokens at most (--max-tokens a reply) "
        "and, with --price-per-million-tokens, the money at most; no API key needed",
    )
    group.add_argument(
        "--price-per-million-tokens",
        nargs=2,
        type=_price_value,
        metavar=("IN", "OUT"),
        help="with --dry-run or --batch: the price of a million prompt (IN) and completion (OUT) tokens, for the "
        "cost (with --batch, the batch price: OpenAI's is half the live one)",
    )


def dry_run_args(args: argparse.Namespace) -> argparse.Namespace | None:
    """The flags a dry run builds its evaluator from (no cache made, no budget), or ``None`` for a real run.

    :raises InputError: For ``--price-per-million-tokens`` without ``--dry-run``.
    """
    if not getattr(args, "dry_run", False):
        if getattr(args, "price_per_million_tokens", None) is not None and not getattr(args, "batch", False):
            raise InputError(
                "--price-per-million-tokens goes with --dry-run or --batch (a live run reports the tokens it used)"
            )
        return None
    # The budget is applied to the recorded requests instead: every request is recorded, in order.
    return argparse.Namespace(**{**vars(args), "cache_path": None, "max_calls": None})


def recording(evaluator: Evaluator, cache_path: str | None) -> tuple[Any, Any]:
    """Warm ``evaluator`` up, make its caller record: the recorder and the read-only cache (``InputError``: no LLM)."""
    from answer_eval.llm.batch_grading import llm_callers
    from answer_eval.llm.spending import dry_caller

    callers = llm_callers(evaluator)  # a jury's: every judge's caller records, in one recorder
    if not callers:
        raise InputError("--dry-run estimates LLM requests, and this run sends none (the judge: give --escalate-model)")
    recorder, cache = dry_caller(callers[0], cache_path)
    for caller in callers[1:]:
        caller.generator, caller.cache = recorder, cache
    return recorder, cache


def print_estimate(
    command: str,
    requests: Sequence[Any],
    *,
    rows: int,
    invalid_lines: int,
    cached_prompts: int,
    args: argparse.Namespace,
) -> None:
    """Print the estimate of ``requests`` (the recorder's) as text or, with ``--format json``, one JSON document."""
    given = getattr(args, "price_per_million_tokens", None)
    paid = None if given is None else Price(*given)
    max_tokens, max_calls = getattr(args, "max_tokens", None), getattr(args, "max_calls", None)
    try:
        every, within = figures(requests, max_tokens, paid, max_calls)
    except CostTooLarge as exc:  # prices near the largest float: no cost to print, never inf or Infinity
        raise InputError(
            f"--price-per-million-tokens: {exc}; give the prices of a million tokens (e.g. 0.15 0.6)"
        ) from None
    data: dict[str, Any] = {
        "dry_run": True,
        "command": command,
        "path": args.file,
        "rows": rows,
        "invalid_lines": invalid_lines,
        **every.to_json(),
        "cached_prompts": cached_prompts,
        "token_rule": TOKEN_RULE,
        "max_tokens": max_tokens,
        "price_per_million_tokens": None if paid is None else [paid.prompt, paid.completion],
        "max_calls": max_calls,
        "within_max_calls": None if within is None else within.to_json(),
    }
    # allow_nan=False: the JSON is for other programs, and Infinity or NaN is no JSON (every figure is finite).
    print(json.dumps(data, allow_nan=False) if args.format == "json" else "\n".join(_lines(data, every, within)))


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.6g}"


def _cost_words(figure: Estimate, bounded: bool) -> str:
    if figure.cost_max is not None:
        return f"at most {_money(figure.cost_max)} (prompt {_money(figure.prompt_cost)}, completion at most " + (
            f"{_money(figure.completion_cost_max)})"
        )
    if not bounded:
        return f"prompt {_money(figure.prompt_cost)}; the completion's has no bound (no max_tokens)"
    return "give --price-per-million-tokens IN OUT"


def _lines(data: dict[str, Any], every: Estimate, within: Estimate | None) -> list[str]:
    bounded = data["max_tokens"] is not None
    completion = (
        f"at most {every.completion_tokens_max} (--max-tokens {data['max_tokens']} a reply, an upper bound)"
        if bounded
        else "no bound: the requests set no max_tokens (the server's own limit applies; rubric: --max-tokens)"
    )
    lines = [
        f"answer-eval {data['command']} --dry-run: {data['path']} (nothing sent, nothing written)",
        f"  rows               {data['rows']}"
        + (f" ({data['invalid_lines']} invalid lines skipped)" if data["invalid_lines"] else ""),
        f"  requests           {every.requests} ({every.replies} replies asked; "
        f"{data['cached_prompts']} prompts answered from the reply cache)",
        f"  prompt tokens      {every.prompt_tokens} (estimated: {TOKEN_RULE}, rounded up, a request)",
        f"  completion tokens  {completion}",
    ]
    if data["price_per_million_tokens"] is not None:
        per = data["price_per_million_tokens"]
        lines.append(f"  cost               {_cost_words(every, bounded)}, at {per[0]:g} / {per[1]:g} a million tokens")
    if within is not None:
        cost = f"; cost {_cost_words(within, bounded)}" if data["price_per_million_tokens"] is not None else ""
        tokens = "" if within.completion_tokens_max is None else f", completion at most {within.completion_tokens_max}"
        label = f"  {'--max-calls ' + str(data['max_calls']):<19}"
        if within.requests == every.requests:
            lines.append(f"{label}allows every request")
        else:
            lines.append(
                f"{label}allows {within.requests} of the {every.requests} requests (the rest: budget_stop): "
                f"prompt tokens {within.prompt_tokens}{tokens}{cost}"
            )
    return lines


def estimate_words(pending: Sequence[Any], args: argparse.Namespace) -> str:
    """The estimate of a batch's requests (:class:`~answer_eval.llm.batches.Pending`), as ``--dry-run`` makes it."""
    from answer_eval.llm.spending import Planned, estimated_tokens

    planned = []
    for request in pending:
        texts = [str(message.get("content") or "") for message in request.body.get("messages", [])]
        planned.append(Planned(estimated_tokens(texts), int(request.body.get("n") or 1)))
    given = getattr(args, "price_per_million_tokens", None)
    paid = None if given is None else Price(*given)
    max_tokens = getattr(args, "max_tokens", None)
    try:
        every, _within = figures(planned, max_tokens, paid, None)
    except CostTooLarge as exc:
        raise InputError(f"--price-per-million-tokens: {exc}") from None
    completion = (
        "no bound (no --max-tokens)"
        if every.completion_tokens_max is None
        else (f"at most {every.completion_tokens_max}")
    )
    words = f"estimated: prompt tokens {every.prompt_tokens} ({TOKEN_RULE}), completion tokens {completion}"
    if paid is not None:
        words += (
            f"; cost {_cost_words(every, max_tokens is not None)}, at {paid.prompt:g} / {paid.completion:g} a million"
        )
    return words
