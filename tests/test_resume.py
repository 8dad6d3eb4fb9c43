"""``--resume``: an interrupted real command-line run, continued, writes what an uninterrupted run writes."""

from __future__ import annotations

import fcntl
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from answer_eval.evaluators.registry import EVALUATORS
from tests.cli_runs import (
    cli,
    cycled,
    partial_path,
    record_path,
    sha256,
    start_cli,
    stop,
    stopped_at,
    wait_for_record,
    write_lines,
)

# (command and options, input lines, rows). Enough rows that a run recording its position after
# every row (--checkpoint-seconds 0: a write, fsync and rename per row) is still far from the end
# when the signal comes; --jobs 2 records after each chunk of 2,000 lines: three chunks.
ROWS = 600
# Every file command of the registry that runs on several processes, on its bundled example file, alone and
# with two jobs; and one with options besides the defaults.
CASES: dict[str, tuple[list[str], Any, int]] = {
    **{
        entry.command: ([entry.command], entry.example, ROWS)
        for entry in EVALUATORS.values()
        if entry.parameters_are_options
    },
    **{
        f"{entry.command}-two-jobs": ([entry.command, "--jobs", "2"], entry.example, 6000)
        for entry in EVALUATORS.values()
        if entry.parameters_are_options
    },
    "metrics-bleu": (["metrics", "--metric", "exact_match", "--metric", "bleu"], "rag_answers.jsonl", ROWS),
}


def _input(tmp_path: Path, case: str) -> tuple[list[str], Path, int]:
    command, lines, rows = CASES[case]
    source = tmp_path / "input.jsonl"
    write_lines(source, lines(rows) if callable(lines) else cycled(lines, rows))
    return command, source, rows


def _summary(stdout: str) -> dict[str, Any]:
    summary = json.loads(stdout)
    assert isinstance(summary, dict)
    summary.pop("output")  # the output path differs between the two runs compared
    return summary


def _interrupt(command: list[str], source: Path, output: Path, signum: int, rows: int) -> dict[str, Any]:
    process = start_cli(*command, source, "--output", output, "--format", "json", "--checkpoint-seconds", "0")
    wait_for_record(process, output)
    code, _, stderr = stop(process, signum)
    assert code == 128 + signum, stderr
    assert not output.exists()
    record = json.loads(record_path(output).read_text(encoding="utf-8"))
    assert 0 < record["position"]["rows"] < rows  # stopped mid-way, some rows already written
    return dict(record)


def _signal_cases() -> list[Any]:
    """Each registered command alone and with two jobs, the output format and the signal taking turns.

    --jobs with each evaluator's state takes the same parallel path as score's: in the slow tier.
    """
    cases = []
    commands = [entry.command for entry in EVALUATORS.values() if entry.parameters_are_options]
    for turn, command in enumerate(commands):
        suffix, other = (".jsonl", ".csv") if turn % 2 == 0 else (".csv", ".jsonl")
        signum = (signal.SIGINT, signal.SIGTERM)[turn % 2]
        cases.append(pytest.param(command, suffix, signum, id=f"{command}{suffix}"))
        slow = () if command == "score" else (pytest.mark.slow,)
        cases.append(pytest.param(f"{command}-two-jobs", other, signum, marks=slow, id=f"{command}-two-jobs{other}"))
    cases.append(pytest.param("metrics-bleu", ".csv", signal.SIGINT, id="metrics-bleu.csv"))
    return cases


@pytest.mark.parametrize(("case", "suffix", "signum"), _signal_cases())
@pytest.mark.subprocess  # stopped by a signal
def test_resume_after_a_signal_gives_the_uninterrupted_output(tmp_path, case, suffix, signum):
    command, source, rows = _input(tmp_path, case)
    digest = sha256(source)
    reference = tmp_path / f"reference{suffix}"
    # The uninterrupted run in one process (--jobs only changes how fast the same output comes).
    single = [part for part in command if part not in ("--jobs", "2")]
    whole = cli(*single, source, "--output", reference, "--format", "json")
    assert whole.returncode == 0, whole.stderr

    output = tmp_path / f"resumed{suffix}"
    _interrupt(command, source, output, signum, rows)
    resumed = cli(*command, source, "--output", output, "--format", "json", "--resume")

    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == reference.read_bytes()
    assert _summary(resumed.stdout) == _summary(whole.stdout)
    assert sha256(source) == digest
    # The checkpoint is gone once the output is complete.
    assert not partial_path(output).exists()
    assert not record_path(output).exists()


@pytest.mark.subprocess  # killed
def test_resume_after_sigkill_continues_from_the_last_record(tmp_path):
    # SIGKILL cannot be caught: the run continues from the last periodic record (with the BLEU
    # corpus statistics it held); whatever was written after it (here also a torn last line, as
    # a kill in the middle of a write leaves) is cut off.
    command, source, rows = _input(tmp_path, "metrics-bleu")
    reference = tmp_path / "reference.jsonl"
    whole = cli(*command, source, "--output", reference, "--format", "json")
    assert whole.returncode == 0, whole.stderr

    output = tmp_path / "resumed.jsonl"
    process = start_cli(*command, source, "--output", output, "--format", "json", "--checkpoint-seconds", "0")
    wait_for_record(process, output)
    code, _, _ = stop(process, signal.SIGKILL)
    assert code == -signal.SIGKILL
    record = json.loads(record_path(output).read_text(encoding="utf-8"))
    assert 0 < record["position"]["rows"] < rows
    assert record["state"]["items"] == record["position"]["rows"]  # the summary's snapshot went into the record
    assert record["state"]["stats"][8] > 0  # with the BLEU statistics (hypothesis tokens) of the rows written
    with open(partial_path(output), "ab") as partial:
        partial.write(b'{"question": "a row the record does not cou')
    resumed = cli(*command, source, "--output", output, "--format", "json", "--resume")

    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == reference.read_bytes()
    assert _summary(resumed.stdout) == _summary(whole.stdout)


@pytest.fixture(scope="module")
def score_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """The ``score`` input (never changed) and the output of one uninterrupted run on it."""
    command, source, _ = _input(tmp_path_factory.mktemp("reference"), "score")
    reference = source.with_name("reference.jsonl")
    done = cli(*command, source, "--output", reference)
    assert done.returncode == 0, done.stderr
    return source, reference.read_bytes()


@pytest.fixture
def interrupted(tmp_path):
    """A ``score`` run stopped part-way: ``(source, output, checkpoint bytes before)``.

    The checkpoint is one a failure leaves (:func:`tests.cli_runs.stopped_at`), in process: a signal leaves the
    same files, which the signal tests above resume.
    """
    command, source, rows = _input(tmp_path, "score")
    output = tmp_path / "scored.jsonl"
    stopped_at(rows // 2, command, source, output)
    kept = {path: path.read_bytes() for path in (partial_path(output), record_path(output))}
    return source, output, kept


def _refused(result, kept: dict[Path, bytes], output: Path, *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    for word in words:
        assert word in result.stderr
    assert not output.exists()
    # A refused resume leaves the checkpoint as it was: it can still be resumed the right way.
    assert {path: path.read_bytes() for path in kept} == kept


def test_resume_with_other_options_is_refused(interrupted):
    source, output, kept = interrupted
    result = cli("score", source, "--output", output, "--resume", "--not-found-label", "UNANSWERABLE")
    _refused(result, kept, output, "other options", "not_found_label")


def test_resume_with_a_changed_input_is_refused(interrupted):
    source, output, kept = interrupted
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace("Sheffield", "Rotherham", 1), encoding="utf-8")
    result = cli("score", source, "--output", output, "--resume")
    _refused(result, kept, output, "another input", str(source))


@pytest.mark.parametrize(
    ("more", "changed"),
    [
        (("--column-prefix", "ae_"), 'column_prefix: "", now "ae_"'),
        (("--replace-columns",), "replace_columns: false, now true"),
        (("--prediction-field", "question"), "fields:"),
        (("--skip-invalid",), "skip_invalid: false, now true"),
        (("--max-line-bytes", "1000000"), "max_line_bytes:"),
    ],
    ids=["column-prefix", "replace-columns", "prediction-field", "skip-invalid", "max-line-bytes"],
)
def test_resume_with_another_option_that_shapes_the_output_is_refused(interrupted, more, changed):
    # A resume under another prefix wrote the rest of the rows under other column names: one file, two layouts.
    source, output, kept = interrupted
    result = cli("score", source, "--output", output, "--resume", *more)
    _refused(result, kept, output, "other options", changed)


def test_an_option_added_to_the_command_line_later_is_in_the_resume_check_unless_declared_neutral():
    # Every flag goes into the record but the neutral ones and those it holds resolved: a flag added
    # later (an input's --delimiter, say) stops a resume that changes it without anyone listing it.
    from argparse import Namespace

    from answer_eval.cli.file_commands import resume_options
    from answer_eval.engine.checkpoint import NEUTRAL_OPTIONS
    from answer_eval.evaluators.contains import AnswerContainsCore
    from answer_eval.evaluators.registry import entry_for_command

    evaluator = AnswerContainsCore()
    flags = {
        "file": "in.csv",
        "output": "out.jsonl",
        "format": "json",
        "jobs": 2,
        "checkpoint_seconds": 0.0,
        "prediction_field": "prediction",
        "not_found_label": "NOT_IN_DOCUMENT",
        "column_prefix": "ae_",
        "delimiter": ";",
    }
    recorded = resume_options(entry_for_command("score"), evaluator, Namespace(**flags))
    assert recorded == {"command": "score", "delimiter": ";"}
    assert {"file", "output", "format", "jobs", "checkpoint_seconds"} <= NEUTRAL_OPTIONS


def test_resume_after_an_earlier_line_got_shorter_names_another_input_not_a_damaged_checkpoint(interrupted):
    source, output, kept = interrupted
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "Sheffield" in lines[0]
    lines[0] = lines[0].replace("Sheffield", "York")  # five bytes shorter: the record's position moves inside a line
    source.write_text("".join(lines), encoding="utf-8")
    result = cli("score", source, "--output", output, "--resume")
    _refused(result, kept, output, "another input", str(source))
    assert "damaged" not in result.stderr


def test_resume_after_the_input_was_cut_short_names_another_input(interrupted):
    source, output, kept = interrupted
    source.write_bytes(source.read_bytes()[:100])
    result = cli("score", source, "--output", output, "--resume")
    _refused(result, kept, output, "another input")
    assert "damaged" not in result.stderr


def test_resume_without_output_is_refused(interrupted):
    source, output, kept = interrupted
    result = cli("score", source, "--resume")
    _refused(result, kept, output, "--resume needs --output")


def test_options_that_only_change_how_the_run_goes_may_differ(score_reference, tmp_path):
    source, reference = score_reference
    output = tmp_path / "scored.jsonl"
    stopped_at(ROWS // 2, ["score"], source, output)
    resumed = cli(
        "score", source, "--output", output, "--resume", "--jobs", "2", "--format", "text", "--input-format", "jsonl"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == reference


def test_a_run_without_resume_starts_over(score_reference, tmp_path):
    source, reference = score_reference
    output = tmp_path / "scored.jsonl"
    stopped_at(ROWS // 2, ["score"], source, output)
    again = cli("score", source, "--output", output, "--format", "json")
    assert again.returncode == 0, again.stderr
    assert "discarded" in again.stderr  # the earlier checkpoint is dropped, and said so
    assert output.read_bytes() == reference
    assert json.loads(again.stdout)["items"] == ROWS
    assert not partial_path(output).exists()
    assert not record_path(output).exists()


def test_resume_without_a_checkpoint_starts_from_the_first_line(tmp_path):
    command, source, _ = _input(tmp_path, "score")
    output = tmp_path / "scored.jsonl"
    result = cli(*command, source, "--output", output, "--resume", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert "no checkpoint" in result.stderr
    assert json.loads(result.stdout)["items"] == ROWS


def test_a_second_run_on_the_same_output_is_refused(tmp_path):
    # Another run holds the lock on the partial file (here this test process, with the same lock).
    command, source, _ = _input(tmp_path, "score")
    output = tmp_path / "scored.jsonl"
    with open(partial_path(output), "ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write(b'{"a row": "of the other run"}\n')
        held.flush()
        result = cli(*command, source, "--output", output)
    assert result.returncode == 2
    assert f"another run is writing {output}" in result.stderr
    assert not output.exists()
    assert partial_path(output).read_bytes() == b'{"a row": "of the other run"}\n'
