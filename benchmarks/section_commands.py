"""Every file command on a large JSONL file, as a subprocess: rows per second, and against a baseline.

Each command (``score``, ``judge``, ``typed``, ``metrics``, ``tools``) scores real rows (the
bundled examples, cycled) with ``--format json --output``, in one process and with ``--jobs 2``.
With ``ANSWER_EVAL_BASELINE_SRC`` set to another checkout's ``src`` folder (for example a
``git worktree`` of the commit before a change), the same runs go through that code too, taking
turns with this one, and the table gives the ratio: how the change moved each command's speed.
``ANSWER_EVAL_SRC`` likewise points "this code" at a checkout (default: the installed package).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Section, Settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "data"

# command -> (arguments, example file, rows in a full run)
COMMANDS: dict[str, tuple[list[str], str, int]] = {
    "score": (["score"], "nq301_davinci_zeroshot.jsonl", 200_000),
    "judge": (["judge"], "nq301_davinci_zeroshot.jsonl", 60_000),
    "typed": (["typed"], "typed_example.jsonl", 60_000),
    "metrics": (["metrics"], "nq301_davinci_zeroshot.jsonl", 20_000),
    "tools": (["tools"], "tool_calls.jsonl", 60_000),
}


def _input(folder: Path, name: str, rows: int) -> Path:
    lines = (EXAMPLES / name).read_text(encoding="utf-8").splitlines()
    path = folder / f"{name}.{rows}.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(rows):
            handle.write(lines[index % len(lines)] + "\n")
    return path


def _seconds(arguments: list[str], source: Path, output: Path, jobs: int, src: str | None) -> float:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src  # ahead of the editable install's path: that checkout's package runs
    command = [sys.executable, "-m", "answer_eval", *arguments, str(source), "--format", "json", "--no-progress"]
    command += ["--output", str(output), "--jobs", str(jobs)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(arguments)} failed: {done.stderr}")
    json.loads(done.stdout)
    return seconds


def section_commands(settings: Settings) -> list[Section]:
    """Rows per second of every file command (one process and --jobs 2), and the ratio to a baseline."""
    baseline = os.environ.get("ANSWER_EVAL_BASELINE_SRC")
    current = os.environ.get("ANSWER_EVAL_SRC")
    rounds = 1 if settings.quick else 3
    columns = ["command", "rows", "jobs", "median s", "rows/s"]
    if baseline:
        columns += ["baseline rows/s", "this / baseline"]
    section = Section("file_commands", "Every file command on a JSONL file (subprocess, --output)", columns)
    with tempfile.TemporaryDirectory() as folder:
        for name, (arguments, example, full_rows) in COMMANDS.items():
            rows = full_rows // 10 if settings.quick else full_rows
            source = _input(Path(folder), example, rows)
            for jobs in (1, 2):
                here: list[float] = []
                there: list[float] = []
                for _ in range(rounds):  # taking turns, so that a change of machine load hits both alike
                    here.append(_seconds(arguments, source, Path(folder) / "here.jsonl", jobs, current))
                    if baseline:
                        there.append(_seconds(arguments, source, Path(folder) / "there.jsonl", jobs, baseline))
                seconds = statistics.median(here)
                figures = {"rows": rows, "seconds": seconds, "rows_per_second": rows / seconds}
                row = [name, f"{rows:,}", jobs, f"{seconds:.2f}", f"{rows / seconds:,.0f}"]
                if baseline:
                    old = statistics.median(there)
                    figures["baseline_rows_per_second"] = rows / old
                    figures["ratio"] = old / seconds
                    row += [f"{rows / old:,.0f}", f"{old / seconds:.2f}"]
                section.rows.append(row)
                section.figures[f"{name}_jobs{jobs}"] = figures
    section.notes.append(
        "Wall time of the whole command (interpreter start and imports included). The ratio is above 1 when "
        "this code is faster than the baseline; runs take turns, so both see the same machine load."
    )
    return [section]
