"""The README's code runs and shows what it claims."""

import ast
import doctest
import inspect
import re
import subprocess
import sys

import pytest

import answer_eval.evaluators.contains.scorer
import answer_eval.stats.exact_sum
import answer_eval.stats.significance
import answer_eval.text.folding
import answer_eval.text.matching
import answer_eval.text.not_found
import answer_eval.text.numbers
from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator
from tests.conftest import EXAMPLES, ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCSTRINGS = inspect.cleandoc(AnswerContainsEvaluator.__doc__ or "")
JUDGE_DOC = (ROOT / "docs" / "answer-judge.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README + DOCSTRINGS + JUDGE_DOC, flags=re.S)
CLAIM = re.compile(r"^(?P<expr>[^#\s][^#]*?)\s+#\s+(?P<value>.+?)(?::.*)?$")


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.splitlines()[0][:40])
def test_readme_python_blocks_run_and_their_commented_values_hold(block):
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    checked = 0
    for line in block.splitlines():
        match = CLAIM.match(line)
        if not match or "=" in match["expr"].split("(")[0]:
            continue
        try:
            expected = ast.literal_eval(match["value"].strip())
        except (ValueError, SyntaxError):
            continue
        expression = re.sub(r"^print\((.*)\)$", r"\1", match["expr"].strip())
        assert eval(expression, namespace) == expected, line
        checked += 1
    assert checked >= 2


def test_readme_summary_is_what_the_cli_prints():
    block = re.search(r"```text\n(answer-eval score: .*?)```", README, flags=re.S)[1]
    done = subprocess.run(
        [sys.executable, "-m", "answer_eval", "score", "examples/data/rag_answers.jsonl"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert done.stdout.startswith(block)
    assert (EXAMPLES / "data" / "rag_answers.jsonl").exists()


def test_readme_names_the_two_setup_commands_and_ci_runs_the_test_one():
    assert "make example" in README
    assert "make test" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "module",
    [
        answer_eval.stats.exact_sum,
        answer_eval.text.folding,
        answer_eval.text.matching,
        answer_eval.text.not_found,
        answer_eval.text.numbers,
        answer_eval.stats.significance,
        answer_eval.evaluators.contains.scorer,
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
