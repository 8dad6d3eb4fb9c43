"""Every regular expression of ``answer_eval`` runs in linear time on inputs built to make it backtrack.

Each module-level pattern (found by importing the modules, so a new one is covered without editing
this file), the per-label number pattern of ``matching`` and the not-found detector's pattern are
run, the way their module runs them, on texts of n and 10n characters made of adversarial pieces:
long runs of digits, separators, spaces, brackets, cue words, half-open ``<answer>`` tags, each
with and without a character that makes the match fail at the end. Linear growth takes about 10
times as long on 10n; quadratic backtracking takes 100 times. The test allows 30 times (plus a
floor for timer noise), the best of three runs, so it is not flaky and still catches a quadratic
pattern by a wide margin (a quadratic pattern on 10,000 characters takes about a second).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

import answer_eval
from answer_eval.text.matching import _edge_pattern
from answer_eval.text.not_found import NotFoundDetector

SMALL = 1_000
LARGE = 10_000
RATIO = 30
FLOOR = 0.05  # seconds: under this, timer noise dominates

# How each module runs its pattern, when not a full scan (finditer, the strictest use): an
# anchored pattern is only ever tried at one position, so only that use is measured.
USES: dict[str, str] = {
    "answer_eval.evaluators.typed_rules._WHOLE_LETTER": "fullmatch",
    "answer_eval.evaluators.typed_rules._LIST_SEPARATOR": "match",
    "answer_eval.evaluators.typed_rules._LINE_PREFIX": "fullmatch",
    "answer_eval.evaluators.typed_rules._NEXT_WORD": "match",
    "answer_eval.evaluators.typed_rules._LEADING_CUE": "match",
    "answer_eval.evaluators.typed_rules._LEADING_MARKER": "match",
    "answer_eval.evaluators.typed_rules._OPTION_WORD_MARKER": "match",
    "answer_eval.evaluators.typed_rules._TRAILING_REVERSED": "match",
    "answer_eval.text.lexical_tokens._NUMBER_TOKEN": "fullmatch",
    "answer_eval.text.answer_despite_absence._MARKER": "match",
    "answer_eval.text.answer_despite_absence._CONCESSION": "match",
    "answer_eval.text.answer_despite_absence._ELABORATION": "match",
    "answer_eval.text.answer_despite_absence._COPULA": "match",
    "answer_eval.evaluators.text_metrics._ROUGE_TYPE": "fullmatch",
    "answer_eval.llm.replies._TOKEN": "match",
    "answer_eval.llm.stated_verdicts._NEXT_NUMBER": "match",
    "answer_eval.llm.stated_verdicts._TAIL": "match",
    "answer_eval.inputs.converted_rows._ITEM": "match",
}

PIECES = [
    "1",
    "12",
    "1,",
    "1 ",
    "1.",
    "1,000 ",
    "1 000 ",
    "-1",
    ".1",
    "1-",
    "1/",
    "2012-1-",
    "1/1/",
    "\\u12",
    "1st ",
    "1 to ",
    "1 and ",
    "a",
    "ab ",
    "A",
    "B.",
    "(B) ",
    "(",
    "[ ",
    " (",
    "option ",
    "option b ",
    "answer is ",
    "the answer is ",
    "answer: ",
    "choice ",
    "letter ",
    "or ",
    "no",
    "n",
    "no ",
    "cannot ",
    "n't ",
    "*",
    "**",
    "_",
    "'",
    '"',
    "\u201c",
    ".",
    "!",
    "?",
    " ",
    "\t",
    "\n",
    "<answer>",
    "</answer>",
    "<answer",
    "< answer ",
    "<",
    ">",
    "#",
    "- ",
    "rouge",
    "when ",
    "what year ",
    "x.",
    "a-",
    "b) ",
    "\u00a0",
    "\u0661",
    "not a ",  # the denied lists of answer_eval.text.denials
    "neither ",
    "a or ",
    "March 6, 2018",  # the footnote marks of answer_eval.text.folding
    "6 March 2018",
    "onM",
    "(a ",  # parenthetical remarks of golds
    "probably ",  # the hedges of answer_eval.text.hedges and the corrections of answer_eval.text.denials
    "or maybe ",
    "a/",
    "did not ",
    "didn\u2019t go ",
    "but it was actually ",
    "? no ",
    "it was ",
    "many people think ",
    "score ",  # the verdicts of graders' replies (answer_eval.llm)
    "Score: 4",
    "final ",
    "winner ",
    "{",
    '{"a": ',
    "<Response>\n",
]
ENDINGS = ["", "\u00a7", "1", "a"]


def _module_patterns() -> dict[str, re.Pattern[str]]:
    patterns: dict[str, re.Pattern[str]] = {}
    for info in pkgutil.walk_packages(answer_eval.__path__, "answer_eval."):
        spec = importlib.util.find_spec(info.name)
        source = spec.loader.get_source(info.name) if spec and spec.loader else None  # type: ignore[attr-defined]
        if not source or "re.compile" not in source:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                patterns[f"{info.name}.{name}"] = value
    return patterns


PATTERNS = _module_patterns()
PATTERNS["answer_eval.text.matching._edge_pattern('12')"] = _edge_pattern("12", True, True)
PATTERNS["answer_eval.text.matching._edge_pattern('1.5')"] = _edge_pattern("1.5", True, True)
PATTERNS["answer_eval.text.not_found.NotFoundDetector()._pattern"] = NotFoundDetector()._pattern


def _runner(pattern: re.Pattern[str], use: str) -> Callable[[str], Any]:
    if use == "finditer":
        return lambda text: sum(1 for _ in pattern.finditer(text))
    return getattr(pattern, use)  # type: ignore[no-any-return]


def _text(piece: str, ending: str, size: int) -> str:
    return (piece * (size // len(piece) + 1))[:size] + ending


def _best_time(run: Callable[[str], Any], text: str, tries: int = 3) -> float:
    best = float("inf")
    for _ in range(tries):
        started = time.perf_counter()
        run(text)
        best = min(best, time.perf_counter() - started)
    return best


def test_the_known_patterns_are_found() -> None:
    for name in (
        "answer_eval.text.folding._GROUPED",
        "answer_eval.text.matching._NUMBER",
        "answer_eval.evaluators.typed_rules._LETTER_TOKEN",
        "answer_eval.inputs.reading._SPAN",
        "answer_eval.text.not_found._MAYBE_ABSENT",
        "answer_eval.text.lexical_tokens._RANGE",
    ):
        assert name in PATTERNS
    assert set(USES) <= set(PATTERNS), "a pattern named in USES is gone: update USES"


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_is_linear_on_adversarial_input(name: str) -> None:
    run = _runner(PATTERNS[name], USES.get(name, "finditer"))
    slow = []
    for piece in PIECES:
        for ending in ENDINGS:
            text = _text(piece, ending, LARGE)
            if _best_time(run, text, tries=1) < FLOOR:
                continue  # too fast to be anything but linear
            large = _best_time(run, text)
            small = _best_time(run, _text(piece, ending, SMALL))
            if large > RATIO * small + FLOOR:
                slow.append((piece, ending, f"{small * 1000:.1f} ms -> {large * 1000:.1f} ms"))
    assert not slow, f"{name} grows faster than linearly on: {slow}"


# The two patterns of choices.py before they were made linear, and how they were used.
FORMER = [
    ("_TRAILING", re.compile(r"[\s.!?;:,*_\"'\u201c\u201d\u2018\u2019]+$"), "search", ".", "a", 1_000, 10_000),
    (
        "_WHOLE_LETTER",
        re.compile(r"[*_\s]*[(\[]?\s*([A-Za-z])\s*[)\]]?\s*[.:)]?[*_\s]*"),
        "fullmatch",
        " ",
        "x",
        100,
        400,
    ),
]


@pytest.mark.parametrize("former", FORMER, ids=[former[0] for former in FORMER])
def test_the_measure_catches_the_former_super_linear_patterns(former: tuple[Any, ...]) -> None:
    _, pattern, use, piece, ending, small_size, large_size = former
    run = _runner(pattern, use)
    prefix = "B" if use == "fullmatch" else ""
    large = _best_time(run, prefix + _text(piece, ending, large_size), tries=1)
    small = _best_time(run, prefix + _text(piece, ending, small_size))
    growth = large_size / small_size
    assert large > growth * 3 * small  # linear growth would be about `growth`
    assert large > FLOOR


def test_the_current_choices_patterns_are_linear_where_the_former_were_not() -> None:
    whole = PATTERNS["answer_eval.evaluators.typed_rules._WHOLE_LETTER"]
    for text in ("B" + " " * LARGE + "x", " " * LARGE + "x"):
        assert _best_time(whole.fullmatch, text, tries=1) < FLOOR
    trailing = PATTERNS["answer_eval.evaluators.typed_rules._TRAILING_REVERSED"]
    assert _best_time(trailing.match, ("." * LARGE + "a")[::-1], tries=1) < FLOOR
