"""compare, agreement and report with every registered evaluator: typed and tools read their own fields."""

import json

from answer_eval.evaluators.registry import EVALUATORS
from answer_eval.inputs.item_files import read_items
from answer_eval.reports.scorers import EVALUATORS as SCORERS
from answer_eval.reports.scorers import build_scorer
from tests.cli_runs import cli
from tests.conftest import EXAMPLES

TYPED = EXAMPLES / "data" / "typed_example.jsonl"
TOOLS = EXAMPLES / "data" / "tool_calls.jsonl"


def rows_of(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_every_registered_evaluator_can_be_compared():
    assert {"contains", "judge", "typed", "tools"} <= set(SCORERS)
    assert {"rouge", "bleu"} <= set(SCORERS)  # the reference metrics, one metric each
    # An LLM grader is not a scorer of compare: it would pay for every row of both files again.
    graders = {name for name, entry in EVALUATORS.items() if not entry.parameters_are_options}
    assert graders == {"rubric"}
    assert set(EVALUATORS) - graders <= {*SCORERS, "metrics"}


def test_compare_typed_answers_scores_each_system_by_its_question_types(tmp_path):
    rows = rows_of(TYPED)
    worse = [
        {**row, "model_output": "The answer is <answer>Z</answer>"} if i == 0 else row for i, row in enumerate(rows)
    ]
    a, b = write_jsonl(tmp_path / "a.jsonl", rows * 10), write_jsonl(tmp_path / "b.jsonl", worse * 10)
    done = cli("compare", a, b, "-e", "typed", "--prediction-field", "model_output", "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["evaluators"][0]
    assert result["evaluator"] == "typed"
    assert result["difference"]["test"] == "paired_bootstrap"  # rewards are graded
    assert result["b"]["score"] < result["a"]["score"]
    # The scores are the typed command's rewards, row for row.
    scored = cli("typed", a, "--output", tmp_path / "rewards.jsonl")
    assert scored.returncode == 0, scored.stderr
    rewards = [row["reward"] for row in rows_of(tmp_path / "rewards.jsonl")]
    assert abs(result["a"]["score"] - sum(rewards) / len(rewards)) < 1e-12


def test_compare_tool_calls_and_report_them(tmp_path):
    rows = rows_of(TOOLS)
    perfect = write_jsonl(tmp_path / "perfect.jsonl", [{**row, "prediction": row["reference"]} for row in rows])
    done = cli("compare", TOOLS, perfect, "-e", "tools", "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["evaluators"][0]
    assert result["b"]["score"] == 1.0
    assert result["a"]["score"] < 1.0
    html = tmp_path / "report.html"
    done = cli("report", TOOLS, perfect, "-e", "tools", "--html", html, "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["evaluators"] == ["tools"]  # no answer-contains run: the files hold no acceptable answers
    assert "parse_failure" in summary["systems"][0]["failure_counts"]  # the tool-call failure kinds are charted
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_agreement_runs_the_typed_evaluator_against_a_human_label(tmp_path):
    rows = [{**row, "human_acceptable": index != 2} for index, row in enumerate(rows_of(TYPED))]
    source = write_jsonl(tmp_path / "labelled.jsonl", rows)
    done = cli("agreement", source, "-e", "typed", "--prediction-field", "model_output", "--format", "json")
    assert done.returncode == 0, done.stderr
    evaluator = json.loads(done.stdout)["evaluators"][0]
    assert evaluator["name"] == "typed"
    assert evaluator["agreement"] is not None


def test_a_file_without_the_fields_an_evaluator_reads_is_refused_with_the_line(tmp_path):
    rows = rows_of(TYPED)
    del rows[1]["solution"]
    source = write_jsonl(tmp_path / "gap.jsonl", rows)
    done = cli("compare", source, source, "-e", "typed", "--prediction-field", "model_output")
    assert done.returncode == 2
    assert f"{source}:2: missing field 'solution'" in done.stderr
    # and the evaluators that read acceptable answers still need them
    done = cli("compare", TYPED, TYPED, "-e", "contains", "--prediction-field", "model_output")
    assert done.returncode == 2
    assert "missing field 'answers'" in done.stderr


def test_items_without_acceptable_answers_are_read_when_none_are_needed():
    items = read_items(TOOLS, require_answers=False)
    assert len(items) == len(rows_of(TOOLS))
    assert set(items.golds) == {()}
    run = build_scorer("tools")(items)
    assert len(run.scores) == len(items)
    assert run.failure_kinds is not None


def test_every_comparison_and_report_records_the_signature_of_each_evaluator(tmp_path):
    from answer_eval.evaluators.registry import build
    from answer_eval.reports.scorers import signature

    done = cli("compare", TOOLS, TOOLS, "-e", "tools", "-e", "contains", "--answers-field", "note", "--format", "json")
    assert done.returncode == 0, done.stderr
    found = {item["evaluator"]: item["signature"] for item in json.loads(done.stdout)["evaluators"]}
    assert found == {"tools": signature("tools"), "contains": signature("contains")}
    assert found["contains"] == build("contains", None).signature  # the evaluator's own signature
    assert "metrics:[tool_parameter_kv_match]" in found["tools"]  # the options the scorer runs with
    html = tmp_path / "report.html"
    done = cli("report", TOOLS, "-e", "tools", "--html", html, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["signatures"] == {"tools": signature("tools")}
    assert f"<code>{signature('tools')}</code>" in html.read_text(encoding="utf-8")
