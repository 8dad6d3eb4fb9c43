"""The shards of the Dask engine: JSONL or Parquet files in, one Parquet file per partition out, the output folder.

A shard is read by the local engine's own reader (:class:`answer_eval.inputs.formats.InputFile`,
the row loop's :func:`answer_eval.inputs.jsonl.iter_parsed_lines`), so a Dask run reads every
row exactly as ``answer-eval`` without ``--engine dask`` reads the same file: the same
``--max-line-bytes`` limit, checked before a row is built (a JSONL line read with the limit; a
Parquet row's size read from Arrow, a row group whose page would decode past twice the limit not
decoded), the same invalid rows (skipped and counted with ``skip_invalid``, else an
:class:`~answer_eval.errors.InputError` naming the shard and line), the same values
(``float32`` at its own precision, NaN as missing, a Parquet string read by
:func:`~answer_eval.inputs.converted_rows.read_cell` as the evaluator's roles say: text or values), the
same compression of JSONL (told from the first bytes). A Parquet shard is decoded a batch at a
time; what a partition holds is its rows as Python values (see docs/dask.md, "Limits").

The rows become a pandas frame whose every column holds plain Python values (dtype ``object``:
lists stay lists, mappings stay mappings, ints stay ints). A key that a JSONL row lacks (but
other rows of the shard have) is ``pandas.NA``; a JSON ``null`` is ``None``. The index numbers
the rows as a person would find them: the line number in a JSONL file (index name ``line``), the
row number from 1 in a Parquet file (``row``). The frame's ``attrs`` keep the shard's path
(:data:`SOURCE`), the lines skipped as invalid (:data:`INVALID_LINES`) and, for Parquet, each
column's Arrow type (:data:`ARROW_TYPES`) and the kinds of value the local reader makes of it
(:data:`COLUMN_KINDS`), so errors name the shard, the line and the column.

Written shards keep every column Parquet can hold as it is (strings, numbers, booleans, lists
of them); a column mixing types, or holding mappings, or text that a Parquet string would be read
as something else from (``["a"]``, ``TRUE``: see :func:`answer_eval.inputs.converted_rows.read_cell`), is
written as JSON text and named in the file's metadata (key :data:`JSON_COLUMNS_KEY`), which the
local reader (and so :func:`read_shard`) decodes again: an output shard reads back as its values.
Needs the ``dask`` extra (pandas and pyarrow come with it); imported only by the Dask engine.

``--output`` of ``--engine dask`` is a folder of ``part-NNNNN.parquet`` shards, each written
atomically by a worker (:func:`write_shard`). A run replaces the shards of its
partitions and removes those beyond them (left by an earlier, longer run) and the temporary
shards of workers lost mid-run; :func:`check_output_folder` refuses what the local engine refuses
for an output file (:func:`answer_eval.engine.output_files.check_output_path`: a read-only file, a
folder or special file at a shard's name, an unwritable folder, an input among the shards),
before a cluster starts.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_eval.engine.output_files import check_output_path, refuse_inputs_among, write_bytes_atomically
from answer_eval.errors import InputError
from answer_eval.inputs.formats import InputFile, format_for, iter_rows
from answer_eval.inputs.jsonl import DEFAULT_MAX_LINE_BYTES
from answer_eval.inputs.parquet_rows import JSON_COLUMNS_KEY, json_columns, parquet_schema

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    import pyarrow as pa  # type: ignore[import-untyped]

__all__ = [
    "ARROW_TYPES",
    "COLUMN_KINDS",
    "INVALID_LINES",
    "JSON_COLUMNS_KEY",
    "SOURCE",
    "check_output_folder",
    "expand_shards",
    "read_shard",
    "remove_shards_from",
    "remove_temporary",
    "shard_columns",
    "shard_format",
    "shard_name",
    "write_shard",
]


SHARD_FORMATS = ("jsonl", "parquet")
"""The input formats read as shards, told as the local engine tells them (``format_for``)."""
SOURCE = "answer_eval_source"
"""``DataFrame.attrs`` key: the shard a partition was read from."""
INVALID_LINES = "answer_eval_invalid_lines"
"""``DataFrame.attrs`` key: lines or rows of the partition skipped as invalid."""
ARROW_TYPES = "answer_eval_arrow_types"
"""``DataFrame.attrs`` key: column name to its Arrow type in a Parquet shard (``"json"`` for JSON text)."""
COLUMN_KINDS = "answer_eval_column_kinds"
"""``DataFrame.attrs`` key: column name to the kinds of value the local reader makes of its Arrow type
(``string``, ``int``, ``float``, ``bool``, ``list``, ``mapping``, ``null``; a list's items' kind after
``list``; empty for JSON text, which may hold anything), for :mod:`answer_eval.dask.partition`'s type check."""


def shard_format(path: str | os.PathLike[str], input_format: str | None = None) -> str:
    """The format of a shard, as the local engine tells it: ``input_format`` when given, else by its extension.

    :raises InputError: For a format that is not a shard's (JSONL, compressed or not, or Parquet).
    """
    try:
        found = format_for(path, input_format)
    except InputError:
        found = None
    if found not in SHARD_FORMATS:
        raise InputError(
            f"shard {path} is neither JSONL (.jsonl, .ndjson, .jsonlines, a name without extension; gzip, "
            "bzip2 or xz compressed too) nor Parquet (.parquet, .pq); score other formats with the local engine"
        )
    return found


def expand_shards(patterns: Sequence[str], input_format: str | None = None) -> list[str]:
    """The shard files named by ``patterns`` (paths or glob patterns), each once, in order.

    A pattern's matches are sorted; the patterns keep the order given.

    :raises InputError: For a pattern that matches nothing, a path that is not a file, or a file
        that is neither JSONL nor Parquet (:func:`shard_format`).
    """
    found: dict[str, None] = {}
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
            if not matches:
                raise InputError(f"no shard matches {pattern!r}")
        else:
            matches = [pattern]
        for match in matches:
            path = Path(match)
            if not path.is_file():
                raise InputError(f"input file {path} does not exist" if not path.exists() else f"{path} is not a file")
            shard_format(path, input_format)
            found[match] = None
    return list(found)


def shard_name(index: int) -> str:
    """The file name of output partition ``index``: ``part-00000.parquet``."""
    return f"part-{index:05d}.parquet"


def _source(
    path: str | os.PathLike[str],
    max_line_bytes: int,
    text_fields: Collection[str] = (),
    value_fields: Collection[str] = (),
    input_format: str | None = None,
) -> InputFile:
    source = InputFile.of(
        path, shard_format(path, input_format), text_fields, value_fields, max_line_bytes=max_line_bytes
    )
    source.check()
    return source


def shard_columns(
    path: str | os.PathLike[str], input_format: str | None = None, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> list[str]:
    """The columns of a shard, read cheaply: the Parquet schema, or the keys of a JSONL file's first row.

    The first row is read as :func:`read_shard` reads it (within ``max_line_bytes``; invalid lines
    before it passed over).
    """
    source = _source(path, max_line_bytes, input_format=input_format)
    if source.format == "parquet":
        return list(_schema(source).names)
    rows = iter_rows(source)
    try:
        for _, row in rows:
            if not isinstance(row, InputError):
                return list(row)
    finally:
        rows.close()
    return []


def read_shard(
    path: str | os.PathLike[str],
    skip_invalid: bool = False,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    *,
    text_fields: Collection[str] = (),
    value_fields: Collection[str] = (),
    input_format: str | None = None,
) -> pd.DataFrame:
    """Read one JSONL or Parquet shard into a frame of Python values, as the local engine reads it (module docstring).

    ``text_fields`` and ``value_fields``: the fields the evaluator reads as text and as values
    (:func:`answer_eval.engine.row_transforms.cell_fields`): how a Parquet string cell is read
    (:func:`answer_eval.inputs.converted_rows.read_cell`); any other string column is read as a label.

    :raises InputError: For a row the local engine refuses (a malformed JSONL line, a row over
        ``max_line_bytes``, a Parquet cell that cannot be read: naming the file and line), unless
        ``skip_invalid``, which skips it and counts it in ``attrs[INVALID_LINES]``; for a file that
        cannot be read at all, always.
    """
    source = _source(path, max_line_bytes, text_fields, value_fields, input_format)
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    invalid = 0
    for number, row in iter_rows(source):
        if isinstance(row, InputError):
            if not skip_invalid:
                raise row
            invalid += 1
            continue
        rows.append(row)
        numbers.append(number)
    names: dict[str, None] = {}
    attrs: dict[str, Any] = {SOURCE: str(path), INVALID_LINES: invalid}
    if source.format == "parquet":
        schema = _schema(source)
        names.update(dict.fromkeys(schema.names))  # every column, even of a shard without rows
        attrs.update(_arrow_attrs(schema))
    for row in rows:
        names.update(dict.fromkeys(row))
    missing = _missing()  # a key this row lacks, unlike a JSON null (None)
    columns = {name: [row.get(name, missing) for row in rows] for name in names}
    rows.clear()
    frame = _frame(columns, numbers, "row" if source.format == "parquet" else "line")
    frame.attrs.update(attrs)
    return frame


def _missing() -> Any:
    import pandas as pd

    return pd.NA


def _schema(source: InputFile) -> pa.Schema:
    return parquet_schema(source.path, source.name)


def _arrow_attrs(schema: pa.Schema) -> dict[str, Any]:
    """:data:`ARROW_TYPES` and :data:`COLUMN_KINDS` of a Parquet shard's schema."""
    encoded = set(json_columns(schema))
    types = {field.name: "json" if field.name in encoded else str(field.type) for field in schema}
    kinds = {field.name: [] if field.name in encoded else column_kinds(field.type) for field in schema}
    return {ARROW_TYPES: types, COLUMN_KINDS: kinds}


def column_kinds(kind: pa.DataType) -> list[str]:
    """The kinds of value the local reader makes of an Arrow type: ``["string"]``, ``["list", "int"]``...

    As :func:`answer_eval.inputs.converted_rows.json_line` writes them: numbers, booleans and null as
    themselves, lists (and maps, as lists of pairs) as lists (their items' kind after ``list``),
    structs as mappings, and every other value (strings, binary, dates, times, decimals) as text.
    """
    import pyarrow as pa

    if isinstance(kind, pa.ExtensionType):
        kind = kind.storage_type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_boolean(kind):
        return ["bool"]
    if pa.types.is_integer(kind):
        return ["int"]
    if pa.types.is_floating(kind):
        return ["float"]
    if pa.types.is_null(kind):
        return ["null"]
    if pa.types.is_struct(kind):
        return ["mapping"]
    if pa.types.is_map(kind):
        return ["list", "list"]
    if pa.types.is_interval(kind):  # a (months, days, nanoseconds) tuple, written as a list
        return ["list", "int"]
    if pa.types.is_union(kind):  # a value of any of its types: the evaluator checks each
        return []
    if hasattr(kind, "value_type"):  # list, large list, fixed-size list, list views
        return ["list", *column_kinds(kind.value_type)[:1]]
    return ["string"]


def _frame(columns: dict[str, list[Any]], index: list[int] | range, index_name: str) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(columns, dtype=object, index=pd.Index(index, name=index_name, dtype="int64"))
    if not columns:  # a frame with no columns takes no index length from them
        frame = pd.DataFrame(index=pd.Index(index, name=index_name, dtype="int64"))
    return frame


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _plain_type(kind: pa.DataType) -> bool:
    import pyarrow as pa

    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _plain_type(kind.value_type)
    return not (pa.types.is_struct(kind) or pa.types.is_map(kind) or pa.types.is_union(kind))


def _arrow_column(values: list[Any]) -> tuple[pa.Array, bool]:
    """The Arrow array of a column of Python values, and whether it had to be JSON text."""
    import pyarrow as pa

    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        array = None
    if array is not None and _plain_type(array.type) and _reads_back(array):
        return array, False
    text = [None if value is None else json.dumps(value, ensure_ascii=False, default=_json_default) for value in values]
    return pa.array(text, pa.string()), True


def _reads_back(array: pa.Array) -> bool:
    """Whether a Parquet reader of this package reads the column back as these values.

    A string column is read by :func:`answer_eval.inputs.converted_rows.read_cell`: text that starts with
    ``[`` or ``{``, or is ``true`` or ``false``, may be read as a list, a mapping or a boolean, so
    such a column is written as JSON text (as the CSV writer marks such a cell with ``'``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    if not pa.types.is_string(array.type):
        return True
    other = pc.or_(pc.starts_with(array, "["), pc.starts_with(array, "{"))
    other = pc.or_(other, pc.match_substring_regex(array, pattern="^(?i)(true|false)$"))
    return not pc.any(other).as_py()


def to_arrow(frame: pd.DataFrame) -> pa.Table:
    """A frame as an Arrow table: the index left out, ``pandas.NA`` as null, JSON text where needed."""
    import pandas as pd
    import pyarrow as pa

    arrays = []
    encoded = []
    for name in frame.columns:
        column = frame[name]
        if column.dtype == object:
            values = [None if value is pd.NA else value for value in column.tolist()]
            array, as_json = _arrow_column(values)
            if as_json:
                encoded.append(str(name))
        else:
            array = pa.array(column.to_numpy())
        arrays.append(array)
    metadata = {JSON_COLUMNS_KEY: json.dumps(encoded).encode()} if encoded else None
    return pa.Table.from_arrays(arrays, names=[str(name) for name in frame.columns], metadata=metadata)


def write_shard(frame: pd.DataFrame, target: str | os.PathLike[str]) -> None:
    """Write a frame as one Parquet file, atomically (a temporary file in the same folder, then a rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    sink = pa.BufferOutputStream()
    pq.write_table(to_arrow(frame), sink)
    write_bytes_atomically(target, sink.getvalue().to_pybytes())


_SHARD = re.compile(r"part-(\d+)\.parquet")
_TEMPORARY = re.compile(r"\.part-\d+\.parquet\..*\.tmp")


def remove_temporary(folder: Path) -> None:
    """Remove the temporary shards left in ``folder`` (by workers lost mid-run)."""
    for stray in folder.iterdir():
        if _TEMPORARY.fullmatch(stray.name):
            stray.unlink(missing_ok=True)


def check_output_folder(output: str | os.PathLike[str], shards: Sequence[str]) -> None:
    """Check (and make) the output folder as the local engine checks an output file, before any work.

    Refused (:class:`InputError`, exit 2 on the command line): a file name (the output is a
    folder), a parent folder that does not exist, a folder the process may not write to, an
    input that is a shard the run replaces or removes (``part-NNNNN.parquet`` and the temporary
    shards of the folder, under any name: compared by device and inode), and an existing
    ``part-NNNNN.parquet`` that is read-only (naming its mode and ``chmod u+w``), a folder or not
    a regular file: the run would replace or remove it (see
    :func:`answer_eval.engine.output_files.check_output_path`). A writable shard replaced keeps its mode.
    """
    folder = Path(output)
    if folder.suffix.lower() in (".jsonl", ".ndjson", ".csv", ".parquet") or (folder.exists() and not folder.is_dir()):
        raise InputError(f"output {folder} must be a folder with --engine dask: one Parquet file per partition")
    parent = folder.parent if str(folder.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output folder {parent} does not exist")
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot make the output folder {folder}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"output folder {folder} is not writable")
    for shard in shards:
        if Path(shard).resolve().parent == folder.resolve() and _SHARD.fullmatch(Path(shard).name):
            raise InputError(f"output folder {folder} holds the input {shard}; write the results to another folder")
    # The files a run replaces or removes, compared with the inputs by device and inode (a link counts).
    written = {
        path: "an output shard" if _SHARD.fullmatch(path.name) else "a temporary shard"
        for path in sorted(folder.iterdir())
        if _SHARD.fullmatch(path.name) or _TEMPORARY.fullmatch(path.name)
    }
    inputs = [Path(shard) for shard in shards]
    refuse_inputs_among(inputs, written)
    for path, role in written.items():
        if role == "an output shard":  # replaced or removed as the local engine replaces its output
            check_output_path(path, inputs)


def remove_shards_from(folder: Path, count: int) -> None:
    """Remove the ``part-NNNNN.parquet`` of ``folder`` numbered ``count`` and above (a longer, earlier run's)."""
    for old in folder.iterdir():
        match = _SHARD.fullmatch(old.name)
        if match and int(match.group(1)) >= count:
            old.unlink(missing_ok=True)
