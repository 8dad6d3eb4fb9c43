"""An item's error in the two places that report it: by line (the command line) and by position (a component).

An evaluator's :meth:`~answer_eval.evaluators.base.Evaluator.score` raises an
:class:`~answer_eval.evaluators.base.ItemError` whose message leaves the position out, since the
command line names the file and line itself. A Haystack component reports the same item by its
position in the batch, in the words its checks use when given one ("ground truth at position 2 is
blank"), as a `TypeError` or `ValueError`. :func:`item_error` keeps both: the check that failed is
run once more, given the position, only on this error path.
"""

from __future__ import annotations

from collections.abc import Callable

from answer_eval.errors import ItemError

__all__ = ["LocatedItemError", "item_error", "positioned"]


class LocatedItemError(ItemError):
    """An :class:`ItemError` that also carries the error naming the item's position, as a batch caller reports it."""

    def __init__(self, message: str, role: str | None, position: int, located: TypeError | ValueError) -> None:
        super().__init__(message, role, position)
        self.located = located


def item_error(check: Callable[[int | None], object], role: str | None, position: int, error: Exception) -> ItemError:
    """The :class:`ItemError` of ``error``, raised by ``check(None)`` on the item at ``position``.

    :param check: The item's check, given the position to name (``None``: none).
    :returns: A :class:`LocatedItemError` carrying ``check(position)``'s error, or a plain
        :class:`ItemError` when the check passes given the position.
    """
    try:
        check(position)
    except (TypeError, ValueError) as located:
        return LocatedItemError(str(error), role, position, located)
    return ItemError(str(error), role, position)


def positioned(error: ItemError) -> TypeError | ValueError:
    """The error a batch caller raises for ``error``: the located one, else a `ValueError` naming the position."""
    if isinstance(error, LocatedItemError):
        return error.located
    if error.role is None:
        return ValueError(str(error))
    return ValueError(f"{error.role} at position {error.position}: {error}")
