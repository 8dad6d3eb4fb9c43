"""``answer-eval judge --jobs 2`` against ``--jobs 1`` on 100,000 rows: the speed-up, and where the serial part is.

Each run is a fresh process running the command line's ``main`` (the interpreter start is not
timed), the two taking turns; the outputs must be byte-identical. Besides the wall time, each run
reports the CPU time of the calling process (reading, handing chunks out, writing, counting the
summary) and of its workers, so that a speed-up short of 2 can be put down to the serial part, to
the workers' start (each spawned worker imports the package and builds the judge), or to a
machine whose two cores are not both free (the load average is printed).

    python benchmarks/jobs_scaling.py [--rows 100000] [--rounds 3]
    python benchmarks/run.py --only jobs_scaling
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))

_RUN = """
import json, resource, sys, time
from answer_eval.cli.main import main
start = time.perf_counter()
code = main(sys.argv[1:])
wall = time.perf_counter() - start
own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": code, "wall": wall, "main_cpu": own.ru_utime + own.ru_stime,
                  "workers_cpu": workers.ru_utime + workers.ru_stime}), file=sys.stderr)
"""

# A spawned worker's start: the interpreter, the package and the judge, as _start_worker gets them.
_WORKER_START = """
import time
start = time.perf_counter()
from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore
AnswerJudgeCore().judge.judge_batch([["Paris"]], ["Paris"], ["Capital of France?"])
print(time.perf_counter() - start)
"""


def write_rows(path: Path, rows: int) -> None:
    """The real OpenAI-eval rows (question, acceptable answers, prediction), cycled to ``rows`` lines."""
    import corpora

    real = corpora.real_rows()
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(rows):
            row = real[index % len(real)]
            line = {"id": index, "question": row["question"], "answers": row["answer"], "prediction": row["prediction"]}
            handle.write(json.dumps(line) + "\n")


def run_judge(source: Path, output: Path, jobs: int, src: str | None) -> dict[str, Any]:
    """One ``answer-eval judge`` run: wall and CPU seconds of the calling process and its workers, the output's hash."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    arguments = ["judge", str(source), "--output", str(output), "--format", "json", "--no-progress"]
    arguments += ["--jobs", str(jobs)]
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *arguments], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )
    figures = json.loads(done.stderr.strip().splitlines()[-1])
    if figures["code"] != 0:
        raise RuntimeError(f"answer-eval judge --jobs {jobs} failed: {done.stderr[-2000:]}")
    figures["sha256"] = hashlib.sha256(output.read_bytes()).hexdigest()
    figures["load"] = os.getloadavg()[0]
    return dict(figures)


def worker_start_seconds(src: str | None) -> float:
    """Seconds a fresh interpreter takes to import the package and build the judge (what each worker does first)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    done = subprocess.run([sys.executable, "-c", _WORKER_START], capture_output=True, text=True, env=env, check=True)
    return float(done.stdout.strip())


def measure(rows: int, rounds: int, src: str | None) -> dict[str, Any]:
    """``rounds`` runs of each of ``--jobs 1`` and ``--jobs 2``, taking turns; the figures."""
    runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "rows.jsonl"
        write_rows(source, rows)
        for round_number in range(rounds):
            order = (1, 2) if round_number % 2 == 0 else (2, 1)
            for jobs in order:
                runs[jobs].append(run_judge(source, Path(folder) / f"out{jobs}.jsonl", jobs, src))
                print(f"--jobs {jobs}: {json.dumps(runs[jobs][-1])}", file=sys.stderr, flush=True)
    starts = [worker_start_seconds(src) for _ in range(3)]
    one, two = (statistics.median(run["wall"] for run in runs[jobs]) for jobs in (1, 2))
    hashes = {run["sha256"] for jobs in runs for run in runs[jobs]}
    return {
        "rows": rows,
        "runs": runs,
        "wall_jobs1": one,
        "wall_jobs2": two,
        "speedup": one / two,
        "byte_identical": len(hashes) == 1,
        "worker_start_seconds": statistics.median(starts),
        "main_cpu_jobs2": statistics.median(run["main_cpu"] for run in runs[2]),
        "workers_cpu_jobs2": statistics.median(run["workers_cpu"] for run in runs[2]),
        "cpu_jobs1": statistics.median(run["main_cpu"] for run in runs[1]),
        "loads": [run["load"] for jobs in runs for run in runs[jobs]],
    }


def section_jobs_scaling(settings: Any) -> list[Any]:
    """``answer-eval judge --jobs 2`` over ``--jobs 1`` on 100,000 rows (20,000 quick), taking turns."""
    from common import Section

    rows, rounds = (20_000, 1) if settings.quick else (100_000, 3)
    figures = measure(rows, rounds, os.environ.get("ANSWER_EVAL_SRC"))
    section = Section(
        "jobs_scaling",
        f"answer-eval judge --jobs 2 against --jobs 1, {rows:,} rows (real answers)",
        ["run", "median wall s", "rows/s", "CPU s, calling process", "CPU s, workers"],
    )
    for jobs in (1, 2):
        runs = figures["runs"][jobs]
        wall = figures[f"wall_jobs{jobs}"]
        main_cpu = statistics.median(run["main_cpu"] for run in runs)
        workers = statistics.median(run["workers_cpu"] for run in runs)
        cells = [f"{wall:.2f}", f"{rows / wall:,.0f}", f"{main_cpu:.2f}", f"{workers:.2f}"]
        section.rows.append([f"--jobs {jobs}", *cells])
    section.figures = figures
    loads = figures["loads"]
    section.notes.append(
        f"--jobs 2 over --jobs 1: {figures['speedup']:.2f}x (target 1.7x); outputs byte-identical: "
        f"{figures['byte_identical']}. Median of {rounds} runs each, taking turns; wall time of the command's "
        f"`main` (interpreter start aside). A worker's start (interpreter, package, judge): "
        f"{figures['worker_start_seconds']:.2f} s. Load average (1 min) during the runs: "
        f"{min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} cores."
    )
    return [section]


def main(argv: list[str] | None = None) -> int:
    """The section on its own, printed as JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    figures = measure(args.rows, args.rounds, os.environ.get("ANSWER_EVAL_SRC"))
    for jobs in (1, 2):
        for run in figures["runs"][jobs]:
            print(
                f"--jobs {jobs}: wall {run['wall']:.2f} s, main CPU {run['main_cpu']:.2f} s, "
                f"workers CPU {run['workers_cpu']:.2f} s, load {run['load']:.2f}"
            )
    shown = {key: value for key, value in figures.items() if key != "runs"}
    print(json.dumps(shown, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
