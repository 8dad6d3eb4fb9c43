"""A question's acceptable answers as the judge's stages read them, read once per question.

Answers to one question share its golds (TriviaQA questions carry a dozen aliases or more): which
of them the stages weigh, their folded forms and their bare forms depend on the golds and the
question alone, so :class:`GoldBook` reads them for the first answer and keeps them (bounded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from answer_eval.evaluators.judge.features import gold_letters
from answer_eval.evaluators.judge.reasons import with_bare_forms
from answer_eval.text.folding import fold
from answer_eval.text.matching import contains_folded

__all__ = ["GoldBook", "QuestionGolds"]

BOOK_SIZE = 4096
"""Questions remembered; the book is emptied when full (memory stays flat on endless input)."""


@dataclass(frozen=True)
class QuestionGolds:
    """What the stages read from one question's acceptable answers (lists never changed once made).

    :param golds: The acceptable answers but the unanswerable label.
    :param folded: Each of ``golds`` folded as the strict rules fold it (same order).
    :param weighed: What the lenient stage weighs: ``golds`` and their bare forms (or every label
        when ``golds`` is empty).
    """

    golds: list[str]
    folded: list[str]
    weighed: list[str]

    @cached_property
    def letters(self) -> list[str]:
        """The letters of each of ``weighed``, folded (for the character recall; read when first asked)."""
        known = dict(zip(self.golds, self.folded, strict=True))
        return [gold_letters(known[gold] if gold in known else fold(gold)) for gold in self.weighed]

    def found(self, outcome: str) -> list[tuple[str, str]]:
        """The golds (and folded forms) the strict rules find in a folded answer, in order."""
        # contains_folded finds nothing that is not a substring: most golds are settled by ``in``.
        return [
            (gold, folded)
            for gold, folded in zip(self.golds, self.folded, strict=True)
            if folded in outcome and contains_folded(outcome, folded)
        ]


class GoldBook:
    """Each question's :class:`QuestionGolds`, read once and kept (at most :data:`BOOK_SIZE` questions).

    :param folded_label: The strict rules' folding of a label (their cache).
    :param folded_not_found: The folded unanswerable label.
    """

    def __init__(self, folded_label: Callable[[str], str], folded_not_found: str) -> None:
        self._folded_label = folded_label
        self._folded_not_found = folded_not_found
        self._book: dict[tuple[tuple[str, ...], str | None], QuestionGolds] = {}

    def read(self, acceptable: tuple[str, ...], question: str | None) -> QuestionGolds:
        """The question's golds as the stages read them."""
        key = (acceptable, question)
        known = self._book.get(key)
        if known is not None:
            return known
        pairs = [(label, self._folded_label(label)) for label in acceptable]
        golds = [label for label, folded in pairs if folded != self._folded_not_found]
        folded = [folded for _, folded in pairs if folded != self._folded_not_found]
        read = QuestionGolds(golds, folded, with_bare_forms(golds, question) or list(acceptable))
        if len(self._book) >= BOOK_SIZE:
            self._book.clear()
        self._book[key] = read
        return read
