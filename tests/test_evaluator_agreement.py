"""Agreement between evaluators: the matrix, the disagreements, and `answer-eval agreement` with and without a label."""

import json
import os

import pytest

from answer_eval.inputs.item_files import read_items
from answer_eval.reports.scorers import EVALUATORS, build_scorer, get_spec, verdicts
from answer_eval.stats.rater_agreement import agreement, agreement_matrix, cohen_kappa, disagreements
from tests import cli_runs
from tests.cli_runs import write_jsonl
from tests.conftest import ROOT

JUDGED = ROOT / "data" / "judge" / "nq301-dev.jsonl"
ROWS = [json.loads(line) for line in JUDGED.read_text(encoding="utf-8").splitlines()]


def cli(*args):
    # Plain output at the default width: the terminal's COLUMNS must not reach the table.
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    return cli_runs.cli(*args, env=env)


def test_matrix_against_a_published_kappa():
    # Cohen's kappa worked example (Wikipedia): 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa 0.4
    a = [True] * 25 + [False] * 25
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    matrix = agreement_matrix({"a": a, "b": b, "a again": a})
    assert matrix.names == ("a", "b", "a again")
    assert matrix.kappa[0][1] == pytest.approx(0.4)
    assert matrix.kappa[1][0] == pytest.approx(0.4)
    assert matrix.agreement[0][1] == pytest.approx(0.7)
    assert matrix.agreement[0][2] == matrix.kappa[0][2] == 1.0
    assert matrix.positive_rates == (0.5, 0.6, 0.5)
    assert disagreements({"a": a, "b": b}) == [i for i in range(50) if a[i] != b[i]]
    with pytest.raises(ValueError, match="length"):
        agreement_matrix({"a": a, "b": b[:10]})


def test_registry_lists_every_evaluator_once_with_its_kind():
    assert list(EVALUATORS) == ["contains", "exact", "judge", "sas", "rouge", "bleu", "typed", "tools"]
    assert [spec.graded for spec in EVALUATORS.values()] == [False, False, False, True, True, True, True, True]
    with pytest.raises(ValueError, match="choose from"):
        get_spec("bertscore")


def test_graded_verdicts_use_the_label_when_there_is_one(tmp_path):
    items = read_items(write_jsonl(tmp_path / "in.jsonl", ROWS[:80]))
    run = build_scorer("rouge")(items)
    spec = get_spec("rouge")
    with_labels = verdicts(spec, run.scores, items.labels)
    assert with_labels.in_sample
    assert with_labels.values == tuple(score >= with_labels.threshold for score in run.scores)
    default = verdicts(spec, run.scores)
    assert (default.threshold, default.in_sample) == (spec.threshold, False)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    path = write_jsonl(tmp_path_factory.mktemp("agreement") / "labelled.jsonl", ROWS[:120])
    done = cli("agreement", path, "--no-semantic", "-e", "exact", "-e", "contains", "-e", "judge", "--format", "json")
    assert done.returncode == 0, done.stderr
    return path, json.loads(done.stdout)


def test_matrix_with_the_human_label_matches_the_table(labelled):
    _, report = labelled
    matrix = report["matrix"]
    assert matrix["names"] == ["exact", "contains", "judge", "human"]
    for position, row in enumerate(report["evaluators"]):
        assert matrix["agreement"][position][3] == pytest.approx(row["agreement"])
        assert matrix["kappa"][position][3] == pytest.approx(row["kappa"])
    from answer_eval import AnswerContainsScorer

    scorer = AnswerContainsScorer()
    contains = [scorer.score(r["prediction"], r["answers"]).correct for r in ROWS[:120]]
    labels = [r["human_acceptable"] for r in ROWS[:120]]
    assert report["evaluators"][1]["agreement"] == pytest.approx(agreement(contains, labels))
    assert report["evaluators"][1]["kappa"] == pytest.approx(cohen_kappa(contains, labels))


def test_disagreements_list_every_item_where_the_verdicts_differ(labelled):
    _, report = labelled
    found = report["disagreements"]
    assert found
    for item in found:
        assert len(set(item["verdicts"].values())) == 2
        assert set(item["verdicts"]) == {"exact", "contains", "judge", "human"}
    lines = {item["line"] for item in found}
    agreeing = [i + 1 for i in range(120) if i + 1 not in lines]
    assert agreeing  # the others all agree
    assert found[0]["question"] == ROWS[found[0]["line"] - 1]["question"]


def test_text_output_keeps_the_label_table_then_the_matrix(labelled):
    path, _ = labelled
    done = cli("agreement", path, "--no-semantic", "-e", "exact", "-e", "contains", "--show", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    acceptable = sum(r["human_acceptable"] for r in ROWS[:120])
    assert lines[0] == f"answer-eval agreement: {path} (120 answers, {acceptable} acceptable to people)"
    assert lines[1].split() == ["evaluator", "agreement", "kappa", "says", "right", "answers/s"]
    assert " agreement   exact   contains   human" in done.stdout
    assert " Cohen's kappa" in done.stdout
    assert "answers on which they disagree; the first 2" in done.stdout
    assert done.stdout.count("question  ") == 2


def test_agreement_without_a_label_column(tmp_path):
    rows = [{k: v for k, v in row.items() if k != "human_acceptable"} for row in ROWS[:40]]
    path = write_jsonl(tmp_path / "unlabelled.jsonl", rows)
    done = cli("agreement", path, "--no-semantic", "-e", "exact", "-e", "contains", "-e", "judge", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["acceptable"] is None
    assert report["matrix"]["names"] == ["exact", "contains", "judge"]
    assert all(row["agreement"] is None and row["positive_rate"] is not None for row in report["evaluators"])
    text = cli("agreement", path, "--no-semantic", "-e", "exact", "-e", "contains")
    assert text.returncode == 0, text.stderr
    assert "(40 answers, no human label)" in text.stdout
    assert "kappa" not in text.stdout.splitlines()[1]
    named = cli("agreement", path, "--no-semantic", "--label-field", "human_acceptable")
    assert named.returncode == 2
    assert f"{path}:1: missing field 'human_acceptable'" in named.stderr


def test_docstring_examples_of_the_agreement_module():
    import doctest

    import answer_eval.stats.rater_agreement

    result = doctest.testmod(answer_eval.stats.rater_agreement)
    assert result.attempted >= 4
    assert result.failed == 0
