"""Files through an evaluator, row by row: where each role is read, the row transform, the summary's counting.

:func:`run_file` is the local run of every file command (and of
:func:`answer_eval.evaluators.contains.score_file`): rows go through the evaluator's column-wise
``score`` a batch at a time
(:class:`EvaluatorRows`, picklable, so ``--jobs`` workers run it; see
:mod:`answer_eval.engine.row_batches`), each output row is counted into
the evaluator's summary from the row alone, and the checkpoint records the evaluator's signature
and the summary's snapshot (``--resume`` restores it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.engine.columns import AddedColumns
from answer_eval.errors import InputError, ItemError, RowsKept, StoppedAfter
from answer_eval.evaluators.base import Columns, Evaluator
from answer_eval.evaluators.summaries import Summary

__all__ = ["EvaluatorRows", "RoleField", "SummaryRows", "default_fields", "run_file"]


@dataclass(frozen=True)
class RoleField:
    """Where one input role is read from a row: the field chosen, else the first of the candidates present.

    :param role: The role.
    :param fields: The candidate fields, in order (one unless the role has fallbacks and none was chosen).
    :param required: Whether a row without it is bad input.
    """

    role: str
    fields: tuple[str, ...]
    required: bool

    def find(self, row: Mapping[str, Any]) -> str | None:
        """The field of this role in ``row`` (``None`` when absent)."""
        for name in self.fields:
            if name in row:
                return name
        return None

    def missing(self, row: Mapping[str, Any]) -> str:
        """The message for a row that lacks the role."""
        names = " or ".join(repr(name) for name in self.fields)
        return f"missing field {names} (fields: {', '.join(map(repr, row)) or 'none'})"


@dataclass(frozen=True)
class EvaluatorRows:
    """The row transform of every file command: a picklable callable, so ``--jobs`` workers can run it.

    :param evaluator: The evaluator (pickled as its options; each worker rebuilds it).
    :param fields: Where each role is read.
    :param written: ``(output column, name written)`` in output order.
    """

    evaluator: Evaluator
    fields: tuple[RoleField, ...]
    written: tuple[tuple[str, str], ...]

    @property
    def batch_rows(self) -> int | None:
        """The rows the evaluator wants per ``score`` call (``None``: the engine's default)."""
        return self.evaluator.batch_rows

    def __call__(self, row: dict[str, Any], number: int) -> dict[str, Any]:
        """The row with the evaluator's columns added; ``InputError`` naming the field for a bad row."""
        found = self._fields_of(row)
        try:
            columns = self.evaluator.score({role: [row[name]] for role, name in found.items()})
        except ItemError as exc:
            where = found.get(exc.role) if exc.role is not None else None
            raise InputError(exc.message if where is None else f"field {where!r}: {exc.message}") from None
        return self._with(row, columns, 0)

    def many(self, rows: Sequence[tuple[dict[str, Any], int]]) -> list[dict[str, Any] | InputError]:
        """A batch through one ``score`` call (see :mod:`answer_eval.engine.row_batches`), bad rows in place.

        A row lacking an optional role's field gives ``None`` in that column; an item the evaluator
        refuses is scored alone, for its own error, and the rows around it in as few calls as can be.
        """
        results: list[dict[str, Any] | InputError | None] = [None] * len(rows)
        good: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        for index, (row, _) in enumerate(rows):
            try:
                good.append((index, row, self._fields_of(row)))
            except InputError as exc:
                results[index] = exc
        runs, refused, stopped = self._scored(good)
        for start, stop, columns in runs:
            for position, (index, row, _) in enumerate(good[start:stop]):
                results[index] = self._with(row, columns, position)
        if stopped is not None:  # the rows before are written and kept; the run stops at this one
            at, halt = stopped
            halt.line = rows[good[at][0]][1] if at < len(good) else None  # raised as it is (no row's fault)
            for index, _, _ in good[at:]:
                results[index] = halt
            refused = [position for position in refused if position < at]
        for index, row, _ in (good[position] for position in refused):
            try:
                results[index] = self(row, rows[index][1])
            except RowsKept:
                raise  # not this row's fault: the run stops
            except InputError as exc:
                results[index] = exc
        return [result for result in results if result is not None]

    def _scored(
        self, good: list[tuple[int, dict[str, Any], dict[str, str]]]
    ) -> tuple[list[tuple[int, int, Columns]], list[int], tuple[int, StoppedAfter] | None]:
        """Score ``good`` in as few calls as its bad items allow.

        Returns ``(start, stop, columns)`` per run of rows scored together, the positions of the
        items refused: the evaluator names the first (``ItemError.position``); the rows before it are
        one run and the rest is scored again; and where the evaluator stopped mid-batch
        (:class:`StoppedAfter`, its first items scored), if it did.
        """
        runs: list[tuple[int, int, Columns]] = []
        refused: list[int] = []
        start = 0
        while start < len(good):
            part = good[start:]
            inputs = {
                role.role: [row[found[role.role]] if role.role in found else None for _, row, found in part]
                for role in self.fields
                if any(role.role in found for _, _, found in part)
            }
            try:
                runs.append((start, len(good), self.evaluator.score(inputs)))
                break
            except StoppedAfter as stop:
                runs.append((start, start + stop.done, stop.columns))
                return runs, refused, (start + stop.done, stop)
            except ItemError as exc:
                bad = start + exc.position
                if exc.position > 0:
                    before, also, stopped = self._scored(good[start:bad])
                    runs.extend((start + first, start + last, columns) for first, last, columns in before)
                    refused.extend(start + position for position in also)
                    if stopped is not None:
                        return runs, refused, (start + stopped[0], stopped[1])
                refused.append(bad)
                start = bad + 1
        return runs, refused, None

    def _fields_of(self, row: dict[str, Any]) -> dict[str, str]:
        """The field of each role present in ``row``; ``InputError`` for a required one missing."""
        found: dict[str, str] = {}
        for role in self.fields:
            name = role.find(row)
            if name is not None:
                found[role.role] = name
            elif role.required:
                raise InputError(role.missing(row))
        return found

    def _with(self, row: dict[str, Any], columns: Columns, position: int) -> dict[str, Any]:
        result = dict(row)
        for name, written in self.written:
            result[written] = columns[name][position]
        return result


@dataclass
class SummaryRows:
    """Counts each output row into the summary (``on_row``), from the row alone so ``--resume`` can replay it.

    :param summary: The summary counted into.
    :param reads: Where the roles the summary reads are.
    :param written: ``(output column, name written)``.
    """

    summary: Summary
    reads: tuple[RoleField, ...]
    written: tuple[tuple[str, str], ...]

    def __call__(self, row: dict[str, Any]) -> None:
        """Count one output row."""
        inputs = {role.role: [_first_value(row, role.fields)] for role in self.reads}
        self.summary.add_rows(inputs, {name: [row[written]] for name, written in self.written})

    def fields(self) -> list[str]:
        """The fields it reads: the outputs and the inputs the summary needs."""
        return [*(written for _, written in self.written), *(name for role in self.reads for name in role.fields)]


def _first_value(row: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    # With --jobs only the fields named travel back, a missing one as None: the first with a value is the role's.
    for name in names:
        value = row.get(name)
        if value is not None:
            return value
    return None


def default_fields(evaluator: Evaluator, chosen: Mapping[str, str] | None = None) -> tuple[RoleField, ...]:
    """Where each role is read: the field ``chosen`` for it, else its default field and fallbacks."""
    required = set(evaluator.required())
    found = []
    for role in evaluator.roles:
        name = (chosen or {}).get(role.name)
        fields = (name,) if name is not None else (role.field, *role.fallbacks)
        found.append(RoleField(role.name, fields, role.name in required))
    return tuple(found)


_VALUE_KINDS = frozenset({"int", "float", "list"})


def cell_fields(evaluator: Evaluator, fields: Sequence[RoleField]) -> dict[str, frozenset[str]]:
    """How a CSV's input fields are read: ``{"text_fields": ..., "value_fields": ...}``, for ``process_jsonl``.

    The fields of a role whose column may hold a number or a list (the acceptable answers, a typed
    solution) are value fields, every other role's are text fields (see
    :func:`answer_eval.inputs.formats.read_cell`): in neither is ``true`` read as a boolean.
    """
    kinds = {role.name: role.kinds for role in evaluator.roles}
    value = {name for role in fields if kinds.get(role.role, frozenset()) & _VALUE_KINDS for name in role.fields}
    every = {name for role in fields for name in role.fields}
    return {"text_fields": frozenset(every - value), "value_fields": frozenset(value)}


def _restorer(summary: Summary, evaluator: Evaluator) -> Callable[[Mapping[str, Any]], None]:
    """Restore ``summary`` from a checkpoint, then tell the evaluator (``resumed(summary)``, when it has one).

    An evaluator with a budget for the whole file (an LLM grader's ``--max-calls``) counts what the
    rows kept already spent, so a ``--resume`` does not start the budget afresh.
    """

    def restore(data: Mapping[str, Any]) -> None:
        summary.restore(data)
        resumed = getattr(evaluator, "resumed", None)
        if callable(resumed):
            resumed(summary)

    return restore


def run_file(
    path: str | os.PathLike[str],
    evaluator: Evaluator,
    fields: Sequence[RoleField] | None = None,
    written: Sequence[tuple[str, str]] | None = None,
    *,
    output: str | os.PathLike[str] | None = None,
    columns: AddedColumns | None = None,
    options: Mapping[str, Any] | None = None,
    **run: Any,
) -> Summary:
    """Score every row of an input file (any format of :mod:`answer_eval.inputs.formats`) with ``evaluator``.

    Returns the evaluator's summary.

    ``fields`` (default :func:`default_fields`) and ``written`` (default: every output under its
    own name) say where the roles are read and the outputs written; ``columns`` (default: the
    names written) and ``run`` (``skip_invalid``, ``progress``, ``jobs``, ``resume``,
    ``max_line_bytes``, ``checkpoint_seconds``, ``input_format``) go to
    :func:`answer_eval.engine.runner.process_jsonl`, and ``options`` (more of what shapes the
    output, such as a command line's other flags) into its checkpoint record with the
    evaluator's signature and fields. In a CSV or TSV, the fields of the roles that hold text or
    values (:func:`cell_fields`) are read as such.

    Before any work (the evaluator warms up after), an added column that is also a field some
    role reads is refused (it would overwrite what is graded), and so is a file the evaluator
    writes besides the output (:meth:`Evaluator.files_written`) that is the input, a file it reads
    (:meth:`Evaluator.files_read`), the output or one of the run's work files, and an output that
    is a file it reads.
    """
    from answer_eval.engine.runner import check_side_files, process_jsonl

    fields = tuple(fields if fields is not None else default_fields(evaluator))
    written = tuple(written if written is not None else ((name, name) for name in evaluator.outputs()))
    columns = AddedColumns(tuple(name for _, name in written)) if columns is None else columns
    columns.refuse_reads({role.role: role.fields for role in fields})
    check_side_files(path, output, evaluator.files_written(), evaluator.files_read())
    evaluator.warm_up()
    summary = evaluator.new_summary()
    summary.path, summary.signature = str(path), evaluator.signature
    for name, chosen in cell_fields(evaluator, fields).items():
        run.setdefault(name, chosen)
    summary.output = None if output is None else str(output)
    names = summary.output_columns([name for name, _ in written])
    read = tuple(pair for pair in written if pair[0] in names)  # only these travel back from --jobs workers
    counting = SummaryRows(summary, tuple(role for role in fields if role.role in summary.reads), read)
    stats = process_jsonl(
        path,
        EvaluatorRows(evaluator, fields, written),
        output=output,
        on_row=counting,
        on_row_fields=counting.fields(),
        options={
            **(options or {}),
            "signature": evaluator.signature,
            "fields": [list(role.fields) for role in fields],
            "written": [name for _, name in written],
        },
        columns=columns,
        # The summary's snapshot goes into each checkpoint record; a resumed run counts the rows kept
        # again (which checks them) and then takes the snapshot, so both must agree.
        state=(summary.snapshot, _restorer(summary, evaluator)),
        **run,
    )
    summary.invalid_lines = stats.invalid_lines
    return summary
