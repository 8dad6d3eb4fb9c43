"""Streaming a JSONL file through a scorer, with atomic output: the loop every file command shares."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from answer_eval.files import AtomicWriter, InputError, check_output_path, iter_jsonl, write_csv_from_jsonl
from answer_eval.labels import acceptable_answers
from answer_eval.parallel import is_picklable, run_in_workers
from answer_eval.reading import read_output
from answer_eval.stats import wilson_interval
from answer_eval.verdicts import AnswerContainsScorer, count_failures

__all__ = ["FileSummary", "ProcessStats", "ScoreRow", "process_jsonl", "require_fields", "score_file"]

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


RowTransform = Callable[[dict[str, Any], int], dict[str, Any]]
"""Turns one input row (and its line number) into its output row; raises InputError for a bad row."""


@dataclass
class ProcessStats:
    """Counts from :func:`process_jsonl`."""

    rows: int = 0
    invalid_lines: int = 0
    counts: Counter[tuple[Any, ...]] = field(default_factory=Counter)
    """With ``count_fields``: how many rows had each combination of those fields' values, in order
    of first appearance (a missing field counts as ``None``)."""


def process_jsonl(
    path: str | os.PathLike[str],
    transform: RowTransform,
    *,
    output: str | os.PathLike[str] | None = None,
    skip_invalid: bool = False,
    progress: bool = False,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    jobs: int = 1,
    on_row_fields: Sequence[str] | None = None,
    count_fields: Sequence[str] | None = None,
) -> ProcessStats:
    """Stream a JSONL file through ``transform``, writing every output row atomically.

    The shared loop of every file command: rows are read one at a time (memory does not grow
    with the file), each is transformed, passed to ``on_row`` (to accumulate a summary) and written
    to ``output`` (``.jsonl`` or ``.csv``) in input order. The output goes to a temporary file in
    the same folder and is renamed into place only when the whole file was processed, so a failed
    or interrupted run leaves no partial file and never touches an existing one.

    With ``jobs`` above 1 the rows are transformed in that many worker processes (chunks of lines
    in input order, a few in flight at a time, so memory stays flat); the output, the counts and
    the errors (with their line numbers) are the same as with one process. ``transform`` must then
    be picklable (a module-level function, or an instance of a module-level class): each worker
    gets a copy. A transform that is not (a closure, a lambda) runs in this process, as with
    ``jobs=1``. ``on_row`` always runs in this process; ``on_row_fields`` names the fields it
    reads, so that only those travel back from the workers (``on_row`` then gets a mapping of
    just those fields, ``None`` for a missing one). For a summary of counts, ``count_fields`` is
    cheaper still: the rows are counted by those fields' values (``stats.counts``) where they are
    transformed.

    :raises InputError: For a missing input, a bad output path, a file with no rows, or (without
        ``skip_invalid``) the first malformed line, naming its line number.
    """
    source = Path(path)
    if not source.is_file():
        raise InputError(f"input file {source} does not exist" if not source.exists() else f"{source} is not a file")
    target = Path(output) if output is not None else None
    if target is not None:
        if target.suffix.lower() not in OUTPUT_SUFFIXES:
            raise InputError(f"output {target} must end in .jsonl or .csv")
        check_output_path(target, [source])

    stats = ProcessStats()
    as_csv = target is not None and target.suffix.lower() == ".csv"
    # CSV needs every column name before the first row: spool JSONL rows, then convert.
    sink = None if target is None else AtomicWriter(target.with_name(target.name + ".rows") if as_csv else target)
    fields: dict[str, None] = {}
    bar = _progress(source, progress)
    try:
        if jobs > 1 and is_picklable(transform):
            _process_in_workers(
                source,
                transform,
                jobs,
                stats,
                skip_invalid,
                on_row,
                on_row_fields,
                count_fields,
                sink,
                as_csv,
                fields,
                bar,
            )
        else:
            for number, row in iter_jsonl(source):
                if bar is not None:
                    bar.update()
                try:
                    if isinstance(row, InputError):
                        raise row
                    result = transform(row, number)
                except InputError as exc:
                    if not skip_invalid:
                        if exc.line is None:
                            raise InputError(exc.message, source, number) from None
                        raise
                    stats.invalid_lines += 1
                    continue
                stats.rows += 1
                if count_fields is not None:
                    stats.counts[tuple(result.get(name) for name in count_fields)] += 1
                if on_row is not None:
                    on_row(result)
                if sink is not None:
                    sink.write(json.dumps(result, ensure_ascii=False) + "\n")
                    if as_csv:
                        fields.update(dict.fromkeys(result))
        if stats.rows == 0:
            raise InputError("no rows to score", source)
        if sink is not None and target is not None:
            if as_csv:
                sink.handle.close()
                with AtomicWriter(target, newline="") as csv_out:
                    write_csv_from_jsonl(sink.temp_path, list(fields), csv_out)
                    csv_out.commit()
            else:
                sink.commit()
    finally:
        if bar is not None:
            bar.close()
        if sink is not None:
            sink.discard()
    return stats


def _process_in_workers(
    source: Path,
    transform: RowTransform,
    jobs: int,
    stats: ProcessStats,
    skip_invalid: bool,
    on_row: Callable[[dict[str, Any]], None] | None,
    on_row_fields: Sequence[str] | None,
    count_fields: Sequence[str] | None,
    sink: AtomicWriter | None,
    as_csv: bool,
    fields: dict[str, None],
    bar: Any,
) -> None:
    # process_jsonl's loop with the rows transformed in worker processes, chunk by chunk in order.
    for chunk in run_in_workers(
        source,
        transform,
        jobs,
        skip_invalid=skip_invalid,
        want_text=sink is not None,
        want_fields=as_csv,
        want_summaries=on_row is not None,
        summary_fields=on_row_fields,
        count_fields=count_fields,
    ):
        if bar is not None:
            bar.update(chunk.lines)
        stats.rows += chunk.rows
        stats.invalid_lines += chunk.invalid_lines
        stats.counts.update(chunk.counts)
        if on_row is not None:
            if on_row_fields is None:
                for result in chunk.summaries:
                    on_row(result)
            else:
                for values in chunk.summaries:
                    on_row(dict(zip(on_row_fields, values, strict=True)))
        if sink is not None:
            sink.write(chunk.text)
            fields.update(dict.fromkeys(chunk.fields))
        chunk.raise_error()


def score_file(
    path: str | os.PathLike[str],
    scorer: AnswerContainsScorer,
    *,
    prediction_field: str = "prediction",
    answers_field: str = "answers",
    output: str | os.PathLike[str] | None = None,
    skip_invalid: bool = False,
    progress: bool = False,
    jobs: int = 1,
) -> FileSummary:
    """Score every row of a JSONL file with the answer-contains rules.

    The output (``.jsonl`` or ``.csv``), when asked for, holds every input row in order with
    ``correct``, ``failure_kind`` and ``outcome`` added; see :func:`process_jsonl` for streaming,
    atomic writes, errors and ``jobs`` (worker processes; the results are the same).
    """
    summary = FileSummary(path=str(path), output=None if output is None else str(output))
    stats = process_jsonl(
        path,
        ScoreRow(scorer, prediction_field, answers_field),
        output=output,
        skip_invalid=skip_invalid,
        progress=progress,
        jobs=jobs,
        count_fields=("correct", "failure_kind"),
    )
    summary.items = stats.rows
    summary.invalid_lines = stats.invalid_lines
    summary.correct = sum(number for (correct, _), number in stats.counts.items() if correct)
    # Every kind once, in order of first appearance (carried kinds too), as count_failures gives.
    summary.failure_counts = count_failures(())
    for (_, kind), number in stats.counts.items():
        if kind is not None:
            summary.failure_counts[kind] = summary.failure_counts.get(kind, 0) + number
    return summary


@dataclass(frozen=True)
class ScoreRow:
    """The row transform of :func:`score_file`: a picklable callable, so workers can run it.

    :param scorer: The scorer (pickled with its settings for each worker).
    :param prediction_field: The field holding the prediction.
    :param answers_field: The field holding the acceptable answer(s).
    """

    scorer: AnswerContainsScorer
    prediction_field: str = "prediction"
    answers_field: str = "answers"

    def __call__(self, row: dict[str, Any], number: int) -> dict[str, Any]:
        """Score one row: the row with ``correct``, ``failure_kind`` and ``outcome`` added."""
        return _score_row(row, number, self.scorer, self.prediction_field, self.answers_field)


def require_fields(row: dict[str, Any], names: Iterable[str]) -> None:
    """Raise :class:`InputError` naming the first of ``names`` missing from ``row``."""
    for name in names:
        if name not in row:
            raise InputError(f"missing field {name!r} (fields: {', '.join(map(repr, row)) or 'none'})")


def _score_row(
    row: dict[str, Any], number: int, scorer: AnswerContainsScorer, prediction_field: str, answers_field: str
) -> dict[str, Any]:
    require_fields(row, (answers_field, prediction_field))
    try:
        labels = acceptable_answers(row[answers_field])
    except (TypeError, ValueError) as exc:
        raise InputError(f"field {answers_field!r}: {exc}") from None
    verdict = scorer.score_read(read_output(row[prediction_field]), labels)
    return {**row, "correct": verdict.correct, "failure_kind": verdict.failure_kind, "outcome": verdict.outcome}
