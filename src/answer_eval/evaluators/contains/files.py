"""A JSONL file scored with the answer-contains rules, from Python: what ``answer-eval score`` runs."""

from __future__ import annotations

import os
from typing import Any

from answer_eval.engine.columns import AddedColumns
from answer_eval.evaluators.contains.evaluator import AnswerContainsCore, ContainsOptions
from answer_eval.evaluators.contains.scorer import AnswerContainsScorer
from answer_eval.evaluators.rows import default_fields, run_file
from answer_eval.evaluators.summaries import FileSummary

__all__ = ["SCORE_COLUMNS", "score_file"]

SCORE_COLUMNS = ("correct", "failure_kind", "outcome")
"""The columns :func:`score_file` adds to every row."""


def score_file(
    path: str | os.PathLike[str],
    scorer: AnswerContainsScorer,
    *,
    prediction_field: str = "prediction",
    answers_field: str = "answers",
    output: str | os.PathLike[str] | None = None,
    columns: AddedColumns | None = None,
    **run: Any,
) -> FileSummary:
    """Score every row of a JSONL file with the answer-contains rules (what ``answer-eval score`` runs).

    The output (``.jsonl`` or ``.csv``), when asked for, holds every input row in order with
    ``correct``, ``failure_kind`` and ``outcome`` added (default ``columns``: those names, a row
    that already has one refused); ``run`` (``skip_invalid``, ``progress``, ``jobs``, ``resume``,
    ``max_line_bytes``, ``checkpoint_seconds``) goes to :func:`~answer_eval.engine.runner.process_jsonl`,
    which says how rows stream, are written atomically, run in workers, stop and resume.
    """
    options = ContainsOptions(scorer.not_found_label, tuple(scorer.detector.extra_phrases))
    evaluator = AnswerContainsCore(options)
    fields = default_fields(evaluator, {"prediction": prediction_field, "answers": answers_field})
    summary = run_file(path, evaluator, fields, output=output, columns=columns, **run)
    assert isinstance(summary, FileSummary)
    return summary
