"""Nothing outside ``--output`` is written, truncated or removed, and no value of the user's is dropped in silence.

Each test runs the real command line on real files (in process, but for the signals): planted links at the hidden
work files, inputs that are those files, rows holding a column the command adds, damaged
checkpoints, spreadsheet formulas in CSV cells, a run killed before its first periodic record and a
second Ctrl-C while a stopped run says so. The rows of docs/bad-inputs.md name these tests.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from answer_eval import __version__
from answer_eval.engine.output_files import read_csv_text_cell
from tests.cli_runs import (
    CLI,
    _default_signals,
    cli,
    cycled,
    partial_path,
    record_path,
    start_cli,
    stop,
    stopped_at,
    wait_for_record,
    write_jsonl,
    write_lines,
)
from tests.conftest import EXAMPLES

RAG = EXAMPLES / "data" / "rag_answers.jsonl"
VICTIM_TEXT = "a file of the user's that no run may touch\n"
TOOL = '{"name": "f", "arguments": {"x": 1}}'


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "elsewhere" / "notes.txt"
    victim.parent.mkdir()
    victim.write_text(VICTIM_TEXT, encoding="utf-8")
    return victim


def _work_files(output: Path) -> dict[str, Path]:
    return {
        "partial": partial_path(output),
        "record": record_path(output),
        "temporary record": record_path(output).with_name(record_path(output).name + ".tmp"),
    }


# -- planted links ---------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["partial", "record", "temporary record"])
@pytest.mark.parametrize("plant", ["symlink", "hardlink", "fifo"])
@pytest.mark.parametrize("resume", [False, True])
def test_work_file_links_are_refused(tmp_path: Path, which: str, plant: str, resume: bool) -> None:
    victim = _victim(tmp_path)
    output = tmp_path / "out.jsonl"
    planted = _work_files(output)[which]
    if plant == "symlink":
        planted.symlink_to(victim)
    elif plant == "hardlink":
        os.link(victim, planted)
    else:
        os.mkfifo(planted)
    done = cli("score", RAG, "--output", output, *(["--resume"] if resume else []), timeout=60)
    assert done.returncode == 2, done.stderr
    why = {"symlink": "is a symbolic link", "hardlink": "has 2 hard links", "fifo": "is not a regular file"}[plant]
    assert str(planted) in done.stderr
    assert why in done.stderr
    assert "Traceback" not in done.stderr
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT  # nothing followed, nothing truncated
    assert os.path.lexists(planted)  # and the planted file is not removed either
    assert not output.exists()


def test_atomic_outputs_replace_a_link_at_the_output_path_never_its_target(tmp_path: Path) -> None:
    # The output path itself is what the user asked for: a link there is replaced, never followed.
    victim = _victim(tmp_path)
    for output, command in (
        (tmp_path / "out.jsonl", ["score", RAG]),
        (tmp_path / "out.csv", ["score", RAG]),
        (tmp_path / "page.html", ["report", RAG, "--no-semantic", "--html"]),
    ):
        output.symlink_to(victim)
        done = cli(*command, *([] if command[0] == "report" else ["--output"]), output, timeout=120)
        assert done.returncode == 0, done.stderr
        assert not output.is_symlink()
        assert output.stat().st_size > 0
        assert victim.read_text(encoding="utf-8") == VICTIM_TEXT


# -- inputs that are the run's own files -----------------------------------------------------------
@pytest.mark.parametrize("which", ["partial", "record", "temporary record"])
@pytest.mark.parametrize("how", ["named", "symlink", "hardlink"])
@pytest.mark.parametrize("resume", [False, True])
def test_input_that_is_a_work_file_is_refused(tmp_path: Path, which: str, how: str, resume: bool) -> None:
    output = tmp_path / "out.jsonl"
    work = _work_files(output)[which]
    original = RAG.read_bytes()
    if how == "named":
        work.write_bytes(original)
        source = work
    else:
        source = tmp_path / "answers.jsonl"
        source.write_bytes(original)
        (work.symlink_to if how == "symlink" else lambda target: os.link(target, work))(source)
    done = cli("score", source, "--output", output, *(["--resume"] if resume else []), timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"input {source} is the " in done.stderr
    assert "of this run" in done.stderr
    assert source.read_bytes() == original
    assert not output.exists()


# -- columns the command adds ----------------------------------------------------------------------
CLASHES: dict[str, tuple[list[str], dict[str, Any], str]] = {
    "score": (["score"], {"prediction": "Lyon", "answers": ["Paris"], "correct": True}, "correct"),
    "judge": (["judge"], {"prediction": "Lyon", "answers": ["Paris"], "stage": "human"}, "stage"),
    "typed": (
        ["typed"],
        {"model_output": "<answer>4</answer>", "solution": "4", "problem_type": "numerical", "reward": 0.25},
        "reward",
    ),
    "metrics": (["metrics"], {"prediction": "Paris", "answers": ["Paris"], "bleu": "mine"}, "bleu"),
    "tools": (["tools"], {"prediction": TOOL, "reference": TOOL, "problem": "a note"}, "problem"),
}


@pytest.mark.parametrize("command", list(CLASHES))
def test_added_column_clash_is_refused(tmp_path: Path, command: str) -> None:
    arguments, row, column = CLASHES[command]
    source = write_jsonl(tmp_path / "in.jsonl", [{k: v for k, v in row.items() if k != column}, row])
    output = tmp_path / "out.jsonl"
    for extra in ([], ["--skip-invalid"], ["--jobs", "2"]):
        done = cli(*arguments, source, "--output", output, *extra, timeout=120)
        assert done.returncode == 2, done.stderr
        assert f"in.jsonl:2: the row already has a column {column!r}" in done.stderr
        assert "--column-prefix" in done.stderr
        assert "--replace-columns" in done.stderr
        assert not output.exists()
    kept = cli(*arguments, source, "--output", output, "--column-prefix", "ae_", timeout=120)
    assert kept.returncode == 0, kept.stderr
    written = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert written[1][column] == row[column]  # the user's value, untouched
    assert f"ae_{column}" in written[1]
    assert written[1]["ae_scored_by"] == f"answer-eval {command} {__version__}"
    replaced = cli(*arguments, source, "--output", output, "--replace-columns", timeout=120)
    assert replaced.returncode == 0, replaced.stderr
    overwritten = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert overwritten[1][column] == written[1][f"ae_{column}"]  # asked for: the command's value


def test_human_columns_are_not_taken_for_a_scored_run(tmp_path: Path) -> None:
    # A person's verdicts under the names the score command writes: not a results file.
    human = [
        {"prediction": "Lyon", "answers": ["Paris"], "correct": True, "failure_kind": None, "outcome": "lyon"},
        {"prediction": "Paris", "answers": ["Paris"], "correct": False, "failure_kind": "wrong", "outcome": "paris"},
    ]
    source = write_jsonl(tmp_path / "labelled.jsonl", human)
    page = tmp_path / "page.html"
    done = cli("report", source, "--html", page, "--evaluator", "contains", "--format", "json", timeout=120)
    assert done.returncode == 0, done.stderr
    system = json.loads(done.stdout)["systems"][0]
    assert system["reused"] == []  # scored afresh: Lyon is wrong, Paris right
    assert system["scores"]["contains"]["score"] == 0.5
    assert system["failure_counts"]["wrong"] == 1
    # A file the score command wrote is recognised by its mark, under any prefix.
    scored = tmp_path / "scored.jsonl"
    assert cli("score", source, "--output", scored, "--column-prefix", "ae_", timeout=60).returncode == 0
    again = cli("report", scored, "--html", page, "--evaluator", "contains", "--format", "json", timeout=120)
    assert json.loads(again.stdout)["systems"][0]["reused"] == ["contains"]
    # compare always scores: the person's column is not its result either.
    other = write_jsonl(tmp_path / "other.jsonl", [{**row, "prediction": "Paris"} for row in human])
    compared = cli("compare", source, other, "--evaluator", "contains", "--format", "json", timeout=120)
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["evaluators"][0]["a"]["score"] == 0.5


# -- damaged checkpoints ---------------------------------------------------------------------------
ROWS = 600


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, bytes]]:
    """A ``score`` run stopped part-way with a checkpoint: ``(input, output, the bytes of its checkpoint files)``."""
    folder = tmp_path_factory.mktemp("stopped")
    source = write_lines(folder / "in.jsonl", cycled("rag_answers.jsonl", ROWS))
    output = folder / "out.jsonl"
    stopped_at(ROWS // 2, ["score"], source, output)  # enough rows that the damage lies inside what is recorded
    return source, output, {"partial": partial_path(output).read_bytes(), "record": record_path(output).read_bytes()}


def _damage(partial: bytes, record: dict[str, Any], how: str, source: bytes) -> tuple[bytes, dict[str, Any]]:
    position = record["position"]
    if how == "nul bytes":
        cut = partial.index(b"\n") + 1
        return partial[:cut] + b"\x00" * 40 + partial[cut + 40 :], record
    if how == "garbage line":
        cut = partial.index(b"\n") + 1
        return partial[:cut] + b"#$%^ not json at all\n" + partial[cut:], record
    if how == "output offset inside a line":
        return partial, {**record, "position": {**position, "output_offset": position["output_offset"] - 5}}
    if how == "input offset inside a line":
        # The fingerprint is of the bytes up to the position, as a run writes it: only the position is wrong
        # (a fingerprint that does not match is another input, see test_resume.py).
        offset = position["input_offset"] - 3
        digest = hashlib.sha256(source[:offset]).hexdigest()
        return partial, {**record, "input_sha256": digest, "position": {**position, "input_offset": offset}}
    if how == "unknown format":
        return partial, {**record, "format": 99}
    if how == "options not a mapping":
        return partial, {**record, "options": [1, 2]}
    return partial, {**record, "position": "not a position"}


@pytest.mark.parametrize(
    "how",
    ["nul bytes", "garbage line", "output offset inside a line", "input offset inside a line", "unknown format",
     "position not a mapping", "options not a mapping"],
)  # fmt: skip
def test_damaged_checkpoint_is_refused(tmp_path: Path, stopped_run: tuple[Path, Path, dict[str, bytes]], how: str):
    source, _, kept = stopped_run
    partial, record = _damage(kept["partial"], json.loads(kept["record"]), how, source.read_bytes())
    _refused_as_damaged(tmp_path, source, partial, record)


@pytest.mark.parametrize(
    "counts",
    [
        {"items": 10**400, "correct": 10**400},  # a count of 401 digits: OverflowError in the interval, exit 1
        {"correct": float("inf")},  # 1e999, written as Infinity: int() of it raised OverflowError, exit 1
        {"correct": -5},  # a negative count: was taken, a negative accuracy printed
        {"correct": 10**6},  # more right answers than items: ValueError in the interval, exit 1
    ],
    ids=["401 digits", "1e999", "negative", "more right than items"],
)
def test_running_totals_no_run_writes_are_a_damaged_checkpoint(
    tmp_path: Path, stopped_run: tuple[Path, Path, dict[str, bytes]], counts: dict[str, Any]
):
    source, _, kept = stopped_run
    record = json.loads(kept["record"])
    _refused_as_damaged(tmp_path, source, kept["partial"], {**record, "state": {**record["state"], **counts}})


def _refused_as_damaged(tmp_path: Path, source: Path, partial: bytes, record: dict[str, Any]) -> None:
    output = tmp_path / "out.jsonl"
    partial_path(output).write_bytes(partial)
    record_path(output).write_text(json.dumps(record), encoding="utf-8")
    before = {path: path.read_bytes() for path in (partial_path(output), record_path(output))}
    done = cli("score", source, "--output", output, "--resume", timeout=60)
    assert done.returncode == 2, done.stderr
    assert "checkpoint" in done.stderr
    assert "is damaged" in done.stderr
    assert "without --resume" in done.stderr
    assert "Traceback" not in done.stderr
    assert {path: path.read_bytes() for path in before} == before  # every file as it was
    assert not output.exists()


def test_a_checkpoint_nested_too_deeply_is_refused_as_damaged(
    tmp_path: Path, stopped_run: tuple[Path, Path, dict[str, bytes]]
) -> None:
    # json.loads raises RecursionError (not a ValueError) past Python's recursion limit: it ended the run with exit 1.
    source, _, kept = stopped_run
    for name, partial, record in (
        ("record", kept["partial"], b"[" * 100_000),
        ("row", b"[" * 100_000 + b"\n" + kept["partial"], kept["record"]),
    ):
        output = tmp_path / f"{name}.jsonl"
        partial_path(output).write_bytes(partial)
        record_path(output).write_bytes(record)
        done = cli("score", source, "--output", output, "--resume", timeout=60)
        assert done.returncode == 2, done.stderr
        assert "is damaged" in done.stderr
        assert "Traceback" not in done.stderr


# -- CSV cells a spreadsheet would run -------------------------------------------------------------
FORMULAS = ['=HYPERLINK("http://x","y")', "@SUM(1+1)|cmd", "+1+1", "-2+3", "\tTAB", "\rCR", "'quoted", "＝1+1"]


def test_csv_formula_cells_are_neutralised(tmp_path: Path) -> None:
    rows = [{"prediction": text, "answers": ["x"], "=column": text} for text in FORMULAS]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    output = tmp_path / "out.csv"
    done = cli("score", source, "--output", output, timeout=60)
    assert done.returncode == 0, done.stderr
    with output.open(newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    header, *cells = table
    assert header[2] == "'=column"
    for text, row in zip(FORMULAS, cells, strict=True):
        assert row[0] == "'" + text  # a leading apostrophe: shown as text, never run
        assert read_csv_text_cell(row[0]) == text  # and read back without loss
    assert read_csv_text_cell("plain") == "plain"
    assert read_csv_text_cell("'plain") == "'plain"


# -- killed before the first periodic record -------------------------------------------------------
@pytest.mark.subprocess  # killed
def test_kill_before_first_checkpoint_leaves_a_resumable_run(tmp_path: Path) -> None:
    source = write_lines(tmp_path / "in.jsonl", cycled("rag_answers.jsonl", 20_000))  # still running when killed
    reference = tmp_path / "reference.jsonl"
    assert cli("score", source, "--output", reference).returncode == 0
    output = tmp_path / "out.jsonl"
    # An hour between periodic records: the first one comes at the first row boundary all the same.
    process = start_cli("score", source, "--output", output, "--checkpoint-seconds", "3600")
    wait_for_record(process, output)
    code, _, _ = stop(process, signal.SIGKILL)
    assert code == -signal.SIGKILL
    resumed = cli("score", source, "--output", output, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == reference.read_bytes()
    # Rows left with no record at all (a run killed between opening and its first row) are removed, and said so.
    leftover = tmp_path / "again.jsonl"
    partial_path(leftover).write_text('{"a row": "of a run killed early"}\n' * 1000, encoding="utf-8")
    again = cli("score", source, "--output", leftover)
    assert again.returncode == 0, again.stderr
    assert "removed" in again.stderr
    assert "before its first checkpoint" in again.stderr
    assert leftover.read_bytes() == reference.read_bytes()
    assert not partial_path(leftover).exists()


# -- a second Ctrl-C while the stop message prints -------------------------------------------------
def _wait_blocked_writing(pid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    wchan = Path(f"/proc/{pid}/wchan")  # the kernel function it sleeps in: "pipe_write", "anon_pipe_write"
    while time.monotonic() < deadline:
        if "pipe_write" in wchan.read_text():
            return
        time.sleep(0.01)
    raise AssertionError("the stopped run never wrote its message")


@pytest.mark.subprocess  # two signals
def test_second_interrupt_while_stopping_exits_130(tmp_path: Path) -> None:
    source = write_lines(tmp_path / "in.jsonl", cycled("rag_answers.jsonl", 20_000))  # still running at the first
    output = tmp_path / "out.jsonl"
    reader, writer = os.pipe()
    os.set_blocking(writer, False)
    try:
        while True:  # fill the pipe: the run's stop message then blocks until the pipe is read
            os.write(writer, b"x" * 4096)
    except BlockingIOError:
        os.set_blocking(writer, True)
    process = subprocess.Popen(
        [*CLI, "score", str(source), "--output", str(output), "--checkpoint-seconds", "0.2"],
        stdout=subprocess.DEVNULL,
        stderr=writer,
        preexec_fn=_default_signals,
    )
    os.close(writer)
    try:
        wait_for_record(process, output)
        process.send_signal(signal.SIGINT)
        _wait_blocked_writing(process.pid)  # the run stopped, kept its checkpoint, and is saying so
        process.send_signal(signal.SIGINT)
        time.sleep(0.2)
        message = bytearray()

        def read_all() -> None:
            for chunk in iter(lambda: os.read(reader, 65536), b""):
                message.extend(chunk)

        drain = threading.Thread(target=read_all)
        drain.start()
        assert process.wait(timeout=60) == 130
        drain.join(timeout=10)
    finally:
        os.close(reader)
        if process.poll() is None:
            process.kill()
    assert b"stopped by SIGINT" in message
    assert b"--resume" in message
    assert json.loads(record_path(output).read_text(encoding="utf-8"))["position"]["rows"] > 0
