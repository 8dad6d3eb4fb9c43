"""The examples in examples/ run as users run them (``python examples/NAME.py``), in this process."""

from tests.cli_runs import python
from tests.conftest import EXAMPLES, ROOT


def run_example(name, *args):
    return python(EXAMPLES / name, *args, cwd=ROOT)


def test_score_answers_example():
    done = run_example("score_answers.py")
    assert done.returncode == 0, done.stderr
    assert "score: 0.4" in done.stdout
    assert "budget_stop" in done.stdout


def test_evaluation_pipeline_example_with_sas():
    done = run_example("evaluation_pipeline.py", "--limit", "20")
    assert done.returncode == 0, done.stderr
    for metric in ("exact_match_first_gold", "answer_contains", "sas_first_gold"):
        assert metric in done.stdout
    assert "SAS left out" not in done.stdout


def test_llm_grading_example_escalates_through_a_replayed_grader():
    done = run_example("llm_grading.py")
    assert done.returncode == 0, done.stderr
    assert "judge alone" in done.stdout
    assert "GPT-4 alone (recorded)" in done.stdout
    escalated = next(line for line in done.stdout.splitlines() if "escalating below 0.8" in line)
    assert "calls)" in escalated
    assert "the LLM said 'Yes" in done.stdout or "the LLM said 'No" in done.stdout


def test_detailed_report_example_keeps_failure_kinds_stages_and_evidence_beside_the_scores():
    done = run_example("detailed_report.py")
    assert done.returncode == 0, done.stderr
    assert "('Nixon', 0, 'wrong', 'lexical')" in done.stdout  # contains says wrong, the judge's stage says why not
    assert "judge_evidence" in done.stdout  # the DataFrame (pandas comes with the dask extra in the suite)
    assert "a less specific form of the acceptable answer" in done.stdout
