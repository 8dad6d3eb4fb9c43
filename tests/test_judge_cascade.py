"""The cascade judge -> LLM -> person (issue 39, point 3): calibrated, run, refused, through real parts.

``answer-eval calibrate --escalate-model`` grades, on the loopback OpenAI-compatible server through
Haystack's real ``OpenAIChatGenerator``, the labelled answers the judge would not keep, and writes the
LLM level; ``answer-eval judge`` and the component then keep the judge's verdicts above ``t_J``, the
LLM's above ``t_L`` and leave the rest for a person, each threshold the one the file gives.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from answer_eval.errors import CalibrationFileError
from answer_eval.evaluators.judge.calibration import Calibration
from answer_eval.evaluators.judge.escalation import LLMLevel, cascade_thresholds, grader_signature, judge_bin_of
from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore, JudgeOptions
from answer_eval.evaluators.judge.user_calibration import UserCalibration, verdict_signature
from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator
from tests.cli_runs import cli, write_jsonl
from tests.openai_server import OpenAIServer, escalation_candidate, last_user_text
from tests.openai_server import grader_generator as generator
from tests.test_judge_trust_cli import KEY_ENV, SECRET, columns, env_with_key, rows


def labelled(count: int) -> list[dict[str, Any]]:
    """Answers a person judged: they agree with the judge's confident verdicts, and say "acceptable" below 0.8
    exactly when the prediction is one of the right kinds (so an LLM that knows the kinds agrees with them)."""
    data = rows(count)
    scored = AnswerJudgeCore().score(columns(data))
    for row, correct, confidence in zip(data, scored["correct"], scored["confidence"], strict=True):
        row["human_acceptable"] = bool(correct) if confidence >= 0.8 else right_kind(row["prediction"])
    return data


def right_kind(prediction: str) -> bool:
    """The answers of ``rows`` a person accepts: Nixon, Dolly Mapp, the date, Paris, Shakespeare."""
    return prediction.split(" #")[0] in ("Nixon", "Dolly Mapp", "14 December 1972", "Paris", "Shakespeare wrote it")


def knows_the_kinds(request: dict[str, Any]) -> str:
    """An LLM that agrees with the person on every answer."""
    candidate = escalation_candidate(last_user_text(request)) or ""
    return "Yes, the candidate is correct." if right_kind(candidate) else "No, it is wrong."


def always_yes(_request: dict[str, Any]) -> str:
    """An LLM that accepts everything: it disagrees with the person on every wrong answer."""
    return "Yes, the candidate is correct."


def calibrate(tmp_path: Path, server: OpenAIServer, *more: str, count: int = 240) -> tuple[Any, Path]:
    source = write_jsonl(tmp_path / "labelled.jsonl", labelled(count))
    output = tmp_path / "calibration.json"
    args = ("calibrate", source, "--escalate-model", "grader", "--api-base-url", server.url, "--api-key-env", KEY_ENV)
    done = cli(*args, "--target", "0.9", "-o", output, *more, env=env_with_key())
    return done, output


def test_calibrate_escalate_model_grades_only_what_the_judge_would_not_keep_and_writes_the_llm_level(tmp_path):
    with OpenAIServer(knows_the_kinds) as server:
        done, output = calibrate(tmp_path, server)
        sent, url = server.requests, server.url
    assert done.returncode == 0, done.stderr
    text = output.read_text()
    assert SECRET not in text
    assert SECRET not in done.stdout + done.stderr
    content = json.loads(text)
    read = UserCalibration.from_dict(content)
    level = read.escalation
    assert level is not None
    assert level.grader == grader_signature(["grader"], [url], "auto")
    below = [k for k, _, _ in read.calibration.answers() if k < level.judge_below]
    assert level.asked == len(below) == sent > 0  # exactly the answers under t_J at the highest target, each once
    assert level.not_graded == 0
    assert all(agreed for _, agreed, _, _ in level.answers)
    assert all(k == 200 for k, _, _, _ in level.answers)  # one LLM's one reply: confidence 1.0
    cascade = cascade_thresholds(read.calibration, level, 0.9, 0.1)
    assert judge_bin_of(cascade.judge_threshold) == level.judge_below
    # Every LLM verdict agreed: the level keeps them all (every confidence is 1.0: the lowest grid threshold passes).
    assert cascade.llm.guarantee_met
    assert cascade.llm.kept == cascade.llm.total == level.asked
    assert "the cascade judge -> LLM -> person" in done.stdout
    assert "person" in done.stdout


def judge_rows(tmp_path: Path, calibration: Path, server: OpenAIServer, model: str = "grader") -> Any:
    source = write_jsonl(tmp_path / "answers.jsonl", rows(40))
    output = tmp_path / "judged.jsonl"
    args = ("judge", source, "--calibration", calibration, "--target-agreement", "0.9", "-o", output)
    llm = ("--escalate-model", model, "--api-base-url", server.url, "--api-key-env", KEY_ENV)
    done = cli(*args, *llm, "--format", "json", env=env_with_key())
    out = [json.loads(line) for line in output.read_text().splitlines()] if output.exists() else []
    return done, out


@pytest.mark.parametrize("grader", [knows_the_kinds, always_yes], ids=["llm-kept", "llm-abstained"])
def test_judge_with_an_llm_level_keeps_the_judge_then_the_llm_and_leaves_the_rest_for_a_person(tmp_path, grader):
    with OpenAIServer(grader) as server:
        done, calibration = calibrate(tmp_path, server)
        assert done.returncode == 0, done.stderr
        read = UserCalibration.from_dict(json.loads(calibration.read_text()))
        assert read.escalation is not None
        cascade = cascade_thresholds(read.calibration, read.escalation, 0.9, 0.1)
        done, out = judge_rows(tmp_path, calibration, server)
    assert done.returncode == 0, done.stderr
    # The LLM that accepts everything disagrees with people too often: its level keeps nothing.
    assert math.isfinite(cascade.llm_threshold) is (grader is knows_the_kinds)
    alone = AnswerJudgeCore().score(columns(rows(40)))
    for row, judge_correct in zip(out, alone["correct"], strict=True):
        escalated = row["confidence"] < cascade.judge_threshold
        assert row["escalated"] is escalated
        if not escalated:
            assert row["abstained"] is False
            assert row["llm_verdict"] is None
            continue
        assert row["llm_verdict"] is not None
        assert row["llm_confidence"] == 1.0
        kept = row["llm_confidence"] >= cascade.llm_threshold
        assert row["abstained"] is (not kept)
        # A kept LLM verdict decides; an abstained one is the person's: the judge's verdict stays, the LLM's beside it.
        assert row["correct"] is (row["llm_verdict"] if kept else judge_correct)
        assert row["stage"] == "llm" if kept else row["stage"] != "llm"
    summary = json.loads(done.stdout)
    decided = summary["cascade"]
    assert decided["judge"] + decided["llm"] + decided["person"] == len(out) == 40
    assert decided["llm"] == sum(row["escalated"] and not row["abstained"] for row in out)
    assert decided["person"] == sum(row["abstained"] for row in out)
    assert decided["calls"] == sum(row["escalated"] for row in out) > 0
    assert decided["promised_agreement"] == 0.9
    assert decided["delta"] == 0.1
    assert summary["selection"]["level_delta"] == 0.05


def test_a_grader_other_than_the_level_s_is_refused_naming_what_differs(tmp_path):
    with OpenAIServer(knows_the_kinds) as server:
        done, calibration = calibrate(tmp_path, server)
        assert done.returncode == 0, done.stderr
        refused, _ = judge_rows(tmp_path, calibration, server, model="another-model")
        other = generator(server)
        other.model = "another-model"
        with pytest.raises(
            ValueError, match=r"graded by another grader \(models: \['grader'\], now \['another-model'\]"
        ):
            AnswerJudgeEvaluator(escalate_to=other, calibration=str(calibration), target_agreement=0.9)
        assert server.requests == read_asked(calibration)  # the refusals sent nothing
    assert refused.returncode == 2
    assert "graded by another grader (models: ['grader'], now ['another-model'])" in refused.stderr
    assert SECRET not in refused.stderr


def read_asked(calibration: Path) -> int:
    return int(json.loads(calibration.read_text())["escalation"]["asked"])


def test_calibrate_dry_run_sends_nothing_writes_nothing_and_says_how_many_would_be_sent(tmp_path):
    with OpenAIServer(knows_the_kinds) as server:
        done, output = calibrate(tmp_path, server, "--dry-run", "--price-per-million-tokens", "1", "2")
        assert server.requests == 0
    assert done.returncode == 0, done.stderr
    assert not output.exists()
    first = done.stdout.splitlines()[0]
    assert "labelled answers would be sent" in first
    assert "of 240" in first
    would = int(first.split(": ")[1].split(" of ")[0])
    assert would > 0
    assert f"requests           {would} " in done.stdout
    assert "cost" in done.stdout


def test_a_budget_stop_keeps_what_was_graded_and_says_the_level_counts_only_those(tmp_path):
    with OpenAIServer(knows_the_kinds) as server:
        done, output = calibrate(tmp_path, server, "--max-calls", "5")
        assert server.requests == 5
    assert done.returncode == 0, done.stderr
    level = json.loads(output.read_text())["escalation"]
    assert len(level["answers"]) == 5
    assert level["not_graded"] == level["asked"] - 5
    assert "the LLM level counts the graded answers only" in done.stdout
    assert "budget_stop" in done.stdout


def jury_calibration() -> tuple[dict[str, Any], list[Any]]:
    """A judge level that keeps nothing (every answer escalated) and an LLM level where a unanimous jury agrees
    with people and a 2-of-3 one half the time: t_L is 1.0, between the two."""
    judge = [(20 + n % 50, n % 2 == 0, n) for n in range(300)]
    calibration = Calibration.from_answers(judge, "user")
    answers = [(200, True, n, 20 + n % 50) for n in range(200)] + [
        (133, n % 2 == 0, n, 20 + n % 50) for n in range(200, 300)
    ]
    return calibration, answers


def test_a_jury_s_majority_share_is_its_confidence_and_a_split_jury_is_left_for_a_person():
    calibration, answers = jury_calibration()
    t_l = cascade_thresholds(calibration, LLMLevel({}, tuple(answers), 300, 0, 201), 0.9, 0.1).llm_threshold
    assert 2 / 3 < t_l <= 1.0
    candidates = ["Nixon", "Dolly Mapp", "14 December 1972"]
    scripts = [always_yes, always_yes, lambda request: "Yes." if "Nixon" in last_user_text(request) else "No."]
    with OpenAIServer(scripts[0]) as one, OpenAIServer(scripts[1]) as two, OpenAIServer(scripts[2]) as three:
        panel = [generator(server) for server in (one, two, three)]
        grader = grader_signature(["grader"] * 3, [server.url for server in (one, two, three)], "auto")
        level = LLMLevel(grader, tuple(answers), 300, 0, 201)
        made = UserCalibration(verdict_signature(JudgeOptions()), calibration, {"rows": 300}, escalation=level)
        judge = AnswerJudgeEvaluator(escalate_to=panel, calibration=made.to_dict(), target_agreement=0.9)
        result = judge.run(
            ground_truth_answers=[["Richard Nixon"], ["Dollree Mapp"], ["December 14, 1972"]],
            predicted_answers=candidates,
            questions=["q1", "q2", "q3"],
        )
    assert result["escalated"] == [True, True, True]
    assert result["llm_confidences"] == [1.0, 0.6667, 0.6667]
    assert result["abstained"] == [False, True, True]
    assert result["llm_verdicts"] == [True, True, True]
    assert result["stages"][0] == "llm"
    assert result["abstained_share"] == pytest.approx(2 / 3)


def hostile(change) -> dict[str, Any]:
    calibration, answers = jury_calibration()
    level = LLMLevel(grader_signature(["m"], [None], "auto"), tuple(answers), 300, 0, 201)
    content = UserCalibration("judge|v:1", calibration, {"rows": 300}, escalation=level).to_dict()
    change(content["escalation"])
    return content


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e.update(grader="x" * 10), "escalation grader must be a short object"),
        (lambda e: e["grader"].update(models=["m" * 5000]), "escalation grader must be a short object"),
        (lambda e: e.update(asked=299), "escalation asked is 299, but 300 labelled answers lie below"),
        (lambda e: e.update(not_graded=1), "escalation lists 300 graded and 1 not graded answers"),
        (lambda e: e.update(asked=10**12), r"escalation asked must be an int in \[0, 300\]"),
        (lambda e: e.update(not_graded=-1), r"escalation not_graded must be an int"),
        (lambda e: e.update(judge_below=30), "a judge_bin not below judge_below 30"),
        (lambda e: e.update(answers={"a": 1}), "escalation answers must be a list"),
        (lambda e: e["answers"].__setitem__(0, [0.5, True, 1, 2]), "escalation answers must be a list of"),
        (lambda e: e["answers"].__setitem__(0, [0.5001, 1, 1, 2]), "has a lower edge off the grid: 0.5001"),
        (lambda e: e["answers"].__setitem__(0, [0.5, 1, 1, 201]), "judge_bin not below judge_below 201"),
        (lambda e: e["answers"].__setitem__(0, [0.5, 1, 1, 5]), "which are not the 300 asked"),
        (lambda e: e.clear() or e.update(x=1), "escalation grader must be a short object"),
        (lambda e: e.update(highest_target=1.5), r"escalation highest_target must be a number in \(0, 1\) or absent"),
        (lambda e: e.update(delta="0.1"), r"escalation delta must be a number in \(0, 1\) or absent"),
        (lambda e: e.update(delta=True), r"escalation delta must be a number"),
    ],
)
def test_a_hostile_escalation_object_is_refused_naming_why(change, message):
    with pytest.raises(CalibrationFileError, match=message):
        UserCalibration.from_dict(hostile(change))


def test_a_hostile_escalation_object_exits_2_from_the_judge(tmp_path):
    content = hostile(lambda e: e.update(asked=-3))
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(content))
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    done = cli("judge", source, "--calibration", path, "--target-agreement", "0.9")
    assert done.returncode == 2
    assert "escalation asked must be an int" in done.stderr


def test_calibrate_s_escalation_flags_without_escalate_model_are_refused_naming_the_flag(tmp_path):
    source = write_jsonl(tmp_path / "labelled.jsonl", labelled(120))
    done = cli("calibrate", source, "--max-calls", "5", "--cache", tmp_path / "replies.jsonl")
    assert done.returncode == 2
    assert "--max-calls, --cache is the cascade's LLM level: give --escalate-model too" in done.stderr
    dry = cli("calibrate", source, "--dry-run")
    assert dry.returncode == 2
    assert "--dry-run is the cascade's LLM level" in dry.stderr


def graded_questions(output: Path) -> tuple[list[int], list[int]]:
    """The questions the LLM level graded, and every question below its judge_bin (sent or not), in order."""
    read = UserCalibration.from_dict(json.loads(output.read_text()))
    assert read.escalation is not None
    below = sorted(q for k, _, q in read.calibration.answers() if k < read.escalation.judge_below)
    return sorted(q for _, _, q, _ in read.escalation.answers), below


def test_a_budget_stop_grades_a_seeded_random_subset_not_the_first_rows_of_the_file(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    with OpenAIServer(knows_the_kinds) as server:
        first, output = calibrate(tmp_path / "one", server, "--max-calls", "8")
        again, repeated = calibrate(tmp_path / "two", server, "--max-calls", "8")
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    graded, below = graded_questions(output)
    assert len(graded) == 8
    assert len(below) > 40
    assert graded != below[:8]  # not the labels' first rows: those would bias the level to the file's order
    middle = below[len(below) // 2]
    assert min(graded) < middle < max(graded)  # spread over the file
    assert graded_questions(repeated)[0] == graded  # a fixed seed: the same subset every run
    rows_written = json.loads(output.read_text())["escalation"]["answers"]
    assert [row[2] for row in rows_written] == graded  # written in the labels' order, whatever the order sent


def test_calibrate_without_target_grades_for_the_highest_default_target(tmp_path):
    from answer_eval.cli.calibrate import TARGETS
    from answer_eval.evaluators.judge.guarantee import choose_threshold

    source = write_jsonl(tmp_path / "labelled.jsonl", labelled(240))
    output = tmp_path / "calibration.json"
    with OpenAIServer(knows_the_kinds) as server:
        llm = ("--escalate-model", "grader", "--api-base-url", server.url, "--api-key-env", KEY_ENV)
        done = cli("calibrate", source, *llm, "-o", output, "--format", "json", env=env_with_key())
    assert done.returncode == 0, done.stderr
    content = json.loads(output.read_text())
    read = UserCalibration.from_dict(content)
    assert read.escalation is not None
    chosen = choose_threshold(max(TARGETS), 0.05, read.calibration)
    assert read.escalation.judge_below == judge_bin_of(chosen.threshold) < 201
    assert content["escalation"]["highest_target"] == json.loads(done.stdout)["cascade"]["highest_target"] == 0.95
    assert content["escalation"]["delta"] == 0.1


def test_the_level_s_rows_are_written_one_a_line(tmp_path):
    with OpenAIServer(knows_the_kinds) as server:
        done, output = calibrate(tmp_path, server)
    assert done.returncode == 0, done.stderr
    lines = output.read_text().splitlines()
    level = json.loads(output.read_text())["escalation"]["answers"]
    assert len(level) > 10
    for row in level:
        assert f"   {json.dumps(row)}," in lines or f"   {json.dumps(row)}" in lines


def test_a_calibration_file_past_the_reader_s_limit_is_refused_before_writing(tmp_path):
    from answer_eval.cli.calibrate import calibration_bytes
    from answer_eval.errors import InputError

    judge = Calibration.from_answers([(n % 201, n % 3 > 0, n) for n in range(10**6)], "user")
    content = UserCalibration("judge|v:1", judge, {"rows": 10**6}).to_dict()
    output = tmp_path / "calibration.json"
    with pytest.raises(InputError, match=r"would be \d\d\.\d MiB, past the 16 MiB"):
        calibration_bytes(content, output)
    assert not output.exists()
    small = UserCalibration("judge|v:1", Calibration.from_answers(judge.answers()[:1000], "user"), {}).to_dict()
    assert json.loads(calibration_bytes(small, output)) == small


def test_a_smaller_delta_than_calibrate_s_is_refused_naming_both_deltas(tmp_path):
    with OpenAIServer(knows_the_kinds) as server:
        done, calibration = calibrate(tmp_path, server)
        assert done.returncode == 0, done.stderr
        source = write_jsonl(tmp_path / "answers.jsonl", rows(10))
        args = ("judge", source, "--calibration", calibration, "--target-agreement", "0.9", "--delta", "0.001")
        llm = ("--escalate-model", "grader", "--api-base-url", server.url, "--api-key-env", KEY_ENV)
        refused = cli(*args, *llm, env=env_with_key())
    assert refused.returncode == 2
    assert "target_agreement 0.9 at delta 0.001 escalates answers" in refused.stderr
    assert "for target 0.9 at delta 0.1" in refused.stderr
    assert "--target 0.9 --delta 0.001" in refused.stderr


def test_a_changed_temperature_is_refused_like_a_changed_model_and_a_header_is_shown_by_name_only(tmp_path):
    with OpenAIServer(knows_the_kinds) as server:
        done, calibration = calibrate(tmp_path, server)
        assert done.returncode == 0, done.stderr
        same = generator(server)
        AnswerJudgeEvaluator(escalate_to=same, calibration=str(calibration), target_agreement=0.9)
        warmer = generator(server)
        warmer.generation_kwargs = {"temperature": 0.7, "extra_headers": {"Authorization": SECRET}}
        with pytest.raises(ValueError, match=r"graded by another grader \(generation: \[\{\}\], now") as refused:
            AnswerJudgeEvaluator(escalate_to=warmer, calibration=str(calibration), target_agreement=0.9)
    assert "'temperature': '0.7'" in str(refused.value)
    assert "'extra_headers': '***'" in str(refused.value)
    assert SECRET not in str(refused.value)


def test_a_cascade_whose_judge_keeps_none_says_so_and_not_that_no_verdict_is_kept(tmp_path):
    calibration, _ = jury_calibration()
    answers = tuple((200, True, n, 20 + n % 50) for n in range(300))  # the LLM agrees every time: its level keeps
    with OpenAIServer(knows_the_kinds) as server:
        level = LLMLevel(grader_signature(["grader"], [server.url], "auto"), answers, 300, 0, 201)
        made = UserCalibration(verdict_signature(JudgeOptions()), calibration, {"rows": 300}, escalation=level)
        path = tmp_path / "calibration.json"
        path.write_text(json.dumps(made.to_dict()))
        source = write_jsonl(tmp_path / "answers.jsonl", rows(6))
        args = ("judge", source, "--calibration", path, "--target-agreement", "0.9", "-o", tmp_path / "out.jsonl")
        llm = ("--escalate-model", "grader", "--api-base-url", server.url, "--api-key-env", KEY_ENV)
        done = cli(*args, *llm, env=env_with_key())
    assert done.returncode == 0, done.stderr
    assert "none passes: the judge keeps none" in done.stdout
    assert "no verdict is kept" not in done.stdout
    assert "by the LLM       6 of 6" in done.stdout
