"""The everyday path of issue 27, end to end as subprocesses: calibrate on labels, judge the rest with the file, report.

A user holds human labels for part of their data: NQ301 dev (the bundled human-judged set) split by
question, 40% of the questions to calibrate on, the rest to judge. Every step is the command line
a user types; each figure is checked against what the step before it wrote.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runs import cli

ROOT = Path(__file__).resolve().parents[1]
LABELLED = ROOT / "data" / "judge" / "nq301-dev.jsonl"
TARGET = 0.85


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("split")
    rows = _read(LABELLED)
    questions = sorted({row["qid"] for row in rows})
    random.Random(7).shuffle(questions)
    calibrate_on = set(questions[: int(0.4 * len(questions))])
    labelled = _write(folder / "labelled.jsonl", [row for row in rows if row["qid"] in calibrate_on])
    rest = _write(folder / "rest.jsonl", [row for row in rows if row["qid"] not in calibrate_on])
    return labelled, rest


def test_calibrate_then_judge_with_the_file_then_report_the_curve(split, tmp_path):
    labelled, rest = split
    calibration = tmp_path / "calibration.json"
    made = cli(
        "calibrate", labelled, "--label-field", "human_acceptable", "--target", TARGET, "-o", calibration,
        "--format", "json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    (target,) = json.loads(made.stdout)["targets"]
    assert target["target"] == TARGET
    assert target["reason"] is None
    threshold = target["threshold"]
    assert 0 < threshold < 1

    judged, plain = tmp_path / "judged.jsonl", tmp_path / "plain.jsonl"
    done = cli(
        "judge", rest, "--calibration", calibration, "--target-agreement", TARGET, "-o", judged, "--format", "json"
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["selection"]["threshold"] == threshold  # the threshold calibrate chose for this target
    assert summary["selection"]["source"] == "yours"
    rows = _read(judged)
    assert [row["abstained"] for row in rows] == [row["confidence"] < threshold for row in rows]
    assert summary["abstained"] == sum(row["abstained"] for row in rows)
    assert 0 < summary["abstained"] < len(rows)

    # The file's recalibration is applied: confidences move, and verdicts only if the file says so.
    assert cli("judge", rest, "-o", plain).returncode == 0
    before = _read(plain)
    assert any(row["confidence"] != old["confidence"] for row, old in zip(rows, before, strict=True))
    if json.loads(calibration.read_text(encoding="utf-8"))["verdict"] == "rules":
        assert [row["correct"] for row in rows] == [old["correct"] for old in before]

    page = tmp_path / "r.html"
    report = cli("report", judged, "--label-field", "human_acceptable", "--html", page, "--format", "json")
    assert report.returncode == 0, report.stderr
    (system,) = json.loads(report.stdout)["systems"]
    coverage = system["coverage"]
    assert coverage["drawn"]
    assert coverage["source"] == "file"
    (mark,) = coverage["marks"]
    kept = [row for row in rows if not row["abstained"]]
    assert mark["kind"] == "run"
    assert mark["kept"] == len(kept)
    assert mark["kept_agreement"] == pytest.approx(
        sum(row["correct"] == row["human_acceptable"] for row in kept) / len(kept)
    )
    assert "Agreement and coverage" in page.read_text(encoding="utf-8")
