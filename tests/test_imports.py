"""What importing the package brings along, checked in a fresh interpreter each time."""

import json
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

HEAVY = ["torch", "sentence_transformers", "transformers", "rouge_score", "sacrebleu", "jiwer", "nltk", "scipy"]
COMPONENTS = "haystack_integrations.components.evaluators.answer_eval"


def run_python(code):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.subprocess  # what a fresh interpreter imports
def test_the_core_imports_no_framework_and_no_heavy_package():
    loaded = run_python(
        f"""
        import json, sys
        import answer_eval
        print(json.dumps([name for name in {[*HEAVY, "haystack", "tqdm", "numpy"]!r} if name in sys.modules]))
        """
    )
    assert loaded == []


@pytest.mark.subprocess  # what a fresh interpreter imports
def test_no_module_of_the_package_imports_a_heavy_package_when_imported():
    # Haystack itself imports torch when torch is installed (haystack/utils/device.py), so
    # "torch" ends up in sys.modules whatever this package does. What this package controls is
    # whether one of its own modules imports torch (or rouge-score, sacrebleu, ...) at import
    # time: the module that runs each such import statement is recorded.
    offenders = run_python(
        f"""
        import json, sys, traceback
        roots = [{str(ROOT / "src" / "answer_eval")!r}, {str(ROOT / "src" / "haystack_integrations")!r}]
        heavy = set({HEAVY!r})
        offenders = []

        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name in heavy:
                    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith("<")]
                    importer = frames[-1].filename
                    if any(importer.startswith(root) for root in roots):
                        offenders.append([name, importer])
                return None

        sys.meta_path.insert(0, Watch())
        import {COMPONENTS}
        print(json.dumps(offenders))
        """
    )
    assert offenders == []


@pytest.mark.subprocess  # what a fresh interpreter imports
def test_the_components_import_without_torch_installed():
    # A machine without torch (the semantic extra not installed): import torch fails, as there.
    loaded = run_python(
        f"""
        import json, sys

        class NoTorch:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "sentence_transformers", "transformers"):
                    raise ModuleNotFoundError(f"No module named {{name!r}}")
                return None

        sys.meta_path.insert(0, NoTorch())
        from {COMPONENTS} import AnswerContainsEvaluator
        result = AnswerContainsEvaluator().run(ground_truth_answers=["12400"], predicted_answers=["12,400 units"])
        print(json.dumps({{"score": result["score"], "torch": "torch" in sys.modules}}))
        """
    )
    assert loaded == {"score": 1.0, "torch": False}


def _imported_modules(path):
    """Every module an ``import`` statement of ``path`` names, at any depth (lazy imports in functions too)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_the_core_never_imports_the_command_line_or_the_components():
    # The core is everything in answer_eval but the command line (cli/ and __main__.py): it may be
    # used without either, and the components and the command line are built on it.
    package = ROOT / "src" / "answer_eval"
    offenders = {
        f"{path.relative_to(package)}: {module}"
        for path in package.rglob("*.py")
        if path.name != "__main__.py" and path.relative_to(package).parts[0] != "cli"
        for module in _imported_modules(path)
        if module.startswith(("answer_eval.cli", "answer_eval.cli.main", "haystack_integrations"))
    }
    assert offenders == set()
    # And the check reads what it should: the command line itself does import its commands.
    assert "answer_eval.cli" in set(_imported_modules(package / "cli" / "main.py"))
    assert "haystack.components.evaluators" in set(_imported_modules(package / "reports" / "scorers.py"))  # lazy
