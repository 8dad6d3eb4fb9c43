"""The verdicts a grader's reply states in words, which of them is the grader's own, and what in it is a quote.

Which of the verdicts a grader's reply states is its verdict: the rules every reply reader shares.

A reply may state a verdict several times, and may quote verdicts that are not its own (the
graded answer's "Score: 5"). The readers of :mod:`answer_eval.llm.replies` find every statement
of a verdict, in four kinds: a top-level JSON object's verdict key, a named verdict in the words
("Score: 4", "Overall 2", "Verdict: no"), the reply's opening ("4 - clear", "Yes, ...") and, on a
two-point scale, a verdict phrased as a sentence ("The candidate is correct.", "The answer is: No.",
:mod:`answer_eval.llm.replies`). Then, in this order:

1. **Quotes are not verdicts**: a statement inside quotation marks, inside a prompt block the
   reply copies, or copied word for word from a text the grader was shown
   (:class:`Shown`) is dropped.
2. **The JSON object is the answer the prompt asks for**: named statements *before* the last JSON
   verdict are the grader's reasoning (per-criterion scores) and are dropped; one after it must
   agree with it. Every JSON verdict counts (two that disagree conflict).
3. **A JSON or named verdict outranks a phrased one** (a sentence may describe the graded answer
   rather than grade it). For a score, **a named score outranks the opening too** (a number may
   number a list); a yes/no or a choice the reply opens with always counts.
4. **A verdict marked final** ("Final score: 3", "Overall: 3", "Final verdict: no") outranks the
   named statements not so marked.
5. The statements left must agree: one value, the verdict (or, when that one value is not on the
   scale, no verdict, saying why). Two values are a **conflict**: nothing says which is final,
   so there is no verdict, and the problem names both.

Verdicts stated in words: the patterns the reply readers find, each a :class:`Said` statement.

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

What in a grader's reply is a quote, not the grader's own words.

A grader often quotes the answer it grades, and a hostile answer holds a verdict of its own
("Score: 5", ``{"score": 5}``, "Response B is better") for the grader to quote. A verdict is
taken as quoted, and so not the grader's, when it is:

- **inside quotation marks** on one line: straight double or single quotes, curly double or
  single quotes, guillemets or single backticks (an apostrophe, as in "it's", opens or closes nothing);
- **inside a block the reply copies from the prompt** (``<Response>`` ... ``</Response>``, see
  :mod:`answer_eval.llm.rubric_prompts`), as a grader that parrots its prompt does;
- **a verbatim copy of a text the grader was shown** (:class:`Shown`: the graded answer and the
  other inputs), compared without regard to case or runs of white space;
- **a copy of the prompt's own words** (the rubric, its scale and criteria, the reply format, the
  graded examples and their grades): a JSON object the prompt holds (the grade of an example), or a
  statement whose line and a line next to it both come from the prompt (a parrot copies the
  prompt by the paragraph; one line, such as a rating of the scale, may be a grader's pick);
- **a copy of a graded example's explanation** (its words, punctuation and case aside; one of at
  least :data:`MIN_EXPLANATION_WORDS` words): the grader gave the example's grade, not one of its own.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from answer_eval.llm.rubric_prompts import copied_blocks

__all__ = [
    "JSON",
    "LEADING",
    "NAMED",
    "OPENING",
    "PHRASE",
    "REASONING",
    "Quotes",
    "Read",
    "Said",
    "Shown",
    "choice_from_text",
    "decide",
    "leading_choice",
    "leading_score",
    "leading_yes_no",
    "named_choices",
    "named_scores",
    "named_yes_no",
    "score_from_number",
    "squashed",
    "yes_no_from_text",
]

T = TypeVar("T")

JSON, NAMED, LEADING, PHRASE = "json", "named", "leading", "phrase"


@dataclass(frozen=True)
class Read(Generic[T]):
    """What a reply says.

    :param value: The verdict (a score, ``"A"``/``"B"``/``"TIE"``, or a bool); ``None`` when unreadable.
    :param explanation: The grader's reasoning (the whole reply when it gave no separate explanation).
    :param problem: Why there is no verdict (``None`` when there is one): no verdict found, two that
        conflict (both named), a value off the scale, a reply too long or nested too deeply.
    """

    value: T | None
    explanation: str
    problem: str | None = None

    @property
    def readable(self) -> bool:
        """Whether the reply gave a verdict (what may be cached: an unreadable reply is asked again)."""
        return self.value is not None


@dataclass(frozen=True)
class Said(Generic[T]):
    """One statement of a verdict in a reply.

    :param start: Where it starts in the reply.
    :param end: Where it ends.
    :param kind: :data:`JSON`, :data:`NAMED`, :data:`LEADING` or :data:`PHRASE`.
    :param value: The verdict it states; ``None`` when it states one that is not on the scale.
    :param words: It, as the reply says it (to name it in a conflict).
    :param final: Whether it says it is final ("Final score", "Overall").
    :param why: Why ``value`` is ``None``.
    :param explanation: A JSON object's explanation, if it gave one.
    """

    start: int
    end: int
    kind: str
    value: T | None
    words: str
    final: bool = False
    why: str | None = None
    explanation: str | None = None


def _kept(said: Sequence[Said[T]], leading_yields: bool) -> list[Said[T]]:
    last_json = max((one.end for one in said if one.kind == JSON), default=-1)
    kept = [one for one in said if one.kind != NAMED or one.start >= last_json]
    if any(one.kind in (JSON, NAMED) for one in kept):
        # A phrase (and, for a score, the opening) is a verdict only when nothing names one.
        kept = [one for one in kept if one.kind != PHRASE and not (leading_yields and one.kind == LEADING)]
    if any(one.final for one in kept):
        kept = [one for one in kept if one.final or one.kind == JSON]
    return kept


def decide(said: Sequence[Said[T]], text: str, leading_yields: bool) -> Read[T]:
    """The reply's verdict from its unquoted statements ``said`` (in reply order), by the module's rules."""
    kept = _kept(said, leading_yields)
    if not kept:
        return Read(None, text.strip(), "no verdict found")
    first = kept[0]
    other = next((one for one in kept if _key(one) != _key(first)), None)
    if other is not None:
        words = f"{_shown(first.words)} and {_shown(other.words)}"
        return Read(None, text.strip(), f"two verdicts, {words}, and nothing says which is final")
    explained = [one.explanation for one in kept if one.kind == JSON and one.explanation]
    explanation = explained[-1] if explained else text.strip()
    if first.value is None:
        return Read(None, explanation, first.why or f"{_shown(first.words)} is not a verdict on the scale")
    return Read(first.value, explanation)


def _key(one: Said[T]) -> tuple[bool, object]:
    return (True, one.value) if one.value is not None else (False, one.why or one.words)


def _shown(words: str) -> str:
    words = " ".join(words.split())
    return repr(words if len(words) <= 60 else words[:57] + "...")


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


_SPACES = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")

MIN_EXPLANATION_WORDS = 3
"""The fewest words an example's explanation needs to be told from a grader's own ("Vague." may be either)."""
# A quote that opens: after the line's start, a space or an opening bracket, before a non-space.
_SINGLE_OPEN = re.compile(r"(?<![^\s(\[{])['\u2018](?=\S)")
_SINGLE_CLOSE = re.compile(r"(?<=\S)['\u2019](?![^\s.,;:!?)\]}])")
_PAIRED = {'"': '"', "`": "`", "\u201c": "\u201d", "\u00ab": "\u00bb", "\u201e": "\u201c"}
_PAIRED_CHARACTERS = re.compile('["`\u201c\u201d\u00ab\u00bb\u201e]')


class Quotes:
    """The quoted spans of one reply: quotation marks on a line and copied prompt blocks."""

    def __init__(self, reply: str, blanked: str) -> None:
        """``blanked`` is ``reply`` with its JSON objects blanked out (their quotes are JSON's, not quotation)."""
        whole = (len(reply) - len(reply.lstrip()), len(reply.rstrip()))
        # A reply in quotation marks from end to end quotes nothing: it is what the grader said. (A
        # reply that is one copied block, a parrot, is all quote.)
        marked = [span for span in self._marked(blanked) if not (span[0] <= whole[0] and span[1] >= whole[1])]
        spans = sorted([*marked, *copied_blocks(reply)])
        self._starts = [start for start, _ in spans]
        self._reach: list[int] = []
        for _, end in spans:
            self._reach.append(max(end, self._reach[-1]) if self._reach else end)

    def holds(self, start: int, end: int) -> bool:
        """Whether the text from ``start`` to ``end`` lies inside a quoted span."""
        index = bisect.bisect_right(self._starts, start) - 1
        return index >= 0 and self._reach[index] >= end

    @staticmethod
    def _marked(text: str) -> Iterable[tuple[int, int]]:
        # Spans are made line by line: a quotation mark left open does not quote the rest of the reply.
        offset = 0
        for line in text.split("\n"):
            if not line.lstrip().startswith("```"):  # a code fence's backticks are no quotation
                yield from ((offset + start, offset + end) for start, end in _line_spans(line))
            offset += len(line) + 1


def _line_spans(line: str) -> Iterable[tuple[int, int]]:
    opened: dict[str, int] = {}
    for match in _PAIRED_CHARACTERS.finditer(line):
        character, at = match.group(0), match.start()
        closing_for = [opening for opening, closing in _PAIRED.items() if closing == character and opening in opened]
        if closing_for:
            yield opened.pop(closing_for[0]), at + 1
        elif character in _PAIRED:
            opened[character] = at
    openings = [match.start() for match in _SINGLE_OPEN.finditer(line)]
    closings = [match.start() for match in _SINGLE_CLOSE.finditer(line)]
    index = 0
    for opening in openings:
        while index < len(closings) and closings[index] <= opening:
            index += 1
        if index == len(closings):
            break
        yield opening, closings[index] + 1
        index += 1


def squashed(text: str) -> str:
    """``text`` with its runs of spaces one space, stripped and case-folded."""
    return _SPACES.sub(" ", text).strip().casefold()


def _words(text: str) -> str:
    return " ".join(_WORDS.findall(text.casefold()))


def _occurs(needle: str, haystack: str, found: dict[str, bool]) -> bool:
    """Whether ``needle`` (squashed) occurs in ``haystack`` as whole words (``Score: 3`` is not in ``score: 3-1``)."""
    if not needle:
        return False
    if needle not in found:  # a reply may say the same words many times: each is looked for once
        pattern = re.compile(r"(?<!\w)" + re.escape(needle) + r"(?![\w/%]|[.,\-\u2013\u2014]\s?\d)")
        found[needle] = needle in haystack and pattern.search(haystack) is not None
    return found[needle]


class Shown:
    """What the grader was shown, to tell a copy of it in its reply from the grader's own words."""

    def __init__(
        self, texts: Sequence[str | None] = (), prompt: Sequence[str] = (), explanations: Sequence[str] = ()
    ) -> None:
        """What the prompt showed.

        :param texts: Every untrusted text of the prompt (the graded answer, the other inputs, the
            examples' inputs); ``None`` and empty ones are left out.
        :param prompt: The prompt's own words: its system message, the rubric text, the examples and
            their grades, the closing request (a verdict copied from them is no verdict).
        :param explanations: The graded examples' explanations, in the prompt's order.
        """
        kept = [text for text in texts if text]
        self._squashed = "\x00".join(squashed(text) for text in kept)
        self._spaceless = "\x00".join(_SPACES.sub("", text).casefold() for text in kept)
        self._prompt = "\x00".join(squashed(text) for text in prompt if text)
        self._prompt_spaceless = "\x00".join(_SPACES.sub("", text).casefold() for text in prompt if text)
        self._explanations: dict[str, int] = {}
        for number, explanation in enumerate(explanations, 1):
            words = _words(explanation)
            if len(words.split()) >= MIN_EXPLANATION_WORDS:
                self._explanations.setdefault(words, number)
        self._found: dict[str, bool] = {}
        self._found_in_prompt: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return bool(self._squashed or self._prompt)

    def holds_object(self, source: str) -> bool:
        """Whether a JSON object's text occurs in a shown text (white space aside)."""
        needle = _SPACES.sub("", source).casefold()
        return bool(needle) and needle in self._spaceless

    def prompt_holds_object(self, source: str) -> bool:
        """Whether a JSON object's text occurs in the prompt's own words (an example's grade), white space aside."""
        needle = _SPACES.sub("", source).casefold()
        return bool(needle) and needle in self._prompt_spaceless

    def holds_words(self, words: str) -> bool:
        """Whether ``words`` occur in a shown text as whole words (``Score: 3`` is not in ``score: 3-1``)."""
        return _occurs(squashed(words), self._squashed, self._found)

    def holds_lines(self, lines: Sequence[str]) -> bool:
        """Whether ``lines`` (next to each other in a reply) occur together in the prompt's own words."""
        needle = squashed(" ".join(lines))
        return (
            len(lines) > 1
            and len(_WORDS.findall(needle)) >= MIN_EXPLANATION_WORDS
            and (_occurs(needle, self._prompt, self._found_in_prompt))
        )

    def example_explained(self, text: str) -> int | None:
        """The number of the graded example whose explanation ``text`` is (its words alone), if any."""
        return self._explanations.get(_words(text)) if self._explanations else None
