"""The README's code runs and shows what it claims."""

import ast
import doctest
import inspect
import re

import pytest

import answer_eval.evaluators.contains.scorer
import answer_eval.stats.significance
import answer_eval.stats.written_numbers
import answer_eval.text.folding
import answer_eval.text.matching
import answer_eval.text.not_found
from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator
from tests.cli_runs import cli, python
from tests.conftest import EXAMPLES, ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCSTRINGS = inspect.cleandoc(AnswerContainsEvaluator.__doc__ or "")
JUDGE_DOC = (ROOT / "docs" / "answer-judge.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README + DOCSTRINGS + JUDGE_DOC, flags=re.S)
CLAIM = re.compile(r"^(?P<expr>[^#\s][^#]*?)\s+#\s+(?P<value>.+?)(?::.*)?$")


def _prints(node: ast.stmt) -> bool:
    call = node.value if isinstance(node, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.splitlines()[0][:40])
def test_readme_python_blocks_run_as_scripts_and_print_what_their_comments_say(block, tmp_path):
    # Run as a user runs a pasted snippet, a script: a bare expression would show nothing there.
    lines = block.splitlines()
    bare = [
        node.lineno
        for node in ast.parse(block).body
        if isinstance(node, ast.Expr)
        and not _prints(node)
        and (not isinstance(node.value, ast.Call) or "  # " in lines[node.lineno - 1])
    ]
    assert bare == [], f"lines {bare} show a value in a comment but print nothing when run as a script"
    done = python(block, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    calls = [line for line in block.splitlines() if line.startswith("print(")]
    assert len(printed) == len(calls), done.stdout  # one line printed per print, in order
    checked = 0
    for line, shown in zip(calls, printed, strict=True):
        match = CLAIM.match(line)
        try:
            expected = ast.literal_eval(match["value"].strip()) if match else None
        except (ValueError, SyntaxError):
            continue  # a comment in words ("the probability that ..."), not a value
        if match:
            assert shown == str(expected), line
            checked += 1
    assert checked >= 2


def test_readme_summary_is_what_the_cli_prints():
    block = re.search(r"```text\n(answer-eval score: .*?)```", README, flags=re.S)[1]
    done = cli("score", "examples/data/rag_answers.jsonl", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(block)
    assert (EXAMPLES / "data" / "rag_answers.jsonl").exists()


def test_readme_names_the_two_setup_commands_and_ci_runs_the_test_one():
    assert "make example" in README
    assert "make test" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "module",
    [
        answer_eval.stats.written_numbers,
        answer_eval.text.folding,
        answer_eval.text.matching,
        answer_eval.text.not_found,
        answer_eval.stats.significance,
        answer_eval.evaluators.contains.scorer,
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
