"""The command line leaves standard error to its own messages: no model loader's bar, no telemetry noise."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.cli_runs import CLI
from tests.conftest import EXAMPLES

RAG = EXAMPLES / "data" / "rag_answers.jsonl"

pytestmark = pytest.mark.subprocess  # a fresh process's standard error from its start, and its broken pipe


def _run(*args: object) -> subprocess.CompletedProcess[str]:
    # Telemetry left as a user has it (on: the variable unset), standard error a pipe, not a terminal.
    env = {name: value for name, value in os.environ.items() if name != "HAYSTACK_TELEMETRY_ENABLED"}
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, env=env, timeout=600, check=False)


@pytest.mark.slow  # a fresh process loading torch and the model: ~9 s each
@pytest.mark.parametrize("progress", [(), ("--no-progress",)])
def test_a_run_that_loads_the_semantic_model_prints_nothing_on_standard_error(tmp_path, progress):
    pytest.importorskip("sentence_transformers", reason="the SAS evaluator needs the semantic extra")
    done = _run(
        "report", RAG, "--evaluator", "sas", "--evaluator", "contains", "--html", tmp_path / "r.html", *progress
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # "Loading weights: 100%" came here before


def test_json_summaries_come_with_an_empty_standard_error(tmp_path):
    done = _run("agreement", RAG, "--format", "json", "--no-semantic")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.lstrip().startswith("{")


def test_a_reader_that_leaves_early_ends_the_run_quietly():
    # `answer-eval score FILE | head -1`: the pipe closes before the summary is printed.
    process = subprocess.Popen([*CLI, "score", str(RAG)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    process.stdout.close()
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 141
    assert stderr == ""  # no "Broken pipe" message, no traceback
