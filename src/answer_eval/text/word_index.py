"""Does a word match any word of another text? The lenient stage's word rule, in time linear in the texts' length.

Two content words match when they are equal or, beside a word both texts share (``anchored``),
when one is an initial of the other ("b" and "bhimrao") or a short form of at least three
letters that the other starts with ("will" and "william"); numbers match only when equal. Asking
that of every pair of words costs the product of the two lengths (an answer and a gold of 16,000
words: 256 million comparisons); :class:`WordIndex` answers it for one word against all the
words of a text from a set, a sorted list and the first letters, at a cost that follows the
length of the word asked about (and a logarithm).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

__all__ = ["WordIndex", "is_number", "words_match"]

_SMALL = 64  # letters: a text this short (a gold) keeps the prefixes of its words in a set


def is_number(token: str) -> bool:
    """Whether a content token is a number (it starts with a digit)."""
    return token[:1].isdigit()


def words_match(answer_word: str, gold_word: str, anchored: bool) -> bool:
    """The rule for one pair of words (the reference :class:`WordIndex` is tested against)."""
    if answer_word == gold_word:
        return True
    if not anchored or is_number(answer_word) or is_number(gold_word):
        return False  # numbers match whole and exactly
    # Beside a word both sides share (a surname), an initial or a short form stands for a name:
    # "b r ambedkar" = "bhimrao ramji ambedkar", "will friedle" = "william alan friedle".
    short, long = sorted((answer_word, gold_word), key=len)
    if len(short) == 1:
        return long[0] == short
    return len(short) >= 3 and long.startswith(short)


def _common_prefix(first: str, second: str) -> int:
    """The length of the longest common prefix, by halving (each step one C-level comparison)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class WordIndex:
    """The words of one text, indexed so that :meth:`matches` follows :func:`words_match` for every word at once.

    :param words: The text's content tokens.
    """

    __slots__ = (
        "_built",
        "_first_letters",
        "_initials",
        "_long_names",
        "_name_sizes",
        "_prefixes",
        "_shortest_prefix",
        "_sorted",
        "_starts",
        "words",
    )
    _sorted: list[str]
    _initials: frozenset[str]
    _first_letters: frozenset[str]
    _shortest_prefix: list[int]
    _prefixes: frozenset[str] | None  # for a short text: the prefixes of its words
    _long_names: frozenset[str]
    _name_sizes: list[int]
    _starts: frozenset[str]  # the letters some name starts with: a word starting otherwise matches nothing new

    def __init__(self, words: Iterable[str]) -> None:
        self.words = frozenset(words)
        # The sorted names and their prefixes are built on the first question the set cannot
        # answer (most words asked about are in the set, or are not asked beside a shared word).
        self._built = False

    def _build(self) -> None:
        names = sorted(word for word in self.words if word and not word[:1].isdigit())
        self._sorted = names
        self._initials = frozenset(word for word in names if len(word) == 1)
        self._first_letters = frozenset(word[0] for word in names if len(word) > 1)
        self._starts = self._first_letters | self._initials
        self._prefixes = None
        if sum(map(len, names)) <= _SMALL:
            # A short text (a gold answer): its words' prefixes in a set answer at once; their
            # number follows the text's length in letters, which is bounded here.
            self._prefixes = frozenset(word[:size] for word in names for size in range(3, len(word)))
            self._long_names = frozenset(word for word in names if len(word) >= 3)
            self._name_sizes = sorted({len(word) for word in self._long_names})
        else:
            self._shortest_prefix = self._prefix_chains(names)
        self._built = True

    @staticmethod
    def _prefix_chains(names: list[str]) -> list[int]:
        """For each sorted word, the length of its shortest prefix of three or more letters in the list (0: none).

        The words that are prefixes of a word come before it in sorted order and form a chain,
        kept on a stack, so the whole list is read once.
        """
        shortest = [0] * len(names)
        stack: list[int] = []
        for position, word in enumerate(names):
            while stack and not word.startswith(names[stack[-1]]):
                stack.pop()
            below = shortest[stack[-1]] if stack else 0
            shortest[position] = below or (len(word) if len(word) >= 3 else 0)
            stack.append(position)
        return shortest

    def matches(self, word: str, anchored: bool) -> bool:
        """Whether ``word`` matches some word of the text under :func:`words_match`."""
        if word in self.words:
            return True
        if not anchored or not word or is_number(word):
            return False
        if not self._built:
            self._build()
        if len(word) == 1:
            return word in self._first_letters
        if word[0] in self._initials:
            return True
        if self._prefixes is not None:
            if word in self._prefixes:  # a proper prefix of a word of the text: a longer word starts with it
                return True
            size = len(word)
            return any(word[:prefix] in self._long_names for prefix in self._name_sizes if prefix < size)
        return (len(word) >= 3 and self._longer_starts_with(word)) or self._shorter_is_prefix(word)

    def matching(self, words: set[str]) -> set[str]:
        """The words of ``words`` that match some word of the text beside a shared word (``anchored``).

        The same answers as :meth:`matches` word by word, with the words whose first letter starts
        no name of the text (most of an answer's missing words) set aside at once.
        """
        found = words & self.words
        rest = words - found
        if not rest:
            return found
        if not self._built:
            self._build()
        starts = self._starts
        found.update(word for word in rest if word[:1] in starts and self.matches(word, True))
        return found

    def _longer_starts_with(self, word: str) -> bool:
        """Some word of the text is longer and starts with ``word`` (``word`` has three letters or more)."""
        position = bisect_right(self._sorted, word)
        return position < len(self._sorted) and self._sorted[position].startswith(word)

    def _shorter_is_prefix(self, word: str) -> bool:
        """Some word of three letters or more of the text is a proper prefix of ``word``.

        Any such prefix is also a prefix of the largest word not after ``word`` (it lies between
        them in sorted order), of length at most their common prefix: that word's shortest prefix
        in the text answers the question.
        """
        position = bisect_right(self._sorted, word) - 1
        if position < 0:
            return False
        shortest = self._shortest_prefix[position]
        common = _common_prefix(self._sorted[position], word)
        return 0 < shortest <= min(common, len(word) - 1)
