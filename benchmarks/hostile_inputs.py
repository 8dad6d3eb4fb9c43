"""Hostile inputs in every format: what ``answer-eval score`` does with them, its time and peak memory.

    python benchmarks/hostile_inputs.py [--cap-mb 2048] [--timeout 120] [--only NAME ...]

Each case is a file built in a temporary folder (the large ones compressed, or Parquet): a row
over ``--max-line-bytes`` (a 4 GB CSV cell, ten 60 MB cells, a 600 MB Parquet cell, a 128 MB
JSON-array string), a row nested deeper than JSON can be read, and ``/dev/zero`` read as CSV.
Where a case has a good row after the hostile one, it runs with ``--skip-invalid``: the reader
must move past the hostile row without holding it and score the good one. Each run is a
subprocess; its peak resident set size is read from the kernel (``wait4``'s ``ru_maxrss``), and
it is killed when its resident set passes ``--cap-mb`` (the issue's 2 GB) or it runs past
``--timeout``. Writes ``benchmarks/results/hostile_inputs.json``.

Run it against another copy of the package with ``PYTHONPATH=that/src`` (the subprocesses inherit
the environment) to compare before and after.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # tests.big_files

from tests.big_files import write_gzip  # noqa: E402 - a 4 GB cell costs this process a MB at a time

RESULTS = ROOT / "benchmarks" / "results" / "hostile_inputs.json"
GOOD = {"question": "capital of France?", "answers": ["Paris"], "prediction": "Paris"}
MB = 1_000_000


@dataclass
class Case:
    """One hostile input: how to build it, the arguments after the file, and what is expected."""

    name: str
    what: str
    build: Callable[..., Path]
    parameters: tuple[int, ...] = ()
    args: list[str] = field(default_factory=list)
    stdin: str | None = None


def _deep_json_array(folder: Path, depth: int) -> Path:
    path = folder / f"deep-{depth}.json"
    item = '{"prediction": "Paris", "answers": ' + "[" * depth + "]" * depth + "}"
    path.write_text("[" + item + ", " + json.dumps(GOOD) + "]", encoding="utf-8")
    return path


def _json_array_string(folder: Path, size: int) -> Path:
    path = folder / f"string-{size}.json.gz"
    head = b'[{"answers": ["Paris"], "prediction": "'
    tail = b'"}, ' + json.dumps(GOOD).encode() + b"]"
    return write_gzip(path, [(head, 1), (b"a" * MB, size // MB), (tail, 1)])


def _csv_cells(folder: Path, cells: int, size: int) -> Path:
    path = folder / f"cells-{cells}x{size}.csv.gz"
    header = ",".join(["question", "answers", "prediction", *(f"c{i}" for i in range(cells - 1))]) + "\n"
    pieces: list[tuple[bytes, int]] = [(header.encode(), 1), (b"q,Paris,", 1)]
    for index in range(cells):
        pieces += [(b"a" * MB, size // MB), (b"," if index < cells - 1 else b"\n", 1)]
    pieces.append((b"q,Paris,Paris" + b"," * (cells - 1) + b"\n", 1))
    return write_gzip(path, pieces)


def _jsonl_line(folder: Path, size: int) -> Path:
    path = folder / f"line-{size}.jsonl.gz"
    pieces = [(b'{"answers": ["Paris"], "prediction": "', 1), (b"a" * MB, size // MB), (b'"}\n', 1)]
    return write_gzip(path, [*pieces, ((json.dumps(GOOD) + "\n").encode(), 1)])


def _parquet_cell(folder: Path, size: int) -> Path:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    path = folder / f"cell-{size}.parquet"
    table = pa.table({"answers": [["Paris"], ["Paris"]], "prediction": ["a" * size, "Paris"]})
    # One row a row group: a row group holding a page over twice the limit is refused whole.
    pq.write_table(table, path, compression="zstd", compression_level=19, row_group_size=1)
    return path


def _dev_zero(_: Path) -> Path:
    return Path("-")


def _deep_parquet(folder: Path, depth: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / f"deep-{depth}.parquet"
    value: Any = "Paris"
    kind: Any = pa.string()
    for _ in range(depth):
        value, kind = [value], pa.list_(kind)
    table = pa.table({"answers": pa.array([value], kind), "prediction": ["Paris"]})
    pq.write_table(table, path)
    return path


def _deep_csv_cell(folder: Path, depth: int) -> Path:
    path = folder / f"deep-{depth}.csv"
    cell = "[" * depth + "]" * depth
    path.write_text(f"answers,prediction\n{cell},Paris\nParis,Paris\n", encoding="utf-8")
    return path


SKIP = ["--skip-invalid"]
CASES = [
    Case("json-depth-1000", "JSON array, an item nested 1,000 deep (2 KB)", _deep_json_array, (1_000,), SKIP),
    Case("json-depth-20000", "JSON array, an item nested 20,000 deep (40 KB)", _deep_json_array, (20_000,), SKIP),
    Case("json-depth-100000", "JSON array, an item nested 100,000 deep (200 KB)", _deep_json_array, (100_000,), SKIP),
    Case("csv-depth-100000", "CSV, an answers cell nested 100,000 deep (200 KB)", _deep_csv_cell, (100_000,), SKIP),
    Case("parquet-depth-200", "Parquet, a list column nested 200 deep", _deep_parquet, (200,), SKIP),
    Case("json-string-128mb", "JSON array, a 128 MB string item, default limit", _json_array_string, (128 * MB,), SKIP),
    Case(
        "json-string-128mb-raised",
        "JSON array, a 128 MB string item, --max-line-bytes 200000000 (read)",
        _json_array_string,
        (128 * MB,),
        [*SKIP, "--max-line-bytes", "200000000"],
    ),
    Case(
        "csv-gz-4gb-cell",
        "CSV (gzip), one 4 GB cell",
        _csv_cells,
        (
            1,
            4_000 * MB,
        ),
        SKIP,
    ),
    Case(
        "csv-10x60mb",
        "CSV (gzip), ten 60 MB cells in one row",
        _csv_cells,
        (
            10,
            60 * MB,
        ),
        SKIP,
    ),
    Case(
        "csv-60mb-cell",
        "CSV (gzip), one 60 MB cell (under the limit: read)",
        _csv_cells,
        (
            1,
            60 * MB,
        ),
        SKIP,
    ),
    Case(
        "csv-stdin-dev-zero",
        "/dev/zero as CSV on standard input",
        _dev_zero,
        (),
        ["--input-format", "csv"],
        "/dev/zero",
    ),
    Case("parquet-600mb-cell", "Parquet (zstd), one 600 MB cell", _parquet_cell, (600 * MB,), SKIP),
    Case(
        "parquet-60mb-cell", "Parquet (zstd), one 60 MB cell (under the limit: read)", _parquet_cell, (60 * MB,), SKIP
    ),
    Case("jsonl-gz-600mb-line", "JSONL (gzip), one 600 MB line (for comparison)", _jsonl_line, (600 * MB,), SKIP),
    Case(
        "jsonl-gz-128mb-line-raised",
        "JSONL (gzip), one 128 MB line, --max-line-bytes 200000000 (read; for comparison)",
        _jsonl_line,
        (128 * MB,),
        [*SKIP, "--max-line-bytes", "200000000"],
    ),
]


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def watch(
    process: subprocess.Popen[Any], start: float, cap_mb: int, timeout: float = float("inf")
) -> tuple[int, int, str | None]:
    """Wait for ``process``, killing it past ``cap_mb`` of resident set or ``timeout`` seconds after ``start``.

    Returns its wait status, its peak resident set in KB (from the kernel once it ends) and why it
    was killed (``None`` if it ended by itself).
    """
    peak_kb, stopped = 0, None
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            return status, max(peak_kb, usage.ru_maxrss), stopped
        peak_kb = max(peak_kb, _rss_kb(process.pid))
        elapsed = time.perf_counter() - start
        if stopped is None and (peak_kb > cap_mb * 1024 or elapsed > timeout):
            stopped = f"killed over {cap_mb} MB" if peak_kb > cap_mb * 1024 else f"killed after {timeout:.0f} s"
            process.send_signal(signal.SIGKILL)
        time.sleep(0.02)


def run_case(case: Case, folder: Path, cap_mb: int, timeout: float) -> dict[str, Any]:
    """Build ``case``, run ``answer-eval score`` on it in a subprocess, and measure it."""
    # Built in a process of its own: a child forked from a process that grew keeps its peak (ru_maxrss).
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        source = pool.apply(case.build, (folder, *case.parameters))
    output = folder / "out.jsonl"
    command = [sys.executable, "-m", "answer_eval", "score", str(source), "--output", str(output)]
    command += ["--no-progress", "--format", "json", *case.args]
    stdin = open(case.stdin, "rb") if case.stdin else subprocess.DEVNULL  # noqa: SIM115 - closed below
    start = time.perf_counter()
    out_file, err_file = folder / "stdout", folder / "stderr"  # files, not pipes: a long traceback fills a pipe
    with out_file.open("wb") as out_handle, err_file.open("wb") as err_handle:
        process = subprocess.Popen(command, stdin=stdin, stdout=out_handle, stderr=err_handle)
    status, peak_kb, stopped = watch(process, start, cap_mb, timeout)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    out, err = out_file.read_bytes(), err_file.read_bytes()
    if not isinstance(stdin, int):
        stdin.close()
    message = " ".join(err.decode("utf-8", "replace").split())[-300:]
    summary: dict[str, Any] = {}
    if process.returncode == 0:
        report = json.loads(out)
        summary = {"items": report.get("items"), "invalid_lines": report.get("invalid_lines")}
    output.unlink(missing_ok=True)
    if source.name != "-":
        source.unlink()
    return {
        "what": case.what,
        "exit": stopped or process.returncode,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak_kb / 1024),
        "scored": summary,
        "message": message,
    }


def main(argv: list[str] | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every case (or those named with ``--only``) and write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap-mb", type=int, default=2048, help="kill a run whose resident set passes this")
    parser.add_argument("--timeout", type=float, default=120.0, help="kill a run that takes longer (seconds)")
    parser.add_argument("--only", nargs="*", help="case names to run (default: all)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write the figures")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    log("| case | exit | seconds | peak RSS MB | scored | message |")
    log("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for case in CASES:
            if args.only and case.name not in args.only:
                continue
            result = figures[case.name] = run_case(case, Path(folder), args.cap_mb, args.timeout)
            shown = result["message"][-120:]
            log(
                f"| {case.name} | {result['exit']} | {result['seconds']:.1f} | {result['peak_rss_mb']} "
                f"| {result['scored'] or ''} | {shown} |"
            )
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
