"""Acceptable answers read for matching: folded once, classified, checked and cached (bounded).

The scorer matches every answer against its question's labels; folding a label and deciding how
to match it (plain text, a number at one end or both, the not-found label) is done once per
distinct label and kept, so a batch of labels seen before costs a few dictionary look-ups.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Iterable, Sequence
from contextlib import suppress
from itertools import chain, compress, count
from typing import Any

from answer_eval.inputs.reading import acceptable_answers
from answer_eval.text.folding import fold, fold_many
from answer_eval.text.matching import number_edges

__all__ = [
    "LABEL_CACHE_SIZE",
    "LEFT",
    "NEVER",
    "NOT_FOUND_LABEL",
    "PLAIN",
    "RIGHT",
    "LabelEntry",
    "LabelReader",
    "assign",
]

# How a folded label is matched: a plain substring, a number at its left end, its right end or
# both (bit flags), the not-found label, or never (a label that folds to nothing).
PLAIN, LEFT, RIGHT = 0, 1, 2
NOT_FOUND_LABEL, NEVER = 4, 8
LabelEntry = tuple[str, int]
"""A folded label and how to match it (one of the codes above)."""

# Folded labels kept per scorer. Labels repeat across a batch and across runs (the same gold
# answers scored again and again), so folding each once pays; the bound keeps memory flat when
# they do not (the cache is emptied when full: about 10 MB at most for typical labels).
LABEL_CACHE_SIZE = 65_536


def _remember(cache: dict[Any, Any], pairs: list[tuple[Any, Any]]) -> None:
    # Add to a cache that holds at most LABEL_CACHE_SIZE entries (emptied when it would overflow).
    pairs = pairs[-LABEL_CACHE_SIZE:]
    if len(cache) + len(pairs) > LABEL_CACHE_SIZE:
        cache.clear()
    cache.update(pairs)


def assign(target: list[Any], positions: Iterable[int], values: Iterable[Any]) -> None:
    """``target[position] = value`` for each pair, looped in C (a deque of length 0 drains the map)."""
    deque(map(target.__setitem__, positions, values), maxlen=0)


class LabelReader:
    """Reads, checks and caches the acceptable answers of questions for one scorer.

    :param folded_not_found_label: The folded label of an unanswerable question.
    """

    def __init__(self, folded_not_found_label: str) -> None:
        self.folded_not_found_label = folded_not_found_label
        self.labels: dict[str, LabelEntry] = {}
        self.label_sets: dict[str | tuple[str, ...], tuple[LabelEntry, ...]] = {}

    def entry(self, label: str) -> LabelEntry:
        """The folded label and how to match it, from the cache when seen before."""
        cacheable = type(label) is str
        entry = self.labels.get(label) if cacheable else None
        if entry is None:
            entry = self._entry_of_folded(fold(label))
            # Only labels the checks accept are kept, so a cached label is known to be valid.
            if cacheable and label.strip():
                if len(self.labels) >= LABEL_CACHE_SIZE:
                    self.labels.clear()
                self.labels[label] = entry
        return entry

    def _entry_of_folded(self, folded: str) -> LabelEntry:
        if folded == self.folded_not_found_label:
            return folded, NOT_FOUND_LABEL
        if not folded:
            return folded, NEVER
        left, right = number_edges(folded)
        return folded, (LEFT if left else PLAIN) | (RIGHT if right else PLAIN)

    def _fold_new_labels(self, values: Iterable[Any]) -> None:
        """Fold in bulk the labels of ``values`` not in the cache yet (checking is left to the caller)."""
        fresh: list[str] = []
        for value in values:
            if type(value) is str:
                fresh.append(value)
            elif type(value) is list:
                fresh.extend(label for label in value if type(label) is str)
        known = self.labels
        fresh = [label for label in dict.fromkeys(fresh) if label not in known and label.strip()]
        for label, folded in zip(fresh, fold_many(fresh), strict=True):
            if len(known) >= LABEL_CACHE_SIZE:
                known.clear()
            known[label] = self._entry_of_folded(folded)

    def _read_plain_labels(self, values: list[Any]) -> list[tuple[LabelEntry, ...]] | None:
        """Read questions' labels in bulk when all are non-blank strings (or non-empty lists of them).

        Such labels pass every check, so they are folded together and remembered; ``None`` when
        some value has another shape or would be refused, for the caller to check one by one.
        """
        shapes = set(map(type, values))
        if shapes == {str}:
            groups: list[Any] = list(zip(values))
            keys: Iterable[Any] = values
        elif shapes == {list} and all(values):
            groups, keys = values, map(tuple, values)
        else:
            return None
        flat = list(chain.from_iterable(groups))
        if set(map(type, flat)) != {str} or not all(map(str.strip, flat)):
            return None
        known = self.labels
        entries = dict(zip(flat, map(known.get, flat), strict=True))
        new = [label for label, entry in entries.items() if entry is None]
        entries.update(zip(new, map(self._entry_of_folded, fold_many(new)), strict=True))
        if any(code == NEVER for _, code in entries.values()):
            return None  # a label of invisible characters only: refused by the checks, one by one
        _remember(known, [(label, entries[label]) for label in new])
        read = [tuple(map(entries.__getitem__, group)) for group in groups]
        _remember(self.label_sets, list(zip(keys, read, strict=True)))
        return read

    def _read_labels(self, value: Any, position: int) -> tuple[LabelEntry, ...]:
        """Check one question's acceptable answers (raising naming ``position``) and read them.

        A str or a list of str is remembered (bounded), so the same labels are checked once.
        """
        labels = tuple(map(self.entry, acceptable_answers(value, position)))
        if type(value) is str or (type(value) is list and all(type(label) is str for label in value)):
            if len(self.label_sets) >= LABEL_CACHE_SIZE:
                self.label_sets.clear()
            # Only labels of exactly str are kept: (1,) == (True,), and True must still be refused.
            self.label_sets[value if type(value) is str else tuple(value)] = labels
        return labels

    def batch(self, ground_truth_answers: Sequence[Any]) -> list[tuple[LabelEntry, ...]]:
        """Every question's labels, read and checked (as :func:`answer_eval.check_ground_truths` does).

        Labels seen before come from the cache in one pass; the rest are checked in order, so the
        first bad one raises, naming its position.
        """
        cached = self.label_sets.get
        kinds = set(map(type, ground_truth_answers))
        labels: list[tuple[LabelEntry, ...] | None]
        if kinds == {str}:
            labels = list(map(cached, ground_truth_answers))
        elif kinds == {list}:
            try:
                labels = list(map(cached, map(tuple, ground_truth_answers)))
            except Exception:  # noqa: BLE001 - a label whose hash fails (however): the checks below name it
                labels = [None] * len(ground_truth_answers)
        else:
            labels = [None] * len(ground_truth_answers)
        missing = list(compress(count(), map(operator.not_, labels)))
        if not missing:
            return labels  # type: ignore[return-value]
        read = self._read_plain_labels(list(map(ground_truth_answers.__getitem__, missing)))
        if read is not None:
            assign(labels, missing, read)
            return labels  # type: ignore[return-value]
        # Something to refuse, or an unusual shape: check question by question, in order.
        self._fold_new_labels(ground_truth_answers[position] for position in missing)
        for position in missing:
            value = ground_truth_answers[position]
            # An earlier question of this batch may have had the same labels.
            again = None
            if type(value) in (str, list):
                with suppress(Exception):  # a label whose hash fails (however): _read_labels names it
                    again = cached(value if type(value) is str else tuple(value))
            labels[position] = again if again is not None else self._read_labels(value, position)
        return labels  # type: ignore[return-value]
