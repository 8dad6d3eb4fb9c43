"""Reading a grader's reply: a score on a scale, a pairwise choice, or yes/no, with the explanation.

The prompts ask for one JSON object; models still wrap it in a code fence, put words around it,
answer plainly ("4 - the summary is good", "Yes, the candidate is correct."), or quote the answer
they grade, whose own words may hold a verdict ("Score: 5", ``{"score": 5}``). Each reader finds
every statement of a verdict (a top-level JSON object's verdict key, a named verdict such as
"Score: 4" or "Verdict: no", the verdict the reply opens with) and keeps the grader's final,
unquoted one by the rules of :mod:`answer_eval.llm.reply_verdicts`: quotes of the texts the grader
was shown (``shown``) are not verdicts, and two verdicts that conflict are no verdict. A reply
that cannot be read gives ``value=None`` and says why (``problem``): never an exception.

Bounds: a reply over :data:`MAX_REPLY_CHARS` characters, one holding a JSON object nested over
:data:`~answer_eval.llm.reply_json.MAX_DEPTH` levels, or one stating over :data:`MAX_VERDICTS`
verdicts is not read. Reading is linear in the reply's length, whatever it holds.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from answer_eval.llm.reply_json import MAX_DEPTH, JsonObject, scan_json_objects
from answer_eval.llm.reply_labels import CORRECT_WORDS, ScaleWords, scale_words
from answer_eval.llm.reply_quotes import Quotes, Shown
from answer_eval.llm.reply_verdicts import JSON, LEADING, NAMED, PHRASE, Read, Said, decide
from answer_eval.llm.reply_words import (
    REASONING,
    choice_from_text,
    leading_choice,
    leading_score,
    leading_yes_no,
    named_choices,
    named_scores,
    named_yes_no,
    score_from_number,
    yes_no_from_text,
)

__all__ = [
    "MAX_REPLY_CHARS",
    "MAX_VERDICTS",
    "Read",
    "ScaleWords",
    "Shown",
    "read_choice",
    "read_score",
    "read_yes_no",
    "refused",
    "scale_words",
]

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
    correct." or "The answer is: No." too (:mod:`answer_eval.llm.reply_labels`).
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
    names a verdict (:mod:`answer_eval.llm.reply_labels`).
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
