"""Answers that name the gold only to deny it ("Not Paris, but Lyon.", "It wasn't Nixon; it was Ford.").

The strict rules and the word overlap both see the gold in such an answer, yet a person reads a
denial. :func:`only_denied` is true when every mention of the gold in the answer comes right
after a negation ("not", "n't", "never", "no longer", "rather than", "instead of", "other than",
"as opposed to", "except", "neither"), at most two small words apart ("not in Paris", "isn't the
Eiffel Tower"), or is a later item of a denied list ("not France or Switzerland", "neither France
nor Switzerland"). "Not only Paris", "not just Paris", "nothing but Paris" and "none other than George
Washington" assert the gold, and a
mention before the negation ("Paris, not Lyon") is not denied.
"""

from __future__ import annotations

import re

from answer_eval.text.matching import occurrences

__all__ = ["only_denied"]

# A negation, then at most two small words, ending where the gold begins (matched on the reversed
# text before the mention, so only its end is read: linear in the number of mentions).
_SMALL = r"(?:the|a|an|in|at|on|by|from|of|to|for|with|called|named|really|exactly|actually|quite|even)"
_DENIAL = re.compile(
    rf"(?:\b(?:not|never|neither|no longer|rather than|instead of|other than|as opposed to|except(?: for)?)|n't)"
    rf"[\s,:]+(?:{_SMALL}[\s,:]+){{0,2}}$"
)
# A later item of a denied list: "not France or Switzerland", "neither France nor Switzerland",
# "not France, Spain or Switzerland". Items are short, stay inside the sentence, and hold no verb
# that could start a new clause nor a word of time ("not completed until 1990 or 1991" asserts 1991).
_ITEM = r"(?:(?!(?:but|is|was|are|were|it|instead|until|till|before|after|since|than)\b)[\w'-]+[\s,]+)"
_LIST_DENIAL = re.compile(
    rf"\b(?:not|never|neither)[\s,:]+(?:{_SMALL}[\s,:]+){{0,2}}{_ITEM}{{1,6}}(?:or|nor)\s+(?:{_SMALL}[\s,:]+){{0,2}}$"
)
_WINDOW = 48  # characters before a mention that can hold its denial
_ASSERTING = re.compile(
    r"\bnot (?:only|just|merely|solely|simply)[\s,:]+(?:\w+[\s,:]+){0,2}$|\bnothing but[\s,:]+$"
    r"|\b(?:none|nothing|no one|nobody|no other) other than[\s,:]+(?:the[\s,:]+)?$"
)


def only_denied(folded_answer: str, folded_gold: str) -> bool:
    """Whether the gold occurs in the answer (both folded) and every mention of it is denied.

    >>> only_denied("not paris, but lyon.", "paris")
    True
    >>> only_denied("paris, not lyon.", "paris")
    False
    """
    mentions = 0
    for start in occurrences(folded_answer, folded_gold):
        mentions += 1
        before = folded_answer[max(0, start - _WINDOW) : start]
        denied = _DENIAL.search(before) is not None or _LIST_DENIAL.search(before) is not None
        if not denied or _ASSERTING.search(before) is not None:
            return False
    return mentions > 0
