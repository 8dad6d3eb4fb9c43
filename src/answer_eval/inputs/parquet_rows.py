"""Parquet files read a batch of rows at a time, each row's size read from Arrow before it becomes Python objects.

pyarrow decodes a batch of rows (a few thousand, fewer when the file's metadata says its rows are
large); the size each row would have as a JSON line is then computed from the Arrow arrays
(string lengths, list offsets: no Python object per cell), and a row over ``--max-line-bytes`` is
an invalid row that never becomes Python objects. The rows that are not are turned into Python
objects a few MiB at a time.

What Arrow itself holds is the batch and the pages it is decoded from. A page holds whole values
(a 600 MB cell is a 600 MB page) and is decoded at once, so before a row group is read its
pages' sizes are read from the file (the metadata, then the page headers: :func:`largest_page`):
a row group holding a page that decodes to more than
twice the limit is not read, each of its rows an invalid row saying why.

Values are read as they were written: a ``float32`` (or ``float16``) at its own precision
(``3.14``, not ``3.140000104904175``: the shortest decimal that is the same ``float32``), a NaN in
a floating-point column as a missing value (pandas writes a missing number so), and a string
column's text (a dictionary-encoded one's too, as pandas writes a category) through
:func:`answer_eval.inputs.converted_rows.read_cell`, as a CSV cell is (a JSON object or list written as
text is that value), but an empty string stays empty. A string column the file's metadata names
as JSON text (key :data:`JSON_COLUMNS_KEY`: the columns the package's Dask engine writes so, those
mixing types such as strings and mappings) holds one JSON value per cell, each read back as that
value, so an output shard of ``--engine dask`` reads the same in both engines.

Page sizes: the file's metadata gives each column chunk's decoded size;
where that is over the limit, the chunk's page headers (Thrift compact structs, one before each
page) say how large each page is, so that a row group whose reading would decode a page over the
limit is known before pyarrow touches it. This reader reads only what it needs of a header (the
page's decoded and stored sizes); anything it does not understand ends the look (``None``), and the
file is then read as pyarrow reads it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from answer_eval.errors import DuplicateKeyError, InputError
from answer_eval.inputs.converted_rows import AMBIGUOUS, OTHER, CellError, first_repeated, json_line, read_cell
from answer_eval.inputs.jsonl import decode_json, invalid_row

__all__ = ["JSON_COLUMNS_KEY", "json_columns", "parquet_lines", "parquet_schema"]


JSON_COLUMNS_KEY = b"answer_eval.json_columns"
"""Parquet schema metadata key: a JSON list of the string columns that hold one JSON value per cell."""
_JSON = "json"  # the kind of a cell of such a column

_BATCH_ROWS = 4096  # at most, per batch decoded
_BATCH_BYTES = 4 << 20  # a batch is made smaller when the metadata says its rows are larger than this / 4096
_NUMBER = 24  # the most characters a number, date or boolean takes in a JSON line
_ITEM = 2  # the ", " (or quotes) a list item or a string adds
_PAGE_FACTOR = 2  # a page decoding to more than this many times the row limit is not decoded


def _open(path: Path, name: str) -> Any:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise InputError('reading Parquet needs pyarrow: pip install "answer-eval-haystack[parquet]"', name) from None
    try:
        return pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own error types for a file that is not Parquet
        if "nested" in str(exc):
            raise InputError(f"the Parquet file's columns are nested too deeply to read: {exc}", name) from None
        raise InputError(f"not a Parquet file: {exc}", name) from None


def parquet_schema(path: Path, name: str) -> Any:
    """The Arrow schema of a Parquet file (with its metadata), from its footer; refused as by :func:`parquet_lines`.

    :raises InputError: For a file that is not Parquet, or whose columns are nested too deeply to read.
    """
    parquet = _open(path, name)
    with contextlib.closing(parquet):
        return parquet.schema_arrow


def _batch_rows(metadata: Any) -> int:
    """Rows per batch: up to :data:`_BATCH_ROWS`, fewer when the metadata's sizes say the rows are large."""
    largest = 1.0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        if row_group.num_rows:
            size = sum(row_group.column(i).total_uncompressed_size for i in range(row_group.num_columns))
            largest = max(largest, size / row_group.num_rows)
    return max(1, min(_BATCH_ROWS, int(_BATCH_BYTES // largest)))


def parquet_lines(path: Path, name: str, kinds: dict[str, str], max_line_bytes: int) -> Iterator[bytes]:
    """One JSON line per row of a Parquet file, a batch at a time (pyarrow; the ``parquet`` extra).

    ``kinds`` maps a field to how its text is read (:func:`read_cell`). A row longer than
    ``max_line_bytes`` as a JSON line (as Arrow's sizes tell) is an invalid row, never built;
    values JSON has no form for (dates, decimals, bytes) are written as their text. A column
    named twice, or a page that cannot be read, ends the file with an :class:`InputError`.
    """
    parquet = _open(path, name)
    repeated = first_repeated(parquet.schema_arrow.names)
    if repeated is not None:
        raise InputError(f"the column {repeated!r} appears twice; {AMBIGUOUS}", name)
    metadata = parquet.metadata
    kinds = {**kinds, **dict.fromkeys(json_columns(parquet.schema_arrow), _JSON)}
    number = 0
    with contextlib.closing(parquet):
        batch_rows = _batch_rows(metadata)
        for group in range(metadata.num_row_groups):
            too_large = _large_page(path, metadata.row_group(group), max_line_bytes)
            if too_large is not None:
                why = f"row group {group + 1:,} of the file holds {too_large}; {_PAGES_NOT_READ}"
                for _ in range(metadata.row_group(group).num_rows):
                    number += 1
                    yield invalid_row(why)
                continue
            try:
                for batch in parquet.iter_batches(batch_size=batch_rows, row_groups=[group]):
                    for line in _batch_lines(_readable(batch), kinds, max_line_bytes):
                        number += 1
                        yield line
            except Exception as exc:  # noqa: BLE001 - a damaged page or an unreadable value, in pyarrow's own types
                raise InputError(f"cannot read the Parquet file after row {number:,}: {exc}", name) from None


_PAGES_NOT_READ = (
    "pyarrow decodes a page whole, and any row of the group needs it, so none is read "
    "(raise --max-line-bytes to read them)"
)


def _large_page(path: Path, row_group: Any, limit: int) -> str | None:
    """What makes a row group unreadable within the limit: a page decoding to more than twice it (else ``None``).

    A column chunk's decoded size (metadata) is checked first; only a chunk over the page limit
    has its page headers read (:func:`largest_page`).
    """
    page_limit = _PAGE_FACTOR * limit
    columns = [row_group.column(i) for i in range(row_group.num_columns)]
    large = [column for column in columns if column.total_uncompressed_size > page_limit]
    if not large:
        return None
    with open(path, "rb") as handle:
        for column in large:
            size = largest_page(handle, column)
            if size is not None and size > page_limit:
                return (
                    f"a page of {size:,} bytes decoded in column {column.path_in_schema!r}, over "
                    f"{page_limit:,} (twice the limit)"
                )
    return None


def _batch_lines(batch: Any, kinds: dict[str, str], limit: int) -> Iterator[bytes]:
    """The lines of one batch: rows over ``limit`` as invalid rows, the others built a few MiB at a time."""
    sizes = row_sizes(batch)
    texts = _text_cells(batch, kinds)
    count = len(sizes)
    if count and int(sizes.max()) <= limit and int(sizes.sum()) <= _BATCH_BYTES:
        yield from _run_lines(batch, 0, count, texts)
        return
    start, total = 0, 0
    for index, size in enumerate(sizes.tolist()):
        if size > limit:
            yield from _run_lines(batch, start, index, texts)
            yield invalid_row(
                f"the row is longer than {limit:,} bytes, the limit (raise it with --max-line-bytes); "
                f"its cells hold about {size:,} bytes"
            )
            start, total = index + 1, 0
        elif total + size > _BATCH_BYTES:
            yield from _run_lines(batch, start, index, texts)
            start, total = index, size
        else:
            total += size
    yield from _run_lines(batch, start, count, texts)


def _run_lines(batch: Any, start: int, end: int, texts: dict[str, tuple[str, set[int]]]) -> Iterator[bytes]:
    if end <= start:
        return
    rows = batch.slice(start, end - start).to_pylist()
    for offset, row in enumerate(rows):
        rows[offset] = None  # each row goes once its line is made
        yield _row_line(row, start + offset, texts)


def _row_line(row: dict[str, Any], index: int, texts: dict[str, tuple[str, set[int]]]) -> bytes:
    for column, (kind, positions) in texts.items():
        if index in positions:
            try:
                row[column] = _json_cell(row[column]) if kind == _JSON else read_cell(row[column], kind, csv=False)
            except CellError as exc:
                return invalid_row(f"field {column!r}: {exc}")
    return json_line(row)


def json_columns(schema: Any) -> list[str]:
    """The string columns an Arrow schema's metadata names as JSON text (:data:`JSON_COLUMNS_KEY`), in schema order.

    A metadata value that is not a JSON list of names is ignored (the columns are then read as
    any string column is); a name that is no string column of the schema is not a JSON column.
    """
    import pyarrow as pa

    raw = (schema.metadata or {}).get(JSON_COLUMNS_KEY)
    if raw is None or len(raw) > _BATCH_BYTES:
        return []
    try:
        named = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    if not isinstance(named, list):
        return []
    wanted = {name for name in named if isinstance(name, str)}
    strings = (pa.types.is_string(field.type) or pa.types.is_large_string(field.type) for field in schema)
    return [field.name for field, string in zip(schema, strings, strict=True) if string and field.name in wanted]


def _json_cell(cell: str) -> Any:
    """One cell of a JSON column: the JSON value it holds (its size was checked with its row's)."""
    try:
        return decode_json(cell)
    except DuplicateKeyError as exc:
        raise CellError(f"a JSON object gives the key {exc.key!r} twice") from None
    except RecursionError:
        raise CellError("a JSON value nested too deeply to read") from None
    except ValueError as exc:
        raise CellError(f"not valid JSON in a column the file names as JSON text ({exc})") from None


def _text_cells(batch: Any, kinds: dict[str, str]) -> dict[str, tuple[str, set[int]]]:
    """For each string column, its kind and the rows whose text :func:`read_cell` may read as something else.

    Found with Arrow's string functions, so a batch of plain text costs no Python call per cell.
    (Only functions that take no Python scalar: converting one makes pyarrow import pandas, 40 MB.)
    """
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    found: dict[str, tuple[str, set[int]]] = {}
    for column, array in zip(batch.schema.names, batch.columns, strict=True):
        # A dictionary of strings (a pandas category) is text too: its values are looked at once each,
        # never decoded for the whole batch (a large value repeated would be copied into every row).
        values = array.dictionary if pa.types.is_dictionary(array.type) else array
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            continue
        kind = kinds.get(column, OTHER)
        if kind == _JSON:  # every cell holds JSON
            mask = pc.is_valid(values)
        else:
            mask = pc.or_(pc.starts_with(values, "["), pc.starts_with(values, "{"))
            if kind == OTHER:
                mask = pc.or_(mask, pc.match_substring_regex(values, pattern="^(?i)(true|false)$"))
        if values is not array:
            mask = pc.take(mask, array.indices)  # each row's value's answer (a null index gives null: no)
        positions = pc.indices_nonzero(pc.fill_null(mask, False)).to_pylist()
        if positions:
            found[column] = (kind, set(positions))
    return found


def _readable(batch: Any) -> Any:
    """The batch with its values as written: ``float32`` and ``float16`` at their own precision, NaN as missing.

    (A ``float16`` inside a list or struct is read as pyarrow reads it, widened.)
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = list(batch.columns)
    changed = False
    for index, array in enumerate(columns):
        if pa.types.is_float16(array.type):  # its shortest text (numpy's), as for float32; a null becomes NaN
            text = array.to_numpy(zero_copy_only=False).astype(str)
            array = pa.array(text, pa.string()).cast(pa.float64())
            changed = True
        kind = _without_float32(array.type)
        if kind is not None:  # float32 → its shortest text → the float64 nearest to it
            with contextlib.suppress(pa.ArrowException):  # a nesting Arrow cannot cast: read as it is
                array = array.cast(_without_float32(array.type, pa.string())).cast(kind)
                changed = True
        if pa.types.is_float64(array.type):
            nan = pc.is_nan(array)
            if pc.any(nan).as_py():
                array = pc.if_else(nan, pa.nulls(len(array), array.type), array)
                changed = True
        columns[index] = array
    return pa.RecordBatch.from_arrays(columns, schema=None, names=batch.schema.names) if changed else batch


def _without_float32(kind: Any, replacement: Any = None) -> Any:
    """``kind`` with each ``float32`` replaced (by ``float64`` or ``replacement``); ``None`` when it holds none."""
    import pyarrow as pa

    if pa.types.is_float32(kind):
        return replacement if replacement is not None else pa.float64()
    if pa.types.is_map(kind):
        key, item = (_without_float32(child, replacement) for child in (kind.key_type, kind.item_type))
        if key is None and item is None:
            return None
        return pa.map_(key or kind.key_type, item or kind.item_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        inner = _without_float32(kind.value_type, replacement)
        if inner is None:
            return None
        if pa.types.is_fixed_size_list(kind):
            return pa.list_(kind.value_field.with_type(inner), kind.list_size)
        maker = pa.large_list if pa.types.is_large_list(kind) else pa.list_
        return maker(kind.value_field.with_type(inner))
    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        inner_types = [_without_float32(field.type, replacement) for field in fields]
        if all(inner is None for inner in inner_types):
            return None
        pairs = zip(fields, inner_types, strict=True)
        return pa.struct([field if inner is None else field.with_type(inner) for field, inner in pairs])
    return None


def row_sizes(batch: Any) -> Any:
    """The bytes each row of a record batch takes as a JSON line, about (a numpy array), from Arrow's own sizes."""
    import numpy as np

    total = np.zeros(batch.num_rows, dtype=np.int64)
    for column, array in zip(batch.schema.names, batch.columns, strict=True):
        total += _sizes(array) + len(column.encode("utf-8")) + 4
    return total


def _offsets(array: Any, large: bool) -> Any:
    """The offsets of a string, binary, list or map array (one more than its length), read from its buffer."""
    import numpy as np

    kind = np.int64 if large else np.int32
    if not len(array):
        return np.zeros(1, dtype=kind)
    buffer = array.buffers()[1]
    return np.frombuffer(buffer, dtype=kind, count=len(array) + 1, offset=array.offset * np.dtype(kind).itemsize)


def _sizes(array: Any) -> Any:
    """The JSON size of each value of ``array``, about, from Arrow's buffers (recursing on the type's depth only)."""
    import numpy as np
    import pyarrow as pa

    kind = array.type
    count = len(array)
    if pa.types.is_dictionary(kind):
        values = _sizes(array.dictionary)
        if not len(values):
            return np.zeros(count, dtype=np.int64)
        width = kind.index_type.bit_width // 8
        code = ("u" if pa.types.is_unsigned_integer(kind.index_type) else "i") + str(width)
        indices = np.frombuffer(array.indices.buffers()[1], dtype=code, count=count, offset=array.offset * width)
        return values[np.clip(indices, 0, len(values) - 1)]  # a null's index may be anything
    if isinstance(kind, pa.ExtensionType):
        return _sizes(array.storage)
    if pa.types.is_string_view(kind) or pa.types.is_binary_view(kind):
        array = array.cast(pa.large_string() if pa.types.is_string_view(kind) else pa.large_binary())
        kind = array.type
    large = pa.types.is_large_string(kind) or pa.types.is_large_binary(kind) or pa.types.is_large_list(kind)
    if (
        pa.types.is_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_string(kind)
        or (pa.types.is_large_binary(kind))
    ):
        return np.diff(_offsets(array, large)).astype(np.int64) + _ITEM  # a null's offsets are equal: 0
    if pa.types.is_fixed_size_binary(kind):
        return np.full(count, kind.byte_width + _ITEM, dtype=np.int64)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        return _list_sizes(_offsets(array, large), _sizes(array.values))
    if pa.types.is_fixed_size_list(kind):
        width = kind.list_size
        values = _sizes(array.values)[array.offset * width : (array.offset + count) * width]
        return values.reshape(count, width).sum(axis=1) + width * _ITEM + _ITEM
    if pa.types.is_struct(kind):
        total = np.full(count, _ITEM, dtype=np.int64)
        for field, child in zip(kind, array.flatten(), strict=True):
            total += _sizes(child) + len(field.name.encode("utf-8")) + 4
        return total
    return np.full(count, _NUMBER, dtype=np.int64)


def _list_sizes(offsets: Any, values: Any) -> Any:
    """The sizes of lists given their offsets into ``values`` (whose sizes are given) and their brackets and commas."""
    import numpy as np

    sums = np.concatenate(([0], np.cumsum(values + _ITEM)))
    return sums[offsets[1:]] - sums[offsets[:-1]] + _ITEM


_WINDOW = 1 << 16  # bytes read for one header; a header with large statistics is read again, whole
_MOST = 1 << 24  # a header larger than this is not looked at
_DEPTH = 32  # the deepest nesting of structs a header is read to


class _Unreadable(Exception):
    """A header this reader does not understand."""


class _Compact:
    """Thrift's compact protocol over a bytes buffer: only what skipping a struct and reading an i32 need."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise _Unreadable("the header runs past the bytes read")
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise _Unreadable("a varint over 64 bits")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def skip(self, kind: int, depth: int) -> None:
        """Skip one value of compact type ``kind``."""
        if depth > _DEPTH:
            raise _Unreadable("values nested too deeply")
        if kind in (1, 2):  # a boolean held in its field's type
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.at += 8
        elif kind == 8:
            size = self.varint()  # read before the position is added to: reading it moves the position
            self.at += size
        elif kind in (9, 10):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(size):
                if head & 0x0F in (1, 2):  # a boolean in a list takes a byte
                    self.byte()
                else:
                    self.skip(head & 0x0F, depth + 1)
        elif kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            for _ in range(size):
                self.skip(types >> 4, depth + 1)
                self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            self.fields(depth + 1, lambda *_: False)
        else:
            raise _Unreadable(f"compact type {kind}")
        if self.at > len(self.data):
            raise _Unreadable("the header runs past the bytes read")

    def fields(self, depth: int, read: Any) -> None:
        """Read a struct's fields: ``read(field_id, kind)`` reads one it wants (returns True), the rest are skipped."""
        if depth > _DEPTH:
            raise _Unreadable("structs nested too deeply")
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            if not read(last, kind):
                self.skip(kind, depth)


def _page_header(data: bytes) -> tuple[int, int, int]:
    """``(decoded size, stored size, header length)`` of the page header at the start of ``data``."""
    reader = _Compact(data)
    sizes: dict[int, int] = {}

    def read(field: int, kind: int) -> bool:
        if field in (2, 3) and kind == 5:  # uncompressed_page_size, compressed_page_size (i32)
            sizes[field] = reader.zigzag()
            return True
        return False

    reader.fields(0, read)
    if set(sizes) != {2, 3} or min(sizes.values()) < 0:
        raise _Unreadable("a page header without its sizes")
    return sizes[2], sizes[3], reader.at


def _pages(handle: IO[bytes], start: int, length: int) -> Iterator[int]:
    """The decoded size of each page of the column chunk stored at ``start`` (``length`` bytes)."""
    at, end = start, start + length
    while at < end:
        window = _WINDOW
        while True:
            handle.seek(at)
            data = handle.read(min(window, end - at))
            try:
                decoded, stored, header = _page_header(data)
                break
            except _Unreadable:
                if len(data) < window or window >= _MOST:
                    raise
                window *= 16
        yield decoded
        at += header + stored


def largest_page(handle: IO[bytes], column: Any) -> int | None:
    """The largest decoded page of one column chunk (pyarrow's ``ColumnChunkMetaData``), or ``None`` if unknown.

    Read from the page headers in ``handle`` (the Parquet file, opened for reading); ``None`` when
    a header cannot be read (an encrypted file, a writer this reader does not know), so the caller
    falls back to reading the file as it is.
    """
    start = column.data_page_offset
    if column.has_dictionary_page and column.dictionary_page_offset:
        start = min(start, column.dictionary_page_offset)
    try:
        return max(_pages(handle, start, column.total_compressed_size), default=0)
    except (_Unreadable, OSError, ValueError):
        return None
