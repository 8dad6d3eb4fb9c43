import json
import os

import pytest

from answer_eval.cli.options_and_output import fixed
from answer_eval.stats.rater_agreement import agreement, best_threshold, cohen_kappa
from tests.cli_runs import cli, write_jsonl


def wikipedia_example():
    # Cohen's kappa worked example (Wikipedia): 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa 0.4
    a = [True] * 20 + [True] * 5 + [False] * 10 + [False] * 15
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    return a, b


def test_kappa_against_a_published_example():
    a, b = wikipedia_example()
    assert agreement(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_is_symmetric_and_bounded():
    a, b = wikipedia_example()
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa(b, a))
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa(a, [not x for x in a]) < 0


def test_degenerate_kappa():
    assert cohen_kappa([True, True], [True, True]) == 1.0
    assert cohen_kappa([True, True], [False, False]) == 0.0


def test_best_threshold():
    scores = [0.1, 0.4, 0.6, 0.9]
    labels = [False, False, True, True]
    assert best_threshold(scores, labels) == (0.6, 1.0)
    assert best_threshold([0.5, 0.5], [False, False])[1] == 1.0  # above every score: all "no"


def test_errors():
    with pytest.raises(ValueError, match="length"):
        agreement([True], [True, False])
    with pytest.raises(ValueError, match="no verdicts"):
        cohen_kappa([], [])


# -- the command's text ------------------------------------------------------------------------------


def _labelled(tmp_path, labels, predictions=None):
    rows = [
        {"question": f"q{n}", "answers": ["Paris"], "prediction": (predictions or ["Rome"] * len(labels))[n]}
        | {"human_acceptable": label}
        for n, label in enumerate(labels)
    ]
    return write_jsonl(tmp_path / "labelled.jsonl", rows)


def test_a_kappa_of_zero_never_prints_as_minus_zero(tmp_path):
    # Exact match says "wrong" everywhere: kappa is 0 by definition, which float rounding made -3e-16.
    source = _labelled(tmp_path, [True, False, False])
    done = cli("agreement", source, "--evaluator", "exact", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "-0.000" not in done.stdout
    row = next(line for line in done.stdout.splitlines() if line.strip().startswith("AnswerExactMatch"))
    assert row.split(")", 1)[1].split()[:2] == ["0.667", "0.000"]  # agreement, kappa
    assert cohen_kappa([False] * 3, [True, False, False]) == 0.0


def test_fixed_point_text_has_no_negative_zero():
    assert [fixed(-0.0), fixed(-0.0004), fixed(-0.0006), fixed(0.0004, signed=True), fixed(-0.0004, signed=True)] == [
        "0.000",
        "0.000",
        "-0.001",
        "+0.000",
        "+0.000",
    ]
    assert fixed(0.8152078582704787) == f"{0.8152078582704787:.3f}"


def test_the_show_hint_appears_only_when_some_disagreements_are_left_out(tmp_path):
    source = _labelled(tmp_path, [True, True, False], ["Paris", "Rome", "Rome"])  # one disagreement
    every = cli("agreement", source, "--evaluator", "exact", "--no-progress", "--show", "5")
    assert every.returncode == 0, every.stderr
    assert "1 of 3 answers on which they disagree\n" in every.stdout
    assert "--show N" not in every.stdout
    wide = {**os.environ, "COLUMNS": "200"}
    none = cli("agreement", source, "--evaluator", "exact", "--no-progress", "--show", "0", env=wide)
    assert "1 of 3 answers on which they disagree (--show N to list them, --format json for all)" in none.stdout
    # compare: a second system right everywhere, so that exact match changes verdict on two items.
    rows = [{**json.loads(line), "prediction": "Paris"} for line in lines(source)]
    other = write_jsonl(tmp_path / "other.jsonl", rows)
    compared = cli("compare", source, other, "--evaluator", "exact", "--no-progress", "--show", "5", env=wide)
    assert compared.returncode == 0, compared.stderr
    assert "exact: 2 items that changed verdict\n" in compared.stdout
    assert "--show N" not in compared.stdout
    fewer = cli("compare", source, other, "--evaluator", "exact", "--no-progress", "--show", "1", env=wide)
    assert "exact: 1 of 2 items that changed verdict (--show N for more, --format json for all)" in fewer.stdout


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_positive_label_values_match_whatever_their_case_and_one_that_matches_nothing_is_warned_about(tmp_path):
    source = _labelled(tmp_path, ["Yes", "no", " YES "], ["Paris", "Rome", "Paris"])
    done = cli("agreement", source, "--evaluator", "exact", "--positive", "yes", "--format", "json", "--no-progress")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["acceptable"] == 2  # "Yes" and " YES " are "yes"
    assert report["evaluators"][0]["agreement"] == 1.0
    assert "matches no" not in done.stderr
    typo = cli("agreement", source, "--evaluator", "exact", "--positive", "yse", "--format", "json", "--no-progress")
    assert typo.returncode == 0, typo.stderr
    assert json.loads(typo.stdout)["acceptable"] == 0
    assert "--positive 'yse' matches no 'human_acceptable' label" in typo.stderr
    assert "'yes', 'no'" in typo.stderr


def _strict(text: str):
    """JSON as other programs read it: NaN and Infinity are no JSON numbers."""

    def refuse(constant: str):
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_run_too_quick_to_time_has_no_speed_never_infinity_and_the_json_is_strict(tmp_path):
    from answer_eval.cli.agreement import answers_per_second

    # A clock that saw no time (a coarse one, a tiny file) gave float("inf"): "inf" printed, Infinity written.
    assert answers_per_second(3, 0.0) is None
    assert answers_per_second(3, 0.5) == 6.0
    source = _labelled(tmp_path, [True, False, False])
    done = cli("agreement", source, "--evaluator", "exact", "--no-progress", "--format", "json")
    assert done.returncode == 0, done.stderr
    (row,) = _strict(done.stdout)["evaluators"]
    assert row["answers_per_second"] is None or row["answers_per_second"] > 0
