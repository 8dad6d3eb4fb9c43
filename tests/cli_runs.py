"""Running the command line as a real subprocess and stopping it mid-run: shared by the reliability tests."""

from __future__ import annotations

import hashlib
import itertools
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLES

CLI = [sys.executable, "-m", "answer_eval"]


def _default_signals() -> None:
    # A process started in the background of a non-interactive shell (or by some test runners)
    # inherits SIGINT ignored, and a Python program keeps it ignored: give the run the usual
    # dispositions, as a terminal would.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def cli(
    *args: Any,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    preexec_fn: Callable[[], None] | None = None,
    stdin: Any = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``answer-eval ARGS`` as a subprocess to the end, capturing its output as text."""
    return subprocess.run(
        [*CLI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        preexec_fn=preexec_fn,
        stdin=stdin,
        check=False,
    )


def run_cli(*args: Any, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``answer-eval ARGS`` to the end with the usual signal dispositions (for the interruption tests)."""
    return subprocess.run(
        [*CLI, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd, preexec_fn=_default_signals
    )


def write_jsonl(path: Path, rows: Any) -> Path:
    """Write ``rows`` (JSON-ready objects) to ``path``, one a line; return ``path``."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def start_cli(*args: Any, stdin: Any = None) -> subprocess.Popen[str]:
    """Start ``answer-eval ARGS`` in the background (``stdin``: as :class:`subprocess.Popen` takes it)."""
    return subprocess.Popen(
        [*CLI, *map(str, args)],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )


def record_path(output: Path) -> Path:
    """The checkpoint record of an output path."""
    return output.with_name(f".{output.name}.partial.json")


def partial_path(output: Path) -> Path:
    """The partial output of an output path."""
    return output.with_name(f".{output.name}.partial")


def wait_for_record(process: subprocess.Popen[str], output: Path, timeout: float = 120.0) -> dict[str, Any]:
    """Wait until the run has recorded its position at least once; return the record."""
    record = record_path(output)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the run ended before recording a position: {process.communicate()}"
        try:
            return dict(json.loads(record.read_text(encoding="utf-8")))
        except (FileNotFoundError, ValueError):
            time.sleep(0.002)
    raise AssertionError("no checkpoint record appeared")


def stop(process: subprocess.Popen[str], signum: int) -> tuple[int, str, str]:
    """Send ``signum`` and wait for the run to end: ``(exit code, stdout, stderr)``."""
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stdout, stderr


def interrupted(*args: Any, output: Path) -> int:
    """Start ``answer-eval ARGS`` and stop it with SIGINT once it has recorded a position in ``output``'s record.

    Asserts it ended as an interrupted run does (exit 130); returns the rows its partial output kept.
    """
    process = start_cli(*args)
    wait_for_record(process, output)
    code, _, stderr = stop(process, signal.SIGINT)
    assert code == 130, stderr
    return len(partial_path(output).read_text().splitlines())


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cycled(name: str, rows: int) -> Iterator[str]:
    """The lines of an example file (``examples/data/NAME``), repeated to ``rows`` lines."""
    lines = (EXAMPLES / "data" / name).read_text(encoding="utf-8").splitlines()
    return itertools.islice(itertools.cycle(lines), rows)


def write_lines(path: Path, lines: Iterator[str]) -> Path:
    """Write JSON lines to ``path``."""
    with open(path, "w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
    return path


def typed_rows(rows: int) -> Iterator[str]:
    """Rows for the ``typed`` command: multiple choice and numerical answers, right and wrong, some types by alias."""
    for number in range(rows):
        row: dict[str, Any]
        if number % 2:
            choice = "ABCD"[number % 4]
            row = {"model_output": f"<answer>{choice}</answer>", "solution": "<answer>B</answer>"}
            row["problem_type"] = "multiple choice" if number % 11 else "MCQ"  # an alias
        else:
            row = {"model_output": f"It is <answer>{number % 13}.5</answer>", "solution": "<answer>4.50</answer>"}
            row["problem_type"] = "numerical"
        yield json.dumps(row)
