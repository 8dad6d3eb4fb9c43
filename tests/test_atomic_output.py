"""The output file of a real command-line run: written whole or not at all, never over its input."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import stat
import subprocess
from pathlib import Path

import pytest

from tests.cli_runs import CLI, cli, cycled, partial_path, record_path, sha256, write_lines


@pytest.fixture
def source(tmp_path) -> Path:
    """A small JSONL input of the RAG example rows."""
    return write_lines(tmp_path / "answers.jsonl", cycled("rag_answers.jsonl", 200))


def _only(folder: Path, *names: str) -> None:
    # Nothing else in the folder: no temporary, partial or checkpoint file left behind.
    assert sorted(path.name for path in folder.iterdir()) == sorted(names)


def test_the_output_replaces_an_earlier_file_by_renaming(tmp_path, source):
    output = tmp_path / "scored.jsonl"
    output.write_text("an earlier result\n", encoding="utf-8")
    # A second name for the earlier file: a rename leaves its bytes alone, an in-place rewrite would not.
    os.link(output, tmp_path / "earlier.jsonl")
    done = cli("score", source, "--output", output)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "earlier.jsonl").read_text(encoding="utf-8") == "an earlier result\n"
    assert len(output.read_text(encoding="utf-8").splitlines()) == 200
    # The new file gets the usual permissions (the umask applied), not a temporary file's 0600.
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(output.stat().st_mode) == 0o666 & ~umask
    _only(tmp_path, "answers.jsonl", "scored.jsonl", "earlier.jsonl")


@pytest.mark.parametrize("name", ["same", "hard-link", "symbolic-link"])
def test_an_output_path_that_is_the_input_is_refused(tmp_path, source, name):
    output = {"same": source, "hard-link": tmp_path / "link.jsonl", "symbolic-link": tmp_path / "alias.jsonl"}[name]
    if name == "hard-link":
        os.link(source, output)
    elif name == "symbolic-link":
        output.symlink_to(source)
    digest = sha256(source)
    done = cli("score", source, "--output", output)
    assert done.returncode == 2
    assert "is the input file" in done.stderr
    assert sha256(source) == digest
    assert not partial_path(output).exists()


def test_a_directory_as_output_is_refused(tmp_path, source):
    folder = tmp_path / "results.jsonl"
    folder.mkdir()
    done = cli("score", source, "--output", folder)
    assert done.returncode == 2
    assert "is a directory" in done.stderr
    assert list(folder.iterdir()) == []


@contextlib.contextmanager
def _read_only(folder: Path):
    # Permission bits do not stop root (CI runs as root): there the folder is made immutable
    # (chattr +i, which binds root too); for any other user, write permission is taken away.
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)


def test_a_read_only_output_folder_is_refused_before_any_work(tmp_path, source):
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "scored.jsonl").write_text("an earlier result\n", encoding="utf-8")
    with _read_only(folder):
        with pytest.raises(PermissionError):
            (folder / "probe").touch()  # the folder really is read-only for this process
        done = cli("score", source, "--output", folder / "scored.jsonl")
    assert done.returncode == 2
    assert f"output folder {folder} is not writable" in done.stderr
    assert (folder / "scored.jsonl").read_text(encoding="utf-8") == "an earlier result\n"
    _only(folder, "scored.jsonl")


def _unmeasured() -> dict[str, str]:
    """The environment without coverage.py's: under `make coverage` its data file would meet the 64 KiB limit too."""
    return {name: value for name, value in os.environ.items() if not name.startswith("COVERAGE_")}


def _limit_file_size(size: int):
    def limit() -> None:
        # Files this process writes cannot grow past ``size`` bytes: a write beyond fails with
        # EFBIG, as a full disk fails with ENOSPC (Python ignores SIGXFSZ, so the write errors).
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


@pytest.mark.subprocess  # the file size limit is the run's own
@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_full_disk_is_a_clear_error_and_leaves_no_partial_file(tmp_path, suffix):
    source = write_lines(tmp_path / "answers.jsonl", cycled("rag_answers.jsonl", 1000))
    output = tmp_path / f"scored{suffix}"
    output.write_text("an earlier result\n", encoding="utf-8")
    digest = sha256(source)
    done = subprocess.run(
        [*CLI, "score", str(source), "--output", str(output), "--checkpoint-seconds", "0.02"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size(64 * 1024),
        env=_unmeasured(),
    )
    assert done.returncode == 2, done.stderr
    assert f"cannot write the output {output}: File too large" in done.stderr
    assert "Traceback" not in done.stderr
    assert output.read_text(encoding="utf-8") == "an earlier result\n"
    assert sha256(source) == digest
    assert not partial_path(output).exists()
    assert not record_path(output).exists()
    _only(tmp_path, "answers.jsonl", output.name)


def test_the_library_writes_nothing_at_the_output_when_a_row_fails_and_keeps_the_rows_before_it(tmp_path):
    # process_jsonl, called from Python: a bad line stops the run; the output path is untouched and
    # the rows before the line are kept for resume (the error says where), as after a signal.
    from answer_eval.engine.checkpoint import kept_by
    from answer_eval.engine.runner import process_jsonl
    from answer_eval.errors import InputError

    source = write_lines(tmp_path / "rows.jsonl", iter(['{"a": 1}', '{"a": 2}', "not json"]))
    output = tmp_path / "out.jsonl"
    with pytest.raises(InputError, match=":3: not valid JSON") as failed:
        process_jsonl(source, lambda row, number: row, output=output)
    kept = kept_by(failed.value)
    assert kept is not None
    assert (kept.partial, kept.rows) == (partial_path(output), 2)
    assert partial_path(output).read_text(encoding="utf-8") == '{"a": 1}\n{"a": 2}\n'
    _only(tmp_path, "rows.jsonl", partial_path(output).name, record_path(output).name)
    # A run without resume starts over (the checkpoint dropped); with skip_invalid it completes.
    stats = process_jsonl(source, lambda row, number: row, output=output, skip_invalid=True)
    assert stats.rows == 2
    assert [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()] == [{"a": 1}, {"a": 2}]
    _only(tmp_path, "rows.jsonl", "out.jsonl")


@pytest.mark.parametrize("skip_invalid", [False, True])
def test_standard_input_that_is_the_output_file_is_refused(tmp_path, skip_invalid):
    # `score - -o in.jsonl < in.jsonl`: the run would replace the file it reads (and, skipping, drop its bad lines).
    source = write_lines(tmp_path / "answers.jsonl", iter([*cycled("rag_answers.jsonl", 50), "not json"]))
    os.link(source, tmp_path / "again.jsonl")
    digest = sha256(source)
    for output in (source, tmp_path / "again.jsonl"):
        with open(source, "rb") as stdin:
            done = cli("score", "-", "--output", output, *(["--skip-invalid"] if skip_invalid else []), stdin=stdin)
        assert done.returncode == 2, done.stderr
        assert f"output {output} is the input file (standard input reads it)" in done.stderr
    assert sha256(source) == digest
    _only(tmp_path, "answers.jsonl", "again.jsonl")


def test_a_read_only_output_is_refused_and_left_as_it_was(tmp_path, source):
    output = tmp_path / "scored.jsonl"
    output.write_text("an earlier result\n", encoding="utf-8")
    output.chmod(0o444)
    done = cli("score", source, "--output", output)
    assert done.returncode == 2
    assert f"output {output} is read-only (mode 0444)" in done.stderr
    assert f"chmod u+w {output}" in done.stderr
    assert output.read_text(encoding="utf-8") == "an earlier result\n"
    assert stat.S_IMODE(output.stat().st_mode) == 0o444
    _only(tmp_path, "answers.jsonl", "scored.jsonl")


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_an_output_replaced_keeps_its_permissions(tmp_path, source, suffix):
    output = tmp_path / f"scored{suffix}"
    output.write_text("an earlier result\n", encoding="utf-8")
    output.chmod(0o640)
    done = cli("score", source, "--output", output)
    assert done.returncode == 0, done.stderr
    assert output.read_text(encoding="utf-8") != "an earlier result\n"
    assert stat.S_IMODE(output.stat().st_mode) == 0o640


@pytest.mark.parametrize(
    "more",
    [
        ("--replace-columns", "--prediction-field", "correct"),
        ("--prediction-field", "correct"),
        ("--column-prefix", "ae_", "--replace-columns", "--answers-field", "ae_outcome"),
    ],
    ids=["replacing", "refusing-rows", "prefixed"],
)
def test_an_added_column_that_is_a_field_read_is_refused_before_any_work(tmp_path, more):
    # The verdict would be written over the very text it grades.
    rows = [{"answers": ["a"], "prediction": "a", "correct": "the graded answer", "ae_outcome": ["a"]}]
    data = tmp_path / "scored.jsonl"
    data.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    output = tmp_path / "out.jsonl"
    done = cli("score", data, "--output", output, *more)
    assert done.returncode == 2
    assert "which this command also writes its own column into" in done.stderr
    assert "--column-prefix" in done.stderr
    assert not output.exists()
    _only(tmp_path, "scored.jsonl")


@pytest.mark.subprocess  # the file size limit is the run's own
def test_a_full_disk_mid_run_keeps_the_rows_recorded_and_resume_completes_the_output(tmp_path):
    # A record after every row; the disk fills in the middle of writing one: the last record stands,
    # the torn row after it is cut off by --resume, which writes the uninterrupted output.
    source = write_lines(tmp_path / "answers.jsonl", cycled("rag_answers.jsonl", 2000))
    reference = tmp_path / "reference.jsonl"
    assert cli("score", source, "--output", reference).returncode == 0
    output = tmp_path / "scored.jsonl"
    done = subprocess.run(
        [*CLI, "score", str(source), "--output", str(output), "--checkpoint-seconds", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limit_file_size(256 * 1024),
    )
    assert done.returncode == 2, done.stderr
    assert f"cannot write the output {output}: File too large" in done.stderr
    record = json.loads(record_path(output).read_text(encoding="utf-8"))
    kept = record["position"]["rows"]
    assert 0 < kept < 2000
    assert f"the {kept:,} rows done before this are kept in {partial_path(output)}" in done.stderr
    assert partial_path(output).stat().st_size >= record["position"]["output_offset"]
    assert not output.exists()
    resumed = cli("score", source, "--output", output, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == reference.read_bytes()
