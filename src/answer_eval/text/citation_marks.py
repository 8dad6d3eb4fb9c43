"""Footnote marks glued to the words of an answer by search-backed chat models, taken apart.

Answers from chat models that cite their sources often lose the space or the brackets around a
footnote when their markup is flattened: "published onMarch 6, 20181." is "published on March 6,
2018" with footnote 1. The strict rules rightly read "20181" as another number, so the judge also
weighs the answer with such marks separated (:func:`separate_citation_marks`), and says so.

Only two narrow forms are taken apart, both of which a person reads the same way:

- a small function word run into a capitalised word ("onMarch", "inParis"): the word boundary of
  the pair is restored;
- one or two digits run onto the year of a written date ("March 6, 20181", "6 March 20181"):
  they are dropped when a sentence mark, a closing bracket or the end of the text follows.

Bracketed and superscript footnotes ("[1]", "¹") need nothing here: folding and the word
boundaries of the strict rules already see past them.
"""

from __future__ import annotations

import re

__all__ = ["separate_citation_marks"]

_GLUED_WORD = re.compile(r"\b(on|in|at|of|by|from|since|until|to|the|and|was|is|as)(?=[A-Z][a-z])")
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_GLUED_YEAR = re.compile(
    rf"((?:{_MONTH} (?:[0-3]?[0-9](?:st|nd|rd|th)?,? )?|[0-3]?[0-9] {_MONTH},? )(?:1[0-9]{{3}}|20[0-9]{{2}}))"
    r"[1-9][0-9]?(?=[.,;:!?)\]]|\s|$)"
)

_LOWER_UPPER_LOWER = re.compile(r"[a-z][A-Z][a-z]")
_FIVE_DIGITS = re.compile(r"[0-9]{5}")


def separate_citation_marks(text: str) -> str:
    """``text`` with footnote marks glued to its words taken apart (the text itself when there are none).

    >>> separate_citation_marks("It was published onMarch 6, 20181.")
    'It was published on March 6, 2018.'
    >>> separate_citation_marks("Boston, 20181 residents")  # not a date: kept
    'Boston, 20181 residents'
    """
    # Each form needs what a simpler pattern finds faster: a capitalised word run into a small
    # one has a lower-case letter before its capital, and a year with a mark has five digits.
    if _LOWER_UPPER_LOWER.search(text) is not None:
        text = _GLUED_WORD.sub(r"\1 ", text)
    if _FIVE_DIGITS.search(text) is not None:
        text = _GLUED_YEAR.sub(r"\1", text)
    return text
