"""`answer-eval report`'s agreement-coverage section: the judge's confidence against human labels, as a chart.

Real files and the CLI (in process): a human-judged set is judged by `answer-eval judge --output`,
then reported; the expected figures are counted from the judged rows here. The curve's bound is the
threshold test's corrected bound; on a file without questions (each answer its own cluster) it is
computed here from scipy's exact binomial (a beta quantile), not the package's: each threshold's
bound at delta / 2, the smallest on the way down from each of the two starts (the first threshold
keeping 30% and the first keeping 70% of the verdicts), the larger of the two.
"""

import json
import math
import re

import pytest
from scipy import stats as scipy_stats

from tests.cli_runs import cli, write_jsonl
from tests.conftest import ROOT

LABELLED = ROOT / "data" / "judge" / "nq301-dev.jsonl"
IN_SAMPLE = "in-sample: chosen on the same labels it is drawn on"
# How close the package's bound is to scipy's exact binomial one: its design effect for answers that are each
# their own question is the small-sample factor Q / (Q - 1) (1.0012 on 804 answers, 2e-5 on a bound), not 1;
# the bounds tested here differ by 0.01 or more from the uncorrected ones at delta.
CLOSE = 1e-4


def rows_of(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def report(*args):
    """Run `answer-eval report ARGS --format json` to the end; return the process and, on success, its summary."""
    done = cli("report", *args, "--no-semantic", "--no-progress", "--format", "json")
    return done, (json.loads(done.stdout) if done.returncode == 0 else None)


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """nq301-dev (804 human-judged answers) judged, its verdict columns under a prefix (the CLI allows any)."""
    out = tmp_path_factory.mktemp("judged") / "judged.jsonl"
    done = cli("judge", LABELLED, "--no-progress", "--column-prefix", "ae_", "--output", out)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def unclustered(judged, tmp_path_factory):
    """The judged file without its questions: each answer its own cluster, so the bounds are the exact binomial's."""
    rows = [{key: value for key, value in row.items() if key != "question"} for row in rows_of(judged)]
    return write_jsonl(tmp_path_factory.mktemp("unclustered") / "unclustered.jsonl", rows)


def counted(rows, threshold, delta=0.1, prefix="ae_"):
    """Kept verdicts at ``confidence >= threshold``, their agreement with people and scipy's exact lower bound."""
    kept = [row for row in rows if row[prefix + "confidence"] >= threshold]
    agreeing = sum(row[prefix + "correct"] == row["human_acceptable"] for row in kept)
    bound = scipy_stats.beta.ppf(delta, agreeing, len(kept) - agreeing + 1) if agreeing else 0.0
    return len(kept), agreeing / len(kept), bound


def scipy_bounds(rows, delta=0.1):
    """Per grid index k (threshold k / 200): the corrected bound of answers that are each their own question.

    Returns the bounds, the starts (grid indices, highest first) and the level of each test.
    """
    sizes = [sum(row["ae_confidence"] >= k / 200 for row in rows) for k in range(201)]
    starts = sorted(
        {max(k for k in range(201) if sizes[k] >= math.ceil(share * len(rows))) for share in (0.3, 0.7)}, reverse=True
    )
    level = delta / len(starts)
    each = [counted(rows, k / 200, level)[2] if sizes[k] else 0.0 for k in range(201)]
    lower = [max((min(each[k : start + 1]) for start in starts if start >= k), default=0.0) for k in range(201)]
    return lower, starts, level


def test_curve_is_drawn_from_a_judged_file_with_labels(unclustered, tmp_path):
    html = tmp_path / "report.html"
    done, summary = report(unclustered, "--html", html, "-e", "judge")
    assert done.returncode == 0, done.stderr
    coverage = summary["systems"][0]["coverage"]
    assert coverage["drawn"] is True
    assert coverage["source"] == "file"
    rows = rows_of(unclustered)
    assert coverage["rows"] == len(rows) == 804
    points = {round(point["threshold"], 2): point for point in coverage["points"]}
    assert len(points) == 101  # thresholds 1.00, 0.99, ..., 0.00
    lower, starts, level = scipy_bounds(rows)
    assert level == 0.05  # two starts, each at delta / 2
    for threshold in (0.9, 0.8, 0.5, 0.0):
        kept, agreement, _ = counted(rows, threshold)
        point = points[threshold]
        assert point["kept"] == kept
        assert point["kept_share"] == pytest.approx(kept / len(rows))
        assert point["kept_agreement"] == pytest.approx(agreement)
        assert point["lower_bound"] == pytest.approx(lower[round(threshold * 200)], abs=CLOSE)
    # Above the first start nothing is tested: no bound, not a bound of 0 (on NQ301 dev: 0.95 and up).
    untested = [value for value, point in points.items() if point["lower_bound"] is None]
    assert untested == [value for value in points if round(value * 200) > starts[0]]
    assert 0.95 in untested
    assert 0.9 not in untested
    assert coverage["marks"] == []  # no abstained column, no --target-agreement: nothing marked
    page = html.read_text(encoding="utf-8")
    assert '<section id="coverage"><h2>Agreement and coverage</h2>' in page
    assert page.count('class="chart coverage-chart"') == 1
    assert '<path class="agreement"' in page
    assert '<path class="bound"' in page
    assert '<g class="mark"' not in page
    kept, agreement, _ = counted(rows, 0.8)
    assert f'<td class="num">0.80</td><td class="num">{kept}</td>' in page  # the table's row at 0.80
    assert f"agreement {agreement:.3f}, lower bound {lower[160]:.3f}" in page  # the hover point at 0.80
    kept, agreement, _ = counted(rows, 0.95)
    assert f'{agreement:.3f}</td><td class="num">not tested</td>' in page  # the table's row at 0.95
    assert f"agreement {agreement:.3f}, not tested" in page  # its hover point
    assert "its lower bound at δ = 0.1, as the threshold test reads it" in page


def test_answers_to_one_question_count_as_one_cluster(judged, unclustered, tmp_path):
    # NQ301 dev's answers come 2 to 8 to a question, and a hard question trips several alike: the
    # bound that counts them as clusters is lower than the one that counts them as independent.
    done, clustered = report(judged, "--html", tmp_path / "a.html", "-e", "judge", "--target-agreement", "0.85")
    assert done.returncode == 0, done.stderr
    done, independent = report(unclustered, "--html", tmp_path / "b.html", "-e", "judge", "--target-agreement", "0.85")
    assert done.returncode == 0, done.stderr
    clustered, independent = clustered["systems"][0]["coverage"], independent["systems"][0]["coverage"]
    pairs = list(zip(clustered["points"], independent["points"], strict=True))
    assert all((one["lower_bound"] is None) == (other["lower_bound"] is None) for one, other in pairs)
    tested = [(one["lower_bound"], other["lower_bound"]) for one, other in pairs if one["lower_bound"] is not None]
    assert all(one <= other + 1e-12 for one, other in tested)
    assert max(other - one for one, other in tested) > 0.005
    (mark,) = clustered["marks"]
    (other,) = independent["marks"]
    assert mark["threshold"] > other["threshold"]  # fewer effective labels: a higher threshold passes
    # The chart and the choice read the same bounds: the mark's bound reaches the target, no point below it does.
    assert mark["lower_bound"] >= 0.85
    below = [point for point in clustered["points"] if point["threshold"] < mark["threshold"] - 1e-9]
    assert all(point["lower_bound"] is None or point["lower_bound"] < 0.85 for point in below)
    at = [point for point in clustered["points"] if abs(point["threshold"] - mark["threshold"]) < 1e-9]
    assert all(point["lower_bound"] == pytest.approx(mark["lower_bound"]) for point in at)


def test_the_run_threshold_is_marked_from_the_abstained_column(unclustered, tmp_path):
    # What `judge --target-agreement` writes: each row's verdict kept (abstained false) when its
    # confidence reaches the run's threshold; here a threshold of 0.8. Its threshold was not chosen on
    # these labels, so the bound is of the kept rows as one set, at delta (here the exact binomial's).
    rows = rows_of(unclustered)
    for row in rows:
        row["ae_abstained"] = row["ae_confidence"] < 0.8
    data = write_jsonl(tmp_path / "abstaining.jsonl", rows)
    html = tmp_path / "report.html"
    done, summary = report(data, "--html", html, "-e", "judge")
    assert done.returncode == 0, done.stderr
    (mark,) = summary["systems"][0]["coverage"]["marks"]
    kept_rows = [row for row in rows if not row["ae_abstained"]]
    lowest = min(row["ae_confidence"] for row in kept_rows)
    kept, agreement, bound = counted(rows, lowest)
    assert mark["kind"] == "run"
    assert mark["threshold"] == lowest
    assert mark["kept"] == kept == len(kept_rows)
    assert mark["kept_share"] == pytest.approx(len(kept_rows) / len(rows))
    assert mark["kept_agreement"] == pytest.approx(agreement)
    assert mark["lower_bound"] == pytest.approx(bound, abs=CLOSE)
    page = html.read_text(encoding="utf-8")
    assert page.count('<g class="mark" data-kind="run">') == 1
    assert f"the run&#x27;s threshold: it kept confidence ≥ {lowest:.4g}" in page
    assert IN_SAMPLE not in page
    done, summary = report(data, "--html", html, "-e", "judge", "--target-agreement", "0.85")
    assert done.returncode == 0, done.stderr
    assert [mark["kind"] for mark in summary["systems"][0]["coverage"]["marks"]] == ["run", "in_sample"]
    page = html.read_text(encoding="utf-8")
    assert page.count('<g class="mark" data-kind="run">') == page.count('<g class="mark" data-kind="in_sample">') == 1


def test_the_run_threshold_is_marked_from_the_escalated_column(judged, tmp_path):
    # What `judge --target-agreement --escalate-model ...` writes: the rows below the run's threshold
    # escalated, the LLM's verdict in their `correct` (here: the person's label, an LLM that always agrees).
    rows = rows_of(judged)
    for row in rows:
        row["ae_escalated"] = row["ae_confidence"] < 0.9
        if row["ae_escalated"]:
            row["ae_correct"] = row["human_acceptable"]
    data = write_jsonl(tmp_path / "escalating.jsonl", rows)
    done, summary = report(data, "--html", tmp_path / "report.html", "-e", "judge")
    assert done.returncode == 0, done.stderr
    coverage = summary["systems"][0]["coverage"]
    (mark,) = coverage["marks"]
    kept_rows = [row for row in rows if not row["ae_escalated"]]
    assert mark["kind"] == "run"
    assert mark["kept"] == len(kept_rows)
    assert mark["threshold"] == min(row["ae_confidence"] for row in kept_rows)
    assert "the highest escalated" in mark["label"]
    assert any("verdicts are the LLM's" in note for note in coverage["notes"])
    assert coverage["agreement"] == pytest.approx(
        sum(row["ae_correct"] == row["human_acceptable"] for row in rows) / len(rows)
    )


def test_abstentions_that_are_no_threshold_are_marked_as_they_are_with_a_note(judged, tmp_path):
    rows = rows_of(judged)
    for position, row in enumerate(rows):
        row["ae_abstained"] = position % 2 == 0  # not a threshold: every other row
    data = write_jsonl(tmp_path / "edited.jsonl", rows)
    done, summary = report(data, "--html", tmp_path / "report.html", "-e", "judge")
    assert done.returncode == 0, done.stderr
    coverage = summary["systems"][0]["coverage"]
    assert coverage["marks"][0]["kept"] == len(rows) // 2
    assert any("not those above one threshold" in note for note in coverage["notes"])


def test_target_agreement_marks_an_in_sample_threshold(unclustered, tmp_path):
    html = tmp_path / "report.html"
    done, summary = report(unclustered, "--html", html, "-e", "judge", "--target-agreement", "0.85", "--delta", "0.1")
    assert done.returncode == 0, done.stderr
    (mark,) = summary["systems"][0]["coverage"]["marks"]
    assert mark["kind"] == "in_sample"
    assert mark["target_agreement"] == 0.85
    assert IN_SAMPLE in mark["label"]
    rows = rows_of(unclustered)
    # The lowest grid threshold whose corrected bound reaches the target, the bound the chart draws.
    lower, _, _ = scipy_bounds(rows)
    chosen = min(k for k in range(201) if lower[k] >= 0.85)
    assert mark["threshold"] == chosen / 200
    assert mark["lower_bound"] == pytest.approx(lower[chosen], abs=CLOSE)
    kept, agreement, _ = counted(rows, chosen / 200)
    assert (mark["kept"], mark["kept_agreement"]) == (kept, pytest.approx(agreement))
    assert agreement >= 0.85
    page = html.read_text(encoding="utf-8")
    assert page.count('<g class="mark" data-kind="in_sample">') == 1
    assert IN_SAMPLE in page
    assert "(in-sample)" in cli(
        "report", unclustered, "--html", tmp_path / "text.html", "-e", "judge", "--target-agreement", "0.85",
        "--no-progress",
    ).stdout  # fmt: skip


def labels_that_pass(rows, target, delta=0.1):
    """Per start whose observed agreement beats ``target``: whether ``size`` labels (its counts scaled) pass there."""
    lower, starts, level = scipy_bounds(rows, delta)
    counts = [counted(rows, start / 200) for start in starts]

    def passes(size):
        scale = size / len(rows)
        return any(
            scipy_stats.beta.ppf(level, n * share * scale, n * (1 - share) * scale + 1) >= target
            for n, share, _ in counts
            if share > target
        )

    return lower, passes


def test_target_agreement_on_too_few_labels_says_what_can_be_promised_and_the_labels_needed(unclustered, tmp_path):
    rows = rows_of(unclustered)[:60]
    data = write_jsonl(tmp_path / "few.jsonl", rows)
    html = tmp_path / "report.html"
    for target in ("0.9", "0.99"):
        done, summary = report(data, "--html", html, "-e", "judge", "--target-agreement", target)
        assert done.returncode == 0, done.stderr
        coverage = summary["systems"][0]["coverage"]
        assert coverage["drawn"] is True
        assert coverage["marks"] == []
        (note,) = coverage["notes"]
        assert note.startswith(f"--target-agreement {target}: no threshold chosen: ")
        lower, passes = labels_that_pass(rows, float(target))
        best = max(lower)
        where = min(k for k in range(201) if lower[k] >= best)
        kept, _, _ = counted(rows, where / 200)
        promised = f"the most any threshold can promise at delta 0.1 is {best:.3f} (confidence ≥ {where / 200:.3f}, "
        assert promised in note
        assert f"keeping {kept} of this file's 60 labelled verdicts)" in note
        needed = int(re.search(r"about (\d+) labelled verdicts in all \((\d+) more\)", note)[1])
        assert f"({needed - 60} more) would let {target} pass, if their agreement held" in note
        assert passes(needed)
        assert not passes(needed - 1)
        assert needed > 60
        assert f"about {needed} labelled verdicts" in html.read_text(encoding="utf-8")


def test_target_agreement_no_labels_can_reach_says_so(judged, tmp_path):
    # On NQ301 dev the verdicts the test starts from agree 0.95 and 0.93: no number of labels promises 0.97.
    done, summary = report(judged, "--html", tmp_path / "r.html", "-e", "judge", "--target-agreement", "0.97")
    assert done.returncode == 0, done.stderr
    coverage = summary["systems"][0]["coverage"]
    (note,) = coverage["notes"]
    tested = [point["lower_bound"] for point in coverage["points"] if point["lower_bound"] is not None]
    assert f"the most any threshold can promise at delta 0.1 is {max(tested):.3f}"[:-1] in note  # the grid is finer
    assert "no number of labels would let 0.97 pass: the verdicts the test starts from (the " in note
    assert "agree with people no more than 0.97 of the time" in note


def test_the_judge_run_now_gives_the_same_curve_as_its_judged_file(judged, tmp_path):
    done, from_file = report(judged, "--html", tmp_path / "a.html", "-e", "judge")
    assert done.returncode == 0, done.stderr
    done, run_now = report(LABELLED, "--html", tmp_path / "b.html", "-e", "judge")
    assert done.returncode == 0, done.stderr
    file_curve, run_curve = from_file["systems"][0]["coverage"], run_now["systems"][0]["coverage"]
    assert run_now["systems"][0]["reused"] == []
    assert run_curve["source"] == "run"
    assert run_curve["points"] == file_curve["points"]


@pytest.mark.parametrize(
    ("name", "edit", "reason"),
    [
        ("no label", lambda row: row.pop("human_acceptable"), "no human label column"),
        ("no confidence", lambda row: row.pop("ae_confidence"), "has no 'confidence' column"),
    ],
)
def test_a_judged_file_lacking_a_column_gets_a_reason_not_a_curve(judged, tmp_path, name, edit, reason):
    rows = rows_of(judged)[:40]
    for row in rows:
        edit(row)
    data = write_jsonl(tmp_path / "lacking.jsonl", rows)
    html = tmp_path / "report.html"
    done, summary = report(data, "--html", html, "-e", "judge")
    assert done.returncode == 0, done.stderr
    coverage = summary["systems"][0]["coverage"]
    assert coverage["drawn"] is False
    assert reason in coverage["reason"]
    page = html.read_text(encoding="utf-8")
    assert '<section id="coverage">' in page
    assert "coverage-chart" not in page
    assert page.count('<p class="note absent">') == 1
    absent = page.split('<p class="note absent">')[1].split("</p>")[0].replace("&#x27;", "'")
    assert absent.startswith("Not drawn for lacking: ")
    assert reason in absent


def test_labels_without_judge_verdicts_get_a_reason_and_no_judge_nothing_at_all(tmp_path):
    labelled = write_jsonl(tmp_path / "labelled.jsonl", rows_of(LABELLED)[:30])
    done, summary = report(labelled, "--html", tmp_path / "a.html", "-e", "contains")
    assert done.returncode == 0, done.stderr
    assert "no judge verdicts" in summary["systems"][0]["coverage"]["reason"]
    assert "Not drawn for labelled: no judge verdicts" in (tmp_path / "a.html").read_text(encoding="utf-8")
    plain = write_jsonl(tmp_path / "plain.jsonl", [{k: v for k, v in row.items() if k != "human_acceptable"}
                                                    for row in rows_of(LABELLED)[:30]])  # fmt: skip
    done, summary = report(plain, "--html", tmp_path / "b.html", "-e", "contains")
    assert done.returncode == 0, done.stderr
    assert summary["systems"][0]["coverage"] is None
    assert 'id="coverage"' not in (tmp_path / "b.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("ae_confidence", "high", "'high' is not a number in [0, 1]"),
        ("ae_confidence", 1.5, "1.5 is not a number in [0, 1]"),
        ("ae_confidence", -0.2, "-0.2 is not a number in [0, 1]"),
        ("ae_confidence", True, "True is not a number in [0, 1]"),
        ("ae_confidence", None, "None is not a number in [0, 1]"),
        ("ae_abstained", "no", "'no' is not true/false"),
        ("ae_escalated", 1, "1 is not true/false"),
        ("ae_correct", "yes", "'yes' is not true/false"),
    ],
)
def test_a_bad_judge_value_is_refused_naming_its_line(judged, tmp_path, field, value, words):
    rows = rows_of(judged)[:40]
    for row in rows:  # a run's file: abstained, or escalated (with an LLM)
        row["ae_escalated" if field == "ae_escalated" else "ae_abstained"] = False
    rows[6][field] = value
    data = write_jsonl(tmp_path / "bad.jsonl", rows)
    html = tmp_path / "report.html"
    html.write_text("old", encoding="utf-8")
    done = cli("report", data, "--html", html, "-e", "judge", "--no-semantic", "--no-progress")
    assert done.returncode == 2
    assert f"{data}:7: field {field!r}: {words}" in done.stderr
    assert "Traceback" not in done.stderr
    assert html.read_text(encoding="utf-8") == "old"


def test_a_row_missing_a_judge_column_the_first_row_has_is_refused(judged, tmp_path):
    rows = rows_of(judged)[:10]
    del rows[4]["ae_confidence"]
    data = write_jsonl(tmp_path / "gap.jsonl", rows)
    done = cli("report", data, "--html", tmp_path / "r.html", "-e", "judge", "--no-semantic", "--no-progress")
    assert done.returncode == 2
    assert f"{data}:5: missing field 'ae_confidence', which the first row of this judged file has" in done.stderr


def test_a_confidence_that_is_not_a_finite_number_is_refused(judged, tmp_path):
    rows = rows_of(judged)[:10]
    data = tmp_path / "nan.jsonl"
    lines = [json.dumps(row) for row in rows]
    lines[3] = lines[3].replace(f'"ae_confidence": {rows[3]["ae_confidence"]}', '"ae_confidence": NaN')
    assert "NaN" in lines[3]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = cli("report", data, "--html", tmp_path / "r.html", "-e", "judge", "--no-semantic", "--no-progress")
    assert done.returncode == 2
    assert f"{data}:4: field 'ae_confidence': nan is not a number in [0, 1]" in done.stderr


def test_target_agreement_is_refused_when_no_file_can_have_a_curve(tmp_path):
    plain = write_jsonl(tmp_path / "plain.jsonl", [{"answers": ["a"], "prediction": "a"}])
    done = cli("report", plain, "--html", tmp_path / "r.html", "--target-agreement", "0.9", "--no-semantic")
    assert done.returncode == 2
    assert "--target-agreement chooses a threshold on human labels, and there are none" in done.stderr
    labelled = write_jsonl(tmp_path / "labelled.jsonl", rows_of(LABELLED)[:5])
    done = cli("report", labelled, "--html", tmp_path / "r.html", "--target-agreement", "0.9", "-e", "contains")
    assert done.returncode == 2
    assert "and there are no judge verdicts with their confidence" in done.stderr
    for bad in ("1.5", "0", "nan", "high"):
        done = cli("report", labelled, "--html", tmp_path / "r.html", "--target-agreement", bad)
        assert done.returncode == 2
        assert "--target-agreement" in done.stderr
        assert "strictly between 0 and 1" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_the_figures_in_the_docs_are_what_the_report_gives(judged, tmp_path):
    doc = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    done, summary = report(judged, "--html", tmp_path / "report.html", "-e", "judge")
    assert done.returncode == 0, done.stderr
    coverage = summary["systems"][0]["coverage"]
    points = {round(point["threshold"], 2): point for point in coverage["points"]}
    high, middle = points[0.9], points[0.8]
    written = (
        f"confidence ≥ 0.90 keeps {high['kept_share']:.1%} at agreement {high['kept_agreement']:.3f}\n"
        f"(bound {high['lower_bound']:.3f}), ≥ 0.80 keeps {middle['kept_share']:.1%} at {middle['kept_agreement']:.3f} "
        f"({middle['lower_bound']:.3f}), every verdict agrees {coverage['agreement']:.3f}."
    )
    assert written in doc


def test_a_judged_csv_gives_the_same_curve_as_its_jsonl(judged, tmp_path):
    # A CSV cell is text: the confidence `judge --output x.csv` writes is read back as the number it writes.
    csv = tmp_path / "judged.csv"
    done = cli("judge", LABELLED, "--no-progress", "--column-prefix", "ae_", "--output", csv)
    assert done.returncode == 0, done.stderr
    done, from_csv = report(csv, "--html", tmp_path / "a.html", "-e", "judge")
    assert done.returncode == 0, done.stderr
    done, from_jsonl = report(judged, "--html", tmp_path / "b.html", "-e", "judge")
    assert done.returncode == 0, done.stderr
    assert from_csv["systems"][0]["coverage"]["points"] == from_jsonl["systems"][0]["coverage"]["points"]


def test_a_hostile_file_name_stays_text_in_the_section(tmp_path):
    data = write_jsonl(tmp_path / 'sys<b onmouseover="x">.jsonl', rows_of(LABELLED)[:30])
    html = tmp_path / "report.html"
    done, summary = report(data, "--html", html, "-e", "judge")
    assert done.returncode == 0, done.stderr
    assert summary["systems"][0]["coverage"]["drawn"] is True
    section = html.read_text(encoding="utf-8").split('<section id="coverage">')[1].split("</section>")[0]
    assert "<b " not in section
    assert "sys&lt;b onmouseover=&quot;x&quot;&gt;" in section
    assert 'aria-label="Agreement with people of the judge&#x27;s verdicts' in section
