"""Dask scale-out benchmark: `answer-eval score --engine dask` with 1 and 2 workers against the local path.

    python benchmarks/dask_scale.py                 # 1,000,000 rows (6-9 minutes on 2 cores)
    python benchmarks/dask_scale.py --rows 20000    # a smoke run

The real OpenQA-eval answers (benchmarks/data, as in benchmarks/run.py) are replicated to
``--rows`` rows and written to a temporary folder three ways: one JSONL file (the local path's
input), ``--shards`` JSONL shards and as many Parquet shards (the Dask path's inputs). Each run is
the real command line in a fresh process, timed by the wall clock from start to exit, so the
figures include interpreter start-up, starting and closing the local cluster (Dask runs), reading
the input and writing the output (a JSONL file locally, one Parquet file per shard on Dask); the
CPU seconds of each run's process tree are recorded too (see :func:`run`):

- local ``--jobs 1`` and ``--jobs 2`` on the JSONL file;
- ``--engine dask --workers 1`` and ``--workers 2`` on the JSONL shards and on the Parquet shards.

Every run's summary must equal the local ``--jobs 1`` summary and the Dask runs' verdict columns
must equal the local output's, row by row (checked, printed). Prints a markdown table and writes
the figures to benchmarks/results/dask_scale.json. See docs/dask.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpora  # noqa: E402

RESULTS = HERE / "results" / "dask_scale.json"
VERDICTS = ("correct", "failure_kind", "outcome")


def write_inputs(folder: Path, rows: int, shards: int) -> tuple[Path, list[Path], list[Path]]:
    """The replicated rows as one JSONL file, as ``shards`` JSONL shards and as ``shards`` Parquet shards."""
    import pandas as pd

    from answer_eval.dask.io import write_shard

    real = corpora.real_rows()
    records = [
        {"id": index, "question": row["question"], "answers": row["answer"], "prediction": row["prediction"]}
        for index, row in ((index, real[index % len(real)]) for index in range(rows))
    ]
    whole = folder / "answers.jsonl"
    (folder / "jsonl").mkdir()
    (folder / "parquet").mkdir()
    size = -(-rows // shards)
    jsonl, parquet = [], []
    with open(whole, "w", encoding="utf-8") as handle:
        for index in range(shards):
            chunk = records[index * size : (index + 1) * size]
            text = "".join(json.dumps(record) + "\n" for record in chunk)
            handle.write(text)
            jsonl.append(folder / "jsonl" / f"shard-{index:03d}.jsonl")
            jsonl[-1].write_text(text, encoding="utf-8")
            parquet.append(folder / "parquet" / f"shard-{index:03d}.parquet")
            # Predictions mix strings and lists of strings: written as JSON text (see answer_eval.dask.io).
            write_shard(pd.DataFrame(chunk, dtype=object), parquet[-1])
    return whole, jsonl, parquet


def run(arguments: list[str]) -> tuple[float, float, dict[str, Any]]:
    """Wall seconds and CPU seconds of one ``answer-eval`` run in a fresh process, and its JSON summary.

    The CPU seconds (user + system) are those of the command and every process it started and
    waited for (its ``--jobs`` workers, its local cluster's worker processes): the work done, which
    another load on a shared machine does not inflate the way it inflates the wall time.
    """
    command = [sys.executable, "-m", "answer_eval", *arguments, "--format", "json", "--no-progress"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return seconds, cpu, json.loads(done.stdout)


def local_verdicts(path: Path) -> list[tuple[Any, ...]]:
    """The verdict columns of the local output file, row by row."""
    with open(path, encoding="utf-8") as handle:
        return [tuple(row[name] for name in VERDICTS) for row in map(json.loads, handle)]


def dask_verdicts(folder: Path) -> list[tuple[Any, ...]]:
    """The verdict columns of the Dask output shards, row by row in shard order."""
    import pyarrow.parquet as pq

    rows: list[tuple[Any, ...]] = []
    for shard in sorted(folder.glob("part-*.parquet")):
        table = pq.read_table(shard, columns=list(VERDICTS))
        rows.extend(zip(*(table.column(name).to_pylist() for name in VERDICTS), strict=True))
    return rows


def same(summary: dict[str, Any], reference: dict[str, Any]) -> bool:
    """Whether two summaries are equal but for the input and output names."""

    def strip(data: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in data.items() if key not in ("path", "output")}

    return strip(summary) == strip(reference)


def main(argv: list[str] | None = None) -> int:
    """Generate the inputs, time every run, check the results, print the table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows to score (default: %(default)s)")
    parser.add_argument("--shards", type=int, default=20, help="input shards = partitions (default: %(default)s)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results (default: %(default)s)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        whole, jsonl, parquet = write_inputs(folder, args.rows, args.shards)
        sizes = {
            "jsonl_mb": whole.stat().st_size / 1e6,
            "parquet_mb": sum(path.stat().st_size for path in parquet) / 1e6,
        }
        runs: dict[str, list[str]] = {
            "local --jobs 1": ["score", str(whole), "--jobs", "1", "--output", str(folder / "local1.jsonl")],
            "local --jobs 2": ["score", str(whole), "--jobs", "2", "--output", str(folder / "local2.jsonl")],
        }
        for label, shards in (("JSONL", jsonl), ("Parquet", parquet)):
            for workers in (1, 2):
                out = folder / f"dask-{label}-{workers}"
                runs[f"dask, {workers} worker{'s' * (workers > 1)}, {label} shards"] = [
                    "score", *map(str, shards), "--engine", "dask", "--workers", str(workers), "--output", str(out),
                ]  # fmt: skip
        reference: dict[str, Any] | None = None
        expected = None
        for label, arguments in runs.items():
            seconds, cpu, summary = run(arguments)
            reference = reference or summary
            output = Path(arguments[arguments.index("--output") + 1])
            if expected is None:
                expected = local_verdicts(output)
            verdicts = local_verdicts(output) if output.suffix == ".jsonl" else dask_verdicts(output)
            figures[label] = {
                "seconds": seconds,
                "cpu_seconds": cpu,
                "rows_per_second": args.rows / seconds,
                "same_summary": same(summary, reference),
                "same_verdicts": verdicts == expected,
            }
            print(f"{label}: {seconds:.1f} s, {cpu:.1f} CPU s", flush=True)
    load_after = os.getloadavg()[0]
    base = figures["local --jobs 1"]["seconds"]
    base_cpu = figures["local --jobs 1"]["cpu_seconds"]
    print(f"\n### answer-eval score on {args.rows:,} rows ({args.shards} shards), {os.cpu_count()} cores\n")
    print("| run | wall s | rows/s | wall vs local -j1 | CPU s | CPU vs local -j1 | same summary | same verdicts |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, figure in figures.items():
        figure["relative_to_local_jobs_1"] = figure["seconds"] / base
        figure["cpu_relative_to_local_jobs_1"] = figure["cpu_seconds"] / base_cpu
        print(
            f"| {label} | {figure['seconds']:.1f} | {figure['rows_per_second']:,.0f} | "
            f"{figure['relative_to_local_jobs_1']:.2f}x | {figure['cpu_seconds']:.1f} | "
            f"{figure['cpu_relative_to_local_jobs_1']:.2f}x | {figure['same_summary']} | {figure['same_verdicts']} |"
        )
    speedups = {
        label: figures[f"dask, 1 worker, {label} shards"]["seconds"]
        / figures[f"dask, 2 workers, {label} shards"]["seconds"]
        for label in ("JSONL", "Parquet")
    }
    print(
        f"\nInput: JSONL {sizes['jsonl_mb']:.0f} MB, Parquet {sizes['parquet_mb']:.0f} MB. 2 workers over 1: "
        + ", ".join(f"{value:.2f}x ({label})" for label, value in speedups.items())
        + f". Load average (1 min) before/after: {load_before:.2f}/{load_after:.2f}."
    )
    report = {
        "machine": {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "rows": args.rows,
        "shards": args.shards,
        "input": sizes,
        "runs": figures,
        "dask_2_over_1_workers": speedups,
        "load_average_1min_before_after": [load_before, load_after],
        "seconds": time.perf_counter() - started,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"Wrote {args.output}")
    return 0 if all(figure["same_summary"] and figure["same_verdicts"] for figure in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
