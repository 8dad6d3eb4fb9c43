"""Type checkers see the package as typed on its main import path (issue 19, item 2).

``py.typed`` sits in ``haystack_integrations/components/evaluators/answer_eval/`` (a PEP 420
namespace has no package above it to hold one), as the official Haystack integrations ship it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

USER_SCRIPT = """
from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator, RubricEvaluator

evaluator = AnswerContainsEvaluator()
result: dict[str, object] = evaluator.run(ground_truth_answers=["Paris"], predicted_answers=["Paris"])
grader: type[RubricEvaluator] = RubricEvaluator
"""


def test_both_parts_of_the_package_carry_py_typed():
    assert (ROOT / "src" / "answer_eval" / "py.typed").is_file()
    assert (ROOT / "src" / "haystack_integrations" / "components" / "evaluators" / "answer_eval" / "py.typed").is_file()


@pytest.mark.subprocess  # mypy in a process of its own
def test_mypy_strict_on_a_user_script_importing_the_installed_components(tmp_path: Path):
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT, encoding="utf-8")
    done = subprocess.run(
        # Imports are found (so a module without py.typed is reported as import-untyped) but not
        # analysed: checking all of Haystack behind them takes minutes, and tells nothing more here.
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=skip", str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # the package as installed, not the repository's mypy configuration
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "import-untyped" not in done.stdout
