"""Input limits that hold in every format: nesting too deep to read, and ``--max-line-bytes`` bounding memory.

The command line runs on real files. A row over the limit must be found before it is built: the
messages checked here are the converters' own (the row loop's check of the built line says "the
line is longer"). The hostile files run in process with a 64 MiB cell under tracemalloc, and, in the
slow tier, in a process of their own under an address-space limit (``RLIMIT_AS`` of 1 GiB: the
command needs about 330 MB of it with pyarrow loaded) with a cell of 1.5 GB, which the command can
only pass by never holding it. Time and memory figures are in ``benchmarks/hostile_inputs.py``.
"""

from __future__ import annotations

import gzip
import json
import resource
import subprocess
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tests.big_files import write_gzip
from tests.cli_runs import cli, cli_process

GOOD = {"question": "capital of France?", "answers": ["Paris"], "prediction": "Paris"}
ADDRESS_SPACE = 1 << 30


def _summary(done: subprocess.CompletedProcess[str]) -> tuple[int, int]:
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    return report["items"], report["invalid_lines"]


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _bounded(*args: Any, stdin: Any = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``answer-eval ARGS`` in a process of its own with at most 1 GiB of address space."""
    return cli_process(*args, stdin=stdin, timeout=timeout, preexec_fn=_limit_address_space)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_data_nested_too_deeply_is_an_invalid_row_in_every_format(tmp_path):
    # A JSON array item 1,000 deep raised RecursionError out of the reader (a traceback, exit 1),
    # and 100,000 deep took gigabytes; a CSV cell of JSON that deep raised RecursionError too.
    good = json.dumps(GOOD)
    for depth in (1_000, 100_000):
        array = tmp_path / f"deep-{depth}.json"
        array.write_text(f'[{{"prediction": "Paris", "answers": {_deep(depth)}}}, {good}]', encoding="utf-8")
        done = cli("score", array)
        assert done.returncode == 2, done.stderr
        assert f"{array}:1: not valid JSON here: arrays or objects nested too deeply to read" in done.stderr
        assert _summary(cli("score", array, "--skip-invalid", "--format", "json")) == (1, 1)
    table = tmp_path / "deep.csv"
    table.write_text(f"answers,prediction,meta\nParis,Paris,{_deep(100_000)}\nParis,Paris,\n", encoding="utf-8")
    done = cli("score", table)
    assert done.returncode == 2, done.stderr
    assert f"{table}:2: field 'meta': a JSON value nested too deeply to read" in done.stderr
    assert _summary(cli("score", table, "--skip-invalid", "--format", "json")) == (1, 1)
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    value: Any = "Paris"
    kind: Any = pa.string()
    for _ in range(200):
        value, kind = [value], pa.list_(kind)
    parquet = tmp_path / "deep.parquet"
    pq.write_table(pa.table({"answers": pa.array([value], kind), "prediction": ["Paris"]}), parquet)
    done = cli("score", parquet)
    assert done.returncode == 2
    assert f"{parquet}: the Parquet file's columns are nested too deeply to read" in done.stderr


def test_a_row_over_the_line_limit_is_refused_before_it_is_built_in_every_format(tmp_path):
    big = "a" * 300_000
    rows = [{"answers": ["Paris"], "prediction": big}, GOOD]
    array = tmp_path / "rows.json"
    array.write_text(json.dumps(rows), encoding="utf-8")
    table = tmp_path / "rows.csv"
    table.write_text(f"answers,prediction\nParis,{big}\nParis,Paris\n", encoding="utf-8")
    tsv = tmp_path / "rows.tsv"
    tsv.write_text(f"answers\tprediction\nParis\t{big}\nParis\tParis\n", encoding="utf-8")
    quoted = tmp_path / "lines.csv"  # one cell of 300,000 short lines: found by its quotes, counted by its lines
    quoted.write_text('answers,prediction\nParis,"' + "a\n" * 150_000 + '"\nParis,Paris\n', encoding="utf-8")
    expected = {
        array: f"{array}:1: the item is longer than 100,000 bytes, the limit",
        table: f"{table}:2: the row is longer than 100,000 bytes, the limit",
        tsv: f"{tsv}:2: the row is longer than 100,000 bytes, the limit",
        quoted: f"{quoted}:2: the row is longer than 100,000 bytes, the limit",
    }
    for source, message in expected.items():
        done = cli("score", source, "--max-line-bytes", "100000")
        assert done.returncode == 2
        assert message in done.stderr, done.stderr
        skipped = cli("score", source, "--max-line-bytes", "100000", "--skip-invalid", "--format", "json")
        assert _summary(skipped) == (1, 1)
    output = tmp_path / "out.jsonl"
    assert cli("score", quoted, "--max-line-bytes", "100000", "--skip-invalid", "-o", output).returncode == 0
    assert json.loads(output.read_text(encoding="utf-8"))["prediction"] == "Paris"
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    parquet = tmp_path / "rows.parquet"
    # A row over the limit, found from Arrow's sizes (its page is not over twice the limit)...
    pq.write_table(pa.Table.from_pylist([{"answers": ["Paris"], "prediction": "a" * 150_000}, GOOD]), parquet)
    done = cli("score", parquet, "--max-line-bytes", "100000")
    assert done.returncode == 2
    assert f"{parquet}:1: the row is longer than 100,000 bytes, the limit" in done.stderr
    assert "its cells hold about 150,0" in done.stderr
    assert _summary(cli("score", parquet, "--max-line-bytes", "100000", "--skip-invalid", "--format", "json")) == (1, 1)
    # ... and a page over twice the limit, found from the page headers: its row group is not decoded.
    pq.write_table(pa.Table.from_pylist(rows), parquet, row_group_size=1)
    done = cli("score", parquet, "--max-line-bytes", "100000", "--skip-invalid", "--format", "json")
    assert _summary(done) == (1, 1)
    done = cli("score", parquet, "--max-line-bytes", "100000")
    assert f"{parquet}:1: row group 1 of the file holds a page of 300,0" in done.stderr
    assert "decoded in column 'prediction', over 200,000 (twice the limit)" in done.stderr


def _cells_of(tmp_path: Path, mebibytes: int) -> tuple[Path, Path]:
    """A gzipped CSV and a gzipped JSON array, each a row with a cell of ``mebibytes`` MiB, then a good row."""
    block = b"a" * (1 << 20)
    table = write_gzip(
        tmp_path / "cell.csv.gz", [(b"answers,prediction\nParis,", 1), (block, mebibytes), (b"\nParis,Paris\n", 1)]
    )
    good = b'"}, ' + json.dumps(GOOD).encode() + b"]"
    array = write_gzip(
        tmp_path / "cell.json.gz", [(b'[{"answers": ["Paris"], "prediction": "', 1), (block, mebibytes), (good, 1)]
    )
    return table, array


def test_a_cell_far_over_the_limit_is_read_past_without_holding_it(tmp_path):
    # The cheap twin of the test below: a 64 MiB cell against a 1 MB line limit, in this process, where
    # tracemalloc sees every buffer the readers allocate. Holding the cell once would take 64 MiB.
    for source in _cells_of(tmp_path, 64):
        tracemalloc.start()
        try:
            done = cli("score", source, "--max-line-bytes", 1_000_000, "--skip-invalid", "--format", "json")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert _summary(done) == (1, 1)
        assert peak < 16 << 20, f"{source.name}: {peak:,} bytes at the peak"
    # /dev/zero as a CSV: a header that never ends is refused once it passes the limit.
    with open("/dev/zero", "rb") as zeros:
        done = cli("score", "-", "--input-format", "csv", "--max-line-bytes", 1_000_000, stdin=zeros, timeout=120)
    assert done.returncode == 2
    assert "<stdin>:1: the header row is longer than 1,000,000 bytes, the limit" in done.stderr


@pytest.mark.slow
@pytest.mark.subprocess  # the address-space limit is the run's own
def test_a_cell_of_one_and_a_half_gigabytes_is_read_past_in_bounded_memory(tmp_path):
    # Before, CSV read a whole physical line first and a JSON array string item cost about five
    # times its size: under 1 GiB of address space both ended in MemoryError (a traceback, exit 1).
    for source in _cells_of(tmp_path, 1536):
        assert _summary(_bounded("score", source, "--skip-invalid", "--format", "json")) == (1, 1)
    # /dev/zero as a CSV: a header that never ends is refused once it passes the limit.
    with open("/dev/zero", "rb") as zeros:
        done = _bounded("score", "-", "--input-format", "csv", stdin=zeros, timeout=120)
    assert done.returncode == 2
    assert "<stdin>:1: the header row is longer than 67,108,864 bytes, the limit" in done.stderr


def test_raising_max_line_bytes_raises_the_csv_cell_limit(tmp_path):
    # The csv module's own cell limit was set to 64 MiB whatever --max-line-bytes said, so a
    # 70 MB cell was "not a valid CSV row: field larger than field limit" even under a raised limit.
    source = tmp_path / "long.csv.gz"
    with gzip.open(source, "wb", compresslevel=1) as handle:
        handle.write(b"answers,prediction,context\nParis,Paris," + b"a" * 70_000_000 + b"\n")
    done = cli("score", source, "--max-line-bytes", "100000000", "--format", "json")
    assert _summary(done) == (1, 0)
    assert json.loads(done.stdout)["correct"] == 1
