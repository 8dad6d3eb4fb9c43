"""Why the judge decided as it did, in words a person can check, and the rules that read golds for it.

The cascade in :mod:`answer_eval.evaluators.judge.cascade` decides; these functions say why (the ``evidence`` of each
verdict) and hold the two gold readings every stage shares: a gold named only as a near miss
(denied, hedged among rival candidates, or another person), and a gold's bare form without its
parenthetical remarks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from answer_eval.evaluators.judge.lenient import LexicalEvidence, names_someone_else
from answer_eval.text.denials import Asked, only_denied
from answer_eval.text.folding import fold
from answer_eval.text.hedges import AcceptableForms, only_hedged
from answer_eval.text.matching import contains_folded
from answer_eval.text.question_slots import OtherSlot

__all__ = ["lexical_reason", "near_miss_reason", "no_evidence_reason", "other_slot_reason", "with_bare_forms"]


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
