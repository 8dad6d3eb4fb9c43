"""The limits of an LLM grader's use, checked for every layer: concurrency, retries, backoff, budget, cache, timeout."""

from __future__ import annotations

from typing import Any

from answer_eval.evaluators.checks import check_number, check_str
from answer_eval.llm.deadline import MAX_DEADLINE, check_seconds

__all__ = ["check_limits"]


def check_limits(
    concurrency: Any,
    max_retries: Any,
    retry_backoff: Any,
    max_calls: Any,
    cache_path: Any,
    sampling: Any = "auto",
    timeout: Any = None,
) -> None:
    """Raise ``TypeError`` or ``ValueError`` naming the first bad limit (NaN and infinities are bad numbers)."""
    for name, value in (("concurrency", concurrency), ("max_retries", max_retries)):
        check_number(name, value, integer=True)
    check_number("max_calls", max_calls, integer=True, optional=True)
    check_number("retry_backoff", retry_backoff)
    check_number("timeout", timeout, optional=True)
    check_str("cache_path", cache_path, optional=True)
    check_str("sampling", sampling)
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if max_retries < 0:
        raise ValueError(f"max_retries must not be negative, got {max_retries}")
    if max_calls is not None and max_calls < 0:
        raise ValueError(f"max_calls must not be negative, got {max_calls}")
    check_seconds("retry_backoff", retry_backoff, zero=True)
    check_seconds("timeout", timeout, optional=True)
    if timeout is not None and timeout > MAX_DEADLINE:
        raise ValueError(f"timeout must be at most {MAX_DEADLINE:g} seconds (a day), got {timeout!r}")
    if cache_path is not None and not cache_path.strip():
        raise ValueError("cache_path must name a file, got a blank string")
