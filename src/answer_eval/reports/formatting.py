"""Numbers as the reports print them: fixed decimals, never a negative zero."""

from __future__ import annotations

__all__ = ["fixed"]


def fixed(value: float, digits: int = 3, *, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals (``signed``: with its sign), never a negative zero.

    ``-0.000`` reads as a real, if tiny, disagreement or loss; a value that rounds to zero prints
    as ``0.000`` (``+0.000`` signed). Any other value prints as ``format`` prints it.

    >>> fixed(-0.0004), fixed(-0.0004, signed=True), fixed(0.81520785)
    ('0.000', '+0.000', '0.815')
    """
    rounded = round(value, digits) + 0.0  # adding 0.0 turns -0.0 into 0.0
    return f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"
