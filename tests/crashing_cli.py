"""The command line with two more file commands whose evaluator fails on purpose mid-run.

What a run keeps when something no one foresaw goes wrong (a bug, a reply that crashes a parser)
is the engine's to decide, whatever the exception: these evaluators raise ``RuntimeError`` on the
batch holding the prediction named by ``$ANSWER_EVAL_TEST_CRASH_ON`` (and behave as the real
ones otherwise, so that the same command without the variable resumes the run). Within
:func:`registered`, the real command line has the two commands in its registry.

- ``crashing-rubric``: the LLM rubric grader; the batch is graded (the server paid) before the
  failure, as when a reply crashes something after it arrived.
- ``crashing-score``: the answer-contains rules (free); the failure comes before scoring.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from answer_eval.evaluators.base import Columns
from answer_eval.evaluators.contains import AnswerContainsCore
from answer_eval.evaluators.rubric_grading import RubricCore

CRASH_ON = "ANSWER_EVAL_TEST_CRASH_ON"
"""The environment variable naming the prediction whose batch fails."""


def _crash_if_asked(inputs: Mapping[str, Sequence[Any]]) -> None:
    marker = os.environ.get(CRASH_ON)
    if marker and marker in list(inputs.get("prediction", ())):
        raise RuntimeError(f"a failure on purpose on the batch holding {marker!r}")


class CrashingRubric(RubricCore):
    """The rubric grader, failing after grading the batch that holds ``$ANSWER_EVAL_TEST_CRASH_ON``."""

    name = "crashing-rubric"

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Grade the batch (the server answers every request), then fail if asked."""
        columns = super().score(inputs)
        _crash_if_asked(inputs)
        return columns


class CrashingContains(AnswerContainsCore):
    """The answer-contains rules, failing on the batch that holds ``$ANSWER_EVAL_TEST_CRASH_ON``."""

    name = "crashing-score"

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Fail if asked, else score as ``answer-eval score``."""
        _crash_if_asked(inputs)
        return super().score(inputs)


@contextlib.contextmanager
def registered() -> Iterator[None]:
    """The two commands in the evaluator registry within the block (the command line builds its parser per run)."""
    from answer_eval.evaluators.registry import EVALUATORS, Entry

    names = []
    for name, target, component, options in (
        ("crashing-rubric", "CrashingRubric", "RubricEvaluator", False),
        ("crashing-score", "CrashingContains", "AnswerContainsEvaluator", True),
    ):
        EVALUATORS[name] = Entry(
            name, f"tests.crashing_cli:{target}", name, component, "fails on purpose", "", (), options
        )
        names.append(name)
    try:
        yield
    finally:
        for name in names:
            del EVALUATORS[name]
