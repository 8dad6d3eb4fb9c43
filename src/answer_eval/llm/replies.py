"""Reading a grader's reply: a score, a pairwise choice or yes/no, from its JSON objects or a two-point scale's words.

The top-level JSON objects of a grader's reply, found in one pass: linear time, no recursion.

A reply is words, code fences and JSON objects mixed. An object is a ``{`` that starts a valid
JSON object; it is *top-level* when no other object holds it. The objects are found left to
right by an iterative parser (a stack, never the call stack): from each ``{`` it reads tokens
until the object closes (an object, and the search goes on after it) or a token does not fit
(no object there, and the search goes on *from that token*, not from the next ``{``: a ``{``
the failed attempt already read as part of its would-be object is not tried again, which is
what keeps the whole scan linear where trying every ``{`` took quadratic time).

An object nested deeper than :data:`MAX_DEPTH` levels is no grader's verdict (a verdict is one
flat object): the scan stops and says so, and the reader treats the reply as unreadable, since
reading what is inside such an object would take a nested object for a top-level one.

Strings may hold raw control characters (a newline in an explanation), as graders write them.

A grade on a two-point scale said in words ("Correct.", "The candidate is correct.", "The answer is: No.").

A two-point scale (``question_answering_correctness``: 0 Incorrect, 1 Correct; ``safety``;
``groundedness``) is a yes/no question, and small models answer it in words rather than with
the number asked for. :func:`scale_words` gives the words that state each point:

- the scale's own labels ("Incorrect", "Correct"; "Not grounded", "Grounded"), and "not" before
  the upper label ("Not correct") for the lower point;
- on a 0/1 scale, yes and true for 1, no and false for 0.

A reply states a point with those words in three ways, each a :class:`Said` statement:

- **opening** with one, followed by a stop (``Correct.``, ``No, ...``, ``Incorrect: it says Lyon``;
  never ``Correct: 0`` or ``Correct: no``, nor ``Yes and no``), a :data:`LEADING` statement; also
  after a list's number (``1. Incorrect``), and then that number is not read as a grade;
- **a sentence** that starts with ``The candidate``, ``The response``, ``The answer`` (or the
  candidate's answer, the prediction) ``is`` and a label: ``The candidate is correct.``,
  ``So the response is not correct.`` (yes and no are not read here: "the answer is no" may be
  what the graded answer says), a :data:`PHRASE` statement;
- **"The answer is:"** with a colon, at a sentence's start, then a word above or a number of the
  scale (``The answer is: No.``, ``The answer is: 0.``), a :data:`PHRASE` statement. A number there
  that is off the scale, or that a text the grader was shown holds (the graded answer "0"), may be
  the graded answer restated, not a grade: it states nothing.

A phrase is the weakest statement: a JSON or named verdict anywhere in the reply outranks it
(:mod:`answer_eval.llm.stated_verdicts`). Any other scale has no words: its grades are numbers.

Reading a grader's reply: a score on a scale, a pairwise choice, or yes/no, with the explanation.

The prompts ask for one JSON object; models still wrap it in a code fence, put words around it,
answer plainly ("4 - the summary is good", "Yes, the candidate is correct."), or quote the answer
they grade, whose own words may hold a verdict ("Score: 5", ``{"score": 5}``). Each reader finds
every statement of a verdict (a top-level JSON object's verdict key, a named verdict such as
"Score: 4" or "Verdict: no", the verdict the reply opens with) and keeps the grader's final,
unquoted one by the rules of :mod:`answer_eval.llm.stated_verdicts`: quotes of the texts the grader
was shown (``shown``) are not verdicts, and two verdicts that conflict are no verdict. A reply
that cannot be read gives ``value=None`` and says why (``problem``): never an exception.

Bounds: a reply over :data:`MAX_REPLY_CHARS` characters, one holding a JSON object nested over
:data:`~answer_eval.llm.replies.MAX_DEPTH` levels, or one stating over :data:`MAX_VERDICTS`
verdicts is not read. Reading is linear in the reply's length, whatever it holds.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from answer_eval.llm.stated_verdicts import (
    JSON,
    LEADING,
    NAMED,
    OPENING,
    PHRASE,
    REASONING,
    Quotes,
    Read,
    Said,
    Shown,
    choice_from_text,
    decide,
    leading_choice,
    leading_score,
    leading_yes_no,
    named_choices,
    named_scores,
    named_yes_no,
    score_from_number,
    squashed,
    yes_no_from_text,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_REPLY_CHARS",
    "read_choice",
    "read_score",
    "read_yes_no",
    "refused",
    "scale_words",
    "scan_json_objects",
]

MAX_DEPTH = 32
"""The deepest nesting of objects and arrays a reply's JSON object may have."""

# One JSON token after optional whitespace. Each alternative starts with a character the others
# cannot start with, and a string consumes one character (or one escape) per step, so a token
# that does not close (a string with no closing quote) fails after one pass to the end.
_TOKEN = re.compile(
    r'[ \t\r\n]*(?:(")(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?![0-9A-Za-z_.])"
    r"|(true|false|null|NaN|-?Infinity)(?![0-9A-Za-z_])"
    r"|([{}\[\]:,]))"
)

# What the parser expects next.
_VALUE, _KEY_OR_CLOSE, _KEY, _COLON, _COMMA_OR_CLOSE, _VALUE_OR_CLOSE = range(6)


@dataclass(frozen=True)
class JsonObject:
    """One top-level JSON object: where it is in the reply, and its members in order (a key may repeat)."""

    start: int
    end: int
    pairs: tuple[tuple[str, Any], ...]


@dataclass
class JsonScan:
    """The objects found, and whether the scan met an object nested too deeply (then it stopped there)."""

    objects: list[JsonObject] = field(default_factory=list)
    too_deep: bool = False


def scan_json_objects(text: str) -> JsonScan:
    """Every top-level JSON object of ``text``, in order (see the module docstring)."""
    scan = JsonScan()
    position = text.find("{")
    while position != -1:
        end, too_deep = _object_end(text, position)
        if too_deep:
            scan.too_deep = True
            return scan
        if end > 0:
            # An object without a quotation mark has no key ("{}", "{ }"): nothing to decode.
            pairs = _pairs(text[position:end]) if text.find('"', position, end) != -1 else ()
            if pairs is not None:
                scan.objects.append(JsonObject(position, end, pairs))
            position = text.find("{", end)
        else:
            # -end is where the attempt failed: the token there may itself start an object ("{{").
            position = text.find("{", -end)
    return scan


def _pairs(source: str) -> tuple[tuple[str, Any], ...] | None:
    pairs: list[tuple[tuple[str, Any], ...]] = []

    def keep(members: list[tuple[str, Any]]) -> dict[str, Any]:
        pairs.append(tuple(members))
        return dict(members)

    try:
        # The text was checked token by token and is at most MAX_DEPTH deep: json cannot recurse far.
        json.loads(source, strict=False, object_pairs_hook=keep)
    except ValueError:
        return None
    return pairs[-1] if pairs else None


def _object_end(text: str, start: int) -> tuple[int, bool]:
    """Where the object opened at ``start`` ends (> 0), or minus where it stopped fitting; and whether too deep."""
    stack: list[str] = []
    expect = _VALUE
    position = start
    while True:
        token = _TOKEN.match(text, position)
        if token is None:
            return -_skip_space(text, position), False
        string, number, literal, mark = token.groups()
        at = token.start(1) if string else token.start(2) if number else token.start(3) if literal else token.start(4)
        if mark in ("{", "["):
            if expect not in (_VALUE, _VALUE_OR_CLOSE):
                return -at, False
            if len(stack) == MAX_DEPTH:
                return 0, True
            stack.append(mark)
            expect = _KEY_OR_CLOSE if mark == "{" else _VALUE_OR_CLOSE
        elif mark in ("}", "]"):
            closes = "{" if mark == "}" else "["
            allowed = (_KEY_OR_CLOSE, _COMMA_OR_CLOSE) if mark == "}" else (_VALUE_OR_CLOSE, _COMMA_OR_CLOSE)
            if not stack or stack[-1] != closes or expect not in allowed:
                return -at, False
            stack.pop()
            if not stack:
                return token.end(), False
            expect = _COMMA_OR_CLOSE
        elif mark == ":":
            if expect != _COLON:
                return -at, False
            expect = _VALUE
        elif mark == ",":
            if expect != _COMMA_OR_CLOSE:
                return -at, False
            expect = _KEY if stack[-1] == "{" else _VALUE
        elif string and expect in (_KEY_OR_CLOSE, _KEY):
            expect = _COLON
        elif expect in (_VALUE, _VALUE_OR_CLOSE) and stack:
            expect = _COMMA_OR_CLOSE
        else:
            return -at, False
        position = token.end()


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


_SPACES = re.compile(r"\s+")
_IS = re.compile(r"\sis(?:\s|:)", re.IGNORECASE)
# After a word that states a point: markdown, then a stop or the end ("Correct.", "**No**,").
_STOP = r"(?=[\s*]*(?:[.,!;)]|$))"
# An opening word may also be followed by a colon and reasons, but not by another verdict ("Correct: no").
_OPENING_STOP = r"(?=[\s*]*(?:[.,!;)]|$)|\s*:(?![\s*]*(?:[+-]?\d|(?:yes|no|true|false)\b)))"
_SUBJECT = (
    r"(?:the\s+)?(?:candidate(?:'s|\u2019s)?\s+(?:answer|response)|candidate|response|answer|prediction|submission)"
)
_LEAD_IN = (
    r"(?:(?:so|thus|therefore|hence|overall|in\s+(?:summary|conclusion)|i\s+(?:think|believe|conclude))\s*,?\s+)?"
)
_SENTENCE_ENDS = ".!?:\n"
_CLOSING = "\"')]\u201d\u2019"
_LOOK_BACK = 200
_Patterns = tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]


def _alternation(words: Iterable[str]) -> str:
    # Longest first, so "not grounded" is tried before "grounded"; spaces match any run of spaces.
    ordered = sorted(set(words), key=len, reverse=True)
    return "|".join(r"\s+".join(re.escape(part) for part in word.split()) for word in ordered)


@dataclass(frozen=True)
class ScaleWords:
    """The words that state each point of a two-point scale, and the patterns that find them in a reply."""

    values: dict[str, int]
    """Each word (case-folded, single-spaced) and the point it states."""
    labels: frozenset[str]
    """The words a sentence may state a point with (the labels and "not" before the upper one)."""

    def value_of(self, words: str) -> int | None:
        """The point ``words`` state, as a whole (``" Correct "``, ``"NO"``); ``None`` otherwise."""
        return self.values.get(squashed(words).rstrip(".!"))

    @property
    def _patterns(self) -> _Patterns:
        return _patterns(tuple(sorted(self.values)), tuple(sorted(self.labels)))

    def statements(
        self, text: str, allowed: Callable[[int], bool], before: int, shown: Shown | None = None
    ) -> Iterable[Said[int]]:
        """The opening, the sentences and the "The answer is:" statements of ``text`` (see the module).

        ``before``: where the reply's first JSON object starts (an opening ends before it). ``shown``:
        the texts the grader was shown; a number they hold is no grade after "The answer is:" (it may
        be the graded answer restated). With ``None``, no number there is read.
        """
        opening, sentence, answer = self._patterns
        found = opening.match(text)
        if found is not None and found.end() <= before:
            yield Said(found.start("word"), found.end(), LEADING, self.value_of(found.group("word")), found.group(0))
        if not _IS.search(text):  # both patterns need " is": a reply without it is not scanned position by position
            return
        for found in sentence.finditer(text):
            if _starts_sentence(text, found.start()):
                yield Said(found.start(), found.end(), PHRASE, self.value_of(found.group("word")), found.group(0))
        for found in answer.finditer(text):
            if not _starts_sentence(text, found.start()):
                continue
            if found.group("word") is not None:
                value = self.value_of(found.group("word"))
            elif shown is None or shown.holds_words(found.group("number")):
                continue
            else:
                value, _ = score_from_number(text, allowed, found.start("number"))
            if value is not None:  # another number is the graded answer's ("The answer is: 42")
                yield Said(found.start(), found.end(), PHRASE, value, found.group(0))


@cache
def _patterns(
    words: tuple[str, ...], labels: tuple[str, ...]
) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    every, phrased = _alternation(words), _alternation(labels)
    # After a list's number too ("1. Incorrect"): then the number is the list's, not a grade.
    opening = re.compile(f"^{OPENING}(?:\\d{{1,3}}[.)]\\s+)?(?P<word>{every}){_OPENING_STOP}", re.IGNORECASE)
    sentence = re.compile(rf"(?<![\w-]){_LEAD_IN}{_SUBJECT}\s+is\s+(?P<word>{phrased}){_STOP}", re.IGNORECASE)
    answer = re.compile(
        rf"(?<![\w-])(?:(?:the|my)\s+)?(?:final\s+)?answer\s+is\s*:[\s*]*"
        rf"(?:(?P<word>{every}){_STOP}|(?P<number>[+-]?\d))",
        re.IGNORECASE,
    )
    return opening, sentence, answer


def _starts_sentence(text: str, at: int) -> bool:
    """Whether ``at`` starts the reply, a line or a sentence (after markdown and spaces)."""
    position, stop = at, max(0, at - _LOOK_BACK)
    while position > stop and text[position - 1] in " \t*#>_":
        position -= 1
    while position > stop and text[position - 1] in _CLOSING:  # 'It said "no." The ...'
        position -= 1
    return position == 0 or text[position - 1] in _SENTENCE_ENDS


def scale_words(scale: Sequence[tuple[int, str]]) -> ScaleWords | None:
    """The words of a two-point ``scale`` (its (value, label) pairs, lowest first); ``None`` for any other scale.

    Also ``None`` when the two labels read the same, or name no words.
    """
    return _scale_words(tuple((int(value), str(label)) for value, label in scale))


@cache
def _scale_words(scale: tuple[tuple[int, str], ...]) -> ScaleWords | None:
    if len(scale) != 2:
        return None
    (low, low_label), (high, high_label) = scale
    lower, upper = squashed(low_label), squashed(high_label)
    if not lower or not upper or lower == upper:
        return None
    return _words(low, lower, high, upper)


def _words(low: int, lower: str, high: int, upper: str) -> ScaleWords:
    labels = {lower: low, upper: high}
    labels.setdefault(f"not {upper}", low)
    values = dict(labels)
    if (low, high) == (0, 1):
        for word, value in (("yes", 1), ("true", 1), ("no", 0), ("false", 0)):
            values.setdefault(word, value)
    return ScaleWords(values, frozenset(labels))


CORRECT_WORDS = _words(0, "incorrect", 1, "correct")
"""The words of a 0/1 scale of correctness: what a yes/no reader reads a phrased verdict with."""

T = TypeVar("T")

MAX_REPLY_CHARS = 200_000
"""The longest reply read, in characters (about 50,000 tokens: far beyond any grade); a longer one is not read."""

MAX_VERDICTS = 100
"""The most statements of a verdict a reply may hold; a reply with more is not read."""

# One run of non-word characters at a time ("\\W*" twice in a row backtracked in quadratic time).
_REFUSAL = re.compile(
    r"^\W*(?:as an ai[^,.]*[,.]\s*)?(?:(?:i'm sorry|i am sorry|sorry)\W*)?(?:but\s+)?i\s+(?:can(?:no|')t|cannot|"
    r"won't|will not|am unable to|am not able to)\s+(?:help|assist|comply|grade|evaluate|provide|do that)(?!\s+but\b)",
    re.IGNORECASE,
)
_SURROGATES = re.compile("[\ud800-\udfff]")

Statements = Callable[[str, int], Iterable[Said[T]]]
"""Finds statements in the reply with its JSON objects blanked out, given where its first object starts."""


def _blanked(text: str, objects: Sequence[JsonObject]) -> str:
    # The JSON objects as spaces: named verdicts are looked for in the words around them only
    # (an explanation string saying "a score of 4" is the grader's reasoning, read as JSON).
    parts, position = [], 0
    for found in objects:
        parts += [text[position : found.start], " " * (found.end - found.start)]
        position = found.end
    parts.append(text[position:])
    return "".join(parts)


def _json_statements(
    objects: Sequence[JsonObject], keys: Sequence[str], value_of: Callable[[Any], tuple[T | None, str | None]]
) -> Iterable[Said[T]]:
    for found in objects:
        names = {name for name, _ in found.pairs}
        # The reader's first key the object holds is its verdict (every time it is given: twice conflicts).
        key = next((name for name in keys if name in names), None)
        if key is None:
            continue
        explanation = _explanation(found.pairs)
        for name, raw in found.pairs:
            if name == key:
                value, why = value_of(raw)
                words = f'"{name}": {raw!r}' if not isinstance(raw, str) else f'"{name}": "{raw}"'
                yield Said(found.start, found.end, JSON, value, words, why=why, explanation=explanation)


def _explanation(pairs: Sequence[tuple[str, Any]]) -> str | None:
    for key in ("explanation", "reasoning", "reason", "rationale"):
        for name, value in pairs:
            if name == key and isinstance(value, str) and value.strip():
                return _SURROGATES.sub("\ufffd", value.strip())  # "\\ud800" decodes to a lone surrogate
    return None


def _quoted(said: Said[Any], text: str, quotes: Quotes, shown: Shown, lines: Sequence[tuple[int, int]]) -> str | None:
    """Why ``said`` is not the grader's own verdict (a quote, a copy of the prompt), or ``None`` when it is."""
    if quotes.holds(said.start, said.end):
        return "a quote"
    if not shown:
        return None
    if said.kind == JSON:
        source = text[said.start : said.end]
        if shown.holds_object(source):
            return "a quote"
        return "a copy of the prompt" if shown.prompt_holds_object(source) else None
    if said.kind in (NAMED, PHRASE) and shown.holds_words(text[said.start : said.end]):
        return "a quote"
    if said.kind == LEADING:
        # The opening: a first line of a few words that the graded text holds word for word.
        line = text[: min(len(text), 500)].lstrip().split("\n", 1)[0].strip()
        if len(line.split()) >= 3 and shown.holds_words(line):
            return "a quote"
    return "a copy of the prompt" if _copies_the_prompt(said, text, lines, shown) else None


def _lines(text: str) -> list[tuple[int, int]]:
    """Where each line of ``text`` that is not blank starts and ends."""
    spans, offset = [], 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((offset, offset + len(line)))
        offset += len(line) + 1
    return spans


def _copies_the_prompt(said: Said[Any], text: str, lines: Sequence[tuple[int, int]], shown: Shown) -> bool:
    # The statement's line with the non-blank line before it, or after it, both from the prompt's own
    # words: a parrot copies the prompt by the paragraph, a grader may repeat one line (a rating it picks).
    first = bisect.bisect_right(lines, (said.start, len(text))) - 1
    last = max(first, bisect.bisect_right(lines, (said.end - 1, len(text))) - 1)
    if first < 0:
        return False
    line = text[lines[first][0] : lines[last][1]]
    pairs = []
    if first > 0:
        pairs.append([text[slice(*lines[first - 1])], line])
    if last + 1 < len(lines):
        pairs.append([line, text[slice(*lines[last + 1])]])
    return any(shown.holds_lines(pair) for pair in pairs)


def _copied_example(own: Sequence[Said[Any]], blanked: str, said: Sequence[Said[Any]], shown: Shown) -> int | None:
    """The graded example whose explanation the reply gives as its own (in its JSON, or as its words), if any."""
    for one in own:
        number = shown.example_explained(one.explanation) if one.explanation else None
        if number is not None:
            return number
    # The words around the verdicts: "Score: 2. <the example's explanation>" copies it as much.
    parts, position = [], 0
    for one in sorted(said, key=lambda one: one.start):
        if one.kind != JSON and one.start >= position:
            parts.append(blanked[position : one.start])
            position = one.end
    parts.append(blanked[position:])
    return shown.example_explained(" ".join(parts))


def _read(
    text: str,
    keys: Sequence[str],
    value_of: Callable[[Any], tuple[T | None, str | None]],
    statements: Statements[T],
    shown: Sequence[str | None] | Shown,
    leading_yields: bool,
) -> Read[T]:
    if len(text) > MAX_REPLY_CHARS:
        opening = _SURROGATES.sub("\ufffd", text[:1_000].strip()) + "..."
        return Read(None, opening, f"the reply is {len(text):,} characters long, over {MAX_REPLY_CHARS:,}")
    text = _SURROGATES.sub("\ufffd", text)  # a lone surrogate cannot be written as UTF-8
    reasoning = REASONING.match(text)
    body = text[reasoning.end() :] if reasoning else text  # a reasoning model's thoughts are drafts
    scan = scan_json_objects(body)
    if scan.too_deep:
        return Read(None, text.strip(), f"the reply holds a JSON object nested over {MAX_DEPTH} levels")
    blanked = _blanked(body, scan.objects)
    first_object = scan.objects[0].start if scan.objects else len(body)
    said = [*_json_statements(scan.objects, keys, value_of), *statements(blanked, first_object)]
    if len(said) > MAX_VERDICTS:
        return Read(None, text.strip(), f"the reply states over {MAX_VERDICTS} verdicts")
    if not said:
        return Read(None, body.strip(), "no verdict found")
    said.sort(key=lambda one: one.start)
    quotes, seen = Quotes(body, blanked), shown if isinstance(shown, Shown) else Shown(shown)
    lines = _lines(body) if seen else []
    why = [_quoted(one, body, quotes, seen, lines) for one in said]
    own = [one for one, reason in zip(said, why, strict=True) if reason is None]
    if not own:
        return Read(None, body.strip(), f"every verdict in it is {why[0]} ({said[0].words!r})")
    example = _copied_example(own, blanked, said, seen)
    if example is not None:
        return Read(None, body.strip(), f"it gives graded example {example}'s explanation, not a grade of its own")
    return decide(own, body, leading_yields)


def read_score(
    text: str,
    allowed: Callable[[int], bool],
    shown: Sequence[str | None] | Shown = (),
    words: ScaleWords | None = None,
) -> Read[int]:
    """A score on the scale ``allowed`` (JSON ``score``, ``rating`` or ``grade``; "Score: 4"; the opening number).

    ``shown``: the untrusted texts the grader was shown (the graded answer...), whose verdicts it may quote.
    ``N/M`` and "N out of M" are read when M is the top of the scale; a range ("3-4") or a fraction is not read.
    ``words``: a two-point scale's words (:func:`scale_words`), to read "Correct.", "The candidate is
    correct." or "The answer is: No." too.
    """
    seen = shown if isinstance(shown, Shown) else Shown(shown)

    def value_of(raw: Any) -> tuple[int | None, str | None]:
        said = None if words is None or not isinstance(raw, str) else words.value_of(raw)
        if said is not None:
            return said, None
        if isinstance(raw, str):
            return score_from_number(raw, allowed)
        if isinstance(raw, float) and raw.is_integer():
            raw = int(raw)
        if isinstance(raw, bool) or not isinstance(raw, int):
            return None, f"{raw!r} is not a score"
        if allowed(raw):
            return raw, None
        shown = str(raw)  # a JSON integer of up to 4,300 digits: shown as the reply's words show one, cut
        return None, f"{shown[:20]}... is not on the scale" if len(shown) > 20 else f"{shown} is not on the scale"

    def statements(blanked: str, first_object: int) -> Iterable[Said[int]]:
        yield from named_scores(blanked, allowed)
        worded = [] if words is None else list(words.statements(blanked, allowed, first_object, seen))
        yield from worded
        if not any(said.kind == LEADING for said in worded):  # "1. Incorrect": the 1 numbers a list
            yield from leading_score(blanked, allowed, first_object)

    return _read(text, ("score", "rating", "grade"), value_of, statements, seen, leading_yields=True)


def read_choice(text: str, shown: Sequence[str | None] | Shown = ()) -> Read[str]:
    """``"A"``, ``"B"`` or ``"TIE"`` (JSON ``choice``, ``winner`` or ``better``; "Winner: B"; or the opening)."""

    def value_of(raw: Any) -> tuple[str | None, str | None]:
        value = choice_from_text(raw) if isinstance(raw, str) else None
        return (value, None) if value is not None else (None, f"{raw!r} is not A, B or TIE")

    def statements(blanked: str, first_object: int) -> Iterable[Said[str]]:
        yield from named_choices(blanked)
        yield from leading_choice(blanked, first_object)

    return _read(text, ("choice", "winner", "better"), value_of, statements, shown, leading_yields=False)


def read_yes_no(text: str, shown: Sequence[str | None] | Shown = ()) -> Read[bool]:
    """Whether the grader said correct (JSON ``correct``, ``verdict`` or ``answer``; "Verdict: no"; yes or no first).

    A sentence such as "The candidate is correct." or "The answer is: No." is read too, when nothing
    names a verdict.
    """

    def value_of(raw: Any) -> tuple[bool | None, str | None]:
        if isinstance(raw, bool):
            return raw, None
        value, why = yes_no_from_text(raw) if isinstance(raw, str) else (None, None)
        return (value, None) if value is not None else (None, why or f"{raw!r} is not yes or no")

    def statements(blanked: str, first_object: int) -> Iterable[Said[bool]]:
        yield from named_yes_no(blanked)
        yield from leading_yes_no(blanked, first_object)
        # No number: "The answer is: 0" may restate a graded answer (a yes/no prompt asks for no number).
        for said in CORRECT_WORDS.statements(blanked, lambda value: value in (0, 1), first_object, None):
            if said.kind == PHRASE:  # the openings are leading_yes_no's
                yield Said(said.start, said.end, PHRASE, bool(said.value), said.words)

    return _read(text, ("correct", "verdict", "answer"), value_of, statements, shown, leading_yields=False)


def refused(text: str) -> bool:
    """Whether an unreadable reply is the grader declining ("I'm sorry, but I can't help with that")."""
    return _REFUSAL.match(text[:1_000].replace("\u2019", "'")) is not None
