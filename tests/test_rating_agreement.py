"""A rubric grader's agreement with human ratings: the figures (stats/rating_agreement.py) and ``agreement``."""

from __future__ import annotations

import json
import os
import random
import resource
import tracemalloc
import warnings

import pytest

from answer_eval.stats.rating_agreement import (
    BIN_RULE,
    MAX_SCALE_POINTS,
    MIN_ROWS_FOR_INTERVAL,
    PREFERENCES,
    RatingTable,
    decisive_accuracy,
    exact_agreement,
    kendall_tau_b,
    nearest_point,
    pairwise_accuracy,
    quadratic_kappa,
    rating_agreement,
    spearman,
    within_one,
)
from tests.cli_runs import cli, cli_process, write_jsonl
from tests.openai_server import OpenAIServer, Reply, last_user_text
from tests.test_logprob_scores import logprobs_for

FIVE = [1, 2, 3, 4, 5]


def random_ratings(seed: int, scale: list[int]) -> tuple[list[int], list[int]]:
    """Grader and human ratings that mostly agree, with ties, constant runs and a part of the scale unused."""
    rng = random.Random(seed)
    used = scale[: rng.randint(1, len(scale))]
    grader = [rng.choice(used) for _ in range(rng.randint(2, 60))]
    human = [min(scale[-1], max(scale[0], value + rng.choice([-1, 0, 0, 1, 2]))) for value in grader]
    return grader, human


# -- the figures -------------------------------------------------------------------------------------------


def test_figures_on_a_hand_worked_example():
    # One swapped pair of five: rho = 1 - 6*2/(5*24) = 0.9; tau = (9 - 1)/10; quadratic kappa: observed
    # weight 2, expected 100/5 = 20, so 1 - 2/20; three of five exact, all within one point.
    table = RatingTable.of([1, 2, 3, 4, 5], [1, 2, 3, 5, 4], FIVE)
    assert spearman(table) == pytest.approx(0.9, abs=1e-15)
    assert kendall_tau_b(table) == pytest.approx(0.8, abs=1e-15)
    assert quadratic_kappa(table) == pytest.approx(0.9, abs=1e-15)
    assert exact_agreement(table) == 0.6
    assert within_one(table) == 1.0


def test_within_one_counts_points_of_the_scale_and_kappa_weights_them():
    # On the scale -2..2, -2 and 0 are two points apart; the unused points between still count.
    table = RatingTable.of([-2, 0, 2], [0, 0, 1], [-2, -1, 0, 1, 2])
    assert within_one(table) == pytest.approx(2 / 3)
    assert exact_agreement(table) == pytest.approx(1 / 3)
    # Places: grader 0, 2, 4; human 2, 2, 3. Observed weights 4 + 0 + 1 = 5; expected
    # sum_ij g_i h_j (i - j)^2 / n = ((2*4 + 9) + (0 + 1) + (2*4 + 1)) / 3 = 9.
    assert quadratic_kappa(table) == pytest.approx(1 - 5 / 9)


def test_undefined_figures_are_none():
    constant_human = RatingTable.of([1, 2, 3], [4, 4, 4], FIVE)
    assert spearman(constant_human) is None
    assert kendall_tau_b(constant_human) is None
    assert quadratic_kappa(constant_human) == 0.0  # defined: chance predicts disagreement
    both_same = RatingTable.of([4, 4], [4, 4], FIVE)
    assert quadratic_kappa(both_same) is None


@pytest.mark.parametrize("seed", range(200))
def test_figures_match_scipy_and_sklearn(seed):
    stats = pytest.importorskip("scipy.stats")
    metrics = pytest.importorskip("sklearn.metrics")
    scale = FIVE if seed % 2 else list(range(-2, 8))
    grader, human = random_ratings(seed, scale)
    table = RatingTable.of(grader, human, scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant side: scipy warns and gives NaN, as we give None
        theirs = [
            stats.spearmanr(grader, human).statistic,
            stats.kendalltau(grader, human, variant="b").statistic,
            metrics.cohen_kappa_score(grader, human, weights="quadratic", labels=scale),
        ]
    for ours, expected in zip((spearman(table), kendall_tau_b(table), quadratic_kappa(table)), theirs, strict=True):
        if ours is None:
            assert expected != expected  # NaN
        else:
            assert ours == pytest.approx(expected, abs=1e-12)


def test_pairwise_accuracy_counts_a_tie_half_and_decisive_accuracy_leaves_ties_out():
    grader = ["CANDIDATE", "CANDIDATE", "TIE", "BASELINE", "TIE"]
    human = ["CANDIDATE", "TIE", "BASELINE", "CANDIDATE", "TIE"]
    table = RatingTable.of(grader, human, PREFERENCES)
    assert pairwise_accuracy(table) == pytest.approx((1 + 0.5 + 0.5 + 0 + 1) / 5)
    assert decisive_accuracy(table) == pytest.approx(1 / 2)  # rows 1 and 4 only
    assert exact_agreement(table) == pytest.approx(2 / 5)
    assert decisive_accuracy(RatingTable.of(["TIE", "CANDIDATE"], ["BASELINE", "TIE"], PREFERENCES)) is None


def test_bootstrap_is_seeded_percentile_over_rows():
    grader, human = random_ratings(7, FIVE)
    grader, human = grader * 3, human * 3
    first = rating_agreement(grader, human, FIVE, n_resamples=300, seed=5)
    again = rating_agreement(grader, human, FIVE, n_resamples=300, seed=5)
    other = rating_agreement(grader, human, FIVE, n_resamples=300, seed=6)
    assert first == again
    assert first != other
    for figure in first.figures.values():
        assert figure.value is not None
        assert figure.low is not None
        assert figure.high is not None
        assert figure.low <= figure.high
        assert figure.resamples <= 300
    exact = first.figures["exact"]
    assert exact.low is not None
    assert exact.high is not None
    assert exact.value is not None
    assert exact.low <= exact.value <= exact.high


def test_too_few_rows_get_the_figures_without_an_interval():
    rows = MIN_ROWS_FOR_INTERVAL - 1
    result = rating_agreement([1, 2, 3] * 3, [1, 2, 2] * 3, FIVE)
    assert result.compared == rows
    assert result.n_resamples == 0
    assert all(figure.low is None and figure.high is None for figure in result.figures.values())
    assert result.figures["exact"].value == pytest.approx(2 / 3)


def test_bad_calls_raise():
    with pytest.raises(ValueError, match="no rows"):
        rating_agreement([], [], FIVE)
    with pytest.raises(ValueError, match="not on the scale"):
        rating_agreement([1, 6], [1, 2], FIVE)
    with pytest.raises(ValueError, match="length"):
        RatingTable.of([1], [1, 2], FIVE)


# -- the command line --------------------------------------------------------------------------------------


def graded_rows(count: int = 30) -> list[dict[str, object]]:
    rng = random.Random(11)
    rows: list[dict[str, object]] = []
    for n in range(count):
        human = rng.randint(1, 5)
        score = min(5, max(1, human + rng.choice([-1, 0, 0, 1])))
        rows.append({"prediction": f"answer {n}", "score": score, "failure_kind": None, "human": human})
    return rows


def agreement(*args: object) -> dict[str, object]:
    done = cli("agreement", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_cli_graded_figures_equal_the_functions_and_failed_or_unrated_rows_are_counted(tmp_path):
    rows = graded_rows()
    failed = {"prediction": "x", "score": None, "failure_kind": "parse_failure", "human": 3}
    unrated = {"prediction": "y", "score": 4, "failure_kind": None, "human": None}
    source = write_jsonl(tmp_path / "graded.jsonl", [*rows, failed, unrated])
    summary = agreement(source, "--rating-field", "human", "--metric", "question_answering_quality", "--seed", "3")
    expected = rating_agreement(
        [row["score"] for row in rows], [row["human"] for row in rows], FIVE, n_resamples=1000, seed=3
    )
    assert summary["kind"] == "graded"
    assert (summary["rows"], summary["compared"], summary["not_graded"], summary["no_rating"]) == (32, 30, 1, 1)
    assert summary["scale"] == FIVE
    assert summary["resamples"] == 1000
    figures = summary["figures"]
    assert isinstance(figures, dict)
    assert set(figures) == {"spearman", "kendall_tau_b", "quadratic_kappa", "exact", "within_one"}
    for name, figure in expected.figures.items():
        assert figures[name] == {
            "value": figure.value,
            "low": figure.low,
            "high": figure.high,
            "resamples": figure.resamples,
        }
    text = cli("agreement", source, "--rating-field", "human", "--metric", "question_answering_quality")
    assert text.returncode == 0, text.stderr
    assert "rows 32: 30 compared, 1 not graded, 1 without a rating" in text.stdout
    assert "Kendall's tau-b" in text.stdout
    assert "1,000 resamples, seed 0" in text.stdout


def test_cli_pairwise_reads_preferences_in_any_case_and_documents_its_tie_rule(tmp_path):
    grader = ["CANDIDATE", "CANDIDATE", "TIE", "BASELINE", "TIE"] * 2
    human = ["candidate", "Tie", "BASELINE", "candidate", "tie"] * 2
    rows = [
        {"prediction": f"p{n}", "baseline": "b", "choice": g, "flipped": False, "preferred": h}
        for n, (g, h) in enumerate(zip(grader, human, strict=True))
    ]
    summary = agreement(write_jsonl(tmp_path / "pairs.jsonl", rows), "--rating-field", "preferred")
    assert summary["kind"] == "pairwise"
    assert summary["grade_field"] == "choice"
    figures = summary["figures"]
    assert isinstance(figures, dict)
    assert figures["accuracy"]["value"] == pytest.approx(0.6)
    assert figures["decisive_accuracy"]["value"] == pytest.approx(0.5)
    assert figures["exact"]["value"] == pytest.approx(0.4)
    assert figures["accuracy"]["low"] is not None  # ten rows: an interval
    assert "a tie against a side (either way round) 0.5" in str(summary["ties"])


def test_cli_reads_what_answer_eval_rubric_wrote(tmp_path):
    # The rubric output keeps the input's fields: a human rating column rides along to the agreement.
    humans = [1, 0, 1, 1, 0, 1]
    rows = [
        {"question": f"q{n}", "prediction": f"p{n}", "reference": "r", "human": human} for n, human in enumerate(humans)
    ]
    source, output = write_jsonl(tmp_path / "answers.jsonl", rows), tmp_path / "graded.jsonl"

    def grade(request):  # "incorrect" for p1 and p2 only: people disagree on p2 and p4
        wrong = any(f"<Response>\np{n}\n" in last_user_text(request) for n in (1, 2))
        return json.dumps({"explanation": "checked", "score": 0 if wrong else 1})

    with OpenAIServer(grade) as server:
        done = cli(
            "rubric", source, "--metric", "question_answering_correctness", "--api-base-url", server.url,
            "--model", "m", "--api-key-env", "ANSWER_EVAL_RATINGS_KEY", "--no-progress", "--output", output,
            env={**os.environ, "ANSWER_EVAL_RATINGS_KEY": "sk-x"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = agreement(output, "--rating-field", "human", "--metric", "question_answering_correctness")
    figures = summary["figures"]
    assert isinstance(figures, dict)
    assert summary["compared"] == 6
    assert figures["exact"]["value"] == pytest.approx(4 / 6)
    assert figures["exact"]["low"] is None  # six rows: too few for an interval


# -- bad inputs (docs/bad-inputs.md, the last rows) ---------------------------------------------------------


def test_rating_that_is_not_a_number_names_its_line(tmp_path):
    rows = graded_rows(3)
    rows[1]["human"] = "good"
    done = cli("agreement", write_jsonl(tmp_path / "g.jsonl", rows), "--rating-field", "human")
    assert done.returncode == 2
    assert "g.jsonl:2: the rating (human) 'good' is not a number" in done.stderr
    rows[1]["human"] = 3.5
    done = cli("agreement", write_jsonl(tmp_path / "g.jsonl", rows), "--rating-field", "human")
    assert done.returncode == 2
    assert "g.jsonl:2: the rating (human) 3.5 is not a whole number" in done.stderr


def test_rating_off_the_scale_names_its_line(tmp_path):
    rows = graded_rows(3)
    rows[2]["human"] = 7
    path = write_jsonl(tmp_path / "g.jsonl", rows)
    done = cli("agreement", path, "--rating-field", "human", "--metric", "fulfillment")
    assert done.returncode == 2
    assert "g.jsonl:3: the rating (human) 7 is off the scale 1..5" in done.stderr
    # Without a scale named, the scale is every whole number from the lowest value read to the highest.
    lowest = min(value for row in rows for value in (row["score"], row["human"]))
    assert agreement(path, "--rating-field", "human")["scale"] == list(range(lowest, 8))


def test_too_few_rows_for_an_interval_print_the_figures_and_say_so(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", graded_rows(MIN_ROWS_FOR_INTERVAL - 1))
    done = cli("agreement", path, "--rating-field", "human")
    assert done.returncode == 0, done.stderr
    assert f"no interval: fewer than {MIN_ROWS_FOR_INTERVAL} rows compared" in done.stdout
    summary = agreement(path, "--rating-field", "human")
    assert summary["resamples"] == 0
    figures = summary["figures"]
    assert isinstance(figures, dict)
    assert all(figure["low"] is None and figure["value"] is not None for figure in figures.values())


def test_no_rating_field_or_no_grade_field_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", graded_rows(3))
    done = cli("agreement", path, "--rating-field", "stars")
    assert done.returncode == 2
    assert "no row has the rating field 'stars'" in done.stderr
    done = cli("agreement", path, "--rating-field", "human", "--grade-field", "grade")
    assert done.returncode == 2
    assert "no row has the grade field 'grade'" in done.stderr
    unrated = [{**row, "human": None} for row in graded_rows(3)]
    done = cli("agreement", write_jsonl(tmp_path / "u.jsonl", unrated), "--rating-field", "human")
    assert done.returncode == 2
    assert "no row to compare: 0 not graded, 3 without a rating" in done.stderr


def test_bad_scale_metric_or_evaluator_options_are_refused(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", graded_rows(3))
    for options, words in (
        (("--metric", "nope"), "--metric: unknown metric 'nope'"),
        (("--scale", "x"), "--scale 'x': give LOW..HIGH or whole numbers with commas"),
        (("--scale", "3"), "a scale has two values at least"),
        (("-e", "judge"), "--evaluator is not used with --rating-field"),
    ):
        done = cli("agreement", path, "--rating-field", "human", *options)
        assert done.returncode == 2, options
        assert words in done.stderr


# -- a far-off rating or a long scale: refused, never built (issue 38, point 4) -------------------------------


def test_a_far_off_rating_or_grade_is_named_off_the_scale_in_bounded_memory(tmp_path):
    # The scale was every whole number from the lowest value to the highest: a typo of 1e15 among 1..5
    # raised MemoryError (exit 1), and 10**6 built a million-point scale without a word.
    cli("agreement", write_jsonl(tmp_path / "warm.jsonl", graded_rows(12)), "--rating-field", "human")  # imports
    for field, far, shown in (
        ("human", 1e15, "the rating (human) 1000000000000000"),
        ("human", 10**6, "the rating (human) 1000000"),
        ("score", 1e15, "the grade (score) 1000000000000000"),
        ("human", int("9" * 4000), "the rating (human) 9999"),
    ):
        rows = graded_rows(12)
        rows[6][field] = far
        path = write_jsonl(tmp_path / "far.jsonl", rows)
        tracemalloc.start()
        try:
            done = cli("agreement", path, "--rating-field", "human")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert done.returncode == 2, done.stderr
        assert f"far.jsonl:7: {shown}" in done.stderr
        assert "is off the scale: the other values read span 1..5" in done.stderr
        assert f"at most {MAX_SCALE_POINTS} points" in done.stderr
        assert len(done.stderr) < 400  # a 4,000-digit number is named, not printed
        assert peak < 16 << 20, peak  # a scale of a million points alone took more than 60 MB
    # Named on a scale, the same value is off it by the old rule; a scale of 0..100 is still inferred.
    rows = graded_rows(12)
    rows[6]["human"] = 1e15
    done = cli("agreement", write_jsonl(tmp_path / "f.jsonl", rows), "--rating-field", "human", "--scale", "1..5")
    assert done.returncode == 2
    assert "f.jsonl:7: the rating (human) 1000000000000000 is off the scale 1..5" in done.stderr
    rows[6]["human"], rows[7]["human"] = 0, 100
    assert agreement(write_jsonl(tmp_path / "w.jsonl", rows), "--rating-field", "human")["scale"] == list(range(101))


def test_a_scale_of_more_points_than_the_bound_is_refused_naming_the_flag(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", graded_rows(12))
    many = ",".join(map(str, range(MAX_SCALE_POINTS + 1)))
    for scale, words in (
        ("1..1000000000000000", "--scale '1..1000000000000000': 1,000,000,000,000,000 points, more than the 101"),
        ("0..101", "--scale '0..101': 102 points, more than the 101 a scale may have"),
        (many, "102 points, more than the 101 a scale may have"),
        ("1..5..9", "give LOW..HIGH or whole numbers with commas"),
    ):
        done = cli("agreement", path, "--rating-field", "human", "--scale", scale)
        assert done.returncode == 2, scale
        assert words in done.stderr
    assert agreement(path, "--rating-field", "human", "--scale", "0..100")["scale"] == list(range(101))
    for scale in (range(1, 10**9), range(10**20)):  # the library refuses them too, without building them
        with pytest.raises(ValueError, match=f"at most {MAX_SCALE_POINTS} are taken"):
            rating_agreement([1, 2], [1, 2], scale)
        with pytest.raises(ValueError, match=f"at most {MAX_SCALE_POINTS} are taken"):
            RatingTable.of([1, 2], [1, 2], scale)


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.subprocess
def test_a_rating_of_a_hundred_million_or_a_scale_as_long_ends_in_exit_2_under_1_gib(tmp_path):
    # The process is the behaviour: under an address space of 1 GiB, building 10**8 points gave MemoryError.
    rows = graded_rows(12)
    rows[6]["human"] = 100000000
    far = cli_process(
        "agreement", write_jsonl(tmp_path / "far.jsonl", rows), "--rating-field", "human",
        preexec_fn=_limit_address_space, timeout=120,
    )  # fmt: skip
    assert far.returncode == 2, far.stderr
    assert "far.jsonl:7: the rating (human) 100000000 is off the scale" in far.stderr
    long = cli_process(
        "agreement", write_jsonl(tmp_path / "g.jsonl", graded_rows(12)), "--rating-field", "human",
        "--scale", "1..300000000", preexec_fn=_limit_address_space, timeout=120,
    )  # fmt: skip
    assert long.returncode == 2, long.stderr
    assert "--scale '1..300000000': 300,000,000 points" in long.stderr


# -- weighed grades (--scoring logprobs): ranked as they are, binned for kappa (issue 38, point 12) -----------


def test_nearest_point_takes_a_half_up_and_refuses_values_past_the_ends():
    assert [nearest_point(value, FIVE) for value in (1.0, 1.49, 1.5, 4.0853, 4.5, 5.0)] == [0, 0, 1, 3, 4, 4]
    assert nearest_point(2.0, [1, 3, 5]) == 1  # a half between 1 and 3 rounds up
    assert nearest_point(0.99, FIVE) is None
    assert nearest_point(5.01, FIVE) is None


@pytest.mark.parametrize("seed", range(50))
def test_weighed_grades_match_scipy_ranks_and_sklearn_kappa_on_the_nearest_points(seed):
    stats = pytest.importorskip("scipy.stats")
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(seed)
    human = [rng.randint(1, 5) for _ in range(rng.randint(3, 60))]
    grader = [min(5.0, max(1.0, round(value + rng.uniform(-1.5, 1.5), 4))) for value in human]
    grader[0] = 2.5  # a half: taken at 3
    result = rating_agreement(grader, human, FIVE, n_resamples=20, seed=seed)
    binned = [FIVE[nearest_point(value, FIVE) or 0] for value in grader]
    assert binned[0] == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = {
            "spearman": stats.spearmanr(grader, human).statistic,
            "kendall_tau_b": stats.kendalltau(grader, human, variant="b").statistic,
            "quadratic_kappa": metrics.cohen_kappa_score(binned, human, weights="quadratic", labels=FIVE),
        }
    for name, expected in theirs.items():
        ours = result.figures[name].value
        assert (expected != expected) if ours is None else ours == pytest.approx(expected, abs=1e-12), name
    same = sum(a == b for a, b in zip(binned, human, strict=True))
    assert result.figures["exact"].value == pytest.approx(same / len(human))
    assert result.binned == sum(value != int(value) for value in grader)


def test_a_logprob_rubric_output_gets_rank_figures_and_the_bin_rule_said(tmp_path):
    # `agreement` exited 2 on it: "the grade (score) 4.1429 is not a whole number".
    humans = [5, 4, 2, 1, 3, 4, 5, 2, 3, 1, 4, 2]
    rows = [
        {"question": f"q{n}", "prediction": f"answer {n}", "context": "c", "human": human}
        for n, human in enumerate(humans)
    ]
    source, output = write_jsonl(tmp_path / "in.jsonl", rows), tmp_path / "graded.jsonl"

    # Answer n is stated as `low` and weighed between `low` and `low + 1`: a score of low + (n + 1) / 20.
    def script(request):
        n = int(last_user_text(request).split("answer ")[1].split()[0])
        low, share = (4 if humans[n] >= 3 else 1), (n + 1) / 20
        text = json.dumps({"explanation": "checked", "score": low})
        return Reply(texts=[text], logprobs=logprobs_for(text, [(str(low), 1 - share), (str(low + 1), share)]))

    with OpenAIServer(script) as server:
        done = cli(
            "rubric", source, "--metric", "question_answering_quality", "--scoring", "logprobs",
            "--api-base-url", server.url, "--model", "m", "--api-key-env", "ANSWER_EVAL_RATINGS_KEY",
            "--no-progress", "--output", output, env={**os.environ, "ANSWER_EVAL_RATINGS_KEY": "sk-x"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    scores = [row["score"] for row in graded]
    assert scores == [(4 if h >= 3 else 1) + (n + 1) / 20 for n, h in enumerate(humans)]
    summary = agreement(output, "--rating-field", "human", "--metric", "question_answering_quality")
    expected = rating_agreement(scores, humans, FIVE, n_resamples=1000, seed=0)
    assert summary["compared"] == len(humans)
    assert summary["binned"] == len(humans)
    assert summary["bin_rule"] == BIN_RULE
    figures = summary["figures"]
    assert isinstance(figures, dict)
    for name, figure in expected.figures.items():
        assert figures[name]["value"] == figure.value
    ranks = [sorted(scores).index(score) for score in scores]
    assert figures["spearman"]["value"] == pytest.approx(spearman(RatingTable.of(ranks, humans, range(12))), abs=1e-12)
    assert figures["quadratic_kappa"]["value"] is not None
    text = cli("agreement", output, "--rating-field", "human", "--metric", "question_answering_quality")
    assert text.returncode == 0, text.stderr
    assert "12 grades between two points of the scale (weighed): Spearman and tau-b rank them" in text.stdout
    assert "nearest point (a half rounds up)" in text.stdout
