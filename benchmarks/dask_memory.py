"""What ``--engine dask`` holds for hostile and ordinary shards: peak memory of a worker's task and the client's read.

    python benchmarks/dask_memory.py [--cap-mb 2048] [--rows 200000] [--only NAME ...]

A Dask worker runs, for each partition, :func:`answer_eval.dask.io.read_shard` (one shard read
as the local engine reads the file), then scores and writes it; the client reads the first
shard's columns (:func:`answer_eval.dask.io.shard_columns`) before a cluster starts. Each case runs
that code in a fresh process (no cluster: the same functions a worker calls) and reads its peak
resident set from the kernel (``wait4``'s ``ru_maxrss``), killing it past ``--cap-mb``:

- hostile shards, read with ``--skip-invalid`` (a good row after the hostile one): a 600 MB
  Parquet cell in a 20 KB file, a 60 MB one (under the limit: read), a Parquet column nested
  200 deep, a 600 MB JSONL line; and the client's read of a JSONL shard whose first line is 600 MB;
- one whole partition task (read, score with ``answer-eval score``'s evaluator, write) of
  ``--rows`` rows of the bundled NQ answers, from Parquet and from JSONL, with its CPU seconds.

Run it against another copy of the package with ``PYTHONPATH=that/src`` (the subprocesses inherit
the environment) to compare before and after. Writes ``benchmarks/results/dask_memory.json``.
See docs/dask.md ("Limits") and docs/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hostile_inputs  # noqa: E402

RESULTS = HERE / "results" / "dask_memory.json"
NQ = HERE.parent / "examples" / "data" / "nq301_davinci_zeroshot.jsonl"
MB = hostile_inputs.MB


def _jsonl_line(folder: Path, size: int) -> Path:
    """A plain JSONL shard: a ``size``-byte line, then a good one (written a MB at a time)."""
    path = folder / f"line-{size}.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"answers": ["Paris"], "prediction": "')
        for _ in range(size // MB):
            handle.write(b"a" * MB)
        handle.write(b'"}\n' + (json.dumps(hostile_inputs.GOOD) + "\n").encode())
    return path


def _nq_rows(rows: int) -> list[dict[str, Any]]:
    lines = NQ.read_text(encoding="utf-8").splitlines()
    return [json.loads(lines[index % len(lines)]) for index in range(rows)]


def _nq_parquet(folder: Path, rows: int) -> Path:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    path = folder / f"nq-{rows}.parquet"
    pq.write_table(pa.Table.from_pylist(_nq_rows(rows)), path)
    return path


def _nq_jsonl(folder: Path, rows: int) -> Path:
    path = folder / f"nq-{rows}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _nq_rows(rows)), encoding="utf-8")
    return path


_READ = """
import json, sys
from answer_eval.dask.io import read_shard
try:
    frame = read_shard(sys.argv[1], skip_invalid=True)
    print(json.dumps({"rows": len(frame), "invalid": frame.attrs["answer_eval_invalid_lines"]}))
except ValueError as exc:
    print(json.dumps({"error": str(exc)[-160:]}))
"""
_COLUMNS = """
import json, sys
from answer_eval.dask.io import shard_columns
print(json.dumps({"columns": shard_columns(sys.argv[1])}))
"""
_PARTITION = """
import json, sys, tempfile, time
from answer_eval.dask.io import read_shard
from answer_eval.dask.partition import make_plan, score_partition, write_partition
from answer_eval.evaluators.registry import build
plan = make_plan(build("contains", {})).to_json()
start = time.process_time()
try:
    part = read_shard(sys.argv[1], text_fields={"prediction"}, value_fields={"answers"})
except TypeError:  # the package before read_shard read as the local engine
    part = read_shard(sys.argv[1])
scored = score_partition(part, plan)
with tempfile.TemporaryDirectory() as out:
    write_partition(scored, plan, out, 0)
print(json.dumps({"rows": len(scored), "cpu_seconds": round(time.process_time() - start, 2)}))
"""

# name -> (what, how the shard is built, its parameters, the code run on it)
Build = Callable[..., Path]
CASES: dict[str, tuple[str, Build, tuple[int, ...], str]] = {
    "parquet-600mb-cell": (
        "worker: Parquet (zstd, 20 KB), one 600 MB cell",
        hostile_inputs._parquet_cell,
        (600 * MB,),
        _READ,
    ),
    "parquet-60mb-cell": (
        "worker: Parquet (zstd), one 60 MB cell (read)",
        hostile_inputs._parquet_cell,
        (60 * MB,),
        _READ,
    ),
    "parquet-depth-200": (
        "worker: Parquet, a list column nested 200 deep",
        hostile_inputs._deep_parquet,
        (200,),
        _READ,
    ),
    "jsonl-600mb-line": ("worker: JSONL, one 600 MB line", _jsonl_line, (600 * MB,), _READ),
    "client-jsonl-600mb-first-line": (
        "client: the columns of a JSONL shard whose first line is 600 MB",
        _jsonl_line,
        (600 * MB,),
        _COLUMNS,
    ),
}


def run_case(what: str, source: Path, code: str, cap_mb: int) -> dict[str, Any]:
    """Run ``code`` on ``source`` in a fresh process: its peak resident set, time and printed result."""
    output = source.parent / "stdout"
    start = time.perf_counter()
    with output.open("wb") as handle:
        process = subprocess.Popen([sys.executable, "-c", code, str(source)], stdout=handle, stderr=subprocess.STDOUT)
    status, peak_kb, stopped = hostile_inputs.watch(process, start, cap_mb)
    lines = output.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return {
        "what": what,
        "exit": stopped or os.waitstatus_to_exitcode(status),
        "seconds": round(time.perf_counter() - start, 2),
        "peak_rss_mb": round(peak_kb / 1024),
        "result": lines[-1][-300:] if lines else "",
    }


def main(argv: list[str] | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every case (or those named with ``--only``) and write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap-mb", type=int, default=2048, help="kill a run whose resident set passes this")
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the whole-partition cases")
    parser.add_argument("--only", nargs="*", help="case names to run (default: all)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write the figures")
    args = parser.parse_args(argv)
    cases = dict(CASES)
    cases[f"partition-parquet-{args.rows}"] = (
        "worker: a partition task, NQ rows from Parquet",
        _nq_parquet,
        (args.rows,),
        _PARTITION,
    )
    cases[f"partition-jsonl-{args.rows}"] = (
        "worker: a partition task, NQ rows from JSONL",
        _nq_jsonl,
        (args.rows,),
        _PARTITION,
    )
    figures: dict[str, Any] = {}
    log("| case | exit | seconds | peak RSS MB | result |")
    log("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for name, (what, build, parameters, code) in cases.items():
            if args.only and name not in args.only:
                continue
            # Built in a process of its own: a child forked from a process that grew keeps its peak.
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                source = pool.apply(build, (Path(folder), *parameters))
            result = figures[name] = run_case(what, source, code, args.cap_mb)
            source.unlink()
            shown = f"{result['seconds']:.1f} | {result['peak_rss_mb']} | {result['result']}"
            log(f"| {name} | {result['exit']} | {shown} |")
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
