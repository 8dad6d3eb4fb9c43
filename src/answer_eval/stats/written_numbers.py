"""Numbers as the outputs write them: exact sums, and decimals that never show a negative zero.

An exact sum of floats is the same total however the values were split and in whatever order they
were added: what lets partial summaries (Dask partitions, ``--jobs`` chunks, a resumed run) add up
to the summary of one pass, bit for bit. A rounded or printed value that rounds to zero is ``0.0``
(``0.000``), never ``-0.0``, which reads as a real, if tiny, disagreement or loss.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["ExactSum", "fixed", "rounded"]


class ExactSum:
    """The exact sum of numbers, rounded once when read: a mean that does not depend on how rows are split.

    Plain ``+=`` rounds after every addition, so summing the same floats in parts (one part per
    worker, say) and adding the parts gives a different last bit than one running total. This
    keeps the sum exactly (every finite float is an integer multiple of 2**-1074, so the sum is
    held as one Python integer) and rounds once in :attr:`value`, which is then the correctly
    rounded sum, equal to ``math.fsum`` of all the values, however they were split and
    :meth:`merge`-d. Values are ints or floats (a ``bool`` counts as an int); a value with
    another denominator (``Fraction``, ``Decimal``) is read as a float first. An infinity or NaN
    makes :attr:`value` that non-finite value, as float addition would.

    >>> parts = ExactSum([0.1, 0.2]), ExactSum([0.3])
    >>> parts[0].merge(parts[1])
    >>> parts[0].value == math.fsum([0.1, 0.2, 0.3]), parts[0].count
    (True, 3)
    """

    __slots__ = ("_non_finite", "_scaled", "count")

    _SHIFT = 1074  # 2**-1074 is the smallest positive float (a subnormal)

    def __init__(self, values: Iterable[float] = ()) -> None:
        self.count = 0
        """How many values were added (merged parts included)."""
        self._scaled = 0
        self._non_finite = 0.0
        for value in values:
            self.add(value)

    def add(self, value: float) -> None:
        """Add one value."""
        self.count += 1
        if isinstance(value, int):
            self._scaled += int(value) << self._SHIFT
            return
        number = float(value)
        if not math.isfinite(number):
            self._non_finite += number
            return
        numerator, denominator = number.as_integer_ratio()  # denominator: a power of two, at most 2**1074
        self._scaled += numerator << (self._SHIFT + 1 - denominator.bit_length())

    def merge(self, other: ExactSum) -> None:
        """Add every value of ``other`` (exactly: the order of merges does not matter)."""
        self.count += other.count
        self._scaled += other._scaled
        self._non_finite += other._non_finite

    @property
    def value(self) -> float:
        """The sum, rounded once to the nearest float (``0.0`` when empty)."""
        if self._non_finite != 0:
            return self._non_finite
        return self._scaled / (1 << self._SHIFT)

    def __getstate__(self) -> tuple[int, int, float]:
        return self.count, self._scaled, self._non_finite

    def __setstate__(self, state: tuple[int, int, float]) -> None:
        self.count, self._scaled, self._non_finite = state

    def __repr__(self) -> str:
        return f"ExactSum(value={self.value!r}, count={self.count})"


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
