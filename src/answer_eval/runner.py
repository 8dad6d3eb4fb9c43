"""Scoring a JSONL file of predictions, streaming, with atomic output."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from answer_eval.files import AtomicWriter, InputError, check_output_path, iter_jsonl, write_csv_from_jsonl
from answer_eval.labels import acceptable_answers
from answer_eval.reading import read_output
from answer_eval.stats import wilson_interval
from answer_eval.verdicts import AnswerContainsScorer, count_failures

__all__ = ["FileSummary", "score_file"]

OUTPUT_SUFFIXES = (".jsonl", ".ndjson", ".csv")


@dataclass
class FileSummary:
    """What scoring a file found.

    :param path: The input file.
    :param items: Rows scored.
    :param correct: Rows whose answer is right.
    :param failure_counts: Failure kind to count, every standard kind present.
    :param invalid_lines: Lines skipped as invalid (only with ``skip_invalid``).
    :param output: The results file written, if any.
    """

    path: str
    items: int = 0
    correct: int = 0
    failure_counts: dict[str, int] = field(default_factory=dict)
    invalid_lines: int = 0
    output: str | None = None

    @property
    def score(self) -> float:
        """The share of right answers."""
        return self.correct / self.items

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Wilson confidence interval of the score."""
        return wilson_interval(self.correct, self.items, confidence)

    def to_json(self) -> dict[str, Any]:
        """The summary as one JSON-ready mapping."""
        low, high = self.interval()
        return {
            "path": self.path,
            "items": self.items,
            "correct": self.correct,
            "score": self.score,
            "interval": [low, high],
            "confidence": 0.95,
            "failure_counts": self.failure_counts,
            "invalid_lines": self.invalid_lines,
            "output": self.output,
        }


def _progress(path: Path, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm  # imported only for a terminal: it is slow to import

    return tqdm(unit=" rows", desc=path.name, file=sys.stderr, leave=False, mininterval=0.5)


def score_file(
    path: str | os.PathLike[str],
    scorer: AnswerContainsScorer,
    *,
    prediction_field: str = "prediction",
    answers_field: str = "answers",
    output: str | os.PathLike[str] | None = None,
    skip_invalid: bool = False,
    progress: bool = False,
) -> FileSummary:
    """Score every row of a JSONL file; optionally write each row back with its verdict.

    Rows are read one at a time, so memory does not grow with the file. The output (``.jsonl`` or
    ``.csv``) holds every input row, in order, with ``correct``, ``failure_kind`` and ``outcome``
    added; it is written to a temporary file and renamed into place only when the whole file was
    scored, so a failed run leaves no partial output.

    :raises InputError: For a missing file, a bad output path, or (without ``skip_invalid``) the
        first malformed line, naming its line number.
    """
    source = Path(path)
    if not source.is_file():
        raise InputError(f"input file {source} does not exist" if not source.exists() else f"{source} is not a file")
    target = Path(output) if output is not None else None
    if target is not None:
        if target.suffix.lower() not in OUTPUT_SUFFIXES:
            raise InputError(f"output {target} must end in .jsonl or .csv")
        check_output_path(target, [source])

    summary = FileSummary(path=str(source), output=None if target is None else str(target))
    counts = count_failures(())
    as_csv = target is not None and target.suffix.lower() == ".csv"
    writer = AtomicWriter(target) if target is not None and not as_csv else None
    spool = AtomicWriter(target.with_name(target.name + ".rows")) if as_csv and target is not None else None
    fields: dict[str, None] = {}
    bar = _progress(source, progress)
    try:
        for number, row in iter_jsonl(source):
            if bar is not None:
                bar.update()
            try:
                if isinstance(row, InputError):
                    raise row
                verdict_row = _score_row(row, number, source, scorer, prediction_field, answers_field)
            except InputError:
                if not skip_invalid:
                    raise
                summary.invalid_lines += 1
                continue
            summary.items += 1
            summary.correct += verdict_row["correct"]
            kind = verdict_row["failure_kind"]
            if kind is not None:
                counts[kind] = counts.get(kind, 0) + 1
            out = writer or spool
            if out is not None:
                out.write(json.dumps(verdict_row, ensure_ascii=False) + "\n")
                if spool is not None:
                    fields.update(dict.fromkeys(verdict_row))
        if summary.items == 0:
            raise InputError("no rows to score", source)
        if writer is not None:
            writer.commit()
        if spool is not None and target is not None:
            spool.handle.close()
            with AtomicWriter(target, newline="") as csv_out:
                write_csv_from_jsonl(spool.temp_path, list(fields), csv_out)
                csv_out.commit()
    finally:
        if bar is not None:
            bar.close()
        for pending in (writer, spool):
            if pending is not None:
                pending.discard()
    summary.failure_counts = counts
    return summary


def _score_row(
    row: dict[str, Any],
    number: int,
    source: Path,
    scorer: AnswerContainsScorer,
    prediction_field: str,
    answers_field: str,
) -> dict[str, Any]:
    for name in (answers_field, prediction_field):
        if name not in row:
            raise InputError(f"missing field {name!r} (fields: {', '.join(map(repr, row)) or 'none'})", source, number)
    try:
        labels = acceptable_answers(row[answers_field])
    except (TypeError, ValueError) as exc:
        raise InputError(f"field {answers_field!r}: {exc}", source, number) from None
    verdict = scorer.score_read(read_output(row[prediction_field]), labels)
    return {**row, "correct": verdict.correct, "failure_kind": verdict.failure_kind, "outcome": verdict.outcome}
