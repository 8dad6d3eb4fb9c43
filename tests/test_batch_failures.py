"""Batch grading when things go wrong: failed requests, expired and cancelled batches, hostile result files, signals.

Each case ends where the issue asks: the output byte-identical to the live run's on the same replies, or the
row's failure the live path gives, and nothing paid for lost.
"""

from __future__ import annotations

import json
import random
import signal
import threading
from pathlib import Path

import pytest

from tests.cli_runs import cli, start_cli, stop, write_jsonl
from tests.openai_server import BatchPlan, OpenAIServer, Reply, last_user_text
from tests.test_batch_cli import KEY, SECRET, batch_files, env, rubric, until_done
from tests.test_rubric_cli import grading_script, rows


def prompt_of(request: dict) -> str:
    return last_user_text(request).split("<Response>\n", 1)[1].split("\n", 1)[0]


def failing(status_of: dict[str, list[int]]):
    """``grading_script``, but the prediction named answers with the next status of its list first (then 200)."""
    left = {name: list(statuses) for name, statuses in status_of.items()}
    lock = threading.Lock()

    def script(request):
        with lock:
            queue = left.get(prompt_of(request))
            status = queue.pop(0) if queue else 200
        if status != 200:
            return Reply(status=status, message=f"scripted failure {status}")
        return grading_script(request)

    return script


def live_and_batch(tmp_path: Path, script, plans: list[BatchPlan], *more: object, count: int = 6):
    """The live output (a server of its own, same script) and the batch run's runs, one plan per batch."""
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"
    with OpenAIServer(script()) as live_server:
        live = cli(*rubric(source, live_server, live_out, *more), env=env())
    with OpenAIServer(script()) as server:
        server.batch = plans[0]
        args = (*rubric(source, server, batch_out, *more), "--batch")
        runs = [cli(*args, env=env())]
        for plan in plans[1:]:  # each later batch runs as its plan says (the server reads it when it is created)
            server.batch = plan
            runs += until_first_created(args)
        runs += until_done(args)
        bodies = server.batch_bodies
    return live, runs, live_out, batch_out, bodies


def until_first_created(args: tuple[object, ...]) -> list[object]:
    """``--resume`` runs until one sends a new batch (bounded)."""
    runs = []
    for _ in range(10):
        runs.append(cli(*args, "--resume", env=env()))
        if runs[-1].returncode == 75 and "created" in runs[-1].stdout:  # type: ignore[attr-defined]
            return runs
    raise AssertionError("no new batch")


def test_a_400_is_the_row_s_error_as_live_and_a_500_goes_into_a_new_batch(tmp_path):
    # Live retries the 500 (the second try answers); the batch sends it in a second batch, which answers.
    def script():
        return failing({"answer-1: 2": [400, 400, 400], "answer-4: 8": [500]})

    live, runs, live_out, batch_out, bodies = live_and_batch(tmp_path, script, [BatchPlan(statuses=())] * 2)
    assert live.returncode == runs[-1].returncode == 0, runs[-1].stderr
    assert batch_out.read_bytes() == live_out.read_bytes()
    graded = [json.loads(line) for line in batch_out.read_text().splitlines()]
    assert graded[1]["failure_kind"] == "error"
    assert "BadRequestError (HTTP 400)" in graded[1]["explanation"]
    assert graded[4]["score"] == 1
    assert [prompt_of(body) for body in bodies[6:]] == ["answer-4: 8"]  # the second batch: the 500 alone


def test_a_request_failing_in_every_batch_is_the_row_s_error_after_max_retries_more_batches(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    with OpenAIServer(failing({"answer-2: 4": [503] * 10})) as server:
        server.batch = BatchPlan(statuses=())
        args = (*rubric(source, server, tmp_path / "out.jsonl", "--max-retries", 1), "--batch")
        first = cli(*args, env=env())
        runs = until_done(args)
        asked = [prompt_of(body) for body in server.batch_bodies].count("answer-2: 4")
    assert first.returncode == runs[-1].returncode == 0, runs[-1].stderr
    assert asked == 2  # --max-retries 1: two batches in all
    graded = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["failure_kind"] for row in graded] == [None, None, "error"]
    assert "InternalServerError (HTTP 503)" in graded[2]["explanation"]


@pytest.mark.parametrize("end", ["expired", "cancelled"])
def test_an_expired_or_cancelled_batch_s_rest_goes_into_a_new_batch_and_the_output_is_live_s(tmp_path, end):
    plans = [BatchPlan(statuses=(), end=end, answered=2), BatchPlan(statuses=())]
    live, runs, live_out, batch_out, bodies = live_and_batch(tmp_path, lambda: grading_script, plans)
    assert live.returncode == runs[-1].returncode == 0, runs[-1].stderr
    assert batch_out.read_bytes() == live_out.read_bytes()
    assert len(bodies) == 6 + 4  # the second batch: the four the first did not run
    assert f"batch batch_1 {end}: 2 of 6 requests answered" in "".join(run.stderr for run in runs)


def test_a_batch_cancelled_on_the_server_side_while_it_runs_keeps_what_it_answered(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=("validating", "in_progress", "in_progress"))
        args = (*rubric(source, server, tmp_path / "out.jsonl"), "--batch")
        assert cli(*args, env=env()).returncode == 0
        assert cli(*args, "--resume", env=env()).returncode == 75
        server.cancel_batch("batch_1", answered=3)
        found = cli(*args, "--resume", env=env())
        server.batch = BatchPlan(statuses=())
        runs = until_done(args)
        second = [prompt_of(body) for body in server.batch_bodies[4:]]
    assert found.returncode == 75  # a new batch sent for the rest: not written yet
    assert "batch batch_1 cancelled: 3 of 4 requests answered" in found.stderr
    assert "batch batch_2 created" in found.stdout
    assert second == ["answer-3: 6"]
    assert runs[-1].returncode == 0, runs[-1].stderr


def test_finish_live_sends_what_an_expired_batch_left_live_and_no_new_batch(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(5))
    with OpenAIServer(grading_script) as server:
        live = cli(*rubric(source, server, tmp_path / "live.jsonl"), env=env())
        live_bodies = len(server.bodies)
        server.batch = BatchPlan(statuses=(), end="expired", answered=2)
        args = (*rubric(source, server, tmp_path / "batch.jsonl"), "--batch")
        assert cli(*args, env=env()).returncode == 0
        done = cli(*args, "--resume", "--finish-live", env=env())
        sent_live = [prompt_of(body) for body in server.bodies[live_bodies:]]
        batches = len(server.batch_bodies)
    assert live.returncode == done.returncode == 0, done.stderr
    assert sorted(sent_live) == ["answer-2: 4", "answer-3: 6", "answer-4: 8"]
    assert batches == 5  # one batch only
    assert (tmp_path / "batch.jsonl").read_bytes() == (tmp_path / "live.jsonl").read_bytes()
    assert batch_files(tmp_path) == []


def shuffled_with_strangers(lines: list[dict]) -> list[dict]:
    stranger = {**lines[0], "custom_id": "ae-" + "0" * 64}
    again = {**lines[1], "response": {**lines[1]["response"], "body": {"choices": "not these"}}}
    out = [*lines, stranger]
    random.Random(41).shuffle(out)
    return [*out, again]  # a second line for a request already answered: the first is kept


def test_result_lines_out_of_order_for_unknown_requests_or_repeated_change_nothing(tmp_path):
    plans = [BatchPlan(statuses=(), lines=shuffled_with_strangers)]
    live, runs, live_out, batch_out, _ = live_and_batch(tmp_path, lambda: grading_script, plans)
    assert live.returncode == runs[-1].returncode == 0, live.stderr + runs[-1].stderr
    assert batch_out.read_bytes() == live_out.read_bytes()
    said = "".join(run.stderr for run in runs)
    assert "1 lines for requests it did not hold, dropped" in said
    assert "1 repeated lines, the first kept" in said


def cut_mid_last_line(data: bytes) -> bytes:
    return data[: data.rstrip(b"\n").rfind(b"\n") + 40]


def deep_first_line(data: bytes) -> bytes:
    lines = data.split(b"\n")
    return b"\n".join([b"[" * 200_000, *lines[1:]])


def huge_first_line(data: bytes) -> bytes:
    lines = data.split(b"\n")
    first = json.loads(lines[0])
    first["response"]["body"]["padding"] = "x" * (16 * 1024 * 1024)
    return b"\n".join([json.dumps(first).encode(), *lines[1:]])


@pytest.mark.parametrize("damage", [cut_mid_last_line, deep_first_line, huge_first_line], ids=lambda f: f.__name__)
def test_a_truncated_deep_or_huge_result_line_is_unread_and_its_request_asked_again(tmp_path, damage):
    plans = [BatchPlan(statuses=(), output=damage), BatchPlan(statuses=())]
    live, runs, live_out, batch_out, bodies = live_and_batch(tmp_path, lambda: grading_script, plans, count=4)
    assert live.returncode == runs[-1].returncode == 0, live.stderr + runs[-1].stderr
    assert batch_out.read_bytes() == live_out.read_bytes()
    assert len(bodies) == 4 + 1  # the damaged line's request, asked again in a second batch
    assert "1 lines that could not be read (their requests are asked again)" in "".join(r.stderr for r in runs)


def test_a_failed_batch_is_said_and_its_requests_sent_in_a_new_batch(tmp_path):
    plans = [BatchPlan(statuses=(), end="failed"), BatchPlan(statuses=())]
    live, runs, live_out, batch_out, bodies = live_and_batch(tmp_path, lambda: grading_script, plans, count=3)
    assert live.returncode == runs[-1].returncode == 0, live.stderr + runs[-1].stderr
    said = "".join(run.stderr for run in runs)
    assert "batch batch_1 failed: 0 of 3 requests answered" in said
    assert "token_limit_exceeded: Enqueued token limit reached" in said  # the provider's reason
    assert batch_out.read_bytes() == live_out.read_bytes()
    assert len(bodies) == 3 + 3


@pytest.mark.subprocess
@pytest.mark.parametrize("during", ["upload", "download"])
def test_sigint_during_an_upload_or_a_download_loses_nothing_and_the_run_ends_as_live(tmp_path, monkeypatch, during):
    monkeypatch.setenv(KEY, SECRET)
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    output, live_out = tmp_path / "batch.jsonl", tmp_path / "live.jsonl"
    reached = threading.Event()
    with OpenAIServer(grading_script) as server:
        assert cli(*rubric(source, server, live_out), env=env()).returncode == 0
        hook = {"on_upload" if during == "upload" else "on_content": reached.set}
        delay = {"upload_delay" if during == "upload" else "content_delay": 30.0}
        server.batch = BatchPlan(statuses=(), **hook, **delay)  # type: ignore[arg-type]
        args = (*rubric(source, server, output), "--batch")
        if during == "download":
            assert cli(*args, env=env()).returncode == 0
        process = start_cli(*args, *(("--resume",) if during == "download" else ()))
        assert reached.wait(60), "the transfer never began"
        code, _, stderr = stop(process, signal.SIGINT)
        state = json.loads((tmp_path / ".batch.jsonl.batch.json").read_text()) if during == "download" else None
        leftovers = [path.name for path in tmp_path.iterdir() if "download" in path.name]
        server.batch = BatchPlan(statuses=())
        again = cli(*args, *(("--resume",) if during == "download" else ()), env=env())
        runs = until_done(args) if during == "upload" else [again]
    assert code == 130, stderr
    if during == "upload":
        assert not (tmp_path / ".batch.jsonl.batch.json").exists()  # nothing recorded: run it again
        assert again.returncode == 0
        assert "batch batch_1 created" in again.stdout  # the stopped run created none
    else:
        assert state is not None
        assert [job["collected"] for job in state["jobs"]] == [False]  # downloaded again by the next --resume
        assert leftovers == []
    assert runs[-1].returncode == 0, runs[-1].stderr
    assert output.read_bytes() == live_out.read_bytes()


def test_a_batch_failing_every_time_leaves_its_rows_errors_naming_finish_live(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    output = tmp_path / "out.jsonl"
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=(), end="failed")
        args = (*rubric(source, server, output, "--max-retries", 1), "--batch")
        assert cli(*args, env=env()).returncode == 0
        runs = until_done(args)
        sent, live = len(server.batch_bodies), len(server.bodies)
    assert runs[-1].returncode == 3, runs[-1].stderr  # every row failed: the output written, the run no success
    assert (sent, live) == (3 + 3, 0)  # --max-retries 1: two batches in all, nothing sent live
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["failure_kind"] for row in graded] == ["error"] * 3
    assert all("batch_failed" in row["explanation"] and "--finish-live" in row["explanation"] for row in graded)
    assert batch_files(tmp_path) == []


def test_finish_live_after_a_failed_batch_grades_every_row_live(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    with OpenAIServer(grading_script) as server:
        assert cli(*rubric(source, server, tmp_path / "live.jsonl"), env=env()).returncode == 0
        server.batch = BatchPlan(statuses=(), end="failed")
        args = (*rubric(source, server, tmp_path / "batch.jsonl"), "--batch")
        assert cli(*args, env=env()).returncode == 0
        done = cli(*args, "--resume", "--finish-live", env=env())
        sent, live = len(server.batch_bodies), len(server.bodies)
    assert done.returncode == 0, done.stderr
    assert (sent, live) == (3, 3 + 3)  # no second batch: the three sent live
    assert (tmp_path / "batch.jsonl").read_bytes() == (tmp_path / "live.jsonl").read_bytes()


def test_the_key_a_server_echoes_is_in_no_file_and_no_message(tmp_path):
    # A request's failure and a batch API error both quoting the key, as OpenAI's "Incorrect API key provided".
    echoed: set[str] = set()

    def script(request):
        if prompt_of(request) in echoed:
            return Reply(status=400, message=f"Incorrect API key provided: {SECRET}")
        return grading_script(request)

    def echo_key(_lines: list[dict]) -> list[dict]:
        raise ValueError(f"Incorrect API key provided: {SECRET}")

    def nowhere(*runs) -> None:
        for run in runs:
            assert SECRET not in run.stdout + run.stderr
        for path in tmp_path.iterdir():
            assert SECRET.encode() not in path.read_bytes(), path.name

    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    output = tmp_path / "out.jsonl"
    with OpenAIServer(script) as server:
        server.batch = BatchPlan(statuses=("in_progress",))
        args = (*rubric(source, server, output, "--cache", tmp_path / "cache.jsonl"), "--batch")
        nowhere(cli(*args, env=env()))
        echoed.add(prompt_of(server.batch_bodies[0]))  # the request the batch runs before it is cancelled
        server.batch = BatchPlan(statuses=("in_progress",), lines=echo_key)
        refused = cli(*args, "--resume", env=env())  # the poll answers HTTP 500 quoting the key
        assert refused.returncode == 3
        assert "could not be asked for" in refused.stderr
        nowhere(refused)
        server.batch = BatchPlan(statuses=("in_progress",))
        server.cancel_batch("batch_1", answered=1)
        collected = cli(*args, "--resume", env=env())  # the echo kept, the two others in a new batch
        assert "batch batch_2 created" in collected.stdout
        nowhere(collected)
        runs = until_done(args)
        nowhere(*runs)
    assert runs[-1].returncode == 0, runs[-1].stderr
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["failure_kind"] for row in graded].count("error") == 1


def test_a_creation_whose_answer_is_lost_is_found_again_and_never_paid_twice(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"
    with OpenAIServer(grading_script) as server:
        assert cli(*rubric(source, server, live_out), env=env()).returncode == 0
        server.batch = BatchPlan(statuses=(), lose_creation=True)
        args = (*rubric(source, server, batch_out), "--batch")
        lost = cli(*args, env=env())
        server.batch = BatchPlan(statuses=())
        done = cli(*args, "--resume", env=env())
        created = server.batch_bodies
    assert lost.returncode == 3
    assert "it may have been created: run the same command with --resume" in lost.stderr
    assert done.returncode == 0, done.stderr
    assert len(created) == 3  # one batch: the one the lost answer made, found by its input file
    assert batch_out.read_bytes() == live_out.read_bytes()


def test_a_judge_of_one_model_name_on_two_servers_gets_its_own_server_s_answers(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"

    def strict(request):
        return json.dumps({"explanation": "strict", "score": 0})

    with OpenAIServer(grading_script) as kind, OpenAIServer(strict) as harsh:
        kind.batch = harsh.batch = BatchPlan(statuses=())

        def args(output, *more):
            urls = ("--api-base-url", harsh.url, "--model", "grader")  # rubric() names kind's and grader
            return (*rubric(source, kind, output), *urls, *more)

        assert cli(*args(live_out), env=env()).returncode == 0
        assert cli(*args(batch_out, "--batch"), env=env()).returncode == 0
        done = cli(*args(batch_out, "--batch", "--resume"), env=env())
    assert done.returncode == 0, done.stderr
    assert batch_out.read_bytes() == live_out.read_bytes()
    assert [json.loads(line)["judge_grades"] for line in batch_out.read_text().splitlines()] == [[1, 0]] * 3


def test_with_a_cache_a_run_of_several_batches_writes_the_live_output(tmp_path):
    # Rows answered by the first batch are cached by its pass; the last pass reads them from the batches, so
    # their calls and tokens are the live run's, not a cache hit's.
    def script():
        return failing({"answer-1: 2": [500]})

    plans = [BatchPlan(statuses=())] * 2
    live, runs, live_out, batch_out, _ = live_and_batch(
        tmp_path, script, plans, "--cache", tmp_path / "replies.jsonl", count=3
    )
    assert live.returncode == runs[-1].returncode == 0, runs[-1].stderr
    assert batch_out.read_bytes() == live_out.read_bytes()


def test_max_calls_spends_a_batch_s_failed_tries_as_live_spends_retries(tmp_path):
    # Which row the live run's budget stops depends on timing (a retry waits its backoff while the next row is
    # sent), so the two outputs are not compared: the batch run spends the failed try as a call, in row order.
    def script():
        return failing({"answer-1: 2": [500]})

    plans = [BatchPlan(statuses=())] * 2
    live, runs, live_out, batch_out, _ = live_and_batch(tmp_path, script, plans, "--max-calls", 3, count=3)
    assert live.returncode == runs[-1].returncode == 0, runs[-1].stderr
    graded = [json.loads(line) for line in batch_out.read_text().splitlines()]
    assert [row["calls"] for row in graded] == [1, 2, 0]  # row 1: its failed try and its answer
    assert [row["failure_kind"] for row in graded] == [None, None, "budget_stop"]
    assert sum(json.loads(line)["calls"] for line in live_out.read_text().splitlines()) == 3


def test_a_price_no_float_holds_is_refused_before_a_batch_is_sent(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_script) as server:
        args = (
            *rubric(source, server, tmp_path / "out.jsonl"),
            "--batch",
            "--price-per-million-tokens",
            "1e308",
            "1e308",
        )
        done = cli(*args, env=env())
        sent = server.batch_bodies
    assert done.returncode == 2
    assert "--price-per-million-tokens" in done.stderr
    assert sent == []


def test_a_refused_key_stops_the_batch_run_and_once_mended_its_requests_are_asked_again(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    refusing = {"on": True}

    def script(request):
        return Reply(status=401, message="Incorrect API key provided") if refusing["on"] else grading_script(request)

    with OpenAIServer(script) as server:
        server.batch = BatchPlan(statuses=())
        args = (*rubric(source, server, tmp_path / "out.jsonl"), "--batch")
        assert cli(*args, env=env()).returncode == 0
        stopped = cli(*args, "--resume", env=env())
        refusing["on"] = False  # the key mended
        again = cli(*args, "--resume", env=env())
        done = cli(*args, "--resume", env=env())
    assert stopped.returncode in (2, 3)
    assert "the grader refused the request" in stopped.stderr
    assert again.returncode == 75
    assert "batch batch_2 created" in again.stdout
    assert done.returncode == 0, done.stderr


def test_a_replies_file_cut_mid_line_by_a_crash_keeps_the_next_answer(tmp_path):
    from answer_eval.llm.batch_jobs import BatchRun
    from answer_eval.llm.batches import Answer

    run = BatchRun(tmp_path / "out.jsonl")
    run.keep({"ae-1": Answer(200, {"choices": []})})
    run.replies_path.write_bytes(run.replies_path.read_bytes() + b'{"custom_id":"ae-2","sta')  # cut by a crash
    run.keep({"ae-3": Answer(200, {"choices": []})})
    assert set(run.answers()) == {"ae-1", "ae-3"}


@pytest.mark.parametrize("rounds", [{"ae-1": 1e400}, {"ae-1": -1}, {"ae-1": True}, ["ae-1"]])
def test_a_hand_edited_record_of_another_shape_is_refused_as_damaged(tmp_path, rounds):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_script) as server:
        server.batch = BatchPlan(statuses=("validating", "in_progress"))
        args = (*rubric(source, server, tmp_path / "out.jsonl"), "--batch")
        assert cli(*args, env=env()).returncode == 0
        state = tmp_path / ".out.jsonl.batch.json"
        text = state.read_text().replace('"rounds":{', '"rounds":' + json.dumps(rounds)[:-1] + ",", 1)
        state.write_text(
            text if isinstance(rounds, dict) else state.read_text().replace('"rounds":{', '"rounds":["x"],"r":{')
        )
        done = cli(*args, "--resume", env=env())
    assert done.returncode == 2, done.stderr
    assert "is a damaged batch run record: delete it to start over" in done.stderr


def test_finish_live_counts_a_batch_s_failed_try_with_the_live_reply_as_live_counts_a_retry(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    live_out, batch_out = tmp_path / "live.jsonl", tmp_path / "batch.jsonl"
    with OpenAIServer(failing({"answer-1: 2": [500]})) as live_server:
        assert cli(*rubric(source, live_server, live_out), env=env()).returncode == 0
    with OpenAIServer(failing({"answer-1: 2": [500]})) as server:
        server.batch = BatchPlan(statuses=())
        args = (*rubric(source, server, batch_out), "--batch")
        assert cli(*args, env=env()).returncode == 0
        done = cli(*args, "--resume", "--finish-live", env=env())
        sent_live = [prompt_of(body) for body in server.bodies]
    assert done.returncode == 0, done.stderr
    assert sent_live == ["answer-1: 2"]
    assert batch_out.read_bytes() == live_out.read_bytes()  # row 1: calls 2, as the live run's retry


def test_a_result_file_past_the_download_limit_is_read_no_further(tmp_path):
    # End to end the limit is 64 MiB and more: the copy that enforces it is checked on a stream past a small one.
    import io

    from answer_eval.llm.batch_jobs import _copy_within, download_limit

    assert download_limit(10_000) == 64 * 1024 * 1024 + 10_000 * 1024 * 1024
    endless = (b"x" * 65_536 for _ in range(10**6))  # 64 GiB, were it read to its end
    handle = io.BytesIO()
    _copy_within(endless, handle, 1_000_000)
    assert len(handle.getvalue()) == 1_000_000
