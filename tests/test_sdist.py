"""The sdist carries what its own tests read: an unpacked sdist runs `make test` as a clone does."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
@pytest.mark.subprocess  # python -m build
def test_the_sdist_holds_every_repository_file_the_tests_read(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (archive,) = tmp_path.glob("answer_eval_haystack-*.tar.gz")
    with tarfile.open(archive) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    # Every top-level path the tests name as ROOT / "...", and the make targets' own files.
    sources = [path for path in (ROOT / "tests").glob("*.py") if path.name != "test_sdist.py"]
    read = {name for path in sources for name in re.findall(r'ROOT / "(\w[^"]*)"', path.read_text(encoding="utf-8"))}
    wanted = read | {"Makefile", "constraints.txt", "pyproject.toml", ".ci/run", "tests_installed/test_first_screen.py"}
    for path in sorted(wanted):
        assert path in names or any(name.startswith(path + "/") for name in names), path
    assert not any(name.startswith("benchmarks/results/") for name in names)  # local measurements stay out
    assert "data/judge/nq301-dev.jsonl" in names
