"""The README's code, and the doc pages' code moved out of it, runs and shows what it claims."""

import ast
import doctest
import glob
import inspect
import json
import os
import re
import shlex

import pytest

import answer_eval.evaluators.contains_rules
import answer_eval.stats.significance
import answer_eval.stats.written_numbers
import answer_eval.text.folding
import answer_eval.text.matching
import answer_eval.text.not_found
from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator
from tests.cli_runs import cli, python
from tests.conftest import EXAMPLES, ROOT
from tests.openai_server import OpenAIServer, last_user_text, texts_for_n

README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCSTRINGS = inspect.cleandoc(AnswerContainsEvaluator.__doc__ or "")
JUDGE_DOC = (ROOT / "docs" / "answer-judge.md").read_text(encoding="utf-8")
PIPELINES_DOC = (ROOT / "docs" / "pipelines.md").read_text(encoding="utf-8")
CLI_DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README + DOCSTRINGS + JUDGE_DOC + PIPELINES_DOC, flags=re.S)
CLAIM = re.compile(r"^(?P<expr>[^#\s][^#]*?)\s+#\s+(?P<value>.+?)(?::.*)?$")


def _llm(request):
    """What an OpenAI model would answer to the README's LLM snippets: the RAG prompt, or a grade as JSON."""
    text = last_user_text(request)
    if "response_format" in request:  # the grader asks for its JSON schema
        right = "<Response>\nParis" in text
        words = "It names Paris." if right else "Lyon is not the capital of France."
        grade = {"explanation": words, "score": int(right)}
        return texts_for_n(request, lambda _i: json.dumps(grade))
    return "Sheffield made 12,400 units in 2023." if "Sheffield" in text.rsplit("Question:", 1)[-1] else "Lyon."


def _run(block, tmp_path):
    if "OpenAIChatGenerator(" not in block:
        return python(block, cwd=tmp_path)
    # As a user runs it against OpenAI: the key from OPENAI_API_KEY, the server the client's OPENAI_BASE_URL names.
    with OpenAIServer(_llm) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url}
        done = python(block, cwd=tmp_path, env=env)
    assert server.bodies, "the snippet asked the model nothing"
    return done


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
    done = _run(block, tmp_path)
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


def test_the_cli_pages_summary_is_what_the_cli_prints():
    block = re.search(r"```text\n(answer-eval score: .*?)```", CLI_DOC, flags=re.S)[1]
    done = cli("score", "examples/data/rag_answers.jsonl", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(block)
    assert (EXAMPLES / "data" / "rag_answers.jsonl").exists()


def test_readme_names_the_two_setup_commands_and_ci_runs_the_test_one():
    commands = re.findall(r"^(make \w+) +# ", README, flags=re.M)
    assert commands == ["make example", "make test"]
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() if line.startswith("make")]
    assert ci == ["make test"]


def test_readme_command_line_block_runs_line_by_line(tmp_path):
    block = re.search(r"## The command line\n\n```sh\n(.*?)```", README, flags=re.S)[1]
    for line in block.splitlines():
        words = shlex.split(line.split("  # ")[0])
        assert words[0] == "answer-eval"
        args = [arg for word in words[1:] for arg in (sorted(glob.glob(word, root_dir=tmp_path)) or [word])]
        done = cli(*args, cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"})
        assert done.returncode == 0, (line, done.stderr)
    assert (tmp_path / "judged.jsonl").stat().st_size > 0
    assert (tmp_path / "report.html").stat().st_size > 0


def test_readme_is_short_and_in_the_issues_order():
    lines = README.splitlines()
    assert len(lines) <= 200
    headings = [line for line in lines if line.startswith("## ")]
    order = ["Install", "In a Haystack pipeline", "The components", "A RAG pipeline", "An LLM grader", "The command"]
    places = [next(i for i, h in enumerate(headings) if h.startswith(f"## {name}")) for name in order]
    assert places == sorted(places)
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert "AnswerExactMatchEvaluator()" in blocks[0]  # the pipeline example comes first
    cli_block = re.search(r"## The command line\n\n```sh\n(.*?)```", README, flags=re.S)[1]
    assert len(cli_block.splitlines()) == 5
    assert "pip install answer-eval-haystack" in README  # the PyPI line, for when it is published
    assert "pip install ." in README  # the install that works today, from a clone


def test_readme_holds_no_lab_notes():
    assert re.findall(r"\bissue[ -]\d+|\b[0-9a-f]{7,40}\b", README, flags=re.I) == []


def test_the_rag_example_is_a_real_haystack_pipeline_and_short():
    block = next(b for b in re.findall(r"```python\n(.*?)```", README, flags=re.S) if "EvaluationRunResult(" in b)
    assert len(block.splitlines()) <= 40
    for part in (
        "InMemoryDocumentStore()",
        "InMemoryBM25Retriever(",
        "ChatPromptBuilder(",
        "OpenAIChatGenerator(",
        "AnswerBuilder()",
        "AnswerJudgeEvaluator()",
    ):
        assert part in block


def test_the_llm_grader_example_is_a_rubric_evaluator_in_python():
    block = next(b for b in re.findall(r"```python\n(.*?)```", README, flags=re.S) if "RubricEvaluator(" in b)
    assert "OpenAIChatGenerator(" in block
    assert "print(result[" in block


@pytest.mark.parametrize(
    "module",
    [
        answer_eval.stats.written_numbers,
        answer_eval.text.folding,
        answer_eval.text.matching,
        answer_eval.text.not_found,
        answer_eval.stats.significance,
        answer_eval.evaluators.contains_rules,
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
