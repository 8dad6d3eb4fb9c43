"""WordIndex against the word rule it indexes (differential tests).

:func:`words_match` is the rule for one pair of words; :class:`WordIndex` answers it for a word
against every word of a text at once, and :meth:`WordIndex.matching` for a set of words. Both
must say what trying every pair says, on short texts (a gold, whose prefixes are kept in a set)
and on long ones (an answer, read through sorted prefix chains).
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from answer_eval.text.lexical_tokens import WordIndex, words_match

# Few letters, so that initials, shared first letters and prefixes of three letters or more are common.
_WORD = st.text(alphabet="abcw1", min_size=0, max_size=6)
_TEXT = st.lists(_WORD, max_size=40)


def _any_pair(word: str, text: list[str], anchored: bool) -> bool:
    return any(words_match(word, other, anchored) for other in text)


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, asked=st.lists(_WORD, max_size=20), anchored=st.booleans())
def test_matches_says_what_every_pair_says(text: list[str], asked: list[str], anchored: bool) -> None:
    index = WordIndex(text)
    assert [index.matches(word, anchored) for word in asked] == [_any_pair(word, text, anchored) for word in asked]


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, asked=st.sets(_WORD, max_size=20))
def test_matching_keeps_exactly_the_words_that_match(text: list[str], asked: set[str]) -> None:
    index = WordIndex(text)
    assert index.matching(set(asked)) == {word for word in asked if _any_pair(word, text, True)}


def test_a_word_starting_with_no_names_letter_matches_only_itself() -> None:
    index = WordIndex(["william", "friedle", "b", "1999"])
    assert index.matching({"will", "bhimrao", "xavier", "199", "1999", "fried", "w"}) == {
        "will",
        "bhimrao",
        "1999",
        "fried",
        "w",
    }
