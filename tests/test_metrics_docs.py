"""The reference-metrics and tool-call docs: their code runs and shows what it claims."""

import ast
import doctest
import inspect
import re

import pytest

import answer_eval.evaluators.reference_scoring
import answer_eval.evaluators.tool_call_scoring
import answer_eval.stats.pairwise
from haystack_integrations.components.evaluators.answer_eval import (
    PairwiseEvaluator,
    ReferenceMetricsEvaluator,
    ToolCallEvaluator,
)
from tests.cli_runs import cli
from tests.conftest import ROOT

DOCS = {name: (ROOT / "docs" / name).read_text(encoding="utf-8") for name in ("reference-metrics.md", "tool-calls.md")}
DOCSTRINGS = "\n".join(
    inspect.cleandoc(cls.__doc__ or "") for cls in (ReferenceMetricsEvaluator, ToolCallEvaluator, PairwiseEvaluator)
)
BLOCKS = re.findall(r"```python\n(.*?)```", "\n".join(DOCS.values()) + DOCSTRINGS, flags=re.S)
CLAIM = re.compile(r"^(?P<expr>[^#\s][^#]*?)\s+#\s+(?P<value>.+?)$")


def test_there_are_blocks_from_both_docs_and_all_three_docstrings():
    assert len(BLOCKS) == 6


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.splitlines()[0][:40])
def test_python_blocks_run_and_their_commented_values_hold(block):
    namespace: dict = {}
    exec(compile(block, "docs", "exec"), namespace)
    checked = 0
    for line in block.splitlines():
        match = CLAIM.match(line)
        if not match or "=" in match["expr"].split("(")[0].replace("==", ""):
            continue
        try:
            expected = ast.literal_eval(match["value"].strip())
        except (ValueError, SyntaxError):
            continue
        expression = re.sub(r"^print\((.*)\)$", r"\1", match["expr"].strip())
        value = eval(expression, namespace)
        if isinstance(expected, str) and not isinstance(value, str):
            value = str(value)
        assert value == expected, line
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize(
    ("doc", "command"),
    [
        ("reference-metrics.md", ["metrics", "examples/data/nq301_davinci_zeroshot.jsonl"]),
        ("tool-calls.md", ["tools", "examples/data/tool_calls.jsonl"]),
    ],
)
def test_documented_summaries_are_what_the_cli_prints(doc, command):
    block = re.search(rf"```text\n(answer-eval {command[0]}: .*?)```", DOCS[doc], flags=re.S)[1]
    done = cli(*command, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == block


@pytest.mark.parametrize(
    "module",
    [answer_eval.evaluators.reference_scoring, answer_eval.evaluators.tool_call_scoring, answer_eval.stats.pairwise],
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
