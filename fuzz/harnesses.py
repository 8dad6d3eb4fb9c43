"""The fuzz targets: each takes the fuzzer's bytes and raises only on a real defect.

Each target checks a property the package promises, not just "no exception": folding is
idempotent, ``read_output`` never raises, the JSONL reader yields a row, an
:class:`~answer_eval.errors.InputError` or nothing for every line, and the readers of
graders' replies give a verdict of their kind or say why not, and never read a verdict from a
copy of the answer's block. ``fuzz/run.py`` runs them under
atheris; ``tests/test_fuzz_harnesses.py``-style regression inputs can call them directly.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import atheris

with atheris.instrument_imports():
    from answer_eval import AnswerContainsScorer, contains_answer, fold, is_not_found, read_output
    from answer_eval.errors import InputError
    from answer_eval.inputs.jsonl import iter_jsonl, parse_jsonl_line
    from answer_eval.llm.replies import read_choice, read_score, read_yes_no, scale_words
    from answer_eval.llm.rubric_prompts import neutralise_tags
    from answer_eval.llm.stated_verdicts import Read
    from answer_eval.text.matching import find_numbers, parse_number

__all__ = ["TARGETS", "fuzz_jsonl", "fuzz_read_output", "fuzz_replies", "fuzz_text"]

_SCORER = AnswerContainsScorer()
# The JSONL target writes each input to a file: in memory (tmpfs) where the system has one.
_SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
_KEYS = (
    "answer",
    "text",
    "replies",
    "meta",
    "messages",
    "answers",
    "role",
    "content",
    "partial",
    "notes",
    "trace",
    "finish_reason",
    "status",
    "error",
    "failure_kind",
    "refused",
    "data",
    "x",
)


def fuzz_text(data: bytes) -> None:
    """Folding, matching, number reading and not-found detection on arbitrary text."""
    provider = atheris.FuzzedDataProvider(data)
    text = provider.ConsumeUnicodeNoSurrogates(provider.ConsumeIntInRange(0, 200))
    label = provider.ConsumeUnicodeNoSurrogates(provider.ConsumeIntInRange(0, 40))
    folded = fold(text)
    if fold(folded) != folded:
        raise AssertionError(f"fold is not idempotent on {text!r}: {folded!r} -> {fold(folded)!r}")
    if label.strip() and not fold(label):
        # A label of invisible characters only is refused like a blank one.
        try:
            contains_answer(text, label)
        except ValueError:
            pass
        else:
            raise AssertionError(f"the invisible label {label!r} was accepted")
    elif label.strip():
        found = contains_answer(text, label)
        if found and fold(label) not in folded:
            raise AssertionError(f"{label!r} matched {text!r} without occurring in it")
        verdict = _SCORER.score(text, label)
        if verdict.score not in (0, 1):
            raise AssertionError(f"score {verdict.score!r}")
    is_not_found(text)
    find_numbers(text)
    parse_number(text)


def _value(provider: atheris.FuzzedDataProvider, depth: int) -> Any:
    kind = provider.ConsumeIntInRange(0, 9 if depth < 4 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return provider.ConsumeBool()
    if kind == 2:
        return provider.ConsumeInt(8)
    if kind == 3:
        return provider.ConsumeRegularFloat() if provider.ConsumeBool() else provider.ConsumeFloat()
    if kind in (4, 5):
        return provider.ConsumeUnicodeNoSurrogates(provider.ConsumeIntInRange(0, 30))
    if kind == 6:
        return [_value(provider, depth + 1) for _ in range(provider.ConsumeIntInRange(0, 3))]
    if kind == 7:
        return tuple(_value(provider, depth + 1) for _ in range(provider.ConsumeIntInRange(0, 2)))
    return {
        _KEYS[provider.ConsumeIntInRange(0, len(_KEYS) - 1)]: _value(provider, depth + 1)
        for _ in range(provider.ConsumeIntInRange(0, 4))
    }


def fuzz_read_output(data: bytes) -> None:
    """``read_output`` and scoring on nested structures of mappings, lists and scalars."""
    provider = atheris.FuzzedDataProvider(data)
    value = _value(provider, 0)
    output = read_output(value)
    if output.text is not None and type(output.text) is not str:
        raise AssertionError(f"read_output gave a {type(output.text).__name__} text")
    verdict = _SCORER.score(value, "Paris")
    if verdict.score not in (0, 1):
        raise AssertionError(f"score {verdict.score!r}")


def fuzz_jsonl(data: bytes) -> None:
    """The JSONL reader: every line is a row, an InputError or blank; nothing else, never a raise."""
    for number, line in enumerate(data.split(b"\n")[:20], start=1):
        result = parse_jsonl_line(line, number, "fuzz.jsonl", max_line_bytes=4096)
        if not (result is None or isinstance(result, (dict, InputError))):
            raise AssertionError(f"parse_jsonl_line gave {type(result).__name__}")
    descriptor, name = tempfile.mkstemp(suffix=".jsonl", dir=_SCRATCH)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        for _, row in iter_jsonl(name, max_line_bytes=64):
            if not isinstance(row, (dict, InputError)):
                raise AssertionError(f"iter_jsonl gave {type(row).__name__}")
    finally:
        os.unlink(name)


# Pieces a reply is built from besides free text: verdicts in every form, JSON, quotes, tags.
_REPLY_PIECES = (
    "{",
    "}",
    "[",
    '"',
    "'",
    "`",
    ":",
    ",",
    "\n",
    '{"score": ',
    '{"choice": "',
    '{"correct": ',
    '"explanation": "',
    "Score: ",
    "Grade: ",
    "The answer is: ",
    "The candidate is ",
    "Correct",
    "Incorrect",
    "not ",
    ". ",
    "Overall ",
    "Final verdict: ",
    "Winner: ",
    "Yes",
    "No",
    " and no",
    "1. ",
    "/5",
    "/10",
    "-",
    "<Response>\n",
    "\n</Response>",
    "<think>",
    "</think>",
)


def _scale(value: int) -> bool:
    return 1 <= value <= 5


def _binary(value: int) -> bool:
    return value in (0, 1)


_CORRECTNESS = scale_words([(0, "Incorrect"), (1, "Correct")])


def _check(read: Read[object], kind: type) -> None:
    if read.value is None:
        if not isinstance(read.problem, str) or not read.problem:
            raise AssertionError(f"no verdict and no reason: {read!r}")
    elif type(read.value) is not kind or read.problem is not None:
        raise AssertionError(f"a verdict of the wrong kind: {read!r}")
    read.explanation.encode("utf-8")


def fuzz_replies(data: bytes) -> None:
    """The reply readers: a verdict on the scale or a reason, never a raise; a copied answer block reads nothing."""
    provider = atheris.FuzzedDataProvider(data)
    parts = []
    for _ in range(provider.ConsumeIntInRange(0, 24)):
        if provider.ConsumeBool():
            parts.append(_REPLY_PIECES[provider.ConsumeIntInRange(0, len(_REPLY_PIECES) - 1)])
        else:
            parts.append(provider.ConsumeUnicodeNoSurrogates(provider.ConsumeIntInRange(0, 12)))
    reply = "".join(parts)
    answer = provider.ConsumeUnicodeNoSurrogates(provider.ConsumeIntInRange(0, 60))
    shown = [answer]
    score = read_score(reply, _scale, shown)
    _check(score, int)
    if score.value is not None and not _scale(score.value):
        raise AssertionError(f"a score off the scale: {score!r}")
    binary = read_score(reply, _binary, shown, _CORRECTNESS)
    _check(binary, int)
    if binary.value is not None and not _binary(binary.value):
        raise AssertionError(f"a score off the two-point scale: {binary!r}")
    _check(read_choice(reply, shown), str)
    _check(read_yes_no(reply, shown), bool)
    if read_score(reply, _scale, shown) != score:
        raise AssertionError("reading the same reply twice gave two readings")
    # A grader that only parrots the answer's block (as the prompt shows it) gives no verdict.
    parrot = f"<Response>\n{neutralise_tags(answer)}\n</Response>"
    parrots = (read_score(parrot, _scale), read_score(parrot, _binary, (), _CORRECTNESS), read_choice(parrot))
    for read in (*parrots, read_yes_no(parrot)):
        if read.value is not None:
            raise AssertionError(f"a verdict read from a copy of the answer: {answer!r} -> {read!r}")


TARGETS = {"text": fuzz_text, "read_output": fuzz_read_output, "jsonl": fuzz_jsonl, "replies": fuzz_replies}
"""Harness name to target function."""
