"""What a file command does to each row: an evaluator's columns added, a batch at a time, never over the row's own.

A row transform may offer ``many(rows)``: the outputs of a list of ``(row, line number)`` pairs, in
order, with an :class:`~answer_eval.errors.InputError` in the place of each row it cannot
transform. The row loops (:mod:`answer_eval.engine.row_loop` in this process, and each worker of
:mod:`answer_eval.engine.parallel`) hand it up to :data:`BATCH_ROWS` rows at once, so an evaluator
scores a file through the same column-wise code as a batch in memory; a transform without
``many`` gets one row at a time. :class:`EvaluatorRows` is every file command's transform
(picklable, so ``--jobs`` workers run it): where each role is read (:class:`RoleField`), the
evaluator's column-wise ``score``; :class:`SummaryRows` counts each output row into the
evaluator's summary from the row alone, so ``--resume`` can replay the rows kept.

A row that already holds ``correct`` (a person's label, say) would lose it to the verdict written
back under the same name. :class:`AddedColumns` names what a command adds; a row holding one of
those names is refused (:class:`ColumnClash`, exit 2 even with ``--skip-invalid``, naming the
column and the two ways out: ``--column-prefix`` to write the added columns under other names, or
``--replace-columns`` to overwrite them knowingly).

Every row a command writes also says who wrote it: the column :data:`MARKER` holds
``"answer-eval <command> <version>"``. ``report`` reuses a file's verdicts only when that mark is
there (see :func:`find_marked`), so a person's ``correct`` column is never taken for a scored run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.errors import InputError, ItemError, RowsKept, StoppedAfter
from answer_eval.evaluators.base import Columns, Evaluator
from answer_eval.evaluators.summaries import Summary

__all__ = [
    "BATCH_BYTES",
    "BATCH_ROWS",
    "MARKER",
    "AddedColumns",
    "ColumnClash",
    "EvaluatorRows",
    "RoleField",
    "SummaryRows",
    "WithColumns",
    "clash_message",
    "default_fields",
    "find_marked",
    "marker_value",
    "transform_rows",
]


BATCH_ROWS = 256
"""Rows per batch: enough to make the per-batch cost small, few enough that a signal stops a run soon."""
BATCH_BYTES = 4 << 20
"""A batch ends sooner when its lines reach this many bytes, so that memory stays flat with long rows."""


def transform_rows(
    transform: Callable[[dict[str, Any], int], dict[str, Any]],
    entries: Sequence[tuple[int, dict[str, Any] | InputError]],
) -> list[dict[str, Any] | InputError]:
    """The output (or the error) of every ``(line number, parsed row or its parse error)``, in order."""
    many = getattr(transform, "many", None)
    rows = [(parsed, number) for number, parsed in entries if not isinstance(parsed, InputError)]
    if many is not None:
        done = iter(many(rows))
        return [parsed if isinstance(parsed, InputError) else next(done) for _, parsed in entries]
    results: list[dict[str, Any] | InputError] = []
    for number, parsed in entries:
        if isinstance(parsed, InputError):
            results.append(parsed)
            continue
        try:
            results.append(transform(parsed, number))
        except RowsKept:
            raise  # not this row's fault: the run stops
        except InputError as exc:
            results.append(exc)
    return results


MARKER = "scored_by"
"""The column naming the command and package version that wrote a row's verdict columns."""
_MARK_PREFIX = "answer-eval "


def marker_value(command: str) -> str:
    """What :data:`MARKER` holds for rows ``command`` writes: ``"answer-eval score 0.3.0"``."""
    from answer_eval import __version__

    return f"{_MARK_PREFIX}{command} {__version__}"


class ColumnClash(InputError):
    """A row already has a column the command would write: refused, never skipped as an invalid line.

    The rows done before it are not kept: going on needs other options (``--column-prefix``), which
    a ``--resume`` refuses.
    """

    skippable = False
    keeps_rows = False


@dataclass(frozen=True)
class AddedColumns:
    """The columns a command adds, the prefix they are written under and the provenance mark.

    :param names: The columns as the command's transform writes them, in order (the mark excluded).
    :param prefix: Written before every added column's name (``--column-prefix``), the mark's too.
    :param replace: Overwrite a column the row already has (``--replace-columns``) instead of refusing.
    :param marker: The value of the :data:`MARKER` column (see :func:`marker_value`); ``None``: no mark.
    """

    names: tuple[str, ...]
    prefix: str = ""
    replace: bool = False
    marker: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, str):
            raise TypeError(f"the column prefix must be a str, got {type(self.prefix).__name__}")

    def name(self, column: str) -> str:
        """The name ``column`` is written under."""
        return self.prefix + column

    @property
    def written(self) -> tuple[str, ...]:
        """Every column added to a row, as written (prefixed, the mark last)."""
        names = (*self.names, MARKER) if self.marker is not None else self.names
        return tuple(self.prefix + name for name in names)

    def check(self, row: Mapping[str, Any]) -> None:
        """Refuse a row that already holds a column this command would write (unless ``replace``)."""
        if self.replace:
            return
        for name in self.written:
            if name in row:
                raise ColumnClash(clash_message(name, self.written))

    def refuse_reads(self, reads: Mapping[str, Sequence[str]]) -> None:
        """Refuse an added column that is also a field the command reads (``reads``: each input's fields).

        Writing it would overwrite the value graded (``--replace-columns --prediction-field
        correct``); without ``replace`` every row would be refused, with advice that cannot work.

        :raises InputError: Naming the field, the input and the way out (exit 2, before any work).
        """
        written = set(self.written)
        for role, names in reads.items():
            for name in names:
                if name in written:
                    raise InputError(
                        f"the {role} is read from the field {name!r}, which this command also writes its own "
                        f"column into: the output would overwrite it; give --column-prefix (for example "
                        f"--column-prefix ae_) so that the added columns take other names, or read the {role} from "
                        "another field"
                    )

    def apply(self, row: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """The output row: ``row`` with the added columns of ``result`` (the transform's output) and the mark."""
        if not self.prefix:
            if self.marker is not None:
                result[MARKER] = self.marker
            return result
        output = dict(row)
        for name in self.names:
            output[self.prefix + name] = result[name]
        if self.marker is not None:
            output[self.prefix + MARKER] = self.marker
        return output

    def view(self, output: dict[str, Any]) -> dict[str, Any]:
        """An output row with the added columns under their own names, as a command's summary reads them."""
        if not self.prefix:
            return output
        return {**output, **{name: output[self.prefix + name] for name in self.names if self.prefix + name in output}}

    def fields(self, names: Sequence[str] | None) -> tuple[str, ...] | None:
        """Field names a summary reads, as written in the output row (added ones prefixed)."""
        if names is None:
            return None
        return tuple(self.prefix + name if name in self.names else name for name in names)

    def own_names(self, written: Sequence[str]) -> tuple[str, ...]:
        """The inverse of :meth:`fields`: written field names back under their own names."""
        if not self.prefix:
            return tuple(written)
        own = {self.prefix + name: name for name in self.names}
        return tuple(own.get(name, name) for name in written)


@dataclass(frozen=True)
class WithColumns:
    """A row transform whose added columns are checked, prefixed and marked (picklable when the transform is).

    :param transform: The command's transform: the input row with its columns added.
    :param columns: What it adds.
    """

    transform: Callable[[dict[str, Any], int], dict[str, Any]]
    columns: AddedColumns

    @property
    def batch_rows(self) -> int | None:
        """The rows the wrapped transform wants at once (``None``: the engine's default)."""
        return getattr(self.transform, "batch_rows", None)

    def __call__(self, row: dict[str, Any], number: int) -> dict[str, Any]:
        """Transform one row, refusing it first when it already holds an added column."""
        self.columns.check(row)
        return self.columns.apply(row, self.transform(row, number))

    def many(self, rows: Sequence[tuple[dict[str, Any], int]]) -> list[dict[str, Any] | InputError]:
        """Transform a batch (see :func:`transform_rows`), each row checked first."""
        checked: list[tuple[int, dict[str, Any] | InputError]] = []
        for row, number in rows:
            try:
                self.columns.check(row)
            except InputError as exc:
                checked.append((number, exc))
            else:
                checked.append((number, row))
        results = transform_rows(self.transform, checked)
        return [
            result if isinstance(result, InputError) else self.columns.apply(row, result)
            for (row, _), result in zip(rows, results, strict=True)
        ]


def clash_message(name: str, written: Sequence[str], rows: str = "the row already has") -> str:
    """Why rows holding column ``name`` are refused, and the two options that resolve it."""
    example = "ae_"
    return (
        f"{rows} a column {name!r}, which this command writes its own value into; to keep it, give "
        f"--column-prefix (for example --column-prefix {example}: the added columns become "
        f"{', '.join(example + column for column in written[:3])}, ...), or give --replace-columns to overwrite it"
    )


def find_marked(rows: Sequence[Mapping[str, Any]], command: str) -> str | None:
    """The prefix under which every row holds the verdict columns ``answer-eval <command>`` wrote, or ``None``.

    A row is marked when a column named ``PREFIX`` + :data:`MARKER` holds ``"answer-eval <command> ..."``;
    the same prefix must mark every row.
    """
    if not rows:
        return None
    wanted = f"{_MARK_PREFIX}{command} "
    for key, value in rows[0].items():
        if isinstance(key, str) and key.endswith(MARKER) and isinstance(value, str) and value.startswith(wanted):
            prefix = key[: -len(MARKER)]
            if all(_marked(row, key, wanted) for row in rows):
                return prefix
    return None


def _marked(row: Mapping[str, Any], key: str, wanted: str) -> bool:
    value = row.get(key)
    return isinstance(value, str) and value.startswith(wanted)


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
        """A batch through one ``score`` call (see :func:`transform_rows`), bad rows in place.

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
