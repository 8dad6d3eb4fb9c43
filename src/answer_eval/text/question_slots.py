"""Answers that name the gold beside the question's own words while another name fills the answer's place.

To "Which city is Birmingham twinned with?" (gold "Lyon"), "Lyon is twinned with Saint-Aubin."
holds the gold, and the strict rules accept it; a person reads that Lyon's twin is Saint-Aubin, and
Birmingham's twin is not said (issue 39). Such an answer restates the question around the gold:

- a **run of the question's words** ("twinned with") stands between the gold and **another name**
  (a capitalised content word that is neither a word of the question nor of a gold: "Saint-Aubin"),
  with at most two linking words ("is", "was", "has been") and an article between;
- and the run's neighbours in the question say the gold is not in the answer's place: on the gold's
  side the question names something (a content word outside its "which ..."/"who" phrase:
  "Birmingham"), so the gold took the place of what the question names; or on the other name's
  side the question names something the answer never mentions ("Saint-Aubin is twinned with
  Lyon."), so the other name took its place.

Every mention of every gold found must be read so. Still answers: "Lyon is twinned with
Birmingham." (the other side is a word of the question), "Birmingham is twinned with Lyon.", "Heath
Ledger played the Joker in The Dark Knight." (the gold stands where the question asks "who"), "Jim
Parsons plays Sheldon Cooper." (the name goes on from a word of the question), and any answer in
lower case (no name to read). The rule cannot tell a wrong pairing from a right answer with an
extra fact, so the judge does not overrule the strict rules with it: it says the verdict is unsure
(:mod:`answer_eval.evaluators.judge.cascade`). Words are read with a linear tokeniser and each
mention through a bounded window of words, so the time is linear in the answer's length.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from answer_eval.text.folding import fold
from answer_eval.text.lexical_tokens import content_tokens

__all__ = ["OtherSlot", "other_slot"]

# A word (hyphens and apostrophes inside it) or one mark of punctuation, which ends a run.
_TOKEN = re.compile(r"[^\W_](?:[\w'\u2019-]*[^\W_])?|[^\w\s]")
_LINKS = frozenset({"is", "was", "are", "were", "has", "have", "had", "been", "be", "also", "still"})
_ARTICLES = frozenset({"the", "a", "an"})
_WH = frozenset({"who", "whom", "whose", "what", "which", "where", "when", "why", "how"})
_WH_PHRASE = frozenset({"what", "which", "whose", "how"})  # "which french city", "how many": the asked thing
_AUX = frozenset({"is", "was", "are", "were", "did", "does", "do", "has", "have", "had", "can", "could", "will"})
_COPULAS = frozenset({"is", "was", "are", "were"})
_WH_PHRASE_WORDS = 3  # at most so many words after "which"/"what" name the asked thing ("which french city")
_WH_PHRASE_AFTER_COPULA = 5  # or after "what is"/"what was" ("what was the name of the pub")
_MAX_RUN = 12  # question words matched after or before a mention
_MAX_MENTIONS = 16  # an answer that names the gold more often is not read as a restated question


@dataclass(frozen=True)
class OtherSlot:
    """Why an answer names the gold only outside the answer's place: the gold, the question's words, the other name."""

    gold: str
    run: str
    other: str


@dataclass(frozen=True)
class _Question:
    words: tuple[str, ...]
    vocabulary: frozenset[str]
    asked: frozenset[int]  # positions of the wh-word and the phrase that names the asked thing
    positions: dict[str, tuple[int, ...]]  # where each word stands in the question


@dataclass(frozen=True)
class _Token:
    folded: str
    word: bool
    capital: bool


@lru_cache(maxsize=8192)
def _content(word: str) -> bool:
    return bool(content_tokens(word, word))


def _fold_word(word: str) -> str:
    folded = word.casefold() if word.isascii() else fold(word).replace("\u2019", "'")
    return folded[:-2] if folded.endswith("'s") and len(folded) > 3 else folded  # "Queen's" is "queen"


@lru_cache(maxsize=1024)
def _read_question(question: str) -> _Question:
    words = tuple(_fold_word(token) for token in _TOKEN.findall(question) if token[0].isalnum())
    asked: set[int] = set()
    for position, word in enumerate(words):
        if word not in _WH:
            continue
        asked.add(position)
        if word not in _WH_PHRASE:
            continue
        after, most = position + 1, _WH_PHRASE_WORDS
        if after < len(words) and words[after] in _COPULAS:
            after, most = after + 1, _WH_PHRASE_AFTER_COPULA  # "what was the name of the pub"
        for later in range(after, min(len(words), after + most)):
            if words[later] in _AUX or words[later] in _WH:
                break
            asked.add(later)
    positions: dict[str, list[int]] = {}
    for position, word in enumerate(words):
        positions.setdefault(word, []).append(position)
    return _Question(
        words, frozenset(words), frozenset(asked), {word: tuple(found) for word, found in positions.items()}
    )


def _tokens(text: str) -> list[_Token]:
    return [_Token(_fold_word(token), token[0].isalnum(), token[0].isupper()) for token in _TOKEN.findall(text)]


def _run_at(tokens: Sequence[_Token], start: int, step: int, question: _Question) -> tuple[int, int, int] | None:
    """The longest run of question words from ``start`` (forward when ``step`` is 1, backward when -1).

    Returns (tokens in the run, first question position, last question position + 1), or ``None``.
    """
    best: tuple[int, int, int] | None = None
    words = question.words
    if not 0 <= start < len(tokens) or not tokens[start].word:
        return None
    for position in question.positions.get(tokens[start].folded, ()):
        length = 0
        while (
            length < _MAX_RUN
            and 0 <= start + step * length < len(tokens)
            and 0 <= position + step * length < len(words)
            and tokens[start + step * length].word
            and tokens[start + step * length].folded == words[position + step * length]
        ):
            length += 1
        if length and (best is None or length > best[0]):
            low, high = (position, position + length) if step == 1 else (position - length + 1, position + 1)
            best = (length, low, high)
    return best


def _side(question: _Question, position: int, step: int) -> str | None:
    """The question's first content word (of two letters or more) from ``position`` outward.

    ``None`` at the question's edge or in its asked phrase ("which city", "who").
    """
    words = question.words
    while 0 <= position < len(words):
        if position in question.asked:
            return None
        if len(words[position]) > 1 and _content(words[position]):
            return words[position]
        position += step
    return None


def _skip(tokens: Sequence[_Token], position: int, step: int, skipped: frozenset[str], most: int) -> int:
    for _ in range(most):
        if 0 <= position < len(tokens) and tokens[position].word and tokens[position].folded in skipped:
            position += step
    return position


def _resembles(word: str, others: frozenset[str]) -> bool:
    """Whether ``word`` is, or is spelt within two letters of, one of ``others`` ("Düsseldorf", "Dsseldorf")."""
    if word in others:
        return True
    return any(abs(len(other) - len(word)) <= 2 and _within_two(word, other) for other in others if len(other) > 3)


def _within_two(a: str, b: str) -> bool:
    """Levenshtein distance at most 2 (a band of the table: linear in the words' length)."""
    if len(a) > 40 or len(b) > 40:
        return False
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
        previous = current
    return previous[-1] <= 2


def _name_around(tokens: Sequence[_Token], position: int) -> list[str]:
    """The capitalised words side by side with the word at ``position`` (a name of several words)."""
    low = position
    while low > 0 and tokens[low - 1].word and tokens[low - 1].capital:
        low -= 1
    high = position
    while high + 1 < len(tokens) and tokens[high + 1].word and tokens[high + 1].capital:
        high += 1
    return [token.folded for token in tokens[low : high + 1]]


def _trapped(
    tokens: Sequence[_Token], start: int, end: int, gold_words: frozenset[str], question: _Question
) -> tuple[str, str] | None:
    """The run and other name around the mention ``tokens[start:end]``, when it is out of the answer's place."""
    for step in (1, -1):  # the gold, then the question's words, then another name; or that order reversed
        # "Lyon [is] twinned with [the] X", "X [is] twinned with [the] Lyon"
        near = _skip(tokens, end, 1, _LINKS, 2) if step == 1 else _skip(tokens, start - 1, -1, _ARTICLES, 1)
        run = _run_at(tokens, near, step, question)
        if run is None:
            continue
        length, low, high = run
        if length < 2 or any(position in question.asked for position in range(low, high)):
            continue  # one word ("poet", "film") or the asked thing's own words are no restated question
        first, last = (near, near + length - 1) if step == 1 else (near - length + 1, near)
        words = tokens[first : last + 1]
        if not any(_content(t.folded) and t.folded not in gold_words and t.folded not in _LINKS for t in words):
            continue
        if step == 1:
            other_at, edge = _skip(tokens, last + 1, 1, _ARTICLES, 1), last
        else:
            other_at, edge = _skip(tokens, first - 1, -1, _LINKS, 2), first
        if not 0 <= other_at < len(tokens):
            continue
        other = tokens[other_at]
        if not (other.word and other.capital and _content(other.folded)):
            continue
        if tokens[edge].capital and abs(other_at - edge) == 1:
            continue  # a name that goes on from a word of the question ("plays Sheldon Cooper")
        name = _name_around(tokens, other_at)
        if any(word in gold_words or _resembles(word, question.vocabulary) for word in name):
            continue  # the question's own name, or the gold's, perhaps spelt otherwise
        # The gold stands where the question names something (not where it asks "which ..."/"who").
        if _side(question, low - 1 if step == 1 else high, -step) is not None:
            return " ".join(t.folded for t in words), other.folded
    return None


def _mentions(tokens: Sequence[_Token], gold: Sequence[str]) -> list[int]:
    size = len(gold)
    first = gold[0]
    return [
        position
        for position, token in enumerate(tokens)
        if token.folded == first
        and position + size <= len(tokens)
        and all(tokens[position + i].folded == gold[i] for i in range(1, size))
    ]


_NEAR = 60  # characters on each side of a mention read for the question's words
_NEAR_WORD = re.compile(r"[^\W_][\w'\u2019-]*")


def _two_asked(words: list[str], skipped: frozenset[str], most: int, vocabulary: frozenset[str]) -> bool:
    """After at most ``most`` words of ``skipped``, the next two words are the question's."""
    position = 0
    while position < most and position < len(words) and words[position] in skipped:
        position += 1
    return len(words) >= position + 2 and words[position] in vocabulary and words[position + 1] in vocabulary


def _beside_question(folded: str, golds: Sequence[tuple[str, str]], question: _Question) -> bool:
    """Whether every mention of the golds has two words of the question beside it (a cheap first look)."""
    vocabulary = question.vocabulary
    for _, gold in golds:
        start = folded.find(gold)
        if start < 0:
            return False
        while start >= 0:
            after = _NEAR_WORD.findall(folded, start + len(gold), start + len(gold) + _NEAR)
            before = _NEAR_WORD.findall(folded, max(0, start - _NEAR), start)[::-1]
            if not (_two_asked(after, _LINKS, 2, vocabulary) or _two_asked(before, _ARTICLES, 1, vocabulary)):
                return False
            start = folded.find(gold, start + 1)
    return True


def other_slot(
    text: str, golds: Sequence[tuple[str, str]], question: str | None, folded: str | None = None
) -> OtherSlot | None:
    """Whether every mention of the golds found (gold, folded gold pairs) stands outside the answer's place.

    ``folded`` is ``fold(text)`` when the caller has it.

    >>> other_slot("Lyon is twinned with Saint-Aubin.", [("Lyon", "lyon")], "Which city is Birmingham twinned with?")
    OtherSlot(gold='Lyon', run='twinned with', other='saint-aubin')
    >>> other_slot("Lyon is twinned with Birmingham.", [("Lyon", "lyon")], "Which city is Birmingham twinned with?")
    """
    if not golds or not question or not any(character.isupper() for character in text):
        return None
    read = _read_question(question)
    if not read.words or not _beside_question(fold(text) if folded is None else folded, golds, read):
        return None
    tokens = _tokens(text)
    first: OtherSlot | None = None
    for gold, folded in golds:
        gold_tokens = [token.folded for token in _tokens(folded)]
        if not gold_tokens:
            return None
        mentions = _mentions(tokens, gold_tokens)
        if not mentions or len(mentions) > _MAX_MENTIONS:
            return None
        gold_words = frozenset(token for token in gold_tokens if token[0].isalnum())
        for start in mentions:
            trapped = _trapped(tokens, start, start + len(gold_tokens), gold_words, read)
            if trapped is None:
                return None
            if first is None:
                first = OtherSlot(gold, *trapped)
    return first
