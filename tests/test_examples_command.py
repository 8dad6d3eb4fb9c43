"""``answer-eval examples`` writes the bundled example files, so the README's commands run for a pip user."""

import os
from pathlib import Path

import pytest

from tests.cli_runs import cli
from tests.conftest import EXAMPLES, ROOT


def test_examples_writes_every_bundled_file_and_its_licenses(tmp_path):
    done = cli("examples", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = tmp_path / "examples" / "data"
    for source in (EXAMPLES / "data").glob("*.jsonl"):
        assert (written / source.name).read_bytes() == source.read_bytes()
    assert (written / "LICENSES" / "openqa-eval.LICENSE").read_bytes() == (
        ROOT / "licenses" / "openqa-eval.LICENSE"
    ).read_bytes()
    assert (written / "LICENSES" / "DATA_LICENSES.md").exists()
    # The README's score command on them prints what docs/cli.md shows.
    scored = cli("score", "examples/data/rag_answers.jsonl", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    assert "correct          9" in scored.stdout


def test_examples_again_leaves_the_same_files_and_says_so(tmp_path):
    assert cli("examples", "out", cwd=tmp_path).returncode == 0
    again = cli("examples", "out", cwd=tmp_path)
    assert again.returncode == 0
    assert "0 written" in again.stderr
    assert "rag_answers.jsonl  already there" in again.stdout


def test_examples_never_overwrites_a_file_with_other_contents(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    mine = folder / "rag_answers.jsonl"
    mine.write_text("my own rows\n", encoding="utf-8")
    done = cli("examples", folder, cwd=tmp_path)
    assert done.returncode == 2
    assert "is there with other contents: nothing was written" in done.stderr
    assert mine.read_text(encoding="utf-8") == "my own rows\n"
    assert sorted(p.name for p in folder.iterdir()) == ["rag_answers.jsonl"]  # nothing else was written


def test_examples_refuses_a_link_at_a_file_name(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("", encoding="utf-8")
    os.symlink(target, folder / "tool_calls.jsonl")
    done = cli("examples", folder, cwd=tmp_path)
    assert done.returncode == 2
    assert "is not a regular file" in done.stderr
    assert target.read_text(encoding="utf-8") == ""


def test_examples_refuses_a_folder_that_is_a_file(tmp_path):
    (tmp_path / "out").write_text("", encoding="utf-8")
    done = cli("examples", Path("out"), cwd=tmp_path)
    assert done.returncode == 2
    assert "is not a folder" in done.stderr


def test_examples_never_writes_through_a_linked_folder_inside_the_folder(tmp_path):
    folder, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, folder / "LICENSES")
    done = cli("examples", folder, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"{folder / 'LICENSES'} is a symbolic link" in done.stderr
    assert list(elsewhere.iterdir()) == []  # no licence written outside the folder
    assert sorted(p.name for p in folder.iterdir()) == ["LICENSES"]  # and nothing else either


def test_examples_refuses_a_file_where_its_licenses_folder_goes(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "LICENSES").write_text("mine\n", encoding="utf-8")
    done = cli("examples", folder, cwd=tmp_path)
    assert done.returncode == 2
    assert "LICENSES is there and is not a folder" in done.stderr
    assert (folder / "LICENSES").read_text(encoding="utf-8") == "mine\n"


def test_examples_refuses_an_empty_folder_path(tmp_path):
    done = cli("examples", "", cwd=tmp_path)
    assert done.returncode == 2
    assert "the folder is an empty path" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_examples_may_be_written_into_a_folder_that_is_itself_a_link(tmp_path):
    # The folder named on the command line is the user's choice, a link or not; only links inside it are refused.
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "linked")
    done = cli("examples", "linked", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (real / "LICENSES" / "DATA_LICENSES.md").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ("score", "IN", "--output", ""),
        ("score", "IN", "--engine", "dask", "--output", ""),  # wrote part-00000.parquet into the current folder
        ("calibrate", "IN", "--output", ""),
        ("report", "IN", "--html", ""),
    ],
)
def test_every_command_refuses_an_empty_path_to_write_to(tmp_path, args):
    source = tmp_path / "in.jsonl"
    source.write_bytes((EXAMPLES / "data" / "rag_answers.jsonl").read_bytes())
    done = cli(*(source if arg == "IN" else arg for arg in args), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "an empty path names no file" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
