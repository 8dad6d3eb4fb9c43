"""`answer-eval typed`, the typed-answer example and the benchmark, run in process on real files."""

import ast
import csv
import json
import re

import pytest
from rouge_score import rouge_scorer

from haystack_integrations.components.evaluators.answer_eval import TypedAnswerEvaluator
from tests import cli_runs
from tests.cli_runs import write_jsonl
from tests.conftest import EXAMPLES, ROOT

EXAMPLE = EXAMPLES / "data" / "typed_example.jsonl"


def cli(*args, cwd=None):
    return cli_runs.cli("typed", *args, cwd=cwd)


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def rouge_mean(reference, prediction):
    values = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score(reference, prediction)
    return (values["rouge1"].fmeasure + values["rouge2"].fmeasure + values["rougeL"].fmeasure) / 3


def test_the_reference_documents_example_rows(tmp_path):
    out = tmp_path / "scored.jsonl"
    done = cli(EXAMPLE, "--output", out)
    assert done.returncode == 0, done.stderr
    source, scored = read_jsonl(EXAMPLE), read_jsonl(out)
    assert [
        {k: v for k, v in row.items() if k not in ("reward", "failure_kind", "scored_by")} for row in scored
    ] == source
    free_form = rouge_mean("A cat is sitting on a mat", "The cat is sitting on the mat")
    assert [row["reward"] for row in scored] == [1.0, 1.0, free_form]
    assert [row["failure_kind"] for row in scored] == [None, None, None]
    assert "items                    3" in done.stdout
    assert f"free-form              {free_form:.4f}   1" in done.stdout
    assert f"mean reward              {(2 + free_form) / 3:.4f}" in done.stdout


def test_json_summary_matches_the_component(tmp_path):
    rows = [
        {"model_output": "<answer>C</answer>", "solution": "B", "problem_type": "mcq"},
        {"model_output": "I estimate 9", "solution": "10", "problem_type": "Regression"},
        {"model_output": "hello wrld", "solution": "hello world", "problem_type": "OCR"},
        {"model_output": "none", "solution": "5", "problem_type": "numerical"},
        {"model_output": "1,204", "solution": "1204", "problem_type": "numerical"},
    ]
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    done = cli(path, "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    expected = TypedAnswerEvaluator().run(
        predicted_answers=[r["model_output"] for r in rows],
        ground_truth_answers=[r["solution"] for r in rows],
        question_types=[r["problem_type"] for r in rows],
    )
    assert summary["items"] == 5
    assert summary["score"] == pytest.approx(expected["score"])
    assert summary["per_type"] == expected["per_type"]
    assert list(summary["per_type"]) == ["multiple choice", "regression", "OCR", "numerical"]
    assert summary["failure_counts"] == expected["failure_counts"]
    assert summary["failure_counts"]["wrong"] == 1
    assert summary["failure_counts"]["parse_failure"] == 1


def test_renamed_fields_keep_every_row_in_order_with_its_other_fields(tmp_path):
    rows = [
        {"id": i, "reply": f"<answer>{i * 2}</answer>", "gold": str(i * 2 if i % 2 else i), "kind": "numerical",
         "meta": {"source": "x", "n": [i]}}
        for i in range(1, 8)
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    done = cli(
        path, "--prediction-field", "reply", "--solution-field", "gold", "--type-field", "kind",
        "--reward-field", "score", "--output", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    scored = read_jsonl(out)
    assert [row["id"] for row in scored] == list(range(1, 8))
    assert [row["score"] for row in scored] == [1.0 if i % 2 else 0.0 for i in range(1, 8)]
    for source, row in zip(rows, scored, strict=True):
        assert {k: v for k, v in row.items() if k not in ("score", "failure_kind", "scored_by")} == source
        assert "reward" not in row


def test_csv_output(tmp_path):
    out = tmp_path / "out.csv"
    done = cli(EXAMPLE, "--output", out)
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert [row["reward"] for row in table][:2] == ["1.0", "1.0"]


def test_a_malformed_line_stops_with_its_number_and_writes_nothing(tmp_path):
    path = tmp_path / "in.jsonl"
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], lines[1], "{not json", lines[2]]) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = cli(path, "--output", out)
    assert done.returncode == 2
    assert f"{path}:3: not valid JSON" in done.stderr
    assert not out.exists()
    skipped = cli(path, "--output", out, "--skip-invalid", "--format", "json")
    assert skipped.returncode == 0, skipped.stderr
    assert json.loads(skipped.stdout)["invalid_lines"] == 1
    assert len(read_jsonl(out)) == 3


def test_unknown_types_and_bad_references_stop_with_the_line_number(tmp_path):
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"model_output": "B", "solution": "B", "problem_type": "mcq"},
            {"model_output": "x", "solution": "y", "problem_type": "essay"},
        ],
    )
    done = cli(path)
    assert done.returncode == 2
    assert f"{path}:2: unknown question type 'essay'; known types: 'multiple choice'" in done.stderr
    zero = cli(path, "--on-unknown", "zero", "--format", "json")
    assert zero.returncode == 0, zero.stderr
    summary = json.loads(zero.stdout)
    assert summary["per_type"]["essay"] == {"score": 0.0, "count": 1}
    assert summary["failure_counts"]["unknown_type"] == 1

    bad = write_jsonl(tmp_path / "bad.jsonl", [{"model_output": "5", "solution": "five", "problem_type": "numerical"}])
    done = cli(bad)
    assert done.returncode == 2
    assert f"{bad}:1: ground truth (numerical) holds no number" in done.stderr
    missing = write_jsonl(tmp_path / "missing.jsonl", [{"model_output": "5", "solution": "5"}])
    done = cli(missing)
    assert done.returncode == 2
    assert "missing field 'problem_type'" in done.stderr


def test_default_type_and_scoring_options(tmp_path):
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"model_output": "45%", "solution": "0.45"},
            {"model_output": "3.14159", "solution": "3.14", "problem_type": None},
        ],
    )
    done = cli(path, "--default-type", "numerical", "--format", "json")
    assert json.loads(done.stdout)["score"] == 0.5
    done = cli(path, "--default-type", "numerical", "--percent", "fraction", "--no-rounding", "--format", "json")
    assert json.loads(done.stdout)["score"] == 0.5
    done = cli(path, "--default-type", "numerical", "--percent", "either", "--format", "json")
    assert json.loads(done.stdout)["score"] == 1.0
    done = cli(path, "--default-type", "essay")
    assert done.returncode == 2
    assert "--default-type 'essay' is not a known question type" in done.stderr


def test_reward_field_may_not_overwrite_an_input(tmp_path):
    done = cli(EXAMPLE, "--reward-field", "solution")
    assert done.returncode == 2
    assert "would overwrite" in done.stderr


def test_the_example_script_runs():
    done = cli_runs.python(EXAMPLES / "typed_answers.py", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    free_form = rouge_mean("A cat is sitting on a mat", "The cat is sitting on the mat")
    assert f"free-form        reward {free_form:.4f}" in done.stdout
    assert "in a Pipeline beside AnswerContainsEvaluator" in done.stdout
    assert "typed     regression       mean 0.9000 over 1" in done.stdout


@pytest.mark.slow
def test_the_benchmark_checks_identical_values_on_a_few_items():
    code = (
        "import sys, json; sys.path.insert(0, 'benchmarks')\n"
        "from bench_typed import bench_free_form\n"
        "print(json.dumps(bench_free_form(30, 1)))\n"
    )
    done = cli_runs.python(code, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["identical"] is True
    assert result["n_items"] == 30
    assert set(result) >= {"naive_items_per_s", "typed_items_per_s", "ratio", "cold_ratio"}


DOC = (ROOT / "docs" / "typed-answers.md").read_text(encoding="utf-8")


def test_the_docs_summary_block_is_what_the_cli_prints():
    block = re.search(r"```text\n(answer-eval typed: .*?)```", DOC, flags=re.S)[1]
    done = cli("examples/data/typed_example.jsonl", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == block


def test_the_docs_python_block_runs_and_its_commented_values_hold():
    block = re.search(r"```python\n(.*?)```", DOC, flags=re.S)[1]
    namespace: dict = {}
    exec(compile(block, "typed-answers.md", "exec"), namespace)
    checked = 0
    for line in block.splitlines():
        match = re.match(r"^(?P<expr>result\[.*?\])\s+#\s+(?P<value>.+)$", line)
        if match:
            assert eval(match["expr"], namespace) == ast.literal_eval(match["value"]), line
            checked += 1
    assert checked == 2
