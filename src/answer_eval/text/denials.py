"""Answers that name the gold only to deny it ("Not Paris, but Lyon.", "Nixon did not resign; it was Ford.").

The strict rules and the word overlap both see the gold in such an answer, yet a person reads a
denial. :func:`only_denied` is true when every mention of the gold in the answer is denied:

- **a negation before it**: "not", "n't", "never", "no longer", "rather than", "instead of",
  "other than", "as opposed to", "except", "neither", at most two small words apart ("not in
  Paris", "isn't the Eiffel Tower"), or a later item of a denied list ("not France or
  Switzerland", "neither France nor Switzerland");
- **a correction after it**: the gold as the subject of a negation that another answer then
  replaces ("Nixon did not resign; it was Ford.", "Nixon didn't resign; Ford did.", "Nixon is not
  the answer"), a correction of a common belief ("Nixon is often credited, but it was actually
  Ford.", "Many people think it was Nixon, but it was Ford."), a question answered no ("Nixon?
  No, Ford."), or a myth ("Nixon is a common misconception").

- **a negation of the question's own predicate** (issue 39), when the question is given: the gold
  as the subject of a negation whose predicate repeats a word of the question ("The Glass Orchard
  did not win the Northern Book Prize", "... never won the prize", "... was not the winner." to
  "Which book won the Northern Book Prize?"), the clause ending there. The answer denies exactly
  what the question asks, with or without a correction. Not when the question is itself negative
  ("Which grand slam did Sampras not win?"), nor when the predicate names another thing ("Nixon was
  not impeached; he resigned." to "Who resigned?"), a number or a word of time ("did not win the
  prize in 2019", "did not win it until 1990"), goes on ("did not win the prize and ..."), or a
  pronoun takes the gold up again ("did not win the Booker, but it won the Northern Book Prize").
  Words are compared as content tokens, with a few irregular forms read alike (win, won, winner).

"Not only Paris", "not just Paris", "nothing but Paris" and "none other than George Washington"
assert the gold; a mention before the negation ("Paris, not Lyon", "Saturn (not Jupiter)") is not
denied, nor a negation with no correction ("Nixon was not impeached; he resigned.": the gold
stays the subject). Straight and curly apostrophes read alike. Every mention is read through
bounded windows around it, so the time is linear in the number of mentions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from answer_eval.text.folding import fold
from answer_eval.text.lexical_tokens import content_tokens
from answer_eval.text.matching import occurrences

__all__ = ["Asked", "asked", "only_denied"]

_APOSTROPHE = "['\u2019]"
# A negation, then at most two small words, ending where the gold begins (matched on the reversed
# text before the mention, so only its end is read: linear in the number of mentions).
_SMALL = r"(?:the|a|an|in|at|on|by|from|of|to|for|with|called|named|really|exactly|actually|quite|even)"
_DENIAL = re.compile(
    r"(?:\b(?:not|never|neither|no longer|rather than|instead of|other than|as opposed to|except(?: for)?)"
    rf"|n{_APOSTROPHE}t)"
    rf"[\s,:]+(?:{_SMALL}[\s,:]+){{0,2}}$"
)
# A later item of a denied list: "not France or Switzerland", "neither France nor Switzerland",
# "not France, Spain or Switzerland". Items are short, stay inside the sentence, and hold no verb
# that could start a new clause nor a word of time ("not completed until 1990 or 1991" asserts 1991).
_ITEM = r"(?:(?!(?:but|is|was|are|were|it|instead|until|till|before|after|since|than)\b)[\w'\u2019-]+[\s,]+)"
_LIST_DENIAL = re.compile(
    rf"\b(?:not|never|neither)[\s,:]+(?:{_SMALL}[\s,:]+){{0,2}}{_ITEM}{{1,6}}(?:or|nor)\s+(?:{_SMALL}[\s,:]+){{0,2}}$"
)
_WINDOW = 48  # characters before a mention that can hold its denial
# Words before a mention that assert it, whatever follows: "not only Paris", "none other than George
# Washington", "the answer is Nixon, but it was actually Ford who pardoned him".
_ASSERTING = re.compile(
    r"\bnot (?:only|just|merely|solely|simply)[\s,:]+(?:\w+[\s,:]+){0,2}$|\bnothing but[\s,:]+$"
    r"|\b(?:none|nothing|no one|nobody|no other) other than[\s,:]+(?:the[\s,:]+)?$"
    r"|\bthe (?:correct |right |final |real )?answer (?:is|was)[\s,:]+(?:the[\s,:]+)?$"
)

# -- corrections after the mention (each matched at the mention's end) -----------------------------
_AFTER_WINDOW = 120  # characters after a mention that can hold its correction
_NEGATED = rf"(?:(?:did|does|do|was|is|were|are|has|have|had|could|would|should|will)(?: not|n{_APOSTROPHE}t)|never)"
_CORRECTION = (
    rf"(?:it (?:was|is)|it{_APOSTROPHE}s|that (?:was|is)|rather|instead|in fact|actually|in reality"
    r"|the (?:real|actual|correct|right|true) (?:answer|one|person|culprit) (?:is|was)"
    # another subject that did it: "Ford did." (a pronoun would be the gold again: "he did later")
    r"|(?!(?:he|she|they|it|we|i|you|this|that|who|which)\b)"
    r"[\w'\u2019.-]+(?: [\w'\u2019.-]+){0,2} (?:did|was|does|is|were|had)(?=\s*(?:[.;,!]|$)))"
)
# The gold as the subject of a negation that a correction then replaces. At most five words of
# predicate, none a word of time ("did not resign until 1974; it was his first term" asserts the gold).
_PREDICATE_WORD = r"(?!(?:until|till|before|after|since|when|because)\b)[\w'\u2019-]+"
_SUBJECT_DENIED = re.compile(
    rf"^(?: [\w'\u2019.-]+){{0,2}}? {_NEGATED}\b(?: {_PREDICATE_WORD}){{0,5}}"
    rf"\s*(?:[;,:.!]|\u2014|\u2013| - )\s*(?:but\s+)?{_CORRECTION}"
)
# "Nixon is not the answer", "Nixon is not correct", "Nixon is a common misconception", "Nixon? No, Ford."
_DISOWNED = re.compile(
    rf"^\s*(?:(?:is|was)(?: not|n{_APOSTROPHE}t) (?:the (?:correct |right )?answer|correct|right)\b"
    r"|(?:is|was) (?:a )?(?:common |popular |widespread )?(?:misconception|myth)\b"
    r"|(?:is|was) (?:incorrect|wrong)\s*(?:[.;,!]|$)"
    r"|\?\s*(?:no|nope|not quite|wrong)\b(?! (?:doubt|question)))"
)
# A belief the answer then corrects: "Nixon is often credited, but it was actually Ford."
_CORRECTED = re.compile(
    rf"^[^.;!?]{{0,60}}?\bbut (?:(?:it|that|this) (?:was|is) (?:actually|in fact|really)\b"
    rf"|(?:actually|in fact|really),? (?:it (?:was|is)\b|it{_APOSTROPHE}s\b)"
    r"|the (?:real|actual|correct|right|true) (?:answer|one|person|culprit) (?:is|was)\b)"
)
# The belief said before the mention ("many people think it was Nixon, but it was Ford"): then a
# plain "but it was" after the mention corrects it.
_BELIEF_BEFORE = re.compile(
    r"\b(?:(?:many|most|some) (?:people )?(?:think|believe|assume|say|claim)"
    r"|(?:commonly|often|widely|popularly|mistakenly|wrongly|usually)"
    r" (?:thought|believed|credited|attributed|assumed|said|cited|named)"
    r"|(?:a )?common (?:misconception|belief|myth) (?:is )?)"
    rf"(?: (?:to|that|it was|it is|it{_APOSTROPHE}s|to be|to have been|as|with)){{0,2}}[\s,:]+$"
)
_BELIEF_CORRECTED = re.compile(
    rf"^[^.;!?]{{0,60}}?(?:,|;|\bbut\b)\s*(?:but\s+)?(?:it (?:was|is)\b|it{_APOSTROPHE}s\b|(?:actually|in fact)\b)"
)


# Every correction after a mention holds one of these (most mentions hold none: one search settles them).
_AFTER_CUE = re.compile(
    rf"\b(?:not|never|but|actually|in fact|myth|misconception|incorrect|wrong|it (?:was|is)|it{_APOSTROPHE}s)\b"
    rf"|n{_APOSTROPHE}t\b|\?"
)


# -- a negation of the question's predicate (read only when the question is given) ------------------
# Irregular forms a question and its denial write differently ("which book won" / "did not win",
# "was not the winner"): read as one word. Content tokens strip regular endings already.
_IRREGULAR = {
    "won": "win",
    "winn": "win",
    "wins": "win",
    "lost": "lose",
    "los": "lose",
    "wrote": "writ",
    "written": "writ",
    "sang": "sing",
    "sung": "sing",
    "led": "lead",
    "began": "begin",
    "begun": "begin",
    "built": "build",
    "made": "make",
    "mak": "make",
}
_QUESTION_NEGATED = re.compile(rf"\b(?:not|never|no longer)\b|n{_APOSTROPHE}t\b")
# A predicate word: no number, no word of time or joining ("in 2019", "until 1990", "and").
_ECHO_STOP = r"(?:until|till|before|after|since|when|because|but|and|or|only|just|yet|instead|rather)"
_ECHO_WORD = rf"(?!{_ECHO_STOP}\b)[^\W\d][\w'\u2019-]*"
# The gold as the subject of a negation (at most two words between), then one to six predicate
# words, then the end of the clause, which "but" and a pronoun do not take up again ("..., but it
# won the prize": the gold; "...; it was Ford" corrects, "...; he resigned" says something else).
_ECHO_DENIED = re.compile(
    rf"^(?: [\w'\u2019.-]+){{0,2}}? {_NEGATED}((?: {_ECHO_WORD}){{1,6}})(?=\s*(?:[;,:.!?)]|\u2014|\u2013| - |$))"
    rf"(?!\s*[;,:.!?\u2014\u2013-]?\s*(?:but|yet|though|although|however),?\s+(?:he|she|they|it)\b"
    rf"(?! (?:was|is)\b|{_APOSTROPHE}s\b))"
)


@dataclass(frozen=True)
class Asked:
    """What the denial rules read from a question: its content tokens (irregular forms read alike).

    :param words: The question's content tokens, irregular forms normalised.
    :param negative: The question itself holds a negation: an answer that repeats it asserts.
    """

    words: frozenset[str]
    negative: bool


def _normalised(tokens: list[str]) -> set[str]:
    return {_IRREGULAR.get(token, token) for token in tokens}


@lru_cache(maxsize=1024)
def asked(question: str | None) -> Asked | None:
    """The question as :func:`only_denied` reads it (``None`` for no question; remembered per question)."""
    if not question or not question.strip():
        return None
    folded = fold(question)
    return Asked(frozenset(_normalised(content_tokens(question, folded))), _QUESTION_NEGATED.search(folded) is not None)


def _denies_question(after: str, gold_words: set[str], question: Asked) -> bool:
    """The mention is the subject of a negation of the question's own predicate, the clause ending there."""
    match = _ECHO_DENIED.match(after)
    if match is None:
        return False
    predicate = _normalised(content_tokens(match.group(1))) - gold_words
    return not predicate.isdisjoint(question.words)


def _denied_after(folded_answer: str, start: int, end: int) -> bool:
    if _AFTER_CUE.search(folded_answer, end, end + _AFTER_WINDOW) is None:
        return False
    after = folded_answer[end : end + _AFTER_WINDOW]
    if _SUBJECT_DENIED.match(after) or _DISOWNED.match(after) or _CORRECTED.match(after):
        return True
    before = folded_answer[max(0, start - _WINDOW) : start]
    return _BELIEF_BEFORE.search(before) is not None and _BELIEF_CORRECTED.match(after) is not None


def only_denied(folded_answer: str, folded_gold: str, question: Asked | None = None) -> bool:
    """Whether the gold occurs in the answer (both folded) and every mention of it is denied.

    :param question: The question as :func:`asked` reads it: a negation of its own predicate denies
        the gold too ("the glass orchard did not win the prize" to "which book won the prize?").

    >>> only_denied("not paris, but lyon.", "paris"), only_denied("nixon did not resign; it was ford.", "nixon")
    (True, True)
    >>> only_denied("paris, not lyon.", "paris")
    False
    """
    if not folded_gold or folded_gold not in folded_answer:
        return False  # most golds of a question with many aliases: settled at C speed
    mentions = 0
    size = len(folded_gold)
    echo = question is not None and not question.negative
    gold_words: set[str] | None = None
    for start in occurrences(folded_answer, folded_gold):
        mentions += 1
        before = folded_answer[max(0, start - _WINDOW) : start]
        if _ASSERTING.search(before) is not None:
            return False
        denied = _DENIAL.search(before) is not None or _LIST_DENIAL.search(before) is not None
        if denied or _denied_after(folded_answer, start, start + size):
            continue
        if not echo:
            return False
        assert question is not None
        if gold_words is None:
            gold_words = _normalised(content_tokens(folded_gold))
        if not _denies_question(folded_answer[start + size : start + size + _AFTER_WINDOW], gold_words, question):
            return False
    return mentions > 0
