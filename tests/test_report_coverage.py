"""`answer-eval report`'s agreement-coverage section: the judge's confidence against human labels, as a chart.

Real files and the CLI (in process): a human-judged set is judged by `answer-eval judge --output`,
then reported; the expected figures are counted from the judged rows here, and the exact lower
bound is scipy's Clopper-Pearson (a beta quantile), not the package's.
"""

import json

import pytest
from scipy import stats as scipy_stats

from tests.cli_runs import cli, write_jsonl
from tests.conftest import ROOT

LABELLED = ROOT / "data" / "judge" / "nq301-dev.jsonl"
IN_SAMPLE = "in-sample: chosen on the same labels it is drawn on"


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


def counted(rows, threshold, delta=0.1, prefix="ae_"):
    """Kept verdicts at ``confidence >= threshold``, their agreement with people and scipy's exact lower bound."""
    kept = [row for row in rows if row[prefix + "confidence"] >= threshold]
    agreeing = sum(row[prefix + "correct"] == row["human_acceptable"] for row in kept)
    bound = scipy_stats.beta.ppf(delta, agreeing, len(kept) - agreeing + 1) if agreeing else 0.0
    return len(kept), agreeing / len(kept), bound


def test_curve_is_drawn_from_a_judged_file_with_labels(judged, tmp_path):
    html = tmp_path / "report.html"
    done, summary = report(judged, "--html", html, "-e", "judge")
    assert done.returncode == 0, done.stderr
    coverage = summary["systems"][0]["coverage"]
    assert coverage["drawn"] is True
    assert coverage["source"] == "file"
    rows = rows_of(judged)
    assert coverage["rows"] == len(rows) == 804
    points = {round(point["threshold"], 2): point for point in coverage["points"]}
    assert len(points) == 101  # thresholds 1.00, 0.99, ..., 0.00
    for threshold in (0.95, 0.9, 0.8, 0.5, 0.0):
        kept, agreement, bound = counted(rows, threshold)
        point = points[threshold]
        assert point["kept"] == kept
        assert point["kept_share"] == pytest.approx(kept / len(rows))
        assert point["kept_agreement"] == pytest.approx(agreement)
        assert point["lower_bound"] == pytest.approx(bound, abs=1e-9)
    assert coverage["marks"] == []  # no abstained column, no --target-agreement: nothing marked
    page = html.read_text(encoding="utf-8")
    assert '<section id="coverage"><h2>Agreement and coverage</h2>' in page
    assert page.count('class="chart coverage-chart"') == 1
    assert '<path class="agreement"' in page
    assert '<path class="bound"' in page
    assert '<g class="mark"' not in page
    kept, agreement, _ = counted(rows, 0.8)
    assert f'<td class="num">0.80</td><td class="num">{kept}</td>' in page  # the table's row at 0.80
    assert f"agreement {agreement:.3f}, lower bound" in page  # the hover point at 0.80


def test_the_run_threshold_is_marked_from_the_abstained_column(judged, tmp_path):
    # What `judge --target-agreement` writes: each row's verdict kept (abstained false) when its
    # confidence reaches the run's threshold; here a threshold of 0.8.
    rows = rows_of(judged)
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
    assert mark["lower_bound"] == pytest.approx(bound, abs=1e-9)
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


def fixed_sequence_passes(rows, threshold, target, delta):
    kept = [row for row in rows if row["ae_confidence"] >= threshold - 1e-12]
    disagreeing = sum(row["ae_correct"] != row["human_acceptable"] for row in kept)
    return scipy_stats.binom.cdf(disagreeing, len(kept), 1 - target) <= delta


def test_target_agreement_marks_an_in_sample_threshold(judged, tmp_path):
    html = tmp_path / "report.html"
    done, summary = report(judged, "--html", html, "-e", "judge", "--target-agreement", "0.85", "--delta", "0.1")
    assert done.returncode == 0, done.stderr
    (mark,) = summary["systems"][0]["coverage"]["marks"]
    assert mark["kind"] == "in_sample"
    assert mark["target_agreement"] == 0.85
    assert IN_SAMPLE in mark["label"]
    rows = rows_of(judged)
    threshold = mark["threshold"]
    # Fixed-sequence testing down the 0.005 grid from the first threshold keeping 100 verdicts:
    # every threshold from there to the chosen one passes the exact binomial test, the next one down fails.
    start = max(k / 200 for k in range(201) if sum(row["ae_confidence"] >= k / 200 for row in rows) >= 100)
    grid = [k / 200 for k in range(round(start * 200), round(threshold * 200) - 1, -1)]
    assert all(fixed_sequence_passes(rows, value, 0.85, 0.1) for value in grid)
    assert not fixed_sequence_passes(rows, threshold - 0.005, 0.85, 0.1)
    kept, agreement, _ = counted(rows, threshold)
    assert (mark["kept"], mark["kept_agreement"]) == (kept, pytest.approx(agreement))
    assert agreement >= 0.85
    page = html.read_text(encoding="utf-8")
    assert page.count('<g class="mark" data-kind="in_sample">') == 1
    assert IN_SAMPLE in page
    assert "(in-sample)" in cli(
        "report", judged, "--html", tmp_path / "text.html", "-e", "judge", "--target-agreement", "0.85",
        "--no-progress",
    ).stdout  # fmt: skip


def test_target_agreement_on_too_few_labels_draws_the_curve_and_says_why_nothing_is_marked(judged, tmp_path):
    data = write_jsonl(tmp_path / "few.jsonl", rows_of(judged)[:60])
    html = tmp_path / "report.html"
    done, summary = report(data, "--html", html, "-e", "judge", "--target-agreement", "0.9")
    assert done.returncode == 0, done.stderr
    coverage = summary["systems"][0]["coverage"]
    assert coverage["drawn"] is True
    assert coverage["marks"] == []
    (note,) = coverage["notes"]
    assert "no threshold chosen" in note
    assert "this file has 60" in note
    assert "this file has 60" in html.read_text(encoding="utf-8")


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
