"""Recognising an answer that reports the document does not hold the answer.

Unanswerable questions carry the label ``NOT_IN_DOCUMENT``; an answer to them is right when it
says, in the label or in plain English, that the source has no answer. The patterns are built
around a report of absence (a source that does not say, an answer that is not in the text, a
reader that could not find it), never around a bare negation, so "There is no doubt: it is
Paris" and "Nothing stopped production; 500 units" are not reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from answer_eval.folding import fold

__all__ = ["NOT_IN_DOCUMENT", "NotFoundDetector", "is_not_found"]

NOT_IN_DOCUMENT = "NOT_IN_DOCUMENT"
"""The default label of an unanswerable question."""

# What a reader may call its source.
_SOURCE = (
    r"(?:(?:the|this|that|these|those|provided|given|above|supplied|available|retrieved|same|"
    r"referenced|cited|attached|input|reference) )*"
    r"(?:documents?|texts?|contexts?|passages?|articles?|sources?|excerpts?|paragraphs?|reports?|"
    r"pages?|snippets?|materials?|information|data|records?|extracts?)"
    r"(?: (?:provided|given|retrieved|above|supplied|here))?"
)
_DOES_NOT = r"(?:does not|doesn't|do not|don't|did not|didn't|does n't|fails to|cannot|can't|can not)"
_REPORT_VERB = (
    r"(?:contain|say|mention|specify|state|include|provide|give|list|indicate|hold|discuss|tell|"
    r"offer|cover|address|answer|reveal|have|describe|identify|explain|show|refer to|disclose|note)"
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
    r"not mentioned|not stated|not specified|not provided|not given|not in (?:the )?document|"
    r"no information|no info|information not available|information not provided|not enough information|"
    r"cannot answer|can't answer|cannot be answered|unanswerable|i don't know|i do not know|"
    r"none found|no data|not determinable|cannot be determined|can't be determined|"
    r"insufficient information|no relevant information)"
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
    # "I could not find the answer", "we were unable to determine".
    r"\b(?:i|we)(?: was| were| am| are)? (?:could not|couldn't|cannot|can't|can not|unable to|"
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
    # "There is not enough information", "insufficient context".
    r"\b(?:not enough|insufficient|not sufficient|no sufficient|lacks?|lacking) "
    r"(?:(?:\w+ )?information|context|data|details)\b",
    # The whole answer is a short report: "Unknown.", "N/A", "Not found".
    rf"^[\s\"'`(\[]*{_WHOLE_ANSWER}[\s\"'`)\].!]*$",
]
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


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
        self._folded_phrases = tuple(fold(phrase).translate(_APOSTROPHES) for phrase in phrases)
        label_pattern = rf"(?<!\w){re.escape(self._folded_label)}(?!\w)"
        self._pattern = re.compile("|".join([label_pattern, *_PATTERNS]))

    def __call__(self, text: str) -> bool:
        """Whether ``text`` (raw or already folded) reports that the answer is not in the document."""
        return self.folded(fold(text))

    def folded(self, folded_text: str) -> bool:
        """Like calling the detector, for text already folded with :func:`answer_eval.fold`."""
        text = folded_text if folded_text.isascii() else folded_text.translate(_APOSTROPHES)
        if self._pattern.search(text) is not None:
            return True
        return any(phrase in text for phrase in self._folded_phrases)

    def __repr__(self) -> str:
        return f"NotFoundDetector(label={self.label!r}, extra_phrases={list(self.extra_phrases)!r})"


_DEFAULT = NotFoundDetector()


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
    return _DEFAULT(text)
