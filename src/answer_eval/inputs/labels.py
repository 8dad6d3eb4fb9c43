"""Checking ground-truth labels: one acceptable answer or several per question."""

from __future__ import annotations

import decimal
import math
import numbers
import re
from collections.abc import Sequence
from typing import Any

from answer_eval.text.folding import IGNORABLE_CLASS

__all__ = ["acceptable_answers", "check_batch_shape", "check_ground_truths"]


# A character a reader can see: neither white space nor a default-ignorable (invisible) one.
_VISIBLE = re.compile(r"[^\s" + IGNORABLE_CLASS + "]")
_find_visible = _VISIBLE.search


def _describe(position: int | None) -> str:
    return "" if position is None else f" at position {position}"


def _number_label(value: Any, position: int | None) -> str:
    """A number label as the text the number reading reads: an int's digits, a finite real's shortest form."""
    try:
        if isinstance(value, numbers.Integral):
            return int.__repr__(int(value))  # the digits, whatever an int subclass's __str__ does
        if isinstance(value, float):
            finite, text = math.isfinite(value), float.__repr__(value)  # numpy's float64 is a float
        elif isinstance(value, decimal.Decimal):
            finite, text = value.is_finite(), decimal.Decimal.__str__(value)  # exact: 3.50 stays 3.50
        else:  # another real (numpy's float32...): its own shortest form, checked to be a number
            text = str(value)
            finite = math.isfinite(float(text))
    except ValueError:
        where = _describe(position)
        raise ValueError(f"ground truth{where} is an integer too long to read (over 4300 digits)") from None
    except Exception:  # noqa: BLE001 - a number that cannot say what it is is no label
        raise TypeError(f"ground truth{_describe(position)} is a number that cannot be read as one") from None
    if not finite:
        raise ValueError(f"ground truth{_describe(position)} is not a finite number ({text}): no answer can match it")
    return text


def _one_label(value: Any, position: int | None) -> str:
    # bool is an int subclass; True as a label is almost always a mistake (a verdict column
    # passed as the answers), so it is refused rather than read as "True".
    if value is None:  # an empty CSV cell, a null in JSON, a missing value in a frame
        raise TypeError(f"ground truth{_describe(position)} is missing (empty or null): no answer can match it")
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Real, decimal.Decimal)):
        kind = type(value).__name__
        raise TypeError(f"ground truth{_describe(position)} must be a str or a number, or a list of them; got {kind}")
    if type(value) is str:
        label = value
    elif isinstance(value, str):
        label = str.__getitem__(value, slice(None))  # a plain copy: a subclass's methods are never called
    else:
        label = _number_label(value, position)
    if not label.strip() or (not label.isascii() and _find_visible(label) is None):
        raise ValueError(
            f"ground truth{_describe(position)} is blank (white space or invisible characters only): "
            "an empty label would be found in every answer"
        )
    return label


def _is_vector(value: Any) -> bool:
    """A one-dimensional numpy array (what a pandas column of lists read from Parquet holds), told without numpy."""
    kind = type(value)
    return kind.__name__ == "ndarray" and kind.__module__ == "numpy" and getattr(value, "ndim", None) == 1


def _plain_labels(values: list[Any]) -> bool:
    """Whether every value is exactly a str of ASCII with a visible character (nothing to convert or refuse)."""
    return set(map(type, values)) == {str} and all(map(str.isascii, values)) and all(map(str.strip, values))


def acceptable_answers(value: Any, position: int | None = None) -> tuple[str, ...]:
    """Return the acceptable answers of one question as a tuple of strings.

    ``value`` is a str, a number (an int, a finite float, a ``Decimal``, a numpy scalar: read as
    its digits, so the number reading matches it), or a non-empty list or tuple of them (or a
    one-dimensional numpy array of them, as a pandas column of lists read from Parquet holds). Raises
    ``TypeError`` for a label of another type and ``ValueError`` for an empty list, a blank label
    or a number that is not finite (NaN, infinity), naming ``position`` when given.
    """
    if _is_vector(value):
        value = list(value)  # its items as numpy scalars: each read at its own precision, as a list's are
    if type(value) is list and value and _plain_labels(value):
        return tuple(value)  # every label is a visible ASCII str: what _one_label returns for each, in C loops
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"ground truth{_describe(position)} is an empty list: give at least one acceptable answer")
        return tuple(_one_label(item, position) for item in value)
    return (_one_label(value, position),)


def check_batch_shape(ground_truth_answers: Any, predicted_answers: Any) -> None:
    """Check that a batch's two inputs are lists (or tuples) of the same length.

    Raises ``TypeError`` when either argument is not a list, ``ValueError`` when their lengths
    differ (naming both). The first half of :func:`check_ground_truths`.
    """
    if not isinstance(ground_truth_answers, (list, tuple)):
        raise TypeError(f"ground_truth_answers must be a list, got {type(ground_truth_answers).__name__}")
    if not isinstance(predicted_answers, Sequence) or isinstance(predicted_answers, (str, bytes)):
        raise TypeError(f"predicted_answers must be a list, got {type(predicted_answers).__name__}")
    if len(ground_truth_answers) != len(predicted_answers):
        raise ValueError(
            f"ground_truth_answers has {len(ground_truth_answers)} items but predicted_answers has "
            f"{len(predicted_answers)}; they must be the same length"
        )


def check_ground_truths(ground_truth_answers: Any, predicted_answers: Any) -> list[tuple[str, ...]]:
    """Validate a batch's inputs and return its acceptable answers, one tuple per question.

    Raises ``TypeError`` when either argument is not a list (or tuple), ``ValueError`` when their
    lengths differ (naming both) or a question has no acceptable answer.
    """
    check_batch_shape(ground_truth_answers, predicted_answers)
    return [acceptable_answers(value, index) for index, value in enumerate(ground_truth_answers)]
