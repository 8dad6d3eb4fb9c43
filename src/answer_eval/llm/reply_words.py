"""Verdicts stated in words: the patterns the reply readers find, each a :class:`Said` statement.

- **Scores**: named anywhere, "Score: 4", "score of 4", "Rating = 4", "Grade: 4", "The grade is 4.",
  "Score - 2", "**Score:** 4",
  marked final by "Final score" or "Overall score", or "Overall 2" / "Final: 2"; or the number the
  reply opens with ("4 - clear", "-1: terse"). After the number: "/5" or "out of 5" must name the
  top of the scale (``4/10`` on a 1-5 scale is no score of it), and a range ("3-4", "3 to 4",
  "3 or 4"), a fraction ("3.5") or a percentage is no score. An opening "1." or "1)" numbers a
  list, not a score, when another number follows it ("1. 0: Incorrect" reads 0) or the reply goes
  on to "2." or "2)".
- **Choices**: "Winner: B", "Choice: A", "Better response: B", "Final choice: TIE"; or a reply
  opening with one ("B. It is fuller", "The better response is A", "A tie").
- **Yes or no**: a reply opening with yes, no, true, false, correct, incorrect or "not correct", or
  with "Correct: no" / "Verdict: yes"; "Verdict: no" or "Final answer: no" anywhere. An opening
  "Yes and no" (or "yes/no", "yes or no") hedges: it is no verdict. "No doubt, ..." opens none.

An opening verdict is read after markdown and brackets, never after a quotation mark: a reply
that opens by quoting ("'Response B is better', says A") opens with a quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from answer_eval.llm.reply_verdicts import LEADING, NAMED, Said

__all__ = [
    "OPENING",
    "REASONING",
    "choice_from_text",
    "leading_choice",
    "leading_score",
    "leading_yes_no",
    "named_choices",
    "named_scores",
    "named_yes_no",
    "score_from_number",
    "yes_no_from_text",
]

REASONING = re.compile(r"^\s*<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
"""A reasoning model's thoughts before its reply (``<think>...</think>``): drafts, not verdicts."""

_QUOTE_MARKS = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e"
OPENING = f"[^\\w{_QUOTE_MARKS}+\\-]*"
"""What a reply may open with before its verdict: markdown, brackets, spaces; never a quotation mark."""
_SKIP = OPENING
_NUMBER = r"(?P<number>[+-]?\d+)"
# Between a name and its value: "is" or "of", a separator (":", "=", or a dash before a space), and
# markdown. Each optional part holds its own leading spaces, so a run of spaces is matched one way
# only (two optional space runs in a row backtrack in quadratic time on a long run).
_SEPARATOR = r"[\"']*(?:\s*(?:is|of)\b)?(?:[\s*]*(?:[:=]|[-\u2013\u2014](?=\s)))?[\s*]*"

_NAMED_SCORE = re.compile(
    r"(?<![\w-])(?:(?P<final>final|overall)\s+)?(?:score|rating|grade)\b" + _SEPARATOR + _NUMBER, re.IGNORECASE
)
_FINAL_SCORE = re.compile(r"(?<![\w-])(?P<final>overall|final)(?:[\s*]*[:=])?[\s*]*" + _NUMBER, re.IGNORECASE)
_LEADING_NUMBER = re.compile(f"^{_SKIP}(?:-\\s+)?{_NUMBER}")
_NEXT_NUMBER = re.compile(r"[ \t]*" + _NUMBER)
# What follows a score's number: a fraction, "/M" or "out of M", a range, a percentage.
_TAIL = re.compile(
    r"(?P<fraction>\.\d+)?(?:\s*(?:/|out\s+of\b|of\b)\s*(?P<top>[+-]?\d+)"
    r"|\s*(?P<range>-|\u2013|\u2014|to\b|or\b)\s*[+-]?\d|\s*(?P<percent>%))?",
    re.IGNORECASE,
)
_MAX_DIGITS = 9

_CHOICE_END = r"(?=\s*(?:[.,:;)!\]*]|$|(?<=\s)(?:is|wins|was)\b))"
_LEADING_TIE = re.compile(f"^{_SKIP}(?:it\\s+is\\s+|it's\\s+)?(?:a\\s+)?tie\\b", re.IGNORECASE)
_LEADING_CHOICE = re.compile(
    f"^{_SKIP}(?:(?:the\\s+)?(?:choice|winner|better(?:\\s+response)?)(?:\\s*is\\b)?(?:\\s*[:=])?\\s*)?"
    f"(?:response\\s+)?(?P<value>A|B|TIE){_CHOICE_END}",
    re.IGNORECASE,
)
_NAMED_CHOICE = re.compile(
    r"(?<![\w-])(?:(?P<final>final)\s+)?(?:choice|winner|verdict|(?:better|preferred)\s+response)\b"
    + _SEPARATOR
    + r"(?:response\s+)?(?P<value>(?:a\s+)?tie|[AB])"
    + _CHOICE_END,
    re.IGNORECASE,
)

_YES_NO = r"(?P<label>yes|no|true|false|correct|incorrect|not\s+correct)\b"
_LEADING_YES_NO = re.compile(
    f"^{_SKIP}(?:(?P<word>yes|no|true|false)\\b(?!\\s+doubt)(?P<hedge>\\s*(?:and|or|/|&)\\s*(?:yes|no)\\b)?"
    f"|(?:correct|verdict)\\s*[:=][\\s*]*{_YES_NO}"
    r"|(?P<plain>not\s+correct|incorrect|correct)(?=\s*(?:[.,!;:]|$)))",
    re.IGNORECASE,
)
_NAMED_YES_NO = re.compile(
    r"(?<![\w-])(?:(?P<final>final)\s+(?:verdict|answer|decision)|verdict|decision)\b"
    + _SEPARATOR
    + _YES_NO
    + r"(?=\s*(?:[.,!;:)\]*]|$))",
    re.IGNORECASE,
)
_TRUE_WORDS = frozenset({"yes", "true", "correct"})


def score_from_number(text: str, allowed: Callable[[int], bool], at: int = 0) -> tuple[int | None, str | None]:
    """The score a number at ``at`` of ``text`` gives (with what follows it), or ``None`` and why not."""
    number = _NEXT_NUMBER.match(text, at)
    if number is None:
        return None, f"{text[at : at + 40]!r} is not a score"
    return _score(text, number, allowed)


def _score(text: str, number: re.Match[str], allowed: Callable[[int], bool]) -> tuple[int | None, str | None]:
    digits = number.group("number")
    tail = _tail(text, number.end())
    said = text[number.start("number") : tail.end()].strip()
    if len(digits.lstrip("+-")) > _MAX_DIGITS:
        return None, f"{said[:20]}... is not on the scale"
    fraction, top = tail.group("fraction"), tail.group("top")
    if fraction and set(fraction[1:]) != {"0"}:
        return None, f"{said} is not a whole score"
    if tail.group("range"):
        return None, f"{said} is a range, not one score"
    if tail.group("percent"):
        return None, f"{said} is a percentage, not a score of the scale"
    if top is not None and not (len(top) <= _MAX_DIGITS and allowed(int(top)) and not allowed(int(top) + 1)):
        return None, f"{said} is not on this scale (its top is not {top.lstrip('+')})"
    value = int(digits)
    return (value, None) if allowed(value) else (None, f"{value} is not on the scale")


def _tail(text: str, end: int) -> re.Match[str]:
    tail = _TAIL.match(text, end)
    assert tail is not None  # every part of the pattern is optional
    return tail


def named_scores(text: str, allowed: Callable[[int], bool]) -> Iterable[Said[int]]:
    """Every "Score: N" (and "Overall N") in ``text``."""
    found = [*_NAMED_SCORE.finditer(text), *_FINAL_SCORE.finditer(text)]
    for match in found:
        value, why = _score(text, match, allowed)
        stop = _tail(text, match.end()).end()
        yield Said(match.start(), stop, NAMED, value, text[match.start() : stop], bool(match.group("final")), why)


def leading_score(text: str, allowed: Callable[[int], bool], before: int) -> Iterable[Said[int]]:
    """The score ``text`` opens with (ending before ``before``, where its first JSON object starts), if any."""
    match = _LEADING_NUMBER.match(text)
    if match is None:
        return
    end = match.end()
    if text[end : end + 1] in (".", ")") and text[end + 1 : end + 2].isspace():
        following = _NEXT_NUMBER.match(text, end + 1)
        if following is not None:
            match = following  # "1. 0: Incorrect": the list's number, then the score
        elif _numbers_a_list(text, match.group("number"), end):
            return
    value, why = _score(text, match, allowed)
    stop = _tail(text, match.end()).end()
    if stop <= before:
        yield Said(match.start("number"), stop, LEADING, value, text[match.start("number") : stop], False, why)


def _numbers_a_list(text: str, digits: str, end: int) -> bool:
    if len(digits) > _MAX_DIGITS:
        return False
    following = str(int(digits) + 1)
    return re.search(f"(?<!\\S){following}[.)](?!\\S)", text[end:]) is not None


def choice_from_text(text: str) -> str | None:
    """``A``, ``B`` or ``TIE`` from a JSON value ("A", "Response B", "tie", "equal", "A is better"); else ``None``."""
    word = text.strip().upper().removeprefix("RESPONSE ").strip()
    if word in ("A", "B", "TIE"):
        return word
    if word in ("EQUAL", "SAME", "NEITHER", "BOTH"):
        return "TIE"
    said = list(leading_choice(text, len(text)))
    return said[0].value if said else None


def named_choices(text: str) -> Iterable[Said[str]]:
    """Every "Winner: B" (and the like) in ``text``."""
    for match in _NAMED_CHOICE.finditer(text):
        value = "TIE" if match.group("value").lower().endswith("tie") else match.group("value").upper()
        yield Said(match.start(), match.end(), NAMED, value, match.group(0), bool(match.group("final")))


def leading_choice(text: str, before: int) -> Iterable[Said[str]]:
    """The choice ``text`` opens with, if any."""
    tie = _LEADING_TIE.match(text)
    if tie is not None and tie.end() <= before:
        yield Said(0, tie.end(), LEADING, "TIE", tie.group(0).strip())
        return
    match = _LEADING_CHOICE.match(text)
    if match is not None and match.end() <= before:
        yield Said(0, match.end(), LEADING, match.group("value").upper(), match.group(0).strip())


def yes_no_from_text(text: str) -> tuple[bool | None, str | None]:
    """A yes or no from a JSON value ("yes", "Correct", "not correct"); ``None`` and why not otherwise."""
    said = list(leading_yes_no(text, len(text)))
    return (said[0].value, said[0].why) if said else (None, None)


def named_yes_no(text: str) -> Iterable[Said[bool]]:
    """Every "Verdict: no" (and "Final answer: yes") in ``text``."""
    for match in _NAMED_YES_NO.finditer(text):
        value = match.group("label").lower() in _TRUE_WORDS
        yield Said(match.start(), match.end(), NAMED, value, match.group(0), bool(match.group("final")))


def leading_yes_no(text: str, before: int) -> Iterable[Said[bool]]:
    """The yes or no ``text`` opens with, if any ("Yes and no" is a statement of no verdict)."""
    match = _LEADING_YES_NO.match(text)
    if match is None or match.end() > before:
        return
    words = match.group(0).strip()
    if match.group("hedge"):
        yield Said(0, match.end(), LEADING, None, words, why=f"{words!r} is no verdict")
        return
    said = match.group("word") or match.group("label") or match.group("plain")
    yield Said(0, match.end(), LEADING, " ".join(said.lower().split()) in _TRUE_WORDS, words)
