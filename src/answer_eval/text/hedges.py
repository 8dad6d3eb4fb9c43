"""Answers that name the gold only as one of several candidates ("It's probably Saturn or Jupiter.").

A hedge between candidates is not an answer: a person asked which planet does not accept "Saturn
or Jupiter" said with doubt, though the strict rules find "Saturn" in it. :func:`only_hedged` is
true when every mention of the gold in the answer is an item of such a hedge: an alternation of
short items ("Saturn or Jupiter", "Mercury, Venus, Saturn or Jupiter", "Saturn/Jupiter") that

- a word of doubt opens ("either", "probably", "possibly", "perhaps", "maybe", "likely", "I
  think", "I believe", "I'd say", "could be", "might be", "not sure if", "one of"), at most three
  small words before the first item ("I think it's Saturn or Jupiter"); or
- a separator of doubt joins ("Saturn, or maybe Jupiter", "could be Saturn but possibly
  Jupiter", "Saturn, though it might be Jupiter");

and that names at least one candidate that is not an acceptable answer: alternatives that are
all acceptable ("either evaporation or vaporization" where both are gold) are an answer.

Decisions: a bare "X or Y" or "X/Y" with no word of doubt is not a hedge. In the human-judged
sets "X or Y" mostly gives a second name of the same thing ("evaporation or vaporization", "orca
or killer whale", "Scinde/Sindh"), which people accept, and the words alone cannot tell a
synonym from a rival candidate. A list joined by "and" asserts every item ("not only X but also
Y" too), and a list with no conjunction is left to the judge's list feature.

Each mention is read through two windows of :data:`_WINDOW` characters around it, so the time is
linear in the number of mentions, whatever the length of the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from answer_eval.text.matching import occurrences

__all__ = ["AcceptableForms", "only_hedged"]

_WINDOW = 64  # characters on each side of a mention that can hold its alternation
_MAX_ITEM_WORDS = 4
_MAX_ITEMS = 6
_MAX_FILLERS = 3

# A word (letters and digits, joined by inner apostrophes, dots or hyphens), or one other character.
_TOKEN = re.compile(r"[^\W_]+(?:['\u2019.\-][^\W_]+)*|[^\w\s]")


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_DOUBT = frozenset({"probably", "possibly", "perhaps", "maybe", "likely", "presumably", "conceivably"})
_MODALS = frozenset({"could", "might", "may"})
_CONTRAST = frozenset({"but", "though", "although"})
_ALTERNATIVE = frozenset({"or", "/"})

# The openers of a hedge, each a sequence of words (a set: any of them at that place).
_OPENERS: tuple[tuple[frozenset[str], ...], ...] = tuple(
    tuple(frozenset(part.split("|")) for part in opener.split())
    for opener in (
        "either",
        "probably|possibly|perhaps|maybe|likely|presumably|conceivably",
        "i think|believe|guess|suppose|reckon",
        "i'd|i\u2019d say|guess",
        "i would say|guess",
        "could|might|may be",
        "could|might|may also be",
        "could|might|may have been",
        "not sure|certain",
        "unsure",
        "one of",
    )
)
# Small words between an opener and the first item ("I think it's Saturn or Jupiter").
_FILLERS = _word_set(
    "the a an it it's it\u2019s its is was be that this whether if answer between called named in on at from by"
)
# Words that end an item: connectives, verbs of a clause, pronouns, words of doubt.
_BREAKS = (
    _word_set(
        "or nor and but though although is was are were be been has have had did does do which who whom that "
        "because since as if when while whereas so than then not no it its it's it\u2019s i we you they he she "
        "also with for to either whether"
    )
    | _DOUBT
    | _MODALS
)

# The separators between two items, forward; a set matches any of its words. The longest first.
_SEPARATOR_WORDS = (
    (",", _CONTRAST, "it", _MODALS, "also", "be"),
    (",", _CONTRAST, "it", _MODALS, "be"),
    (_CONTRAST, "it", _MODALS, "also", "be"),
    (_CONTRAST, "it", _MODALS, "be"),
    (",", "or", "it", _MODALS, "be"),
    ("or", "it", _MODALS, "be"),
    (",", _CONTRAST, _DOUBT),
    (_CONTRAST, _DOUBT),
    (",", "or", _DOUBT),
    ("or", _DOUBT),
    (",", "or"),
    ("or",),
    ("/",),
    (",",),
)


_Separator = tuple[tuple[frozenset[str], ...], str]  # the words, and the kind: "doubt", "or" or "comma"


def _separator_of(sequence: Sequence[str | frozenset[str]]) -> _Separator:
    words = tuple(frozenset({part}) if isinstance(part, str) else part for part in sequence)
    every = frozenset().union(*words)
    return words, "doubt" if every & (_DOUBT | _MODALS) else "or" if every & _ALTERNATIVE else "comma"


_SEPARATORS = tuple(_separator_of(sequence) for sequence in _SEPARATOR_WORDS)
# Every hedge holds one of these words (of an opener or a separator of doubt).
_OPENING_WORDS = _word_set("either think believe guess suppose reckon say sure certain unsure one")
_DOUBT_WORDS = re.compile(r"\b(?:" + "|".join(sorted(_DOUBT | _MODALS | _OPENING_WORDS)) + r")\b")
_SEPARATORS_REVERSED = tuple((words[::-1], kind) for words, kind in _SEPARATORS)
_OPENERS_REVERSED = tuple(opener[::-1] for opener in _OPENERS)


class AcceptableForms:
    """Every acceptable answer of a question (folded), as word sequences, read the first time a hedge needs them.

    Most answers hold no hedge, so the golds (dozens of aliases for some questions) are usually
    never read: ``folded_golds`` may be a lazy iterable, consumed at most once.
    """

    __slots__ = ("_forms", "_golds")

    def __init__(self, folded_golds: Iterable[str] = ()) -> None:
        self._golds: Iterable[str] | None = folded_golds
        self._forms: frozenset[tuple[str, ...]] = frozenset()

    def holds(self, item: tuple[str, ...]) -> bool:
        """Whether some run of the item's words is an acceptable answer ("the planet Saturn" holds "Saturn")."""
        if self._golds is not None:
            self._forms = frozenset(words for words in map(_words, self._golds) if words)
            self._golds = None
        forms = self._forms
        return any(item[i:j] in forms for i in range(len(item)) for j in range(i + 1, len(item) + 1))


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    # Cached: the same golds are read again for every answer to their question.
    return tuple(token for token in _TOKEN.findall(text) if token[0].isalnum())


def _matches(tokens: Sequence[str], at: int, sequence: tuple[frozenset[str], ...]) -> bool:
    if at + len(sequence) > len(tokens):
        return False
    return all(tokens[at + offset] in words for offset, words in enumerate(sequence))


def _separator(tokens: Sequence[str], at: int, separators: tuple[_Separator, ...]) -> tuple[int, str]:
    """The separator at ``at``: its length and kind (``0, ""`` when none)."""
    for words, kind in separators:
        if _matches(tokens, at, words):
            return len(words), kind
    return 0, ""


def _item(tokens: Sequence[str], at: int, reverse: bool = False, most: int = _MAX_ITEM_WORDS) -> tuple[str, ...]:
    """The words of the item at ``at`` (up to ``most``), or nothing.

    ``reverse`` reads reversed tokens (the words before a mention), and stops at an opener.
    """
    words: list[str] = []
    while at + len(words) < len(tokens) and len(words) < most:
        token = tokens[at + len(words)]
        if not token[0].isalnum() or token in _BREAKS:
            break
        if reverse and any(_matches(tokens, at + len(words), opener) for opener in _OPENERS_REVERSED):
            break
        words.append(token)
    return tuple(words[::-1]) if reverse else tuple(words)


def _opener(reversed_tokens: Sequence[str], at: int) -> str:
    """The opener of doubt that ends at ``at`` (reversed tokens) after at most three small words, or ``""``."""
    for skip in range(_MAX_FILLERS + 1):
        for opener in _OPENERS_REVERSED:
            if _matches(reversed_tokens, at + skip, opener):
                return " ".join(reversed_tokens[at + skip : at + skip + len(opener)][::-1])
        if at + skip >= len(reversed_tokens) or reversed_tokens[at + skip] not in _FILLERS:
            return ""
    return ""


def _tokens_around(folded_answer: str, start: int, end: int) -> tuple[list[str], list[str]] | None:
    """The tokens before the mention (nearest first) and after it; ``None`` when it cannot be a hedge's item.

    A mention inside a word is no item, nor one with no word of doubt near it (most mentions:
    settled by one search, without reading the grammar).
    """
    if (start > 0 and folded_answer[start - 1].isalnum()) or (
        end < len(folded_answer) and folded_answer[end].isalnum()
    ):
        return None
    before_start = max(0, start - _WINDOW)
    if _DOUBT_WORDS.search(folded_answer, before_start, end + _WINDOW) is None:
        return None
    before = _TOKEN.findall(folded_answer, before_start, start)
    if before_start > 0 and before:
        before = before[1:]  # the window may cut the first word
    after = _TOKEN.findall(folded_answer[end : end + _WINDOW])
    if end + _WINDOW < len(folded_answer) and after:
        after = after[:-1]
    return before[::-1], after


def _mention_hedged(folded_answer: str, start: int, end: int, golds: AcceptableForms, gold: tuple[str, ...]) -> bool:
    around = _tokens_around(folded_answer, start, end)
    if around is None:
        return False
    before, after = around
    # The mention's own item may hold words around the gold ("the planet Saturn", "Lake Superior").
    at_after = len(_item(after, 0, most=_MAX_ITEM_WORDS - 1))
    at_before = len(_item(before, 0, reverse=True, most=_MAX_ITEM_WORDS - 1))
    others: list[tuple[str, ...]] = []
    kinds: list[str] = []
    while len(others) < _MAX_ITEMS:  # after the mention: separator, item, ...
        size, kind = _separator(after, at_after, _SEPARATORS)
        item = _item(after, at_after + size) if size else ()
        if not item:
            break
        others.append(item)
        kinds.append(kind)
        at_after += size + len(item)
    opened = ""
    while len(others) < 2 * _MAX_ITEMS:  # before it, nearest first: separator, item, ..., then the opener
        size, kind = _separator(before, at_before, _SEPARATORS_REVERSED)
        item = _item(before, at_before + size, reverse=True) if size else ()
        if not item:
            opened = _opener(before, at_before)
            break
        others.append(item)
        kinds.append(kind)
        at_before += size + len(item)
    if not others or not (opened or "doubt" in kinds):
        return False
    if "doubt" not in kinds and "or" not in kinds and opened != "one of":
        return False  # "probably Saturn, Jupiter": a list, not an alternation ("one of Saturn, Jupiter" is one)
    return any(item != gold and not golds.holds(item) for item in others)


def only_hedged(folded_answer: str, folded_gold: str, golds: AcceptableForms | None = None) -> bool:
    """Whether the gold occurs in the answer (both folded) and every mention of it is an item of a hedge.

    :param golds: Every acceptable answer of the question: an item that is one of them is no rival
        candidate (default: the gold alone).

    >>> only_hedged("it's probably saturn or jupiter.", "saturn")
    True
    >>> only_hedged("saturn or jupiter", "saturn")  # no word of doubt: perhaps a second name
    False
    >>> only_hedged("probably saturn or jupiter", "saturn", AcceptableForms(["saturn", "jupiter"]))
    False
    """
    if not folded_gold or folded_gold not in folded_answer:
        return False  # most golds of a question with many aliases: settled at C speed
    mentions = 0
    size = len(folded_gold)
    rivals = golds if golds is not None else AcceptableForms()
    gold = _words(folded_gold)
    for start in occurrences(folded_answer, folded_gold):
        mentions += 1
        if not _mention_hedged(folded_answer, start, start + size, rivals, gold):
            return False
    return mentions > 0
