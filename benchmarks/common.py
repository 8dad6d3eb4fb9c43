"""Shared pieces of the benchmark: settings, a section (one table), timing and memory."""

from __future__ import annotations

import gc
import os
import platform
import statistics
import subprocess
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


@dataclass
class Settings:
    """How big and how long: the full run or ``--quick``."""

    quick: bool
    corpus_size: int
    rounds: int
    math_verify_items: int
    scaling_sizes: tuple[int, ...]
    cli_lines: int
    import_runs: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(True, 20_000, 2, 100, (1_000, 10_000, 100_000), 20_000, 3)
        return cls(False, 202_176, 5, 1_000, (10_000, 100_000, 1_000_000), 1_000_000, 5)


@dataclass
class Section:
    """One table of the report."""

    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def cpu_seconds(run: Callable[[], Any]) -> float:
    """CPU seconds of this process for one call (the wall time on an idle machine)."""
    gc.collect()
    start = time.process_time()
    run()
    return time.process_time() - start


def taking_turns(runs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """CPU seconds of every call of each function, the functions taking turns round by round.

    CPU time of this process, not wall time: on a shared machine another process's work would
    otherwise be counted against whichever scorer was running. Taking turns spreads the slow
    spells (a busy neighbour on the same core slows the CPU itself) over every scorer alike; the
    order rotates each round so that no function always runs right after the same other one.
    """
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(cpu_seconds(runs[name]))
    return times


def interleaved(runs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median CPU seconds per call of each function, measured by :func:`taking_turns`."""
    return {name: statistics.median(values) for name, values in taking_turns(runs, rounds).items()}


def peak_memory_mb(run: Callable[[], Any]) -> float:
    """Peak of Python allocations during one call (tracemalloc), in MB; the inputs are not counted."""
    gc.collect()
    tracemalloc.start()
    try:
        run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1e6


def print_cells(cells: Sequence[Sequence[str]], markdown: bool, *, indent: str = "", underline: bool = False) -> None:
    """Print a table, its header row first: in Markdown, or as right-aligned plain text.

    In plain text every line starts with ``indent``, and ``underline`` draws dashes under the header.
    """
    if markdown:
        for i, row in enumerate(cells):
            print("| " + " | ".join(row) + " |")
            if i == 0:
                print("|" + "|".join(" --- " for _ in row) + "|")
        return
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    for i, row in enumerate(cells):
        print(indent + "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))
        if underline and i == 0:
            print(indent + "  ".join("-" * width for width in widths))


def machine() -> dict[str, Any]:
    """Date, cores, CPU model and Python version of this run."""
    model = platform.processor() or "unknown"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next(
            (line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")), model
        )
    except OSError:
        pass
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
