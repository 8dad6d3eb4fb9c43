"""Comparing two systems: alignment, intervals, paired tests (checked against scipy) and the compare command."""

import json
import math
import os
import subprocess
import sys

import pytest
from scipy import stats as scipy_stats

from answer_eval.errors import InputError
from answer_eval.inputs.item_files import read_items
from answer_eval.reports.scorers import build_scorer, get_spec
from answer_eval.stats.compare import align, compare_scores, estimate
from answer_eval.stats.pairwise import compare
from answer_eval.stats.significance import bootstrap_interval
from tests.cli_runs import cli
from tests.conftest import EXAMPLES

ZERO = EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl"
FEW = EXAMPLES / "data" / "nq301_davinci_fewshot.jsonl"


def wide_env():
    """The environment without COLUMNS: piped output is then 120 characters wide."""
    return {key: value for key, value in os.environ.items() if key != "COLUMNS"}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def rows_of(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def wilson_by_hand(k, n, z=1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


# --- core -----------------------------------------------------------------------------------------


def test_wilson_estimate_matches_scipy_and_the_formula():
    scores = [1] * 130 + [0] * 171
    result = estimate(scores, graded=False)
    reference = scipy_stats.binomtest(130, 301).proportion_ci(confidence_level=0.95, method="wilson")
    assert (result.low, result.high) == pytest.approx((reference.low, reference.high), abs=1e-12)
    assert (result.low, result.high) == pytest.approx(wilson_by_hand(130, 301), abs=1e-12)
    assert result.method == "wilson"
    assert result.score == pytest.approx(130 / 301)


def test_bootstrap_interval_is_seeded_and_close_to_scipy():
    scores = [((i * 37) % 101) / 100 for i in range(300)]
    first = bootstrap_interval(scores, n_resamples=4000, seed=3)
    assert first == bootstrap_interval(scores, n_resamples=4000, seed=3)
    reference = scipy_stats.bootstrap(
        (scores,), lambda x: sum(x) / len(x), vectorized=False, n_resamples=4000, method="percentile", random_state=1
    ).confidence_interval
    assert first[0] == pytest.approx(reference.low, abs=0.01)
    assert first[1] == pytest.approx(reference.high, abs=0.01)
    assert first[0] < sum(scores) / len(scores) < first[1]
    assert bootstrap_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)


def small_items(tmp_path, name, predictions, questions=None, golds=None):
    questions = questions or [f"q{i}" for i in range(len(predictions))]
    golds = golds or [["yes"]] * len(predictions)
    rows = [
        {"question": q, "answers": g, "prediction": p} for q, g, p in zip(questions, golds, predictions, strict=True)
    ]
    return read_items(write_jsonl(tmp_path / name, rows))


def test_mcnemar_comparison_matches_scipy_binomtest(tmp_path):
    # A right on 1-6 only, B right on 7-9 only and both right on 0: 6 against 3 discordant items.
    a_scores = [1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    b_scores = [1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0]
    a = small_items(tmp_path, "a.jsonl", ["x"] * 11)
    b = small_items(tmp_path, "b.jsonl", ["y"] * 11)
    result = compare_scores(get_spec("contains"), a, b, a_scores, b_scores)
    assert (result.difference.a_only, result.difference.b_only) == (6, 3)
    assert result.difference.p_value == pytest.approx(scipy_stats.binomtest(3, 9, 0.5).pvalue, abs=1e-12)
    assert result.difference.p_value == pytest.approx(2 * (1 + 9 + 36 + 84) / 2**9)  # by hand: 2 P(X <= 3)
    assert result.difference.value == pytest.approx(4 / 11 - 7 / 11)
    assert [item.position for item in result.changed] == list(range(1, 10))


@pytest.mark.parametrize(
    ("evaluator", "scores_a", "scores_b"),
    [
        ("contains", [1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1]),
        ("rouge", [0.2, 0.5, 0.5, 0.9, 0.0, 0.31], [0.3, 0.5, 1.0, 0.1, 0.7, 0.62]),
    ],
)
def test_compare_scores_and_pairwise_compare_run_the_same_paired_test(tmp_path, evaluator, scores_a, scores_b):
    # B is the candidate and A the baseline: both report the same test, by the same name, with the same p.
    a = small_items(tmp_path, "a.jsonl", ["x"] * len(scores_a))
    b = small_items(tmp_path, "b.jsonl", ["y"] * len(scores_b))
    difference = compare_scores(get_spec(evaluator), a, b, scores_a, scores_b, seed=3, n_resamples=700).difference
    pairwise = compare(scores_b, scores_a, seed=3, n_resamples=700)
    assert (pairwise.test, pairwise.p_value) == (difference.test, difference.p_value)
    assert difference.test == ("paired_bootstrap" if get_spec(evaluator).graded else "mcnemar_exact")
    if pairwise.bootstrap is not None:
        assert (pairwise.bootstrap.low, pairwise.bootstrap.high) == (difference.low, difference.high)
        assert pairwise.bootstrap.mean_difference == difference.value


def test_graded_comparison_uses_the_paired_bootstrap_and_orders_by_change(tmp_path):
    a = small_items(tmp_path, "a.jsonl", ["x"] * 4)
    b = small_items(tmp_path, "b.jsonl", ["y"] * 4)
    result = compare_scores(get_spec("rouge"), a, b, [0.2, 0.5, 0.5, 0.9], [0.3, 0.5, 1.0, 0.1], n_resamples=500)
    assert result.difference.test == "paired_bootstrap"
    assert result.a.method == result.b.method == "bootstrap"
    assert result.difference.value == pytest.approx((0.1 + 0 + 0.5 - 0.8) / 4)
    assert [item.position for item in result.changed] == [3, 2, 0]  # largest change first; item 1 did not move
    assert result.difference.low <= result.difference.value <= result.difference.high


def test_align_names_the_first_mismatching_line(tmp_path):
    a = small_items(tmp_path, "a.jsonl", ["x", "y", "z"], questions=["q0", "q1", "q2"])
    moved = small_items(tmp_path, "b.jsonl", ["x", "y", "z"], questions=["q0", "other", "q2"])
    with pytest.raises(InputError) as info:
        align(a, moved)
    assert info.value.line == 2
    assert "question differs" in str(info.value)
    shorter = small_items(tmp_path, "c.jsonl", ["x", "y"], questions=["q0", "q1"])
    with pytest.raises(InputError) as info:
        align(a, shorter)
    assert (info.value.path, info.value.line) == (a.path, 3)
    golds = small_items(
        tmp_path, "d.jsonl", ["x", "y", "z"], questions=["q0", "q1", "q2"], golds=[["yes"], ["no"], ["yes"]]
    )
    with pytest.raises(InputError, match="acceptable answers differ"):
        align(a, golds)
    align(a, small_items(tmp_path, "e.jsonl", ["1", "2", "3"], questions=[" q0", "q1 ", "q2"]))


# --- command line ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compared():
    done = cli(
        "compare", ZERO, FEW, "--no-semantic", "-e", "contains", "-e", "exact", "-e", "rouge", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_compare_json_on_the_bundled_files(compared):
    zero, few = rows_of(ZERO), rows_of(FEW)
    assert compared["items"] == len(zero) == 301
    contains = compared["evaluators"][0]
    assert contains["evaluator"] == "contains"
    from answer_eval import AnswerContainsScorer

    scorer = AnswerContainsScorer()
    a = [scorer.score(r["prediction"], r["answers"]).correct for r in zero]
    b = [scorer.score(r["prediction"], r["answers"]).correct for r in few]
    assert contains["a"]["score"] == pytest.approx(sum(a) / 301)
    reference = scipy_stats.binomtest(sum(a), 301).proportion_ci(method="wilson")
    assert [contains["a"]["low"], contains["a"]["high"]] == pytest.approx([reference.low, reference.high])
    a_only = sum(x and not y for x, y in zip(a, b, strict=True))
    b_only = sum(y and not x for x, y in zip(a, b, strict=True))
    assert (contains["difference"]["a_only"], contains["difference"]["b_only"]) == (a_only, b_only)
    p_value = scipy_stats.binomtest(a_only, a_only + b_only, 0.5).pvalue
    assert contains["difference"]["p_value"] == pytest.approx(p_value)
    assert len(contains["changed"]) == a_only + b_only  # every changed item in JSON
    first = contains["changed"][0]
    assert first["question"] == zero[first["position"]]["question"]
    assert first["line_a"] == first["position"] + 1
    rouge = compared["evaluators"][2]
    assert rouge["graded"] is True
    assert rouge["difference"]["test"] == "paired_bootstrap"
    assert rouge["a"]["method"] == "bootstrap"


def test_compare_is_reproducible_with_a_seed():
    done = cli("compare", ZERO, FEW, "-e", "rouge", "--format", "json", "--resamples", "500", "--seed", "7")
    assert done.returncode == 0, done.stderr
    rouge = json.loads(done.stdout)["evaluators"][0]
    # The same seed in another process gives the same numbers; another seed other intervals.
    a, b = read_items(ZERO), read_items(FEW)
    scorer = build_scorer("rouge")
    scores_a, scores_b = scorer(a).scores, scorer(b).scores
    again = compare_scores(get_spec("rouge"), a, b, scores_a, scores_b, seed=7, n_resamples=500).to_json()
    assert again["a"] == rouge["a"]
    assert again["difference"] == rouge["difference"]
    other = compare_scores(get_spec("rouge"), a, b, scores_a, scores_b, seed=8, n_resamples=500)
    assert (other.a.low, other.a.high) != (rouge["a"]["low"], rouge["a"]["high"])
    assert rouge["a"]["low"] < rouge["a"]["score"] < rouge["a"]["high"]


def test_compare_text_table_and_changed_items():
    done = cli("compare", ZERO, FEW, "--no-semantic", "-e", "contains", "-e", "exact", "--show", "2", env=wide_env())
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("answer-eval compare: 301 questions\n")
    lines = out.splitlines()
    table = [line for line in lines if line.startswith((" contains", " exact"))]
    assert len(table) == 2
    assert "McNemar exact" in table[0]
    assert "contains: 2 of 51 items that changed verdict" in out
    assert "\x1b[" not in out  # no colour in a pipe
    assert all(line == line.rstrip() for line in lines)


def test_compare_refuses_misaligned_files(tmp_path):
    rows = rows_of(FEW)[:20]
    rows[6]["question"] = "a different question"
    other = write_jsonl(tmp_path / "other.jsonl", rows)
    done = cli("compare", ZERO, other, "--no-semantic", "-e", "contains")
    assert done.returncode == 2
    assert f"{other}:7: question differs from {ZERO} line 7" in done.stderr
    short = write_jsonl(tmp_path / "short.jsonl", rows_of(FEW)[:20])
    done = cli("compare", ZERO, short, "--no-semantic", "-e", "contains")
    assert done.returncode == 2
    assert f"{ZERO}:21:" in done.stderr
    assert "301 rows" in done.stderr


def test_compare_refuses_an_evaluator_it_cannot_run():
    done = cli("compare", ZERO, FEW, "-e", "sas", "--no-semantic")
    assert done.returncode == 2
    assert "cannot run evaluator 'sas'" in done.stderr


def run_on_terminal(*args, env, cwd=None):
    """Run the CLI with stdout on a pseudo-terminal; return what reached the terminal."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "answer_eval", *map(str, args)],
            stdout=follower,
            stderr=subprocess.PIPE,
            timeout=300,
            env=env,
            cwd=cwd,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stderr
    return b"".join(chunks)


@pytest.mark.slow
@pytest.mark.subprocess  # standard output on a pseudo-terminal
def test_colour_on_a_terminal_only_and_never_with_no_color(tmp_path):
    rows = rows_of(ZERO)[:30]
    few = rows_of(FEW)[:30]
    a, b = write_jsonl(tmp_path / "a.jsonl", rows), write_jsonl(tmp_path / "b.jsonl", few)
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    # Short relative names keep the table within the terminal's width, however deep tmp_path is.
    args = ("compare", a.name, b.name, "--no-semantic", "-e", "exact", "--no-progress")
    coloured = run_on_terminal(*args, env=env, cwd=tmp_path)
    assert b"\x1b[" in coloured
    plain = run_on_terminal(*args, env={**env, "NO_COLOR": "1"}, cwd=tmp_path)
    assert b"\x1b[" not in plain
    assert b"McNemar exact" in plain
