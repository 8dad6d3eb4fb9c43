"""Numbers as the reports print them: fixed decimals, never a negative zero."""

from __future__ import annotations

__all__ = ["fixed", "rounded"]


def fixed(value: float, digits: int = 3, *, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals (``signed``: with its sign), never a negative zero.

    ``-0.000`` reads as a real, if tiny, disagreement or loss; a value that rounds to zero prints
    as ``0.000`` (``+0.000`` signed). Any other value prints as ``format`` prints it.

    >>> fixed(-0.0004), fixed(-0.0004, signed=True), fixed(0.81520785)
    ('0.000', '+0.000', '0.815')
    """
    rounded = round(value, digits) + 0.0  # adding 0.0 turns -0.0 into 0.0
    return f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"


def rounded(value: float, digits: int) -> float:
    """``round(value, digits)``, never a negative zero: what the outputs write as a number (JSON too).

    A kappa of -0.00003 rounds to ``-0.0``, which JSON writes as ``-0.0`` and reads as a real, if
    tiny, disagreement; adding 0.0 turns it into 0.0 and leaves every other value as it is.

    >>> rounded(-0.00003, 4), rounded(0.81520785, 4), rounded(-0.5, 4)
    (0.0, 0.8152, -0.5)
    """
    return round(value, digits) + 0.0
