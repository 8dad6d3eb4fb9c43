"""``answer-eval calibrate`` and the calibration it writes: the file, its checks, the recalibration, the default.

Real parts: the command (in process) on real human-judged answers (data/judge/nq301-dev.jsonl),
the judge itself for the verdicts, real files in every everyday format.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import re
from pathlib import Path
from typing import Any

import pytest

from answer_eval.errors import CalibrationFileError
from answer_eval.evaluators.judge.calibration import (
    Calibration,
    Recalibration,
    cross_validate,
    fit_recalibration,
)
from answer_eval.evaluators.judge.cascade import AnswerJudge, JudgeVerdict
from answer_eval.evaluators.judge.guarantee import choose_threshold, threshold_bounds
from answer_eval.evaluators.judge.judge_core import JudgeOptions
from answer_eval.evaluators.judge.user_calibration import (
    DEFAULT_SETS,
    UserCalibration,
    default_selection,
    fit_user_calibration,
    read_user_calibration,
    verdict_signature,
)
from answer_eval.stats.rater_agreement import agreement, cohen_kappa
from tests.cli_runs import cli, write_jsonl
from tests.conftest import ROOT

NQ = ROOT / "data" / "judge" / "nq301-dev.jsonl"
EXAMPLE = ROOT / "examples" / "data" / "nq301_gpt4_replies.jsonl"
FIELDS = ("qid", "question", "answers", "prediction", "human_acceptable")


def _rows(path: Path = NQ) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _distinct(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows ``calibrate`` counts: each (question, answers, prediction) once, the first row of it.

    NQ301 dev holds one copy: two systems answered "1991" to qid 228, both labelled acceptable (804 rows, 803 counted).
    """
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        first.setdefault(json.dumps([row["question"], row["answers"], row["prediction"]]), row)
    return list(first.values())


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(FIELDS)
        for row in rows:
            cells = [json.dumps(row[name]) if name == "answers" else row[name] for name in FIELDS]
            writer.writerow(["true" if cell is True else "false" if cell is False else cell for cell in cells])
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Calibrate on NQ301 dev as JSONL and as CSV; the JSON report of the JSONL run."""
    folder = tmp_path_factory.mktemp("calibrate")
    rows = _rows()
    jsonl = write_jsonl(folder / "labelled.jsonl", rows)
    table = _write_csv(folder / "labelled.csv", rows)
    runs = {}
    for name, source, extra in (
        ("jsonl", jsonl, []),
        ("csv", table, ["--positive", "true"]),
    ):
        out = folder / f"{name}.calibration.json"
        runs[name] = (cli("calibrate", source, "-o", out, "--format", "json", *extra), out)
    return {"folder": folder, "rows": rows, "runs": runs}


def test_calibrate_writes_the_file_from_jsonl_and_csv_alike(written: dict[str, Any]) -> None:
    files = {}
    for name, (run, out) in written["runs"].items():
        assert run.returncode == 0, run.stderr
        files[name] = json.loads(out.read_text(encoding="utf-8"))
    content = files["jsonl"]
    rows = _distinct(written["rows"])
    assert content["format"] == "answer-eval-judge-calibration"
    assert content["version"] == 2
    assert "bins" not in content
    assert content["judge"] == verdict_signature(JudgeOptions())
    assert content["source"]["rows"] == len(rows) == 803
    assert content["source"]["left_out"]["rows_read"] == len(written["rows"]) == 804
    assert content["source"]["left_out"]["copies"] == 1
    assert content["source"]["positives"] == sum(row["human_acceptable"] for row in rows) == 402
    # One [lower_edge, agreed, question] row per labelled answer, its question a number: 803 answers to
    # the NQ301 dev questions, each question once however many of its answers were labelled.
    assert len(content["answers"]) == 803
    assert {agreed for _edge, agreed, _question in content["answers"]} == {0, 1}
    assert all(edge == round(edge * 200) / 200 for edge, _agreed, _question in content["answers"])
    numbers = {question for _edge, _agreed, question in content["answers"]}
    assert numbers == set(range(len({row["question"] for row in rows})))
    assert len(numbers) < 803  # several answers a question: the threshold test clusters them
    assert content["recalibration"]["kind"] == "platt-verdict"
    cross = content["cross_validation"]
    recalibrated = cross["recalibrated_agreement"] > cross["rules_agreement"] and cross["sign_test_p"] <= 0.05
    assert content["verdict"] == ("recalibrated" if recalibrated else "rules")
    # The same rows in CSV: the judge sees the same answers, so the same counts and the same fit.
    other = files["csv"]
    assert other["answers"] == content["answers"]
    assert other["recalibration"] == content["recalibration"]
    assert other["verdict"] == content["verdict"]


def test_calibrate_json_report_gives_agreement_curve_and_targets(written: dict[str, Any]) -> None:
    run, out = written["runs"]["jsonl"]
    report = json.loads(run.stdout)
    rows = _distinct(written["rows"])
    verdicts = AnswerJudge().judge_batch([r["answers"] for r in rows], [r["prediction"] for r in rows],
                                         [r["question"] for r in rows])  # fmt: skip
    rules = [verdict.correct for verdict in verdicts]
    labels = [row["human_acceptable"] for row in rows]
    assert report["agreement"]["value"] == pytest.approx(agreement(rules, labels), abs=1e-6)
    assert report["agreement"]["kappa"] == pytest.approx(cohen_kappa(rules, labels), abs=1e-6)
    low, high = report["agreement"]["interval_95"]
    assert low < report["agreement"]["value"] < high
    assert [entry["target"] for entry in report["targets"]] == [0.85, 0.9, 0.95]
    calibration = read_user_calibration(out, verdict_signature(JudgeOptions()))
    bounds = threshold_bounds(calibration.calibration, 0.1)
    highest, lowest = bounds.best()
    for entry in report["targets"]:
        chosen = choose_threshold(entry["target"], 0.1, calibration.calibration)
        if chosen.guarantee_met:
            assert entry["threshold"] == chosen.threshold
            assert (entry["reason"], entry["labels_needed"]) == (None, None)
        else:
            # What these labels promise at most, and about how many labels like them the target needs.
            assert entry["threshold"] is None
            assert entry["reason"].startswith(f"none keeps any: the most any threshold promises here is {highest:.3f}")
            assert entry["labels_needed"] == bounds.labels_needed(entry["target"])
            assert entry["labels_needed"] is None or entry["labels_needed"] > 803
    assert report["promise"] == {
        "highest_target": math.floor(highest * 1000) / 1000,
        "threshold": lowest / 200,
        "kept_share": round(bounds.kept[lowest] / 803, 6),
    }
    assert choose_threshold(report["promise"]["highest_target"], 0.1, calibration.calibration).threshold == lowest / 200
    # The curve's lower bound is the corrected one the test reads; above the first start nothing is tested.
    for point in report["curve"]:
        k = round(point["threshold"] * 200)
        if k > bounds.starts[0]:
            assert point["lower_bound"] is None
        else:
            assert point["lower_bound"] == pytest.approx(bounds.lower[k], abs=1e-6)
    assert any(point["lower_bound"] is None for point in report["curve"])
    assert any(point["lower_bound"] is not None for point in report["curve"])
    assert [point["threshold"] for point in report["curve"]][:2] == [1.0, 0.95]
    assert report["curve"][-1]["kept"] == 803
    assert report["output"] == str(out)


def test_calibrate_text_prints_the_figures(tmp_path: Path) -> None:
    run = cli("calibrate", EXAMPLE, "--target", "0.85")
    assert run.returncode == 0, run.stderr
    assert re.search(r"agreement with these labels: 0\.\d{3} \(95% interval 0\.\d{3}-0\.\d{3}\), kappa", run.stdout)
    assert "agreement-coverage curve" in run.stdout
    assert "lower bound" in run.stdout
    assert re.search(r"0\.85: (threshold [\d.]+ keeps|none keeps any)", run.stdout)
    assert "verdicts the file records: " in run.stdout


def test_readme_calibrate_example_runs_and_loads_back(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "answer-judge.md").read_text(encoding="utf-8")
    command = re.search(r"^answer-eval calibrate (\S+) -o calibration\.json$", page, re.MULTILINE)
    assert command is not None, "docs/answer-judge.md shows the calibrate command"
    run = cli("calibrate", ROOT / command.group(1), "-o", tmp_path / "calibration.json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    loaded = read_user_calibration(tmp_path / "calibration.json", verdict_signature(JudgeOptions()))
    assert loaded.calibration.total == len(_rows(ROOT / command.group(1)))


def test_calibration_for_another_signature_is_refused_by_the_reader(written: dict[str, Any]) -> None:
    _run, out = written["runs"]["jsonl"]
    other = verdict_signature(JudgeOptions(not_found_label="unanswerable"))
    with pytest.raises(
        CalibrationFileError, match=r"another judge \(not_found_label: NOT_IN_DOCUMENT, now unanswerable"
    ):
        read_user_calibration(out, other)
    with pytest.raises(CalibrationFileError, match="another judge"):
        read_user_calibration(json.loads(out.read_text(encoding="utf-8")), other)


def test_a_calibration_written_before_the_semantic_stage_was_removed_is_still_this_judges(
    written: dict[str, Any],
) -> None:
    # Before the removal the judge's signature held the stage's option: "...|semantic:no|v:...".
    _run, out = written["runs"]["jsonl"]
    content = json.loads(out.read_text(encoding="utf-8"))
    now = verdict_signature(JudgeOptions())
    assert "semantic" not in now
    before = content["judge"].replace("|v:", "|semantic:no|v:")
    assert before != content["judge"]
    loaded = read_user_calibration({**content, "judge": before}, now)
    assert loaded.to_dict()["answers"] == content["answers"]
    with pytest.raises(CalibrationFileError, match=r"another judge.*semantic"):
        read_user_calibration({**content, "judge": content["judge"].replace("|v:", "|semantic:yes|v:")}, now)


def test_calibration_for_another_signature_is_refused_by_the_command(written: dict[str, Any]) -> None:
    _run, out = written["runs"]["jsonl"]
    run = cli("calibrate", EXAMPLE, "--check", out, "--not-found-label", "unanswerable")
    assert run.returncode == 2
    assert "made for another judge (not_found_label: NOT_IN_DOCUMENT, now unanswerable)" in run.stderr
    assert "Traceback" not in run.stderr


def test_calibration_check_measures_the_file_on_fresh_labels(written: dict[str, Any]) -> None:
    _run, out = written["runs"]["jsonl"]
    run = cli("calibrate", EXAMPLE, "--check", out, "--format", "json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    loaded = read_user_calibration(out, verdict_signature(JudgeOptions()))
    rows = _rows(EXAMPLE)
    verdicts = loaded.apply(AnswerJudge().judge_batch([r["answers"] for r in rows], [r["prediction"] for r in rows],
                                                      [r["question"] for r in rows]))  # fmt: skip
    agreeing = sum(v.correct == r["human_acceptable"] for v, r in zip(verdicts, rows, strict=True))
    assert report["checked"]["verdict_agreement"] == pytest.approx(agreeing / len(rows), abs=1e-6)


def _version_1(content: dict[str, Any]) -> dict[str, Any]:
    """A version 2 file's content as version 1 wrote it: ``bins`` of [lower_edge, agree, disagree], no questions."""
    bins: dict[float, list[int]] = {}
    for edge, agreed, _question in content["answers"]:
        bins.setdefault(edge, [0, 0])[0 if agreed else 1] += 1
    rows = [[edge, agree, disagree] for edge, (agree, disagree) in sorted(bins.items())]
    return {key: value for key, value in content.items() if key != "answers"} | {"version": 1, "bins": rows}


def _damaged(good: dict[str, Any], how: str) -> str:
    text = json.dumps(good)
    edits = {
        "truncated": lambda: text[: len(text) // 2],
        "not json": lambda: "\x00\x01 not a calibration",
        "negative agreed": lambda: json.dumps({**good, "answers": [[0.5, -1, 0], *good["answers"][1:]]}),
        "agreed not 0/1": lambda: json.dumps({**good, "answers": [[0.5, 2, 0], *good["answers"][1:]]}),
        "agreed a bool": lambda: json.dumps({**good, "answers": [[0.5, True, 0], *good["answers"][1:]]}),
        "edge off the grid": lambda: json.dumps({**good, "answers": [[0.5001, 1, 0], *good["answers"][1:]]}),
        "question not an int": lambda: json.dumps({**good, "answers": [[0.5, 1, "q7"], *good["answers"][1:]]}),
        "question a float": lambda: json.dumps({**good, "answers": [[0.5, 1, 7.5], *good["answers"][1:]]}),
        "negative question": lambda: json.dumps({**good, "answers": [[0.5, 1, -7], *good["answers"][1:]]}),
        "row too short": lambda: json.dumps({**good, "answers": [[0.5, 1], *good["answers"][1:]]}),
        "answers not a list": lambda: json.dumps({**good, "answers": {"0.5": 1}}),
        "bins instead of answers": lambda: json.dumps({**good, "answers": None, "bins": [[0.5, 402, 401]]}),
        "slope a string": lambda: json.dumps({**good, "recalibration": {**good["recalibration"], "slope": "1"}}),
        "slope huge": lambda: json.dumps({**good, "recalibration": {**good["recalibration"], "slope": 1e9}}),
        "negative slope": lambda: json.dumps({**good, "recalibration": {**good["recalibration"], "slope": -1.0}}),
        "unknown kind": lambda: json.dumps({**good, "recalibration": {**good["recalibration"], "kind": "pickle"}}),
        "verdict edited": lambda: json.dumps({**good, "verdict": "always right"}),
        "recalibrated without fit": lambda: json.dumps({**good, "verdict": "recalibrated", "recalibration": None}),
        "version": lambda: json.dumps({**good, "version": 99}),
        "infinite edge": lambda: json.dumps({**good, "answers": [[math.inf, 1, 0]]}),
        "one answer more": lambda: json.dumps({**good, "answers": [*good["answers"], [0.5, 1, 0]]}),
        "version 1 count past floats": lambda: json.dumps({**_version_1(good), "bins": [[0.5, 10**15, 1]]}),
        "version 1 negative count": lambda: json.dumps({**_version_1(good), "bins": [[0.5, -3, 1]]}),
        "cross-validation edited": lambda: json.dumps({**good, "cross_validation": {"folds": "five"}}),
    }
    return edits[how]()


REASONS = {
    "truncated": "is not valid JSON",
    "not json": "is not valid JSON",
    "negative agreed": "agreed not 0/1",
    "agreed not 0/1": "agreed not 0/1",
    "agreed a bool": "not [lower_edge, agreed, question]",
    "edge off the grid": "answers has a lower edge off the grid: 0.5001",
    "question not an int": "not [lower_edge, agreed, question]: [0.5, 1, 'q7']",
    "question a float": "not [lower_edge, agreed, question]",
    "negative question": "a question not a number",
    "row too short": "not [lower_edge, agreed, question]",
    "answers not a list": "answers must be a list of [lower_edge, agreed, question]",
    "bins instead of answers": "answers must be a list",
    "slope a string": "slope must be a finite number",
    "slope huge": "outside",
    "negative slope": "slope must be >= 0",
    "unknown kind": "kind 'pickle' is unknown",
    "verdict edited": "verdict must be 'rules' or 'recalibrated'",
    "recalibrated without fit": "needs a recalibration",
    "version": "has version 99",
    "infinite edge": "is not valid JSON",
    "one answer more": "it counts 804 answers but source.rows says 803 were taken",
    "version 1 count past floats": "more than 1,000,000,000 answers",
    "version 1 negative count": "must be a count",
    "cross-validation edited": "cross_validation folds must be an int",
}


@pytest.mark.parametrize("how", list(REASONS))
def test_damaged_truncated_or_hand_edited_calibration_file_exits_2_with_the_reason(
    written: dict[str, Any], tmp_path: Path, how: str
) -> None:
    _run, out = written["runs"]["jsonl"]
    bad = tmp_path / "calibration.json"
    bad.write_text(_damaged(json.loads(out.read_text(encoding="utf-8")), how), encoding="utf-8")
    with pytest.raises(CalibrationFileError, match=re.escape(REASONS[how])):
        read_user_calibration(bad, verdict_signature(JudgeOptions()))
    run = cli("calibrate", EXAMPLE, "--check", bad)
    assert run.returncode == 2
    assert REASONS[how] in run.stderr
    assert "Traceback" not in run.stderr


def test_a_version_1_file_is_still_read_each_answer_its_own_question_with_a_warning(
    written: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _run, out = written["runs"]["jsonl"]
    good = json.loads(out.read_text(encoding="utf-8"))
    old = tmp_path / "version-1.json"
    old.write_text(json.dumps(_version_1(good)), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="answer_eval"):
        loaded = read_user_calibration(old, verdict_signature(JudgeOptions()))
    assert "written by an earlier version without the answers' questions" in caplog.text
    assert "run answer-eval calibrate again" in caplog.text
    now = read_user_calibration(out, verdict_signature(JudgeOptions()))
    # The same counts, without questions: every answer its own (the test as if they were independent).
    assert (loaded.calibration.agree, loaded.calibration.disagree) == (now.calibration.agree, now.calibration.disagree)
    assert loaded.calibration.questions is None
    assert now.calibration.questions is not None
    assert threshold_bounds(loaded.calibration, 0.1).questions == 803
    # Rewritten, it is a version 2 file (each answer numbered as its own question).
    assert loaded.to_dict()["version"] == 2
    assert sorted(question for *_, question in loaded.to_dict()["answers"]) == list(range(803))
    checked = cli("calibrate", EXAMPLE, "--check", old)
    assert checked.returncode == 0, checked.stderr
    assert "without the answers' questions" in checked.stderr


def test_a_file_listing_more_answers_than_any_calibration_is_refused(written: dict[str, Any]) -> None:
    # Ten million rows are past the file's 16 MiB: only content given as a dict can hold them.
    _run, out = written["runs"]["jsonl"]
    good = json.loads(out.read_text(encoding="utf-8"))
    row = [0.5, 1, 0]
    with pytest.raises(CalibrationFileError, match="answers lists more than 10,000,000 answers: hand-edited"):
        read_user_calibration({**good, "answers": [row] * (10**7 + 1)}, verdict_signature(JudgeOptions()))


def test_calibrate_refuses_labels_of_one_class(tmp_path: Path) -> None:
    rows = [{**row, "human_acceptable": True} for row in _rows()[:300]]
    run = cli("calibrate", write_jsonl(tmp_path / "all-right.jsonl", rows), "-o", tmp_path / "c.json")
    assert run.returncode == 2
    assert "every one of the 300 labels says acceptable" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "c.json").exists()


def test_calibrate_refuses_fewer_rows_than_a_threshold_can_be_tested_on(tmp_path: Path) -> None:
    run = cli("calibrate", write_jsonl(tmp_path / "few.jsonl", _rows()[:49]), "-o", tmp_path / "c.json")
    assert run.returncode == 2
    assert "49 labelled answers: calibrating needs at least 50 (about 300 give useful thresholds)" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "c.json").exists()
    for size in (50, 299):
        taken = cli("calibrate", write_jsonl(tmp_path / f"{size}.jsonl", _rows()[:size]), "-o", tmp_path / "c.json",
                    "--format", "json")  # fmt: skip
        assert taken.returncode == 0, taken.stderr
        assert f"{size} labelled answers promise little" in taken.stderr
        assert "about 300 give useful thresholds" in taken.stderr
        report = json.loads(taken.stdout)
        assert report["answers"] == size
        assert set(report["promise"]) == {"highest_target", "threshold", "kept_share"}
        assert len(json.loads((tmp_path / "c.json").read_text())["answers"]) == size
    enough = cli("calibrate", write_jsonl(tmp_path / "300.jsonl", _rows()[:300]), "-o", tmp_path / "c.json")
    assert enough.returncode == 0, enough.stderr
    assert "promise little" not in enough.stderr


def test_calibrate_refuses_a_file_without_labels(tmp_path: Path) -> None:
    rows = [{key: value for key, value in row.items() if key != "human_acceptable"} for row in _rows()[:150]]
    run = cli("calibrate", write_jsonl(tmp_path / "unlabelled.jsonl", rows))
    assert run.returncode == 2
    assert "human_acceptable" in run.stderr
    assert "Traceback" not in run.stderr


def test_calibrate_refuses_to_write_over_its_input(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "labelled.jsonl", _rows()[:200])
    before = source.read_bytes()
    run = cli("calibrate", source, "-o", source)
    assert run.returncode == 2
    assert "is the input file" in run.stderr
    assert source.read_bytes() == before


# -- recalibration ------------------------------------------------------------------------------


def _verdict(correct: bool, acceptance: float, graded: bool = True) -> JudgeVerdict:
    kind = None if correct else "wrong"
    return JudgeVerdict(correct, acceptance if correct else 1 - acceptance, "lexical", "why", kind, "x", acceptance,
                        graded)  # fmt: skip


def test_recalibration_fits_annotators_who_accept_fewer_of_the_rules_accepts() -> None:
    # Answers the rules accept at acceptance 0.9, of which these annotators accept only 60%.
    acceptances = [0.9] * 500 + [0.2] * 500
    rules = [True] * 500 + [False] * 500
    labels = [i % 5 < 3 for i in range(500)] + [i % 10 == 0 for i in range(500)]
    fitted = fit_recalibration(acceptances, rules, labels)
    assert fitted.acceptance(0.9, True) == pytest.approx(0.6, abs=0.03)
    assert fitted.acceptance(0.2, False) == pytest.approx(0.1, abs=0.03)
    assert fitted.answers == 1000
    assert fit_recalibration([], [], []) == Recalibration(0.0, 1.0, 0.0, 0)  # no label: the shipped model


def test_apply_changes_acceptance_and_confidence_as_fitted_but_not_the_verdict_unless_recorded() -> None:
    fitted = Recalibration(intercept=-1.5, slope=1.0, accepted_shift=0.0, answers=10)
    verdicts = [_verdict(True, 0.8), _verdict(False, 0.3), _verdict(False, 0.0, graded=False)]
    counts = Calibration.from_pairs([0.5], [True])
    kept = UserCalibration("sig", counts, recalibration=fitted.to_dict(), verdict="rules").apply(verdicts)
    expected = 1 / (1 + math.exp(1.5 - math.log(0.8 / 0.2)))  # logit 0.8 - 1.5
    assert kept[0].acceptance == pytest.approx(expected)
    assert kept[0].confidence == pytest.approx(expected)
    assert kept[0].correct is True  # 0.43: below 0.5, but the file records the rules' verdict
    assert kept[1].confidence == pytest.approx(1 - fitted.acceptance(0.3, False))
    assert kept[1].correct is False
    assert kept[2] == verdicts[2]  # not graded: certain, untouched
    followed = UserCalibration("sig", counts, recalibration=fitted.to_dict(), verdict="recalibrated").apply(verdicts)
    assert followed[0].correct is False
    assert followed[0].failure_kind == "wrong"
    assert followed[0].confidence == pytest.approx(1 - expected)
    assert "the rules said right" in followed[0].evidence
    assert followed[1].correct is False
    assert followed[2] == verdicts[2]
    assert UserCalibration("sig", counts).apply(verdicts) == verdicts  # no recalibration: unchanged


def test_cross_validation_keeps_the_rules_unless_recalibrated_verdicts_win_clearly() -> None:
    # Annotators who reject every answer the rules accept at 0.6: recalibrated verdicts win.
    verdicts = [_verdict(True, 0.6) for _ in range(200)] + [_verdict(False, 0.2) for _ in range(200)]
    labels = [False] * 200 + [False] * 200
    groups = [f"q{i // 2}" for i in range(400)]
    checked = cross_validate(verdicts, labels, groups)
    assert checked is not None
    assert checked.recalibrated_wins
    assert checked.rules_agreement == 0.5
    # Labels that agree with the rules: nothing to win.
    same = cross_validate(verdicts, [True] * 200 + [False] * 200, groups)
    assert same is not None
    assert not same.recalibrated_wins
    assert cross_validate(verdicts, labels, ["one question"] * 400) is None
    file = fit_user_calibration(verdicts, labels, groups, "sig")
    assert file.verdict == "recalibrated"
    assert file.calibration.total == 400
    assert fit_user_calibration(verdicts, [True] * 200 + [False] * 200, groups, "sig").verdict == "rules"


# -- the default without a calibration ----------------------------------------------------------


def test_default_selection_keeps_verdicts_at_0_9_and_warns_to_calibrate(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        selection = default_selection(0.9)
    assert selection.guarantee_met
    assert math.isfinite(selection.threshold)
    assert selection == choose_threshold(0.9, 0.1, Calibration.load_sources(sets=DEFAULT_SETS))
    assert [source.name for source in selection.sources] == ["nq301-dev", "evouna-tq"]
    assert "answer-eval calibrate" in caplog.text
    assert "NQ301" in caplog.text
    assert not choose_threshold(0.9).guarantee_met  # the three shipped sets: every verdict abstained


def _yes_no(rows: list[dict[str, Any]], every: int = 5) -> list[dict[str, Any]]:
    """The rows labelled "yes"/"no" in field ``human``, every ``every``-th label null, "N/A" or a typo in turn."""
    made = []
    for number, row in enumerate(rows):
        label: Any = "yes" if row["human_acceptable"] else "no"
        if number % every == every - 1:
            label = [None, "N/A", "yse"][(number // every) % 3]
        made.append({**row, "human": label})
    return made


def test_missing_or_unknown_labels_are_left_out_and_counted_never_taken_as_unacceptable(tmp_path: Path) -> None:
    rows = _yes_no(_rows()[:255])
    source = write_jsonl(tmp_path / "labelled.jsonl", rows)
    args = ("calibrate", source, "--label-field", "human", "--positive", "yes")
    # "no", "N/A" and "yse": which mean not acceptable is the user's to say.
    guessed = cli(*args, "-o", tmp_path / "guessed.json")
    assert guessed.returncode == 2
    assert "labels besides --positive are 'no' (100), 'n/a' (17), 'yse' (17): say which mean" in guessed.stderr
    assert not (tmp_path / "guessed.json").exists()
    both = cli(*args, "--negative", "YES")
    assert both.returncode == 2
    assert "'yes' given to both --positive and --negative" in both.stderr
    out = tmp_path / "c.json"
    done = cli(*args, "--negative", "no", "-o", out, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    kept = [row for row in rows if row["human"] in ("yes", "no")]
    assert report["answers"] == len(kept) == 204
    assert report["acceptable"] == sum(row["human"] == "yes" for row in kept)
    nulls = sum(row["human"] is None for row in rows)
    assert report["left_out"] == {
        "rows_read": 255,
        "no_label": nulls,
        "unknown_labels": 51 - nulls,
        "unknown_values": {"n/a": 17, "yse": 17},
        "copies": 0,
        "disagreeing_copies": 0,
    }
    assert "51 of 255 rows left out, 204 counted" in done.stderr  # the warning
    content = json.loads(out.read_text(encoding="utf-8"))
    assert content["source"]["rows"] == 204
    assert content["source"]["left_out"]["rows_read"] == 255
    assert content["source"]["negative_values"] == ["no"]
    assert len(content["answers"]) == 204
    # The same counts as a file holding only the 204 labelled rows: nothing else was counted.
    alone = cli("calibrate", write_jsonl(tmp_path / "kept.jsonl", kept), "--label-field", "human", "--positive",
                "yes", "-o", tmp_path / "alone.json")  # fmt: skip
    assert alone.returncode == 0, alone.stderr
    assert json.loads((tmp_path / "alone.json").read_text())["answers"] == content["answers"]
    text = cli(*args, "--negative", "no")
    said = "51 of 255 rows left out, 204 counted: 17 with no 'human' label (null or blank); 34 with a label neither"
    assert said in text.stdout
    # Without --positive a label is JSON true or false; null is left out, and any other value is refused.
    booleans = [{**row, "human_acceptable": None} if n % 5 == 4 else row for n, row in enumerate(_rows()[:255])]
    plain = cli("calibrate", write_jsonl(tmp_path / "bools.jsonl", booleans), "--format", "json")
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["answers"] == 204
    worded = [{**row, "human_acceptable": "N/A"} if n == 7 else row for n, row in enumerate(_rows()[:255])]
    refused = cli("calibrate", write_jsonl(tmp_path / "worded.jsonl", worded))
    assert refused.returncode == 2
    assert "worded.jsonl:8: label 'N/A' is not true/false" in refused.stderr
    long = [{**row, "human_acceptable": "x" * 100_000} if n == 7 else row for n, row in enumerate(_rows()[:255])]
    shortened = cli("calibrate", write_jsonl(tmp_path / "long.jsonl", long))
    assert shortened.returncode == 2
    assert "long.jsonl:8: label 'xxxx" in shortened.stderr
    assert len(shortened.stderr) < 1000  # a label of 100,000 characters is not echoed whole


def test_copies_of_a_question_and_answer_are_counted_once(tmp_path: Path) -> None:
    rows = _rows()
    right = next(row for row in rows if row["human_acceptable"])
    wrong = next(row for row in rows if not row["human_acceptable"])
    two = [right, wrong] * 150  # 300 rows, 2 answers: "0.98: threshold 0 keeps 1.000" before
    copied = cli("calibrate", write_jsonl(tmp_path / "two.jsonl", two), "-o", tmp_path / "two.json")
    assert copied.returncode == 2
    assert "298 of 300 rows left out, 2 counted: 298 copies of a (question, answer) already counted" in copied.stderr
    assert "2 labelled answers (of 300 rows)" in copied.stderr
    assert not (tmp_path / "two.json").exists()
    # 300 distinct answers, each given twice (once labelled the other way): counted once, the first row's label.
    distinct = rows[:300]
    flipped = [{**row, "human_acceptable": not row["human_acceptable"]} for row in distinct[:10]]
    doubled = write_jsonl(tmp_path / "doubled.jsonl", [*distinct, *flipped, *distinct[10:]])
    once = write_jsonl(tmp_path / "once.jsonl", distinct)
    runs = {name: cli("calibrate", path, "-o", tmp_path / f"{name}.json", "--format", "json")
            for name, path in (("doubled", doubled), ("once", once))}  # fmt: skip
    for run in runs.values():
        assert run.returncode == 0, run.stderr
    report = json.loads(runs["doubled"].stdout)
    assert report["answers"] == 300
    assert report["left_out"]["copies"] == 300
    assert report["left_out"]["disagreeing_copies"] == 10
    assert "(10 of them labelled otherwise than the first)" in runs["doubled"].stderr
    files = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in runs}
    assert files["doubled"]["answers"] == files["once"]["answers"]


def test_bins_that_do_not_add_up_to_the_recorded_rows_are_refused_naming_the_file(
    written: dict[str, Any], tmp_path: Path
) -> None:
    _run, out = written["runs"]["jsonl"]
    good = json.loads(out.read_text(encoding="utf-8"))
    edited = tmp_path / "edited.json"
    # 10^5 agreeing answers at confidence 0, over a source of 803 rows: threshold 0, every verdict kept, unchecked.
    more = [[0.0, 1, 1_000 + n] for n in range(10**5)]
    edited.write_text(json.dumps({**good, "answers": [*more, *good["answers"]]}), encoding="utf-8")
    reason = f"the calibration file {edited}: it counts 100,803 answers but source.rows says 803 were taken"
    with pytest.raises(CalibrationFileError, match=re.escape(reason)):
        read_user_calibration(edited, verdict_signature(JudgeOptions()))
    unrecorded = tmp_path / "unrecorded.json"
    unrecorded.write_text(json.dumps({**good, "source": {"file": "x.jsonl"}}), encoding="utf-8")
    source = write_jsonl(tmp_path / "answers.jsonl", _rows()[:4])
    for path, said in ((edited, reason), (unrecorded, "source.rows must be the count of labelled answers taken")):
        judged = cli("judge", source, "--calibration", path, "--target-agreement", "0.9")
        checked = cli("calibrate", EXAMPLE, "--check", path)
        for done in (judged, checked):
            assert done.returncode == 2
            assert said in done.stderr
            assert str(path) in done.stderr
            assert "Traceback" not in done.stderr


def test_a_huge_integer_in_a_calibration_file_names_the_file_and_the_field(
    written: dict[str, Any], tmp_path: Path
) -> None:
    _run, out = written["runs"]["jsonl"]
    text = out.read_text(encoding="utf-8")
    good = json.loads(text)
    edited = tmp_path / "huge.json"
    # Python refuses a 5,000-digit int (past 4,300 digits) with a message that names no file.
    edited.write_text(text.replace(f'"rows": {good["source"]["rows"]}', '"rows": ' + "9" * 5000), encoding="utf-8")
    said = f"the calibration file {edited}: source.rows holds a whole number of 5,000 digits"
    with pytest.raises(CalibrationFileError, match=re.escape(said)):
        read_user_calibration(edited, verdict_signature(JudgeOptions()))
    in_bins = tmp_path / "bins.json"
    in_bins.write_text(json.dumps({**good, "answers": [[0.5, 1, 2], [0.6, 1, int("7" * 4000)]]}), encoding="utf-8")
    done = cli("judge", write_jsonl(tmp_path / "a.jsonl", _rows()[:4]), "--calibration", in_bins,
               "--target-agreement", "0.9")  # fmt: skip
    assert done.returncode == 2
    assert f"the calibration file {in_bins}: answers[1][2] holds a whole number of 4,000 digits" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_judges_model_and_calibration_data_files_are_named_when_they_cannot_be_read(tmp_path: Path) -> None:
    from answer_eval.evaluators.judge.acceptance_model import JudgeModel

    huge = tmp_path / "huge.json"
    huge.write_text('{"format": ' + "9" * 5000 + "}", encoding="utf-8")
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ', encoding="utf-8")
    for load, what in ((JudgeModel.load, "judge model file"), (Calibration.load, "calibration data file")):
        for path, said in (
            (huge, "is not valid JSON: a number has more than 4300 digits"),
            (broken, "is not valid JSON: Expecting value"),
            (tmp_path, "is not a regular file"),  # a folder; a FIFO takes the same check (see the rubric's tests)
        ):
            with pytest.raises(ValueError, match=re.escape(f"the {what} {path} {said}")):
                load(path)
