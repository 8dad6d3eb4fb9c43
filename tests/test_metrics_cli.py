"""`answer-eval metrics` and `answer-eval tools` run on real files in process, and the examples that use them."""

import csv
import json
import os
import subprocess
import sys

import pytest
import sacrebleu

from haystack_integrations.components.evaluators.answer_eval import ReferenceMetricsEvaluator, ToolCallEvaluator
from tests import cli_runs
from tests.cli_runs import write_jsonl
from tests.conftest import EXAMPLES, ROOT

NQ = EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl"
TOOLS = EXAMPLES / "data" / "tool_calls.jsonl"
NQ_ROWS = [json.loads(line) for line in NQ.read_text(encoding="utf-8").splitlines()]
TOOL_ROWS = [json.loads(line) for line in TOOLS.read_text(encoding="utf-8").splitlines()]


def cli(*args):
    return cli_runs.cli(*args, cwd=ROOT)


@pytest.fixture(scope="module")
def nq_component():
    return ReferenceMetricsEvaluator(metrics=["rouge", "bleu"], rouge_type="rouge1").run(
        predicted_answers=[row["prediction"] for row in NQ_ROWS],
        ground_truth_answers=[row["answers"] for row in NQ_ROWS],
    )


def test_metrics_rows_and_summary_equal_the_component(tmp_path, nq_component):
    out = tmp_path / "scored.jsonl"
    done = cli(
        "metrics",
        NQ,
        "--metric",
        "rouge",
        "--metric",
        "bleu",
        "--rouge-type",
        "rouge1",
        "--output",
        out,
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["items"] == 301
    assert list(summary["metrics"]) == ["rouge", "bleu"]
    assert summary["metrics"]["rouge"] == pytest.approx(nq_component["metrics"]["rouge"]["score"])
    assert summary["metrics"]["bleu"] == pytest.approx(nq_component["metrics"]["bleu"]["score"])
    width = max(len(row["answers"]) for row in NQ_ROWS)
    streams = [[row["answers"][i] if i < len(row["answers"]) else None for row in NQ_ROWS] for i in range(width)]
    assert summary["corpus"]["bleu"] == min(
        1.0, sacrebleu.corpus_bleu([row["prediction"] for row in NQ_ROWS], streams).score / 100
    )
    assert summary["notes"] == {"rouge": "rouge1"}
    assert summary["output"] == str(out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [row["question"] for row in rows] == [row["question"] for row in NQ_ROWS]
    assert [row["rouge"] for row in rows] == nq_component["metrics"]["rouge"]["individual_scores"]
    assert [row["bleu"] for row in rows] == nq_component["metrics"]["bleu"]["individual_scores"]
    assert set(rows[0]) == {"question", "answers", "prediction", "rouge", "bleu", "failure_kind", "scored_by"}


def test_metrics_text_summary_names_every_metric_and_corpus_bleu():
    done = cli("metrics", NQ)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"answer-eval metrics: {NQ}"
    assert lines[1].split() == ["items", "301"]
    assert lines[2].split()[0] == "exact_match"
    assert lines[3].split()[0] == "bleu"
    assert "corpus" in lines[3]
    assert lines[4].split()[0] == "rouge"
    assert lines[4].endswith("(rougeLsum)")
    assert "failure kinds" in done.stdout


def test_metrics_csv_output_and_exact_match_options(tmp_path):
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"prediction": "12,400", "answers": ["12400"]},
            {"prediction": "PARIS", "answers": "Paris"},
            {"prediction": None, "answers": ["x"]},
        ],
    )
    out = tmp_path / "out.csv"
    done = cli("metrics", source, "--metric", "exact_match", "--fold", "--output", out)
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["exact_match"] for row in rows] == ["1", "1", "0"]
    assert [row["failure_kind"] for row in rows] == ["", "", "parse_failure"]
    assert "parse_failure          1" in done.stdout
    plain = json.loads(cli("metrics", source, "--metric", "exact_match", "--format", "json").stdout)
    assert plain["metrics"]["exact_match"] == 0


def test_metrics_reads_reference_when_there_is_no_answers_field_or_a_named_field(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"prediction": "Paris", "reference": "Paris"}])
    done = cli("metrics", source, "--metric", "exact_match", "--format", "json")
    assert json.loads(done.stdout)["metrics"]["exact_match"] == 1
    named = write_jsonl(tmp_path / "named.jsonl", [{"reply": "Paris", "gold": ["Lyon", "Paris"]}])
    done = cli(
        "metrics",
        named,
        "--metric",
        "exact_match",
        "--prediction-field",
        "reply",
        "--reference-field",
        "gold",
        "--format",
        "json",
    )
    assert json.loads(done.stdout)["metrics"]["exact_match"] == 1


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"prediction": "Paris"}, "missing field 'answers' or 'reference'"),
        ({"answers": "Paris"}, "missing field 'prediction'"),
        ({"prediction": "Paris", "answers": []}, "field 'answers': ground truth is an empty list"),
        ({"prediction": "Paris", "answers": [float("inf")]}, "field 'answers'"),
    ],
)
def test_metrics_bad_rows_stop_with_the_line_number_or_are_skipped(tmp_path, row, message):
    source = write_jsonl(tmp_path / "in.jsonl", [{"prediction": "a", "answers": "a"}, row])
    out = tmp_path / "out.jsonl"
    done = cli("metrics", source, "--metric", "bleu", "--output", out)
    assert done.returncode == 2
    assert f"{source}:2: {message}" in done.stderr
    assert not out.exists()
    skipped = cli("metrics", source, "--metric", "bleu", "--skip-invalid", "--format", "json")
    assert skipped.returncode == 0, skipped.stderr
    summary = json.loads(skipped.stdout)
    assert (summary["items"], summary["invalid_lines"]) == (1, 1)


@pytest.mark.slow
@pytest.mark.subprocess  # nltk reads NLTK_DATA once, when a process imports it
def test_metrics_without_nltk_data_for_split_summaries_is_a_usage_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "answer_eval", "metrics", str(NQ), "--split-summaries"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "NLTK_DATA": str(tmp_path)},
    )
    assert done.returncode == 2
    assert "punkt_tab" in done.stderr


def tool_component(**options):
    return ToolCallEvaluator(**options).run(
        predicted_answers=[row["prediction"] for row in TOOL_ROWS],
        ground_truth_answers=[row["reference"] for row in TOOL_ROWS],
    )


@pytest.mark.parametrize(
    ("args", "options"),
    [
        ((), {}),
        (("--strict",), {"strict": True}),
        (("--calls", "all", "--alignment", "name"), {"calls": "all", "alignment": "name"}),
        (("--extra-keys", "penalize"), {"extra_keys": "penalize"}),
    ],
)
def test_tools_summary_equals_the_component(args, options):
    done = cli("tools", TOOLS, *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    expected = tool_component(**options)
    assert summary["items"] == len(TOOL_ROWS) == 12
    assert summary["metrics"] == pytest.approx({name: m["score"] for name, m in expected["metrics"].items()})
    assert summary["failure_counts"] == expected["failure_counts"]


def test_tools_rows_carry_each_metric_the_failure_kind_and_the_problem(tmp_path):
    out = tmp_path / "tools.jsonl"
    done = cli("tools", TOOLS, "--metric", "tool_name_match", "--metric", "tool_parameter_kv_match", "--output", out)
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert set(rows["same"]) == {
        "id",
        "note",
        "prediction",
        "baseline",
        "reference",
        "tool_name_match",
        "tool_parameter_kv_match",
        "failure_kind",
        "problem",
        "scored_by",
    }
    assert (rows["same"]["tool_name_match"], rows["same"]["tool_parameter_kv_match"]) == (1, 1.0)
    assert rows["wrong_name"]["tool_name_match"] == 0
    assert rows["wrong_value"]["tool_parameter_kv_match"] == pytest.approx(5 / 6)
    assert rows["invalid_json"]["failure_kind"] == "parse_failure"
    assert "not valid JSON" in rows["invalid_json"]["problem"]
    assert rows["no_call"]["problem"] == "the output holds no tool call"
    assert "tool_parameter_kv_match" in done.stdout
    assert "parse_failure          3" in done.stdout


def test_tools_bad_reference_stops_with_its_line_and_custom_fields(tmp_path):
    good = TOOL_ROWS[0]
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [{"out": good["prediction"], "gold": good["reference"]}, {"out": good["prediction"], "gold": "{"}],
    )
    done = cli("tools", source, "--prediction-field", "out", "--reference-field", "gold")
    assert done.returncode == 2
    assert f"{source}:2: field 'gold': reference tool call cannot be read" in done.stderr
    skipped = cli(
        "tools", source, "--prediction-field", "out", "--reference-field", "gold", "--skip-invalid", "--format", "json"
    )
    assert json.loads(skipped.stdout)["invalid_lines"] == 1
    missing = cli("tools", source)
    assert missing.returncode == 2
    assert "missing field 'reference'" in missing.stderr


def test_tool_calls_example_runs():
    done = cli_runs.python(EXAMPLES / "tool_calls.py", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "strict:" in done.stdout
    assert "number_and_case" in done.stdout
    assert "prediction against baseline" in done.stdout


def test_reference_metrics_example_runs():
    done = cli_runs.python(EXAMPLES / "reference_metrics.py", "--limit", "60", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "items: 60" in done.stdout
    assert "corpus BLEU" in done.stdout
    assert "mcnemar_exact p =" in done.stdout
    assert "bootstrap p =" in done.stdout
