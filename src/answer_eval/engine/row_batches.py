"""Rows transformed a batch at a time, for transforms that score columns (every evaluator's).

A row transform may offer ``many(rows)``: the outputs of a list of ``(row, line number)`` pairs, in
order, with an :class:`~answer_eval.errors.InputError` in the place of each row it cannot
transform. The row loops (:mod:`answer_eval.engine.row_loop` in this process, and each worker of
:mod:`answer_eval.engine.parallel`) hand it up to :data:`BATCH_ROWS` rows at once, so an evaluator
scores a file through the same column-wise code as a batch in memory; a transform without
``many`` gets one row at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from answer_eval.errors import InputError, RowsKept

__all__ = ["BATCH_BYTES", "BATCH_ROWS", "transform_rows"]

BATCH_ROWS = 256
"""Rows per batch: enough to make the per-batch cost small, few enough that a signal stops a run soon."""
BATCH_BYTES = 4 << 20
"""A batch ends sooner when its lines reach this many bytes, so that memory stays flat with long rows."""


def transform_rows(
    transform: Callable[[dict[str, Any], int], dict[str, Any]],
    entries: Sequence[tuple[int, dict[str, Any] | InputError]],
) -> list[dict[str, Any] | InputError]:
    """The output (or the error) of every ``(line number, parsed row or its parse error)``, in order."""
    many = getattr(transform, "many", None)
    rows = [(parsed, number) for number, parsed in entries if not isinstance(parsed, InputError)]
    if many is not None:
        done = iter(many(rows))
        return [parsed if isinstance(parsed, InputError) else next(done) for _, parsed in entries]
    results: list[dict[str, Any] | InputError] = []
    for number, parsed in entries:
        if isinstance(parsed, InputError):
            results.append(parsed)
            continue
        try:
            results.append(transform(parsed, number))
        except RowsKept:
            raise  # not this row's fault: the run stops
        except InputError as exc:
            results.append(exc)
    return results
