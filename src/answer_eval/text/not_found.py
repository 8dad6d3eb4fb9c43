"""Recognising an answer that reports the document does not hold the answer.

Unanswerable questions carry the label ``NOT_IN_DOCUMENT``; an answer to them is right when it
says, in the label or in plain English, that the source has no answer. The patterns are built
around a report of absence (a source that does not say, an answer that is not in the text, a
reader that could not find it, a plain "The answer is unknown." or "No idea."), never around a
bare negation, so "There is no doubt: it is Paris" and "Nothing stopped production; 500 units"
are not reports. A reply that reports absence and answers anyway ("The context does not say;
however, it is 42.", "I don't know. Just kidding: it is 42.") is an answer, not a report
(:mod:`answer_eval.text.answer_despite_absence`).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import compress, count, repeat

from answer_eval.text.folding import fold

__all__ = ["NOT_IN_DOCUMENT", "NotFoundDetector", "is_not_found", "is_not_found_folded"]

NOT_IN_DOCUMENT = "NOT_IN_DOCUMENT"
"""The default label of an unanswerable question."""

# What a reader may call its source.
_SOURCE = (
    r"(?:(?:the|this|that|these|those|provided|given|above|supplied|available|retrieved|same|"
    r"referenced|cited|attached|input|reference) )*"
    r"(?:documents?|texts?|contexts?|passages?|articles?|sources?|excerpts?|paragraphs?|reports?|"
    r"pages?|snippets?|materials?|information|data|records?|extracts?|papers?|reviews?|manuals?|"
    r"knowledge base|docs?|files?|books?|transcripts?|tables?|charts?|sections?|chapters?|websites?|"
    r"webpages?|web pages?|summary|summaries|emails?|corpus|database|entries)"
    r"(?: (?:provided|given|retrieved|above|supplied|here))?"
)
_DOES_NOT = r"(?:does not|doesn't|do not|don't|did not|didn't|does n't|fails to|cannot|can't|can not)"
_REPORT_VERB = (
    r"(?:contain|say|mention|specify|state|include|provide|give|list|indicate|hold|discuss|tell|"
    r"offer|cover|address|answer|reveal|have|describe|identify|explain|show|refer to|disclose|note|report)"
)
# Verbs of saying only: after "it" or "but"/"and" ("but does not mention where"), where a verb of
# having would read a plain answer ("It does not contain nuts") as a report.
_SAYING_VERB = (
    r"(?:say|mention|specify|state|tell|report|disclose|reveal|indicate|discuss|address|answer|name|identify)"
)
_HEDGE = r"(?:(?:appear|seem) to |explicitly |directly |specifically |actually |clearly )?"
_NOT_GIVEN = (
    r"(?:mentioned|stated|specified|provided|given|found|included|contained|available|present|"
    r"listed|discussed|disclosed|indicated|addressed|covered|known|shown|identified|described)"
)
_ABSENCE_WORD = (
    r"(?:information|mention|data|details?|answer|reference|indication|specifics|statement|"
    r"explanation|description)"
)
# As the object of "there is no ...", the noun must end the report ("there is no answer key" is
# not one).
_ABSENCE_NOUN = (
    _ABSENCE_WORD
    + r"(?= (?:about|on|of|regarding|for|in|to|concerning|as to|available|provided|given|here|that|which|with)\b"
    r"|\s*[.,;:!)]|$)"
)
_WHOLE_ANSWER = (
    r"(?:unknown|not known|not found|not available|n/a|no answer|no answer found|"
    r"no (?:\w+ )?(?:information|info|data|details|mention|record)(?: (?:available|provided|found|given|"
    r"(?:of|about|on) (?:that|this|it)))?|"
    r"not mentioned|not stated|not specified|not provided|not given|not in (?:the )?document|"
    r"no information|no info|information not available|information not provided|not enough information|"
    r"cannot answer|can't answer|cannot be answered|unanswerable|i don't know|i do not know|"
    r"none found|no data|not determinable|cannot be determined|can't be determined|"
    r"insufficient information|no relevant information|no idea|no clue|not sure|unsure|not certain|uncertain|"
    r"unclear|i'm not sure|i am not sure|i have no idea|i've no idea|idk|can't say|cannot say|"
    r"answer unknown|no answer available|not answerable|nobody knows|no one knows|don't know|do not know)"
)

_PATTERNS = [
    # "The document does not contain this information", "the text doesn't say".
    rf"\b{_SOURCE} {_DOES_NOT} {_HEDGE}{_REPORT_VERB}\b",
    # "... is not in the document", "... is not mentioned in the provided text".
    rf"\b(?:(?:is|are|was|were) not|isn't|aren't|wasn't|weren't) {_HEDGE}(?:{_NOT_GIVEN} )?"
    rf"(?:in|within|by|from|anywhere in) {_SOURCE}\b",
    # "The year is not mentioned.": only when the sentence ends there.
    rf"\b(?:(?:is|are|was|were) not|isn't|aren't|wasn't|weren't) {_HEDGE}{_NOT_GIVEN}(?: anywhere| here)?"
    r"\s*(?:[.;!]|$)",
    # "Not mentioned in the text."
    rf"\bnot {_HEDGE}{_NOT_GIVEN} (?:in|within|by|anywhere in) {_SOURCE}\b",
    # "I could not find the answer", "we were unable to determine", "I'm not able to tell".
    r"\b(?:i|we)(?:'m|'re| was| were| am| are)? (?:could not|couldn't|cannot|can't|can not|unable to|"
    r"not able to|did not|didn't|do not|don't|could find no|found no)"
    r" (?:find|locate|determine|identify|see|extract|answer|tell|information|mention)\b",
    # "I don't know." but not "I don't know him personally, but ...".
    r"\b(?:i|we) (?:do not|don't|did not|didn't) know(?:\s*[.!;,]|$| the answer| from| based| for (?:sure|certain))",
    # "The passage makes no mention of", "the documents contain no information on".
    rf"\b(?:makes?|made|contains?|contained|has|have|had|gives?|gave|provides?|provided|offers?|includes?) no "
    rf"(?:\w+ )?{_ABSENCE_NOUN}",
    # "Nowhere in the document ...", "the text is silent on this", "neither passage mentions".
    rf"\bnowhere (?:in|within) {_SOURCE}\b",
    rf"\b{_SOURCE} (?:is|are|was|were|remains?) silent\b",
    rf"\b(?:neither|none of the|no) {_SOURCE} {_HEDGE}(?:{_REPORT_VERB}s?|mentioned|stated|specified)\b",
    # "It is not possible to determine", "unable to answer from the context".
    r"\b(?:unable|impossible|not possible|no way) to (?:determine|find|answer|identify|tell|say|know|infer)\b",
    # "The answer cannot be determined from the text."
    r"\b(?:cannot|can't|can not|could not|couldn't) be (?:determined|found|answered|identified|inferred|"
    r"deduced|known|located|established|confirmed)\b",
    # "There is no information about X in the text", "no specific mention of".
    rf"\bthere(?: is| are| was| were|'s) no (?:\w+ )?{_ABSENCE_NOUN}\b",
    rf"\bno (?:\w+ )?{_ABSENCE_WORD} (?:is|was|are|were|has been|have been|could be|can be) "
    rf"{_HEDGE}(?:{_NOT_GIVEN}|given|provided)\b",
    # "The answer is not given", "the answer isn't in the passage".
    rf"\bthe answer (?:is not|isn't|was not|wasn't|cannot be|can't be|could not be) {_HEDGE}"
    rf"(?:{_NOT_GIVEN}|in|here|clear)\b",
    # "There is not enough information", "insufficient context", "the context lacks any details".
    r"\b(?:not enough|(?:is|are|was|were)n't enough|insufficient|not sufficient|no sufficient|lacks?|lacking) "
    r"(?:\w+ )?(?:information|context|data|details?)\b",
    r"\b(?:do not|don't|does not|doesn't|did not|didn't) have (?:enough|sufficient|the (?:necessary|relevant|"
    r"required)) (?:\w+ )?(?:information|context|data|details)\b",
    rf"\b{_SOURCE} (?:is|are|was|were) (?:insufficient|not sufficient|not enough|inadequate)\b",
    # "It says nothing about", "there's nothing in the passage about", "nothing in the text indicates".
    r"\b(?:says?|mentions?|states?|contains?|gives?|provides?|includes?|tells?|offers?|reveals?) nothing "
    r"(?:about|on|regarding|of|concerning|as to|to suggest|to indicate)\b",
    rf"\bthere(?:'s| is| was) nothing (?:in|within) {_SOURCE}\b",
    rf"\bnothing (?:in|within) {_SOURCE} (?:\w+ ){{0,2}}?(?:indicates?|says|mentions?|states?|suggests?|"
    r"shows?|gives?|tells?|answers?|specifies|about)\b",
    # "... but does not mention where", "it doesn't say", "the text never gives his name".
    rf"\b(?:but|and) (?:it |they )?{_DOES_NOT} {_HEDGE}{_SAYING_VERB}\b",
    rf"\bit {_DOES_NOT} {_HEDGE}(?:{_SAYING_VERB}|contain (?:the |any )?(?:relevant |necessary |required )?"
    r"(?:details|information|answer|data))\b",
    rf"\b{_SOURCE} (?:\w+ ){{0,3}}?(?:but |and )?never (?:gives?|mentions?|states?|says|specifies|names?|"
    r"provides?|lists?|reveals?|discloses?|identifies)\b",
    # "Unclear from the text", "found no reference to", "that's not something the document talks about".
    rf"\b(?:unclear|unknown|not clear|uncertain) (?:from|in|based on|according to) {_SOURCE}\b",
    r"\bfound (?:no (?:\w+ )?(?:information|reference|mention|data|details?|answer|record|indication|trace)|"
    r"nothing (?:about|on|regarding|in))\b",
    rf"\bnot something (?:that )?{_SOURCE} (?:\w+ )?(?:talks? about|mentions?|covers?|discusses|says|"
    r"addresses|includes?|contains?)\b",
    r"\bi(?: am|'m) not (?:confident|certain|sure) enough to\b",
    # "The answer is unknown.", "I have no idea", "I'm not sure", "I can't say for sure".
    r"\bthe answer (?:is|remains|was) (?:still )?(?:unknown|unclear|uncertain|not known|not clear|undetermined|"
    r"indeterminate|unavailable)\b",
    r"\b(?:i have|i've|i've got|i got|we have) no (?:idea|clue)\b",
    r"\bi(?: am|'m) (?:not sure|unsure|not certain|uncertain)\b",
    r"\b(?:i|we) (?:cannot|can't|can not|could not|couldn't) (?:say|be sure)\b",
    # The whole answer is a short report: "Unknown.", "N/A", "Not found", "No idea".
    rf"^[\s\"'`(\[]*(?:(?:sorry|i'm sorry|i am sorry|unfortunately|hmm+|well|apologies|oops)[\s,.!:-]+)?"
    rf"{_WHOLE_ANSWER}[\s\"'`)\].!]*$",
]
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def _plain_apostrophes(text: str) -> str:
    """``text.translate(_APOSTROPHES)``; three C-level replaces are far faster on long text."""
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")


# Every pattern above needs "n't", "cannot", "unknown", one of the rarer words below, or one of
# the words "no", "not", "none", "nowhere": "no" at the start of a word (after ``\b``, a space or
# the start of the answer in every pattern) and followed by a space, "t", "n", "where" or the
# end. Most answers hold none of these, and one search for them (every branch starts with a
# letter, so the search skips ahead in C) costs far less than trying every pattern at every
# position, so the patterns run only when this finds something. Keep it in step with the
# patterns: tests/test_fast_paths.py checks that the detector agrees with the patterns alone.
_MAYBE_ABSENT = re.compile(
    r"no(?<!\wno)(?:[ tn]|where|\Z)"  # "no" at a word start: no word character before it
    r"|n(?:'t|/a|either|ever)|cannot|un(?:known|a(?:ble|nswerable)|sure|clear|certain|determined)|fails|silent"
    r"|i(?:mpossible|nsufficient|nadequate|dk)|lack"
)
_find_maybe_absent = _MAYBE_ABSENT.search

# A pattern that begins with a source ("the provided text does not say") would be tried at every
# word of a run of source modifiers ("the the the ... text"), each try reading the rest of the
# run: quadratic. A match starting after a modifier word is also a match starting at that word,
# so starting there can be skipped with no change to what is found: the search is then linear.
_MODIFIERS = _SOURCE[_SOURCE.index("(?:the|") + 3 : _SOURCE.index(") )*")].split("|")
_NOT_AFTER_MODIFIER = "".join(rf"(?<!\b{word} )" for word in _MODIFIERS)
_GUARDED_PATTERNS = [
    pattern.replace(rf"\b{_SOURCE} ", rf"\b{_NOT_AFTER_MODIFIER}{_SOURCE} ", 1)
    if pattern.startswith(rf"\b{_SOURCE} ")
    else pattern
    for pattern in _PATTERNS
]


# Past this length the patterns are tried only near the trigger words (see
# ``NotFoundDetector._search_near_triggers``): one search over the whole text would try them at
# every word start, and a long answer almost always holds a trigger word somewhere. Both ways
# find the same reports; with the hedged-abstention patterns (twice as many alternatives) the
# windows pay from about one sentence on: at 600 characters the detector took three times as
# long on the LLM answers with a trigger word (EVOUNA), at 80 about as long as before them.
_LONG_TEXT = 80
# In every pattern a match holds a trigger word no further than ~31 characters from where the
# shortest match starts ("information retrieved remains silent"); twice that, for safety.
_REACH = 64
_WORD_START = re.compile(r"(?<!\w)\w")


@lru_cache(maxsize=1)
def _unguarded_patterns() -> re.Pattern[str]:
    # Tried at chosen starts only, so no guard is needed (nor wanted: a window may begin inside a
    # run of source modifiers, where the guarded form refuses to start).
    return re.compile("|".join(_PATTERNS))


class NotFoundDetector:
    """Decides whether an answer reports that the document does not hold the answer.

    :param label: The label of an unanswerable question; the answer reports absence when it holds
        this label as a word, in any case (default ``NOT_IN_DOCUMENT``).
    :param extra_phrases: More phrases that report absence, in your own wording or language. Each
        is folded and matched as a plain substring of the folded answer (no regular expressions,
        so a phrase cannot make matching slow).

    >>> detect = NotFoundDetector(extra_phrases=["keine Angabe"])
    >>> detect("Keine Angabe im Dokument.")
    True
    """

    def __init__(self, label: str = NOT_IN_DOCUMENT, extra_phrases: Iterable[str] = ()) -> None:
        if not isinstance(label, str) or not label.strip():
            raise ValueError("label must be a non-blank string")
        phrases = list(extra_phrases)
        for phrase in phrases:
            if not isinstance(phrase, str) or not phrase.strip():
                raise ValueError(f"extra_phrases must be non-blank strings, got {phrase!r}")
        self.label = label
        self.extra_phrases: tuple[str, ...] = tuple(phrases)
        self._folded_label = fold(label)
        self._folded_phrases = tuple(_plain_apostrophes(fold(phrase)) for phrase in phrases)
        label_pattern = rf"(?<!\w){re.escape(self._folded_label)}(?!\w)"
        alternatives = "|".join([label_pattern, *_GUARDED_PATTERNS])
        if re.match(r"\w", self._folded_label):
            # Every pattern, and then the label too, starts at the start of the answer or of a word:
            # trying the alternatives only there (one look-around elsewhere) is twice as fast.
            alternatives = rf"(?:^|(?<!\w)(?=\w))(?:{alternatives})"
        self._pattern = re.compile(alternatives)
        self._label_pattern = re.compile(label_pattern)

    def __call__(self, text: str) -> bool:
        """Whether ``text`` (raw or already folded) reports that the answer is not in the document."""
        return self.folded(fold(text))

    def folded(self, folded_text: str) -> bool:
        """Like calling the detector, for text already folded with :func:`answer_eval.fold`."""
        return self._says_absent(folded_text if folded_text.isascii() else _plain_apostrophes(folded_text))

    def _says_absent(self, text: str) -> bool:
        """:meth:`folded` for a text with plain apostrophes: absence reported, and no answer given anyway."""
        if not self._reports_absence(text):
            return False
        # Imported on first use: its patterns take ~10 ms to compile, kept out of ``import answer_eval``.
        from answer_eval.text.answer_despite_absence import answers_anyway

        return not answers_anyway(text, self._reports_absence)

    def _reports_absence(self, text: str) -> bool:
        """Whether the label, a pattern or an extra phrase reports absence somewhere in ``text``."""
        if len(text) > _LONG_TEXT:
            if self._search_near_triggers(text):
                return True
        else:
            # The patterns (and the label) cannot match a text without a trigger word or the label.
            maybe = _find_maybe_absent(text) is not None or self._folded_label in text
            if maybe and self._pattern.search(text) is not None:
                return True
        return bool(self._folded_phrases) and any(phrase in text for phrase in self._folded_phrases)

    def _search_near_triggers(self, text: str) -> bool:
        """Whether the label or a pattern matches ``text``, trying the patterns only near trigger words.

        Every pattern match starts at a word start (or at the start of the text) at most
        :data:`_REACH` characters before a trigger word it holds, so only those starts are tried,
        each once: the cost follows the number of trigger words, not the length of the text.
        ``tests/test_fast_paths.py`` checks it against one search of every pattern.
        """
        if self._folded_label in text and self._label_pattern.search(text) is not None:
            return True
        match_at = _unguarded_patterns().match
        if match_at(text, 0) is not None:
            return True
        untried = 0  # word starts before this one have been tried
        for trigger in _MAYBE_ABSENT.finditer(text):
            end = trigger.end()
            for start in _WORD_START.finditer(text, max(untried, trigger.start() - _REACH), end):
                if match_at(text, start.start()) is not None:
                    return True
            untried = max(untried, end)
        return False

    def folded_many(self, folded_texts: Sequence[str]) -> list[bool]:
        """``[self.folded(text) for text in folded_texts]``, faster for many texts.

        One search per text for what any report of absence needs (a trigger word, the label, an
        extra phrase), called from C; only the texts with a hit are tried against the patterns.
        """
        texts = list(folded_texts)
        for position in compress(count(), map(operator.not_, map(str.isascii, texts))):
            texts[position] = _plain_apostrophes(texts[position])
        candidates = set(compress(count(), map(_find_maybe_absent, texts)))
        for needle in (self._folded_label, *self._folded_phrases):
            candidates.update(compress(count(), map(operator.contains, texts, repeat(needle))))
        flags = [False] * len(texts)
        for position in candidates:
            flags[position] = self._says_absent(texts[position])
        return flags

    def __repr__(self) -> str:
        return f"NotFoundDetector(label={self.label!r}, extra_phrases={list(self.extra_phrases)!r})"


@lru_cache(maxsize=1)
def _default_detector() -> NotFoundDetector:
    # Built on first use: compiling the patterns takes ~10 ms, kept out of ``import answer_eval``.
    return NotFoundDetector()


def is_not_found(text: str) -> bool:
    """Whether ``text`` reports that the document does not hold the answer.

    True for the bare label ``NOT_IN_DOCUMENT`` in any case and for plain-English reports such as
    "The document does not contain this information", "is not in the document", "I could not find
    the answer in the document" or "There is no information about X in the text"; false for
    sentences that only contain a negation ("There is no doubt: it is Paris").

    >>> is_not_found("The text does not specify the year.")
    True
    >>> is_not_found("There is no doubt: it is Paris.")
    False
    """
    return _default_detector()(text)


def is_not_found_folded(folded_text: str) -> bool:
    """:func:`is_not_found` for a text already folded with :func:`answer_eval.fold` (it is not folded again)."""
    return _default_detector().folded(folded_text)
