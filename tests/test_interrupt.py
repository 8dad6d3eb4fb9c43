"""SIGINT and SIGTERM sent to a real command-line run: a clean stop, nothing lost or half-written."""

from __future__ import annotations

import json
import signal

import pytest

from tests.cli_runs import cycled, partial_path, record_path, sha256, start_cli, stop, wait_for_record, write_lines

ROWS = 20_000  # a second or more of work: still running when the first record is made


@pytest.fixture(scope="module")
def large_input(tmp_path_factory: pytest.TempPathFactory):
    """A 20,000-line JSONL file (the RAG example rows, repeated), and its SHA-256."""
    path = write_lines(tmp_path_factory.mktemp("large") / "answers.jsonl", cycled("rag_answers.jsonl", ROWS))
    return path, sha256(path)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("signum", "jobs", "existing_output"),
    [
        (signal.SIGINT, 1, False),
        (signal.SIGTERM, 1, True),
        (signal.SIGINT, 2, True),
    ],
    ids=["sigint", "sigterm-existing-output", "sigint-two-jobs-existing-output"],
)
def test_a_signal_stops_the_run_cleanly(tmp_path, large_input, signum, jobs, existing_output):
    source, digest = large_input
    output = tmp_path / "scored.jsonl"
    if existing_output:
        output.write_text('{"an": "earlier result"}\n', encoding="utf-8")
    before = output.read_bytes() if existing_output else None
    process = start_cli(
        "score", source, "--output", output, "--jobs", jobs, "--checkpoint-seconds", "0.2", "--no-progress"
    )
    wait_for_record(process, output)
    code, stdout, stderr = stop(process, signum)

    assert code == 128 + signum, stderr
    assert stdout == ""  # no summary: the run did not finish
    name = signal.Signals(signum).name
    assert f"stopped by {name}" in stderr
    assert "--resume" in stderr
    # The output path: untouched (an earlier file stays byte for byte) or still absent.
    if existing_output:
        assert output.read_bytes() == before
    else:
        assert not output.exists()
    # The input is never written to.
    assert sha256(source) == digest
    # The checkpoint is kept: the rows written so far (whole JSON lines) and their record.
    record = json.loads(record_path(output).read_text(encoding="utf-8"))
    position = record["position"]
    assert 0 < position["rows"] < ROWS
    written = partial_path(output).read_bytes()
    assert len(written) == position["output_offset"]
    lines = written.decode("utf-8").splitlines()
    assert len(lines) == position["rows"]
    assert all(json.loads(line)["correct"] in (True, False) for line in lines)
    # No temporary file is left beside the output.
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [output.name, partial_path(output).name, record_path(output).name]
        if existing_output
        else [partial_path(output).name, record_path(output).name]
    )
