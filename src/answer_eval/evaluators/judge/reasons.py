"""Why the judge decided as it did, in words a person can check, and the rules that read golds for it.

The cascade in :mod:`answer_eval.evaluators.judge.cascade` decides; these functions say why (the ``evidence`` of each
verdict) and hold the two gold readings every stage shares: a gold named only as a near miss
(denied, hedged among rival candidates, or another person), and a gold's bare form without its
parenthetical remarks.

:class:`GoldBook` holds a question's acceptable answers as the stages read them, read once per
question: answers to one question share its golds (TriviaQA questions carry a dozen aliases or more): which
of them the stages weigh, their folded forms and their bare forms depend on the golds and the
question alone, so the book reads them for the first answer and keeps them (bounded).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from answer_eval.evaluators.judge.acceptance_model import gold_letters
from answer_eval.evaluators.judge.lenient import LexicalEvidence, names_someone_else
from answer_eval.text.denials import Asked, only_denied
from answer_eval.text.folding import fold
from answer_eval.text.hedges import AcceptableForms, only_hedged
from answer_eval.text.matching import contains_folded
from answer_eval.text.question_slots import OtherSlot

__all__ = ["GoldBook", "QuestionGolds", "lexical_reason", "near_miss_reason", "no_evidence_reason", "other_slot_reason"]


def _words(words: Sequence[str]) -> str:
    return ", ".join(words) if words else "none"


def lexical_reason(evidence: LexicalEvidence) -> str | None:
    """Why the lexical stage accepts, or ``None`` when it does not."""
    if evidence.restates_question or evidence.refuted:
        return None
    gold = evidence.gold
    if evidence.number_with_unit:
        return f'gives the number of "{gold}" without its unit'
    if evidence.without_middle:
        return f'names "{gold}" without the middle name'
    if evidence.more_specific:
        return (
            f'holds every word of the acceptable answer "{gold}" ({_words(evidence.gold_words)}), in any order or form'
        )
    if evidence.less_specific:
        if evidence.year_of_date and not evidence.word_anchor:
            return f'gives the year of the date "{gold}"'
        return (
            f'a less specific form of the acceptable answer "{gold}": '
            f"every new word of the answer ({_words(evidence.answer_words)}) is in it"
        )
    if evidence.in_range:
        return f'its number lies inside the range given by "{gold}"'
    if evidence.joined:
        return f'the words of "{gold}" written together or apart'
    return None


def no_evidence_reason(evidence: LexicalEvidence | None, asked: bool = True) -> str:
    """Why an answer with no lexical evidence is wrong, naming the closest gold and what conflicts.

    :param asked: Whether a question was given: without one, an answer with no word of its own
        restates nothing; it holds no content word.
    """
    if evidence is None:
        return "no acceptable answer to compare with"
    if evidence.restates_question:
        return "only restates the question" if asked else "holds no content word (only words such as 'the', 'of')"
    if evidence.denied:
        return _denied(evidence.gold)
    if evidence.hedged:
        return _hedged(evidence.gold)
    reason = f'no lexical evidence: it holds {evidence.recall:.0%} of the words of "{evidence.gold}"'
    if evidence.name_conflict:
        reason += ", and it names someone else (other initials or another regnal number)"
    elif evidence.number_conflict:
        reason += ", and its numbers differ from the gold's"
    elif evidence.numbers_missing:
        reason += ", and the gold's numbers are missing"
    return reason


_PARENTHETICAL = re.compile(r"\([^()]*\)")


def with_bare_forms(golds: list[str], question: str | None) -> list[str]:
    """The golds, and each without its parenthetical remarks ("Bryophyta (disambiguation)" -> "Bryophyta").

    A bare form of one or two characters ("O" of "O(n)") or one the question already names ("EE"
    of "EE (network)" to "... corp EE was originally branded?") would accept too much: left out.
    """
    if not any("(" in gold for gold in golds):
        return golds
    asked = fold(question or "")
    bare = [" ".join(_PARENTHETICAL.sub(" ", gold).split()) for gold in golds if "(" in gold]
    return golds + [
        gold for gold in bare if len(gold) > 2 and gold not in golds and not contains_folded(asked, fold(gold))
    ]


def _denied(gold: str) -> str:
    return f'names the acceptable answer "{gold}" only to deny it'


def _hedged(gold: str) -> str:
    return f'names the acceptable answer "{gold}" only as one of several candidates: a hedge is not an answer'


def near_miss_reason(
    text: str,
    outcome: str,
    found: Sequence[tuple[str, str]],
    golds: Iterable[str],
    denials: dict[str, bool] | None = None,
    question: Asked | None = None,
) -> str | None:
    """Why the golds the strict rules found (gold, folded gold pairs) are no answer, or ``None`` when one of them is.

    Each must be only denied there, only one of several candidates ("probably Saturn or Jupiter"),
    or someone else ("Elizabeth II" for "Elizabeth I"); the reason names the first. ``golds`` are
    every folded gold of the question (read only if a hedge is found: a lazy iterable will do): a
    candidate that is one of them is no rival. ``denials``, when given, gets whether each folded
    gold read was denied in ``outcome`` (for the lenient stage, which reads the same). ``question``
    (:func:`answer_eval.text.denials.asked`) lets a negation of the question's predicate deny a gold.
    """
    if not found:
        return None
    forms = AcceptableForms(golds)
    reasons = []
    for gold, folded in found:
        denied = only_denied(outcome, folded, question)
        if denials is not None:
            denials[folded] = denied
        if denied:
            reasons.append(_denied(gold))
        elif only_hedged(outcome, folded, forms):
            reasons.append(_hedged(gold))
        elif names_someone_else(text, gold):
            reasons.append(f'names someone else than the acceptable answer "{gold}" (other initials or regnal number)')
        else:
            return None
    return reasons[0]


def other_slot_reason(slot: OtherSlot) -> str:
    """Why an answer naming the gold only beside the question's words, another name in the answer's place, is unsure."""
    return (
        f'names the acceptable answer "{slot.gold}" only beside the question\'s words ("{slot.run}"), '
        f'with another name ("{slot.other}") where the answer belongs'
    )


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
