"""Batch grading end to end: ``--batch`` then ``--resume`` on the loopback server's Batch API, against the live path.

The server answers a batch's requests through the same script as its live endpoint, so a batch run and a live run
see the same replies: their outputs must be the same bytes, and the batch must hold the very requests the live run
sent. The failure cases (expired, cancelled, partial failures, hostile result files, signals) are in
``tests/test_batch_failures.py``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from haystack_integrations.components.evaluators.answer_eval import (
    AnswerJudgeEvaluator,
    BatchGrading,
    BatchRunning,
    RubricEvaluator,
)
from tests.cli_runs import cli, write_jsonl
from tests.openai_server import BatchPlan, OpenAIServer, Reply, grader_generator
from tests.test_judge_escalation import GOLDS, PREDICTIONS, QUESTIONS, says_yes_to
from tests.test_rubric_cli import grading_script, rows

SECRET = "sk-batch-secret-never-written-4321"
KEY = "ANSWER_EVAL_BATCH_KEY"


def env() -> dict[str, str]:
    return {**os.environ, KEY: SECRET}


def rubric(source: Path, server: OpenAIServer, output: Path, *more: object) -> tuple[object, ...]:
    server_flags = ("--api-base-url", server.url, "--model", "grader", "--api-key-env", KEY)
    metric = ("--metric", "question_answering_correctness")
    return ("rubric", source, *metric, *server_flags, "--no-progress", "--output", output, *more)


def judge(source: Path, server: OpenAIServer, output: Path, *more: object) -> tuple[object, ...]:
    server_flags = ("--escalate-model", "grader", "--api-base-url", server.url, "--api-key-env", KEY)
    return ("judge", source, *server_flags, "--escalate-below", "1.0", "--no-progress", "--output", output, *more)


def until_done(args: tuple[object, ...], most: int = 20) -> list[object]:
    """The ``--resume`` runs of ``args`` until one exits other than 75 (bounded): every run's result.

    A run exits 75 while a batch runs, or after sending a new batch for what the last one left (top-ups,
    retries); 0 once the output is written.
    """
    runs = []
    for _ in range(most):
        runs.append(cli(*args, "--resume", env=env()))
        if runs[-1].returncode != 75:  # type: ignore[attr-defined]
            return runs
    raise AssertionError(f"not written after {most} runs")


def canonical(bodies: list[dict]) -> Counter[str]:
    return Counter(json.dumps(body, sort_keys=True) for body in bodies)


def batch_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if ".batch" in path.name)


@pytest.mark.parametrize("samples", [1, 3])
def test_a_rubric_batch_sends_the_live_requests_and_writes_the_live_output_byte_for_byte(tmp_path, samples):
    data = rows(6)
    data[2]["prediction"] = "answer-2: 5"
    source = write_jsonl(tmp_path / "answers.jsonl", data)
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=("validating", "in_progress", "finalizing"))
        live = cli(*rubric(source, server, live_out, "--samples", samples, "--format", "json"), env=env())
        live_bodies = server.bodies
        args = rubric(source, server, batch_out, "--samples", samples, "--format", "json")
        sent = cli(*args, "--batch", env=env())
        polls = until_done((*args, "--batch"))
        assert server.bodies == live_bodies  # nothing went live
        batch_bodies = server.batch_bodies
    assert live.returncode == sent.returncode == 0, live.stderr + sent.stderr
    submitted = json.loads(sent.stdout)
    assert submitted["batch"] == "submitted"
    assert submitted["batches"][0]["requests"] == 6
    # One status a poll: validating -> in_progress -> finalizing -> completed (the script gives one reply a
    # request, so three samples take three rounds of top-ups: n=3, then n=2, then n=1).
    assert polls[-1].returncode == 0, polls[-1].stderr
    running = [json.loads(run.stdout) for run in polls if run.returncode == 75 and '"running"' in run.stdout]
    resent = [json.loads(run.stdout) for run in polls if run.returncode == 75 and '"submitted"' in run.stdout]
    assert len(resent) == samples - 1
    assert all(again["batch"] == "submitted" for again in resent)
    assert running
    assert all(poll["batch"] == "running" for poll in running)
    assert {status["batches"][-1]["status"] for status in running} <= {"validating", "in_progress", "finalizing"}
    assert batch_out.read_bytes() == live_out.read_bytes()
    assert canonical(batch_bodies) == canonical(live_bodies)
    summary, live_summary = json.loads(polls[-1].stdout), json.loads(live.stdout)
    used = summary.pop("batch")
    assert {**summary, "output": None} == {**live_summary, "output": None}
    assert used["requests"] == used["answered"] == len(live_bodies)
    assert len(used["batches"]) == samples
    assert used["prompt_tokens"] == live_summary["prompt_tokens"]
    assert used["completion_tokens"] == live_summary["completion_tokens"]
    assert batch_files(tmp_path) == []  # the record, replies and input files go once the output is written


def test_a_judge_escalation_batch_asks_only_the_unsure_rows_and_writes_the_live_output(tmp_path):
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [{"question": q, "answers": g, "prediction": p} for q, g, p in zip(QUESTIONS, GOLDS, PREDICTIONS, strict=True)],
    )
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"
    with OpenAIServer(says_yes_to("Nixon", "Dolly Mapp")) as server:
        server.batch = BatchPlan(statuses=())  # ended at once: the first --resume collects it
        live = cli(*judge(source, server, live_out, "--format", "json"), env=env())
        sent = cli(*judge(source, server, batch_out, "--batch"), env=env())
        done = cli(*judge(source, server, batch_out, "--batch", "--resume", "--format", "json"), env=env())
        live_bodies, batch_bodies = server.bodies[: len(server.bodies)], server.batch_bodies
    assert live.returncode == sent.returncode == done.returncode == 0, live.stderr + sent.stderr + done.stderr
    assert "batch batch_1 created" in sent.stdout
    assert f"{len(live_bodies)} requests" in sent.stdout
    assert batch_out.read_bytes() == live_out.read_bytes()
    assert canonical(batch_bodies) == canonical(live_bodies)
    escalated = [json.loads(line)["llm_verdict"] for line in batch_out.read_text().splitlines()]
    assert escalated.count(None) == len(escalated) - len(live_bodies)  # only the unsure rows were asked


def test_the_cache_gets_every_batch_reply_so_a_rerun_live_or_batch_pays_nothing(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    cache = tmp_path / "replies.jsonl"
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=())
        args = rubric(source, server, tmp_path / "batch.jsonl", "--cache", cache, "--batch")
        assert cli(*args, env=env()).returncode == 0
        assert cli(*args, "--resume", env=env()).returncode == 0
        live_rerun = cli(*rubric(source, server, tmp_path / "live.jsonl", "--cache", cache), env=env())
        batch_rerun = cli(*rubric(source, server, tmp_path / "again.jsonl", "--cache", cache, "--batch"), env=env())
        assert server.bodies == []
        assert len(server.batch_bodies) == 4
    assert live_rerun.returncode == batch_rerun.returncode == 0, live_rerun.stderr + batch_rerun.stderr
    assert "batch" not in batch_rerun.stdout.split("\n")[0]  # answered from the cache: the output at once
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "live.jsonl").read_bytes()


def test_the_key_is_in_no_file_and_no_message_and_the_price_gives_the_cost(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    output = tmp_path / "batch.jsonl"
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=("validating", "in_progress"))
        args = (*rubric(source, server, output, "--batch"), "--price-per-million-tokens", "0.075", "0.3")
        sent = cli(*args, env=env())
        files = {name: (tmp_path / name).read_text() for name in batch_files(tmp_path)}
        running = cli(*args, "--resume", env=env())
        done = cli(*args, "--resume", env=env())
    assert (sent.returncode, running.returncode, done.returncode) == (0, 75, 0), done.stderr
    assert set(files) == {".batch.jsonl.batch-1.jsonl", ".batch.jsonl.batch.json"}
    assert "cost prompt" in sent.stdout
    assert "at 0.075 / 0.3 a million" in sent.stdout
    assert "is in_progress" in running.stdout
    assert "exit 75" in running.stdout
    # 3 requests of 10 prompt and 5 completion tokens (the server's usage) at 0.075 and 0.3 a million.
    assert "tokens 30 prompt, 15 completion; cost 6.75e-06 at 0.075 / 0.3 a million tokens" in done.stdout
    for text in (
        *files.values(),
        sent.stdout,
        sent.stderr,
        running.stdout,
        done.stdout,
        done.stderr,
        output.read_text(),
    ):
        assert SECRET not in text


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (("--finish-live",), "--finish-live goes with --batch --resume"),
        (("--batch", "--engine", "dask"), "--batch runs on the local engine"),
        (("--batch", "--dry-run", "--price-per-million-tokens", "0.075", "0.3"), None),
    ],
)
def test_batch_flags_that_do_not_go_together_are_refused_and_a_dry_run_sends_nothing(tmp_path, more, message):
    source = write_jsonl(tmp_path / "answers.jsonl", [{**row, "baseline": "x"} for row in rows(2)])
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=())
        done = cli(*rubric(source, server, tmp_path / "out.jsonl", *more), env=env())
    if message is None:  # --dry-run with --batch: the estimate, nothing sent
        assert done.returncode == 0, done.stderr
        assert "nothing sent" in done.stdout
        assert server.requests == 0
    else:
        assert done.returncode == 2
        assert message in done.stderr


def test_batch_needs_an_output_an_llm_and_refuses_to_start_over_a_recorded_run(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_script) as server:
        args = rubric(source, server, tmp_path / "out.jsonl", "--batch")
        no_output = cli(*[arg for arg in args if arg not in ("--output", tmp_path / "out.jsonl")], env=env())
        first = cli(*args, env=env())
        again = cli(*args, env=env())
        offline = cli("judge", source, "--output", tmp_path / "j.jsonl", "--batch", env=env())
        assert len(server.batch_bodies) == 2  # the refused second run sent no second batch
    assert no_output.returncode == 2
    assert "--batch needs --output" in no_output.stderr
    assert first.returncode == 0
    assert again.returncode == 2
    assert "is recorded (1 batches): run the same command with --resume" in again.stderr
    assert offline.returncode == 2
    assert "give --escalate-model" in offline.stderr


def test_batch_grading_in_python_returns_the_component_s_live_outputs(tmp_path, caplog):
    answers = [f"answer-{n}: {2 * n}" for n in range(4)]
    answers[1] = "answer-1: 3"
    references = [str(2 * n) for n in range(4)]
    questions = [f"What is {n} plus {n}?" for n in range(4)]
    inputs = {"predicted_answers": answers, "ground_truth_answers": references, "questions": questions}
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=("validating", "in_progress", "finalizing"))
        metric = "question_answering_correctness"
        live = RubricEvaluator(metric=metric, chat_generator=grader_generator(server), progress_bar=False).run(**inputs)
        record = tmp_path / "nightly"
        grading = BatchGrading(
            RubricEvaluator(metric=metric, chat_generator=grader_generator(server), progress_bar=False), record
        )
        with caplog.at_level("WARNING"):
            submitted = grading.submit(**inputs)
        status = grading.status()
        with pytest.raises(ValueError, match="is recorded: call collect"):
            grading.submit(**inputs)
        with pytest.raises(BatchRunning):
            grading.collect(**inputs)  # finalizing
        result = grading.collect(**inputs)
        assert len(server.bodies) == 4  # the live run's; the batch sent its own four
    assert [job["status"] for job in submitted] == ["validating"]
    assert not [record for record in caplog.records if "graded" in record.getMessage()]  # a pass is no result
    assert status[0]["status"] == "in_progress"
    assert result == live
    assert not list(record.parent.glob(f".{record.name}.batch*"))


def test_batch_grading_collect_raises_batch_running_while_the_batch_runs(tmp_path):
    with OpenAIServer(says_yes_to("Nixon")) as server:
        server.batch = BatchPlan(statuses=("validating", "in_progress", "in_progress"))
        judge_component = AnswerJudgeEvaluator(escalate_to=grader_generator(server), escalate_below=1.0)
        record = tmp_path / "judged"
        grading = BatchGrading(judge_component, record)
        inputs = {"ground_truth_answers": GOLDS, "predicted_answers": PREDICTIONS, "questions": QUESTIONS}
        grading.submit(**inputs)
        with pytest.raises(BatchRunning) as running:
            grading.collect(**inputs)
        result = None
        for _ in range(5):
            try:
                result = grading.collect(**inputs)
                break
            except BatchRunning:
                continue
        live = AnswerJudgeEvaluator(escalate_to=grader_generator(server), escalate_below=1.0).run(**inputs)
    assert running.value.status[0]["status"] == "in_progress"
    assert result is not None
    assert result == live


def test_batch_grading_refuses_a_component_without_an_llm():
    with pytest.raises(ValueError, match="sends none"):
        BatchGrading(AnswerJudgeEvaluator(), "never")


def test_a_jury_of_two_models_sends_one_batch_a_model_and_writes_the_live_output(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=())
        jury = ("--model", "second-grader")  # with rubric()'s --model grader: a panel of two
        live = cli(*rubric(source, server, live_out, *jury), env=env())
        sent = cli(*rubric(source, server, batch_out, *jury, "--batch", "--format", "json"), env=env())
        done = cli(*rubric(source, server, batch_out, *jury, "--batch", "--resume"), env=env())
        live_bodies, batch_bodies = server.bodies, server.batch_bodies
    assert live.returncode == sent.returncode == done.returncode == 0, live.stderr + sent.stderr + done.stderr
    batches = json.loads(sent.stdout)["batches"]
    assert sorted((batch["model"], batch["requests"]) for batch in batches) == [("grader", 3), ("second-grader", 3)]
    assert canonical(batch_bodies) == canonical(live_bodies)
    assert batch_out.read_bytes() == live_out.read_bytes()
    assert "judge_grades" in batch_out.read_text()


def test_log_probability_scores_read_from_a_batch_are_the_live_ones(tmp_path):
    from tests.test_logprob_scores import REPLY, SCORE_ALTERNATIVES, logprobs_for

    data = [{"question": f"q{n}", "prediction": f"answer {n}", "context": "c"} for n in range(3)]
    source = write_jsonl(tmp_path / "in.jsonl", data)

    def script(request):
        if "answer 2" in request["messages"][-1]["content"]:
            return Reply(texts=[REPLY], finish_reason="length")  # no log-probabilities, and cut
        return Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, SCORE_ALTERNATIVES))

    def args(server, output, *more):
        flags = ("--api-base-url", server.url, "--model", "grader", "--api-key-env", KEY, "--scoring", "logprobs")
        return ("rubric", source, *flags, "--no-progress", "--format", "json", "--output", output, *more)

    with OpenAIServer(script) as server:
        server.batch = BatchPlan(statuses=())
        live = cli(*args(server, tmp_path / "live.jsonl"), env=env())
        assert cli(*args(server, tmp_path / "batch.jsonl", "--batch"), env=env()).returncode == 0
        done = cli(*args(server, tmp_path / "batch.jsonl", "--batch", "--resume"), env=env())
    assert live.returncode == done.returncode == 0, live.stderr + done.stderr
    assert (tmp_path / "batch.jsonl").read_bytes() == (tmp_path / "live.jsonl").read_bytes()
    summary, live_summary = json.loads(done.stdout), json.loads(live.stdout)
    summary.pop("batch")
    assert {**summary, "output": None} == {**live_summary, "output": None}  # cut_replies counted alike
    assert live_summary["cut_replies"] == 1


@pytest.mark.parametrize("created", [True, False])
def test_a_run_killed_between_creating_a_batch_and_recording_it_finds_the_batch_again(tmp_path, created):
    # The record as a process killed there leaves it: the upload recorded, the batch's id not.
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"
    state = tmp_path / ".batch.jsonl.batch.json"
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=())
        assert cli(*rubric(source, server, live_out), env=env()).returncode == 0
        assert cli(*rubric(source, server, batch_out, "--batch"), env=env()).returncode == 0
        record = json.loads(state.read_text())
        job = record["jobs"][0]
        record["rounds"] = {}
        job.update(id="", status="creating", input_file_id=job["input_file_id"] if created else "file-never")
        state.write_text(json.dumps(record))
        done = cli(*rubric(source, server, batch_out, "--batch", "--resume"), env=env())
        if not created:  # never created: its requests go into a new batch
            assert "batch batch_2 created" in done.stdout
            done = cli(*rubric(source, server, batch_out, "--batch", "--resume"), env=env())
        batches = len({body["messages"][-1]["content"] for body in server.batch_bodies})
    assert done.returncode == 0, done.stderr
    assert batch_out.read_bytes() == live_out.read_bytes()
    assert batches == 3


def test_max_calls_bounds_the_batch_as_it_bounds_the_live_run(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(6))
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=())
        live = cli(*rubric(source, server, live_out, "--max-calls", 4), env=env())
        sent = cli(*rubric(source, server, batch_out, "--max-calls", 4, "--batch"), env=env())
        done = cli(*rubric(source, server, batch_out, "--max-calls", 4, "--batch", "--resume"), env=env())
        batched = len(server.batch_bodies)
    assert live.returncode == sent.returncode == done.returncode == 0, done.stderr
    assert batched == 4  # the budget's requests only
    assert batch_out.read_bytes() == live_out.read_bytes()
    kinds = [json.loads(line)["failure_kind"] for line in batch_out.read_text().splitlines()]
    assert kinds == [None] * 4 + ["budget_stop"] * 2
