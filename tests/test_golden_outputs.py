"""The bundled examples through every command, against golden files recorded before the evaluator contract.

Each case runs the real CLI (in process) in a scratch folder holding a copy of
``examples/data`` (so paths in the output are the same on every machine) and compares what it
printed and wrote with ``tests/data/golden/<case>.*``. Times (``seconds``, ``answers_per_second``)
vary from run to run and the evaluators' signatures were added after the recording (the ``signature``
fields, the ``signature`` lines of text summaries, the list in the HTML footer): both are left out of
the comparison; everything else must be byte-identical.

To record the files again after an intended change of output: ``ANSWER_EVAL_RECORD_GOLDEN=1 pytest
tests/test_golden_outputs.py`` (and review the diff).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runs import cli

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden"
RECORD = os.environ.get("ANSWER_EVAL_RECORD_GOLDEN") == "1"
_VOLATILE = frozenset({"seconds", "answers_per_second", "signature", "signatures"})

NQ_A = "data/nq301_davinci_zeroshot.jsonl"
NQ_B = "data/nq301_davinci_fewshot.jsonl"
RAG = "data/rag_answers.jsonl"

# name -> (arguments, files the command writes that are compared too)
CASES: dict[str, tuple[list[str], list[str]]] = {
    "score-text": (["score", RAG], []),
    "score-json": (["score", NQ_A, "--format", "json", "--output", "out.jsonl"], ["out.jsonl"]),
    "score-csv": (["score", RAG, "--format", "json", "--output", "out.csv"], ["out.csv"]),
    "judge-text": (["judge", NQ_A], []),
    "judge-json": (["judge", NQ_A, "--format", "json", "--output", "out.jsonl"], ["out.jsonl"]),
    "typed-text": (["typed", "data/typed_example.jsonl"], []),
    "typed-json": (["typed", "data/typed_example.jsonl", "--format", "json", "--output", "out.jsonl"], ["out.jsonl"]),
    "metrics-text": (["metrics", NQ_A], []),
    "metrics-json": (["metrics", NQ_A, "--format", "json", "--output", "out.jsonl"], ["out.jsonl"]),
    "tools-text": (["tools", "data/tool_calls.jsonl", "--strict"], []),
    "tools-json": (["tools", "data/tool_calls.jsonl", "--format", "json", "--output", "out.jsonl"], ["out.jsonl"]),
    "compare-text": (["compare", NQ_A, NQ_B, "--show", "3"], []),
    "compare-json": (["compare", NQ_A, NQ_B, "--format", "json"], []),
    "agreement-json": (["agreement", NQ_A, "--no-semantic", "--format", "json"], []),
    "report-json": (["report", NQ_A, NQ_B, "--html", "report.html", "--format", "json"], ["report.html"]),
}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items() if key not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


def _printed(text: str) -> str:
    """Standard output as compared: a JSON summary without its volatile fields, text as it is."""
    try:
        data = json.loads(text)
    except ValueError:
        return "".join(line + "\n" for line in text.splitlines() if not line.lstrip().startswith("signature"))
    return json.dumps(_stable(data), indent=1, ensure_ascii=False) + "\n"


def _run(case: str, tmp_path: Path) -> dict[str, bytes]:
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "data")
    arguments, written = CASES[case]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120", "HF_HUB_OFFLINE": "1"}
    done = cli(*arguments, "--no-progress", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    found = {"stdout.txt": _printed(done.stdout).encode("utf-8")}
    for name in written:
        data = (tmp_path / name).read_bytes()
        if name.endswith(".html"):  # the evaluators' signatures, added to the page's footer after the recording
            data = re.sub(rb'<ul class="signatures">.*?</ul>', b"", data)
        found[name] = data
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_output_is_the_recorded_one(case: str, tmp_path: Path) -> None:
    """Every command on the bundled examples prints and writes what it did when the golden files were made."""
    found = _run(case, tmp_path)
    folder = GOLDEN / case
    if RECORD:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in found.items():
            (folder / name).write_bytes(data)
    for name, data in found.items():
        expected = (folder / name).read_bytes()
        assert data == expected, f"{case}: {name} differs from {folder / name}"
