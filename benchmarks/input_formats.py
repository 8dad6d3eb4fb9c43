"""Every input format streams: ``answer-eval score`` on the same rows in each format, peak RSS and time.

    python benchmarks/input_formats.py [--lines 1000000]     (about 10 minutes on 2 cores at 1M lines)

The rows are the bundled example answers with a text prediction, cycled, written once
as JSONL and converted to each format; each run is a subprocess with ``--output`` to a file and
its peak resident set size read from the kernel (``ru_maxrss`` of the child). The verdicts of
every format are checked equal to JSONL's. Writes ``benchmarks/results/input_formats.json``.
What each format does with hostile rows (over ``--max-line-bytes``, nested too deeply) is measured
by ``benchmarks/hostile_inputs.py``.
"""

from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import json
import lzma
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "data" / "rag_answers.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "input_formats.json"
MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
with open(sys.argv[1], "rb") as stdin:
    done = subprocess.run(sys.argv[2:], stdin=stdin, capture_output=True, text=True)
print(done.returncode, time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.stderr.write(done.stderr)
"""


def _rows(lines: int) -> list[str]:
    # Rows whose prediction is a string: every format (Parquet's typed columns too) holds them as they are.
    base = [
        line
        for line in EXAMPLE.read_text(encoding="utf-8").splitlines()
        if isinstance(json.loads(line)["prediction"], str)
    ]
    return [base[index % len(base)] for index in range(lines)]


def _table(path: Path, lines: list[str], delimiter: str) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        table = csv.writer(handle, delimiter=delimiter)
        table.writerow(["question", "answers", "prediction"])
        for line in lines:
            row = json.loads(line)
            prediction = row["prediction"]
            cell = prediction if isinstance(prediction, str) or prediction is None else json.dumps(prediction)
            table.writerow([row["question"], json.dumps(row["answers"]), cell])


def _write_inputs(folder: Path, lines: list[str]) -> dict[str, tuple[Path, list[str]]]:
    plain = folder / "rows.jsonl"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = plain.read_bytes()
    array = folder / "rows.json"
    with array.open("w", encoding="utf-8") as handle:  # written a row at a time: no whole list in memory
        handle.write("[\n" + ",\n".join(lines) + "\n]\n")
    inputs: dict[str, tuple[Path, list[str]]] = {"jsonl": (plain, []), "json array": (array, [])}
    for name, opener in (("jsonl.gz", gzip.open), ("jsonl.bz2", bz2.open), ("jsonl.xz", lzma.open)):
        path = folder / f"rows.{name}"
        with opener(path, "wb") as handle:
            handle.write(data)
        inputs[name] = (path, [])
    for name, delimiter in (("csv", ","), ("tsv", "\t")):
        path = folder / f"rows.{name}"
        _table(path, lines, delimiter)
        inputs[name] = (path, [])
    inputs["stdin (jsonl)"] = (plain, ["-"])
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return inputs
    path = folder / "rows.parquet"
    writer = None
    for start in range(0, len(lines), 100_000):  # row groups of 100,000 rows
        rows = [json.loads(line) for line in lines[start : start + 100_000]]
        for row in rows:
            row["answers"] = [str(answer) for answer in row["answers"]]
            prediction = row["prediction"]
            row["prediction"] = (
                prediction if isinstance(prediction, str) or prediction is None else json.dumps(prediction)
            )
        table = pa.Table.from_pylist(rows)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    if writer is not None:
        writer.close()
    inputs["parquet"] = (path, [])
    return inputs


def _run(path: Path, stdin_args: list[str], output: Path) -> tuple[float, float, list[Any]]:
    source = stdin_args[0] if stdin_args else str(path)
    command = [sys.executable, "-m", "answer_eval", "score", source, "--output", str(output), "--no-progress"]
    stdin = str(path) if stdin_args else "/dev/null"
    done = subprocess.run([sys.executable, "-c", MEASURE, stdin, *command], capture_output=True, text=True, check=True)
    code, seconds, rss_kb = done.stdout.split()
    if code != "0":
        raise RuntimeError(done.stderr)
    verdicts = [json.loads(line)["correct"] for line in output.open(encoding="utf-8")]
    output.unlink()
    return float(seconds), int(rss_kb) / 1024, verdicts


def main(argv: list[str] | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"lines": args.lines, "formats": {}}
    with tempfile.TemporaryDirectory() as folder:
        inputs = _write_inputs(Path(folder), _rows(args.lines))
        reference = None
        log(f"answer-eval score on {args.lines:,} rows, --output to a file")
        log("| format | file MB | seconds | rows/s | peak RSS MB | verdicts as JSONL's |")
        log("| --- | --- | --- | --- | --- | --- |")
        for name, (path, stdin_args) in inputs.items():
            seconds, rss, verdicts = _run(path, stdin_args, Path(folder) / "out.jsonl")
            reference = verdicts if reference is None else reference
            size = path.stat().st_size / 1e6
            same = verdicts == reference
            figures["formats"][name] = {"file_mb": size, "seconds": seconds, "peak_rss_mb": rss, "same_verdicts": same}
            log(f"| {name} | {size:.0f} | {seconds:.1f} | {args.lines / seconds:,.0f} | {rss:.0f} | {same} |")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
