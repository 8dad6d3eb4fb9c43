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

from tests.cli_runs import CLI, cycled, partial_path, record_path, run_cli, sha256, write_lines


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
    done = run_cli("score", source, "--output", output)
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
    done = run_cli("score", source, "--output", output)
    assert done.returncode == 2
    assert "is the input file" in done.stderr
    assert sha256(source) == digest
    assert not partial_path(output).exists()


def test_a_directory_as_output_is_refused(tmp_path, source):
    folder = tmp_path / "results.jsonl"
    folder.mkdir()
    done = run_cli("score", source, "--output", folder)
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
        done = run_cli("score", source, "--output", folder / "scored.jsonl")
    assert done.returncode == 2
    assert f"output folder {folder} is not writable" in done.stderr
    assert (folder / "scored.jsonl").read_text(encoding="utf-8") == "an earlier result\n"
    _only(folder, "scored.jsonl")


def _limit_file_size(size: int):
    def limit() -> None:
        # Files this process writes cannot grow past ``size`` bytes: a write beyond fails with
        # EFBIG, as a full disk fails with ENOSPC (Python ignores SIGXFSZ, so the write errors).
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


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
    )
    assert done.returncode == 2, done.stderr
    assert f"cannot write the output {output}: File too large" in done.stderr
    assert "Traceback" not in done.stderr
    assert output.read_text(encoding="utf-8") == "an earlier result\n"
    assert sha256(source) == digest
    assert not partial_path(output).exists()
    assert not record_path(output).exists()
    _only(tmp_path, "answers.jsonl", output.name)


def test_the_library_writes_nothing_when_a_row_fails(tmp_path):
    # process_jsonl, called from Python: a bad line stops the run, the partial output is removed.
    from answer_eval.engine.files import InputError
    from answer_eval.engine.runner import process_jsonl

    source = write_lines(tmp_path / "rows.jsonl", iter(['{"a": 1}', '{"a": 2}', "not json"]))
    output = tmp_path / "out.jsonl"
    with pytest.raises(InputError, match=":3: not valid JSON"):
        process_jsonl(source, lambda row, number: row, output=output)
    _only(tmp_path, "rows.jsonl")
    stats = process_jsonl(source, lambda row, number: row, output=output, skip_invalid=True)
    assert stats.rows == 2
    assert [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()] == [{"a": 1}, {"a": 2}]
