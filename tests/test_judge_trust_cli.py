"""``answer-eval judge`` with a calibration, a target agreement and escalation: the CLI in process.

The calibration files are made with the public interface (``UserCalibration(...).to_dict()``) from
the judge's own confidences on the answers judged, so the threshold is the one a user's calibration
gives; the escalation talks to a loopback OpenAI-compatible server through Haystack's real
``OpenAIChatGenerator``, which counts the requests.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from answer_eval.evaluators.judge.calibration import Calibration
from answer_eval.evaluators.judge.guarantee import choose_threshold
from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore, JudgeOptions
from answer_eval.evaluators.judge.user_calibration import UserCalibration, verdict_signature
from tests.cli_runs import cli, interrupted, record_path, write_jsonl
from tests.openai_server import OpenAIServer, Reply, escalation_candidate, last_user_text
from tests.test_rubric_cli_failures import EXIT_NOTHING_GRADED, dead_url

SECRET = "sk-judge-cli-secret-never-written-7331"
KEY_ENV = "ANSWER_EVAL_JUDGE_CLI_KEY"

# Right, wrong and hard answers, cycled: a range of confidences so that a threshold keeps some and not others.
_ANSWERS = [
    ("who resigned in 1974", ["Richard Nixon"], "Nixon"),
    ("who was mapp", ["Dollree Mapp"], "Dolly Mapp"),
    ("when did apollo 17 leave the moon", ["December 14, 1972"], "14 December 1972"),
    ("capital of france", ["Paris"], "Paris"),
    ("capital of italy", ["Rome"], "Milan"),
    ("largest planet", ["Jupiter"], "It is probably Saturn"),
    ("who wrote hamlet", ["William Shakespeare"], "Shakespeare wrote it"),
    ("how many legs does a spider have", ["8", "eight"], "six"),
]


def rows(count: int) -> list[dict[str, Any]]:
    """``count`` answers to judge, each with a distinct prediction (so each escalation prompt is its own)."""
    made = []
    for number in range(count):
        question, golds, prediction = _ANSWERS[number % len(_ANSWERS)]
        made.append({"question": f"{question} ({number})", "answers": golds, "prediction": f"{prediction} #{number}"})
    return made


def columns(data: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The rows as the judge's input columns, by role."""
    return {
        role: [row[field] for row in data]
        for role, field in (("answers", "answers"), ("prediction", "prediction"), ("question", "question"))
    }


def env_with_key() -> dict[str, str]:
    return {**os.environ, KEY_ENV: SECRET}


def calibration_file(path: Path, options: JudgeOptions | None = None, seed_rows: int = 400) -> Path:
    """A user's calibration: the judge's confidences on labelled answers, people agreeing above 0.8 and split below."""
    judge = AnswerJudgeCore(options)
    data = rows(seed_rows)
    scored = judge.score(columns(data))
    # People agree with every confident verdict, and with one unsure verdict in two.
    agrees = [c >= 0.8 or n % 2 == 0 for n, c in enumerate(scored["confidence"])]
    counted = Calibration.from_pairs(scored["confidence"], agrees, "user")
    made = UserCalibration(verdict_signature(judge.options), counted, {"rows": len(data), "label_field": "x"})
    path.write_text(json.dumps(made.to_dict()), encoding="utf-8")
    return path


def judged(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_judge_with_a_calibration_and_a_target_abstains_below_the_threshold_it_reports(tmp_path):
    calibration = calibration_file(tmp_path / "calibration.json")
    content = json.loads(calibration.read_text())
    expected = choose_threshold(0.9, 0.1, UserCalibration.from_dict(content).calibration)
    assert expected.guarantee_met
    assert 0 < expected.threshold < 1
    source = write_jsonl(tmp_path / "answers.jsonl", rows(40))
    output = tmp_path / "judged.jsonl"
    args = ("judge", source, "--calibration", calibration, "--target-agreement", "0.9", "-o", output)
    done = cli(*args, "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    out = judged(output)
    abstained = [row["confidence"] < expected.threshold for row in out]
    assert [row["abstained"] for row in out] == abstained
    assert 0 < sum(abstained) < len(out)
    assert summary["selection"]["threshold"] == expected.threshold
    assert summary["selection"]["source"] == "yours"
    assert summary["selection"]["calibration_kept_share"] == pytest.approx(expected.kept_share)
    assert summary["promised_agreement"] == 0.9
    assert summary["abstained"] == sum(abstained)
    assert summary["kept"] == len(out) - sum(abstained)
    assert "target_agreement:0.9" in summary["signature"]
    assert "calibration:sha256-" in summary["signature"]
    text = cli(*args[:-2])
    assert text.returncode == 0, text.stderr
    assert f"threshold        {expected.threshold:.4f} (chosen on your calibration)" in text.stdout
    assert "promised         agreement >= 0.9 with probability >= 0.9" in text.stdout
    assert f"abstained        {sum(abstained)}" in text.stdout


def test_a_calibration_made_for_another_judge_is_refused_naming_what_differs(tmp_path):
    other = JudgeOptions(not_found_label="UNANSWERABLE")
    calibration = calibration_file(tmp_path / "calibration.json", other, seed_rows=40)
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    done = cli("judge", source, "--calibration", calibration, "--target-agreement", "0.9")
    assert done.returncode == 2
    assert "calibration was made for another judge" in done.stderr
    assert "not_found_label: UNANSWERABLE, now NOT_IN_DOCUMENT" in done.stderr
    assert "Traceback" not in done.stderr
    same = cli("judge", source, "--calibration", calibration, "--not-found-label", "UNANSWERABLE")
    assert same.returncode == 0, same.stderr  # the judge it was made for takes it


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda text: text[: len(text) // 2], "is not valid JSON"),
        (lambda text: "\x00\xff" + text, "is not valid JSON"),
        (lambda text: text.replace('"version": 2', '"version": 7'), "has version 7"),
        (lambda text: text.replace('"answers": [[', '"answers": [["x", '), "not [lower_edge, agreed, question]"),
        (lambda text: text.replace('"answers": [[', '"answers": [[0.5, 3, 1], ['), "agreed not 0/1"),
        (lambda text: text.replace('"verdict": "rules"', '"verdict": "mine"'), "verdict must be 'rules'"),
        (lambda text: "[" * 100_000, "is not valid JSON"),
    ],
    ids=["truncated", "binary", "version", "answers", "agreed", "verdict", "deep"],
)
def test_a_damaged_or_hand_edited_calibration_file_exits_2_with_the_reason(tmp_path, damage, reason):
    calibration = calibration_file(tmp_path / "calibration.json", seed_rows=40)
    calibration.write_text(damage(calibration.read_text()), encoding="utf-8", errors="surrogateescape")
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    done = cli("judge", source, "--calibration", calibration, "--target-agreement", "0.9", "-o", tmp_path / "o.jsonl")
    assert done.returncode == 2, done.stdout
    assert reason in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_a_missing_calibration_file_and_options_that_do_not_go_together_exit_2(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    missing = cli("judge", source, "--calibration", tmp_path / "none.json", "--target-agreement", "0.9")
    assert missing.returncode == 2
    assert "cannot read the calibration file" in missing.stderr
    both = cli("judge", source, "--escalate-below", "0.8", "--target-agreement", "0.9")
    assert both.returncode == 2
    assert "not both" in both.stderr
    server = cli("judge", source, "--api-base-url", "http://127.0.0.1:9/v1")
    assert server.returncode == 2
    assert "--api-base-url names the server of --escalate-model" in server.stderr
    cache = cli("judge", source, "--cache", tmp_path / "replies.jsonl")
    assert cache.returncode == 2
    assert "--cache is the escalation's: it needs --escalate-model" in cache.stderr
    jobs = cli("judge", source, "--escalate-model", "m", "--jobs", "2")
    assert jobs.returncode == 2
    assert "runs in one process" in jobs.stderr


def says_yes_to_odd_rows(request: dict[str, Any]) -> Reply | str:
    """Yes for the candidates of odd rows, no for the others: a deterministic stand-in for an LLM grader."""
    candidate = escalation_candidate(last_user_text(request)) or ""
    number = int(candidate.rsplit("#", 1)[1])
    return Reply(texts=["Yes, it is correct." if number % 2 else "No, it is not."], delay=0.02)


def escalate_args(source: Path, server: OpenAIServer, *more: Any) -> tuple[Any, ...]:
    return (
        "judge",
        source,
        "--escalate-model",
        "grader",
        "--api-base-url",
        server.url,
        "--api-key-env",
        KEY_ENV,
        "--escalate-below",
        "0.9",
        "--no-progress",
        *more,
    )


def asked(server: OpenAIServer) -> Counter[str]:
    return Counter(escalation_candidate(last_user_text(body)) or "" for body in server.bodies)


def test_escalation_sends_the_unsure_verdicts_and_the_llm_decides_them_key_never_written(tmp_path):
    data = rows(24)
    source = write_jsonl(tmp_path / "answers.jsonl", data)
    output, cache = tmp_path / "judged.jsonl", tmp_path / "replies.jsonl"
    alone = AnswerJudgeCore().score(columns(data))
    unsure = [confidence < 0.9 for confidence in alone["confidence"]]
    assert 0 < sum(unsure) < len(unsure)
    with OpenAIServer(says_yes_to_odd_rows) as server:
        done = cli(
            *escalate_args(source, server, "-o", output, "--cache", cache, "--format", "json"), env=env_with_key()
        )
        assert done.returncode == 0, done.stderr
        assert server.requests == sum(unsure)
        again = cli(
            *escalate_args(source, server, "-o", tmp_path / "again.jsonl", "--cache", cache), env=env_with_key()
        )
        assert again.returncode == 0, again.stderr
        assert server.requests == sum(unsure)  # the rerun asked nothing: every reply came from the cache
    out = judged(output)
    assert [row["escalated"] for row in out] == unsure
    for number, row in enumerate(out):
        if unsure[number]:
            assert row["llm_verdict"] is bool(number % 2)
            assert row["correct"] is bool(number % 2)
            assert row["stage"] == "llm"
            assert row["calls"] == 1
            assert row["llm_failure"] is None
        else:
            assert row["llm_verdict"] is None
            assert row["correct"] is alone["correct"][number]
    summary = json.loads(done.stdout)
    assert summary["escalated"] == summary["calls"] == sum(unsure)
    assert summary["selection"]["threshold"] == 0.9
    assert summary["selection"]["source"] == "given"
    assert summary["kept"] == len(out) - sum(unsure)
    assert [row["calls"] for row in judged(tmp_path / "again.jsonl")] == [0] * len(out)
    for text in (done.stdout, done.stderr, output.read_text(), cache.read_text()):
        assert SECRET not in text


@pytest.mark.slow
@pytest.mark.subprocess
def test_escalation_interrupted_then_resumed_never_repeats_an_answered_request(tmp_path):
    count = 96
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output = tmp_path / "judged.jsonl"
    with OpenAIServer(says_yes_to_odd_rows) as server:
        args = escalate_args(source, server, "-o", output, "--checkpoint-seconds", "0", "--concurrency", "1")
        kept = interrupted(*args, "--api-key-env", "NO_SUCH_KEY_VARIABLE", output=output)
        assert 0 < kept < count
        first = server.requests
        resumed = cli(*args, "--resume", "--format", "json")
        assert resumed.returncode == 0, resumed.stderr
        every = asked(server)
    assert first > 0
    assert max(every.values()) == 1  # no answered request was sent again
    out = judged(output)
    assert [row["prediction"] for row in out] == [row["prediction"] for row in rows(count)]
    assert sum(every.values()) == sum(row["escalated"] for row in out)
    summary = json.loads(resumed.stdout)
    assert summary["calls"] == sum(every.values())  # the rows kept count too
    assert not record_path(output).exists()


@pytest.mark.slow
@pytest.mark.subprocess
def test_max_calls_bounds_the_escalation_of_the_whole_file_across_resume(tmp_path):
    count, budget = 96, 30
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output = tmp_path / "judged.jsonl"
    with OpenAIServer(says_yes_to_odd_rows) as server:
        args = escalate_args(source, server, "-o", output, "--max-calls", str(budget), "--concurrency", "1")
        interrupted(*args, "--checkpoint-seconds", "0", output=output)
        first = server.requests
        assert 0 < first < budget
        resumed = cli(*args, "--resume", "--format", "json")
        assert resumed.returncode == 0, resumed.stderr
        assert server.requests == budget  # not a fresh budget after the resume
    out = judged(output)
    escalated = [row for row in out if row["escalated"]]
    assert len(escalated) > budget
    assert [row["llm_failure"] for row in escalated] == [None] * budget + ["budget_stop"] * (len(escalated) - budget)
    stopped = [row for row in escalated if row["llm_failure"] == "budget_stop"]
    assert all(row["stage"] != "llm" and row["llm_verdict"] is None for row in stopped)  # the judge's verdict stands
    summary = json.loads(resumed.stdout)
    assert summary["calls"] == budget
    assert summary["llm_failures"] == {"budget_stop": len(escalated) - budget}


def test_a_refused_key_stops_the_escalation_with_exit_2_never_printing_the_key(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(24))
    output = tmp_path / "judged.jsonl"
    with OpenAIServer(lambda request: Reply(status=401, message=f"Incorrect API key provided: {SECRET}")) as server:
        done = cli(*escalate_args(source, server, "-o", output), env=env_with_key())
    assert done.returncode == 2
    assert f"the key in ${KEY_ENV}" in done.stderr
    assert "--escalate-model" in done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert not output.exists()
    mistaken = cli("judge", source, "--escalate-model", "m", "--api-key-env", SECRET)
    assert mistaken.returncode == 2
    assert "must name an environment variable" in mistaken.stderr
    assert SECRET not in mistaken.stderr


def test_the_signature_shows_trust_only_when_set_and_never_a_url_password_or_the_key_variable():
    plain = JudgeOptions().signature("judge")
    assert plain == JudgeOptions(delta=0.2, concurrency=9, cache_path="c.jsonl").signature("judge")
    assert "target_agreement" not in plain
    assert "escalate" not in plain
    options = JudgeOptions(escalate_model="m", api_base_url="https://user:pw-secret-31@llm.example/v1")
    signed = options.signature("judge")
    assert "escalate_model:m" in signed
    assert "pw-secret-31" not in signed
    assert "api_key_env" not in signed
    assert "delta" not in signed  # a delta qualifies a target only
    assert "delta:0.2" in JudgeOptions(target_agreement=0.9, delta=0.2).signature("judge")


def test_escalation_to_a_dead_server_exits_3_with_the_judges_verdicts_written(tmp_path):
    data = rows(24)
    source = write_jsonl(tmp_path / "answers.jsonl", data)
    output = tmp_path / "judged.jsonl"
    args = ("judge", source, "--escalate-model", "grader", "--api-base-url", dead_url(), "--api-key-env", KEY_ENV)
    more = ("--escalate-below", "0.9", "--max-retries", "0", "--no-progress", "-o", output)
    done = cli(*args, *more, env=env_with_key())
    assert done.returncode == EXIT_NOTHING_GRADED, done.stderr
    assert "got no answer (no connection, or none within --timeout)" in done.stderr
    assert "Traceback" not in done.stderr
    written = judged(output)
    alone = AnswerJudgeCore().score(columns(data))
    assert [row["correct"] for row in written] == alone["correct"]  # the judge's own verdicts stand
    assert any(row["llm_failure"] == "error" for row in written)


def test_escalation_the_llm_answers_but_never_readably_exits_3_naming_the_kinds(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(24))
    with OpenAIServer(lambda _request: "I would rather talk about the weather.") as server:
        done = cli(*escalate_args(source, server, "-o", tmp_path / "judged.jsonl"), env=env_with_key())
        sent = server.requests
    assert done.returncode == EXIT_NOTHING_GRADED, done.stderr
    assert sent > 0
    assert f"the LLM gave no verdict on any of the {sent} rows escalated (parse_failure {sent})" in done.stderr


def test_escalation_with_one_verdict_read_is_a_result_and_exits_0(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(24))
    replies = iter(["Yes, it is correct."])

    def once_then_nonsense(_request: dict[str, Any]) -> str:
        return next(replies, "I would rather talk about the weather.")

    with OpenAIServer(once_then_nonsense) as server:
        done = cli(*escalate_args(source, server, "--concurrency", "1"), env=env_with_key())
    assert done.returncode == 0, done.stderr


def test_a_fifo_as_the_calibration_is_refused_without_waiting(tmp_path):
    # A FIFO with no writer: a plain open() of it blocks for ever (the run never started, or never ended).
    fifo = tmp_path / "calibration.json"
    os.mkfifo(fifo)
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    judged = cli("judge", source, "--calibration", fifo, "--target-agreement", "0.9", timeout=60)
    labelled = write_jsonl(tmp_path / "labelled.jsonl", [{**row, "human_acceptable": True} for row in rows(4)])
    checked = cli("calibrate", labelled, "--check", fifo, timeout=60)
    for done in (judged, checked):
        assert done.returncode == 2, done.stderr
        assert f"the calibration file {fifo} is not a regular file" in done.stderr
        assert "Traceback" not in done.stderr
