"""Run in a fresh venv holding only the built wheel (``make compat``): what a pip user gets.

The README's first screen (its first ``sh`` and ``python`` blocks) must run as written, from the
installed package, with no extra and no file of this repository (the set-up lines, ``git clone``, ``cd`` and
``pip``, are what made this venv).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import answer_eval

pytestmark = pytest.mark.subprocess  # the installed commands and a fresh interpreter, as a pip user runs them

README = Path(__file__).resolve().parent.parent / "README.md"


def _first_block(language: str) -> str:
    found = re.search(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert found is not None, f"the README has no {language} block"
    return found.group(1)


def test_the_package_is_the_installed_wheel_not_the_repository():
    location = Path(answer_eval.__file__).resolve()
    assert "site-packages" in location.parts
    assert location.parent.parent.name != "src"


def test_the_readme_first_shell_block_runs_as_written(tmp_path):
    setup = ("pip ", "git clone ", "cd ")
    lines = [line for line in _first_block("sh").splitlines() if line.strip() and not line.startswith(setup)]
    assert any(line.startswith("answer-eval ") for line in lines)
    script = "set -euo pipefail\n" + "\n".join(lines) + "\n"
    bin_folder = Path(sys.executable).parent  # the venv's answer-eval, as an activated venv has it on PATH
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": f"{bin_folder}:/usr/bin:/bin", "HAYSTACK_TELEMETRY_ENABLED": "False", "HOME": str(tmp_path)},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "score" in done.stdout


def test_the_readme_first_python_block_runs_as_written(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", _first_block("python")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"HAYSTACK_TELEMETRY_ENABLED": "False", "HOME": str(tmp_path)},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wheel_carries_the_example_files_the_readme_commands_use(tmp_path):
    bin_folder = Path(sys.executable).parent
    env = {"PATH": f"{bin_folder}:/usr/bin:/bin", "HAYSTACK_TELEMETRY_ENABLED": "False", "HOME": str(tmp_path)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["answer-eval", *args], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300, check=False
        )

    written = run("examples")
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "examples" / "data" / "LICENSES" / "openqa-eval.LICENSE").is_file()
    # The README's commands, as written, on the files the wheel carries (no extra installed here).
    text = README.read_text(encoding="utf-8")
    compare = re.search(r"^answer-eval (compare examples/data/\S+ examples/data/\S+ --show 2)$", text, re.MULTILINE)
    assert compare is not None
    for command in (["score", "examples/data/rag_answers.jsonl"], compare.group(1).split()):
        done = run(*command)
        assert done.returncode == 0, done.stderr
        assert "examples/data/" in done.stdout
