"""The columns a file command adds to every row: never over a column the row already has, unless asked.

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

from answer_eval.errors import InputError

__all__ = ["MARKER", "AddedColumns", "ColumnClash", "WithColumns", "clash_message", "find_marked", "marker_value"]

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
        """Transform a batch (see :mod:`answer_eval.engine.row_batches`), each row checked first."""
        from answer_eval.engine.row_batches import transform_rows

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
