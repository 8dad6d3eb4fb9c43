"""The batch-size probe (benchmarks/scaling_probe.py) runs and reports what it says it measures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.subprocess  # the probe measures a fresh process's memory layout
def test_the_probe_reports_time_locality_and_scan_figures(tmp_path: Path) -> None:
    output = tmp_path / "probe.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scaling_probe.py"), "--quick", "--output", str(output)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(output.read_text(encoding="utf-8"))
    assert (figures["items"], figures["batch"]) == (100_000, 1_000)
    assert set(figures["us_per_item"]) == {"one call", "calls of batch"}
    assert all(value["fastest"] > 0 for value in figures["us_per_item"].values())
    shares = figures["near_share"]
    assert len(shares) == 3
    assert all(0 <= share <= 1 for share in shares.values())
    # Sorting the same objects by address puts most neighbours next to each other.
    assert shares["the same objects, address order"] > shares["texts of the last of many batch calls"]
    assert len(figures["scan_ms"]) == 3
    assert "Calls of 1,000:" in done.stdout
    assert "List order takes" in done.stdout
