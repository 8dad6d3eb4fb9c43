"""The shards of the Dask engine: JSONL or Parquet files in, one Parquet file per partition out.

A shard is read into a pandas frame whose every column holds plain Python values (dtype
``object``: lists stay lists, mappings stay mappings, ints stay ints), as ``json.loads`` gives
them for JSONL and as ``pyarrow``'s ``to_pylist`` gives them for Parquet, so an evaluator sees
exactly what the local commands see. A key that a JSONL row lacks (but other rows of the shard
have) is ``pandas.NA``; a JSON ``null`` is ``None``. The index numbers the rows as a person
would find them: the line number in a JSONL file (index name ``line``), the row number from 1
in a Parquet file (``row``). The frame's ``attrs`` keep the shard's path (:data:`SOURCE`), the
lines skipped as invalid (:data:`INVALID_LINES`) and, for Parquet, each column's Arrow type
(:data:`ARROW_TYPES`), so errors name the shard, the line and the column.

Written shards keep every column Parquet can hold as it is (strings, numbers, booleans, lists
of them); a column mixing types, or holding mappings, is written as JSON text and named in the
file's metadata (key ``answer_eval.json_columns``), and :func:`read_shard` decodes it again.
Needs the ``dask`` extra (pandas and pyarrow come with it); imported only by the Dask engine.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_eval.engine.files import (
    DEFAULT_MAX_LINE_BYTES,
    InputError,
    iter_jsonl,
    parse_jsonl_line,
    write_bytes_atomically,
)

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    import pyarrow as pa  # type: ignore[import-untyped]

__all__ = [
    "ARROW_TYPES",
    "INVALID_LINES",
    "JSON_COLUMNS_KEY",
    "SHARD_SUFFIXES",
    "SOURCE",
    "expand_shards",
    "read_shard",
    "shard_columns",
    "shard_name",
    "to_arrow",
    "write_shard",
]

SHARD_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
"""File endings read as shards, and their format."""
SOURCE = "answer_eval_source"
"""``DataFrame.attrs`` key: the shard a partition was read from."""
INVALID_LINES = "answer_eval_invalid_lines"
"""``DataFrame.attrs`` key: lines or rows of the partition skipped as invalid."""
ARROW_TYPES = "answer_eval_arrow_types"
"""``DataFrame.attrs`` key: column name to its Arrow type in a Parquet shard (``"json"`` for JSON text)."""
JSON_COLUMNS_KEY = b"answer_eval.json_columns"
"""Parquet metadata key: the columns written as JSON text."""


def expand_shards(patterns: Sequence[str]) -> list[str]:
    """The shard files named by ``patterns`` (paths or glob patterns), each once, in order.

    A pattern's matches are sorted; the patterns keep the order given.

    :raises InputError: For a pattern that matches nothing, a path that is not a file, or a file
        that is neither JSONL (``.jsonl``, ``.ndjson``) nor Parquet (``.parquet``, ``.pq``).
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
            if path.suffix.lower() not in SHARD_SUFFIXES:
                raise InputError(f"shard {path} is neither JSONL (.jsonl, .ndjson) nor Parquet (.parquet, .pq)")
            found[match] = None
    return list(found)


def _format(path: str | os.PathLike[str]) -> str:
    return SHARD_SUFFIXES.get(Path(path).suffix.lower(), "jsonl")


def shard_name(index: int) -> str:
    """The file name of output partition ``index``: ``part-00000.parquet``."""
    return f"part-{index:05d}.parquet"


def shard_columns(path: str | os.PathLike[str]) -> list[str]:
    """The columns of a shard, read cheaply: the Parquet schema, or the keys of a JSONL file's first row."""
    if _format(path) == "parquet":
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        return list(pq.read_schema(path).names)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            row = parse_jsonl_line(raw, number, path)
            if row is not None:
                return list(row) if isinstance(row, dict) else []
    return []


def read_shard(
    path: str | os.PathLike[str], skip_invalid: bool = False, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> pd.DataFrame:
    """Read one JSONL or Parquet shard into a frame of Python values (see the module docstring).

    :raises InputError: For a malformed JSONL line (naming the file and line), unless
        ``skip_invalid``, which skips it and counts it in ``attrs[INVALID_LINES]``; a line longer
        than ``max_line_bytes`` is malformed, as in :func:`answer_eval.engine.files.iter_jsonl`.
    """
    if _format(path) == "parquet":
        return _read_parquet(path)
    return _read_jsonl(path, skip_invalid, max_line_bytes)


def _frame(columns: dict[str, list[Any]], index: list[int] | range, index_name: str) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(columns, dtype=object, index=pd.Index(index, name=index_name, dtype="int64"))
    if not columns:  # a frame with no columns takes no index length from them
        frame = pd.DataFrame(index=pd.Index(index, name=index_name, dtype="int64"))
    return frame


def _read_jsonl(path: str | os.PathLike[str], skip_invalid: bool, max_line_bytes: int) -> pd.DataFrame:
    import pandas as pd

    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    invalid = 0
    for number, row in iter_jsonl(path, max_line_bytes=max_line_bytes):
        if isinstance(row, InputError):
            if not skip_invalid:
                raise row
            invalid += 1
            continue
        rows.append(row)
        lines.append(number)
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    missing = pd.NA  # a key this row lacks, unlike a JSON null (None)
    columns = {name: [row.get(name, missing) for row in rows] for name in names}
    frame = _frame(columns, lines, "line")
    frame.attrs.update({SOURCE: str(path), INVALID_LINES: invalid})
    return frame


def _read_parquet(path: str | os.PathLike[str]) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"not a readable Parquet file: {exc}", path) from None
    metadata = table.schema.metadata or {}
    encoded = set(json.loads(metadata[JSON_COLUMNS_KEY])) if JSON_COLUMNS_KEY in metadata else set()
    columns: dict[str, list[Any]] = {}
    types: dict[str, str] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        values = column.to_pylist()
        if name in encoded:
            values = [None if value is None else json.loads(value) for value in values]
        columns[name] = values
        types[name] = "json" if name in encoded else str(column.type)
    frame = _frame(columns, range(1, table.num_rows + 1), "row")
    frame.attrs.update({SOURCE: str(path), INVALID_LINES: 0, ARROW_TYPES: types})
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
    if array is not None and _plain_type(array.type):
        return array, False
    text = [None if value is None else json.dumps(value, ensure_ascii=False, default=_json_default) for value in values]
    return pa.array(text, pa.string()), True


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
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(to_arrow(frame), sink)
    write_bytes_atomically(target, sink.getvalue().to_pybytes())
