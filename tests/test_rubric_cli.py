"""``answer-eval rubric`` end to end: the command line in process, a real OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from tests.cli_runs import cli, interrupted, partial_path, record_path, write_jsonl
from tests.openai_server import OpenAIServer, Reply, last_user_text

SECRET = "sk-cli-secret-never-written-5555"


def env_with_key() -> dict[str, str]:
    return {**os.environ, "ANSWER_EVAL_CLI_KEY": SECRET}


def rows(count: int) -> list[dict[str, str]]:
    return [
        {"question": f"What is {n} plus {n}?", "prediction": f"answer-{n}: {2 * n}", "reference": str(2 * n)}
        for n in range(count)
    ]


def grading_script(request):
    """Correct when the reply's number is in the reference block: a deterministic stand-in for a grader."""
    text = last_user_text(request)
    prediction = text.split("<Response>\n", 1)[1].split("\n</Response>", 1)[0]
    reference = text.split("<Reference response>\n", 1)[1].split("\n</Reference response>", 1)[0]
    right = prediction.endswith(" " + reference)
    return json.dumps({"explanation": "compared with the reference", "score": int(right)})


def asked_predictions(server: OpenAIServer) -> Counter[str]:
    return Counter(last_user_text(body).split("<Response>\n", 1)[1].split("\n", 1)[0] for body in server.bodies)


def rubric_args(source, server, *more):
    return (
        "rubric",
        source,
        "--metric",
        "question_answering_correctness",
        "--api-base-url",
        server.url,
        "--model",
        "grader",
        "--api-key-env",
        "ANSWER_EVAL_CLI_KEY",
        "--no-progress",
        *more,
    )


def test_rubric_grades_a_file_never_writes_the_key_and_a_cached_rerun_costs_nothing(tmp_path):
    data = rows(6)
    data[2]["prediction"] = "answer-2: 5"
    source = write_jsonl(tmp_path / "answers.jsonl", data)
    output, cache = tmp_path / "graded.jsonl", tmp_path / "cache.jsonl"
    with OpenAIServer(grading_script) as server:  # one server for both runs: the cache is keyed on its URL too
        done = cli(
            *rubric_args(source, server, "--output", output, "--cache", cache, "--format", "json"), env=env_with_key()
        )
        rerun = rubric_args(source, server, "--output", tmp_path / "again.jsonl", "--cache", cache)
        again = cli(*rerun, env=env_with_key())
        assert server.requests == 6  # the rerun asked nothing
    assert done.returncode == again.returncode == 0, done.stderr + again.stderr
    summary = json.loads(done.stdout)
    assert summary["items"] == summary["graded"] == 6
    assert summary["mean_score"] == pytest.approx(5 / 6)
    assert summary["calls"] == 6
    assert summary["signature"].startswith("rubric|metric:question_answering_correctness|rubric:")
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["score"] for row in graded] == [1, 1, 0, 1, 1, 1]
    assert all(row["explanation"] == "compared with the reference" for row in graded)
    for text in (done.stdout, done.stderr, output.read_text(), cache.read_text()):
        assert SECRET not in text
    regraded = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert [row["score"] for row in regraded] == [row["score"] for row in graded]
    assert [row["calls"] for row in regraded] == [0] * 6


@pytest.mark.slow
@pytest.mark.subprocess
def test_resume_after_an_interrupt_does_not_repeat_answered_calls(tmp_path):
    count = 60
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output = tmp_path / "graded.jsonl"
    slow = lambda request: Reply(texts=[grading_script(request)], delay=0.05)  # noqa: E731 - a one-line script
    with OpenAIServer(slow) as server:
        args = rubric_args(source, server, "--output", output, "--checkpoint-seconds", "0", "--concurrency", "1")
        kept = interrupted(*args, "--api-key-env", "NO_SUCH_KEY_VARIABLE", output=output)
        assert 0 < kept < count
        first_run = asked_predictions(server)
        resumed = cli(*args, "--resume")
        assert resumed.returncode == 0, resumed.stderr
        every = asked_predictions(server)
    assert max(every.values()) == 1  # no answer was asked twice
    assert len(every) == count
    assert len(first_run) >= kept
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["prediction"] for row in graded] == [row["prediction"] for row in rows(count)]
    assert all(row["score"] == 1 for row in graded)
    assert not record_path(output).exists()


PAIR_ROWS = [
    {"question": "Where is France?", "context": "France is in Western Europe.", "prediction": f"In Europe ({n})."}
    | {"baseline": "France is a country in Western Europe."}
    for n in range(3)
]


def first_is_better(request: dict) -> str:
    """A grader with position bias: the answer shown first always wins."""
    return json.dumps({"explanation": "the first is better", "choice": "A"})


def test_pairwise_on_the_command_line_cancels_position_bias(tmp_path):
    source = write_jsonl(tmp_path / "pairs.jsonl", PAIR_ROWS)
    with OpenAIServer(first_is_better) as server:
        done = cli(
            "rubric",
            source,
            "--pairwise",
            "--api-base-url",
            server.url,
            "--model",
            "grader",
            "--format",
            "json",
            "--no-progress",
            "--output",
            tmp_path / "out.jsonl",
        )
        assert server.requests == 6
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ties"] == 3
    assert summary["position_flips"] == 3
    assert summary["win_rate"] == 0.5


def test_a_budget_that_pays_for_one_order_of_a_pair_leaves_it_budget_stop_not_decided_by_that_order(tmp_path):
    source = write_jsonl(tmp_path / "pairs.jsonl", PAIR_ROWS)
    output = tmp_path / "out.jsonl"
    with OpenAIServer(first_is_better) as server:
        done = cli(
            *("rubric", source, "--pairwise", "--api-base-url", server.url, "--model", "grader", "--no-progress"),
            *("--max-calls", "5", "--concurrency", "1", "--format", "json", "--output", output),
        )
        assert server.requests == 5  # two pairs both ways, the third asked one way when the budget ran out
    assert done.returncode == 0, done.stderr
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    # Asked with the candidate first only, the biased grader would have made the candidate win the third pair.
    assert [row["choice"] for row in graded] == ["TIE", "TIE", None]
    assert graded[2]["failure_kind"] == "budget_stop"
    assert graded[2]["explanation"] == "the budget of 5 calls is spent before the pair was asked in both orders"
    summary = json.loads(done.stdout)
    assert summary["position_flips"] == 2
    assert summary["win_rate"] == 0.5


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (("--jobs", "2"), "unrecognized arguments: --jobs 2"),  # not offered: the grader runs in one process
        (("--engine", "dask", "--cache", "c.jsonl"), "--engine dask: the reply cache (cache_path, --cache)"),
        (("--samples", "0"), "--samples must be a positive integer"),
    ],
)
def test_options_that_cannot_work_are_refused_with_exit_2(tmp_path, more, message):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_script) as server:
        done = cli(*rubric_args(source, server, *more), env=env_with_key())
        assert server.requests == 0
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_model_and_a_row_without_the_reference_are_named(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", [{"question": "q", "prediction": "p"}])
    no_model = cli("rubric", source, "--api-base-url", "http://127.0.0.1:9/v1", "--no-progress")
    assert no_model.returncode == 2
    assert "--model is required" in no_model.stderr
    with OpenAIServer(grading_script) as server:
        done = cli(*rubric_args(source, server), env=env_with_key())
        assert server.requests == 0
    assert done.returncode == 2
    assert "answers.jsonl:1: missing field 'reference' or 'answers'" in done.stderr


def test_a_file_is_graded_four_rounds_of_concurrency_at_a_time_so_the_flag_is_honoured(tmp_path):
    # A batch is max(16, 4 x --concurrency) rows: at --concurrency 64, 256 rows, so 64 requests can be in flight
    # (a batch of 16 rows held it to 16); an interrupt holds at most one batch of paid replies.
    source = write_jsonl(tmp_path / "answers.jsonl", rows(300))
    slow = lambda request: Reply(texts=[grading_script(request)], delay=0.3)  # noqa: E731
    with OpenAIServer(slow) as server:
        done = cli(
            *rubric_args(source, server, "--concurrency", "64", "--output", tmp_path / "o.jsonl"), env=env_with_key()
        )
        assert 16 < server.max_in_flight <= 64
    assert done.returncode == 0, done.stderr


def test_a_key_refused_mid_run_stops_with_exit_2_keeping_the_rows_graded_for_resume(tmp_path):
    count = 40
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output = tmp_path / "graded.jsonl"
    first_run = {"on": True}

    def script(request):  # in the first run, the key is revoked after 20 answers
        if first_run["on"] and len(server.bodies) > 20:
            return Reply(status=401, message="invalid key")
        return grading_script(request)

    with OpenAIServer(script) as server:
        args = rubric_args(source, server, "--output", output, "--concurrency", "1")
        done = cli(*args, env=env_with_key())
        assert done.returncode == 2
        assert "the grader refused the request" in done.stderr
        assert "ANSWER_EVAL_CLI_KEY" in done.stderr
        assert "--resume" in done.stderr
        assert SECRET not in done.stderr
        assert not output.exists()
        kept = partial_path(output).read_text().splitlines()
        # The first batch, and the 4 rows of the second graded before the refusal (they were lost with the batch).
        assert len(kept) == 20
        first_run["on"] = False
        resumed = cli(*args, "--resume", env=env_with_key())
        assert resumed.returncode == 0, resumed.stderr
        asked = asked_predictions(server)
    assert all(asked[json.loads(line)["prediction"]] == 1 for line in kept)  # the rows kept were not paid again
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["prediction"] for row in graded] == [row["prediction"] for row in rows(count)]
    assert all(row["score"] == 1 for row in graded)


def test_a_reply_quoting_the_key_is_redacted_from_the_output_checkpoint_and_cache(tmp_path):
    count = 40
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output, cache = tmp_path / "graded.jsonl", tmp_path / "cache.jsonl"
    other = "sk-someone-elses-token-0000"
    first_run = {"on": True}

    def script(request):  # a grader that quotes the request's headers; the key is revoked after 20 replies
        if first_run["on"] and len(server.bodies) > 20:
            return Reply(status=401, message=f"invalid key {SECRET}")
        quoted = f"Your request carried Authorization: Bearer {SECRET} and proxy token Bearer {other}."
        return json.dumps({"explanation": quoted, "score": 1})

    with OpenAIServer(script) as server:
        args = rubric_args(source, server, "--output", output, "--cache", cache, "--concurrency", "1")
        done = cli(*args, env=env_with_key())
        assert done.returncode == 2, done.stderr
        kept = [partial_path(output), record_path(output), cache]
        assert len(partial_path(output).read_text().splitlines()) == 20  # every row graded before the refusal
        written = {path.name: path.read_text() for path in kept}
        first_run["on"] = False
        resumed = cli(*args, "--resume", "--format", "json", env=env_with_key())
        assert resumed.returncode == 0, resumed.stderr
    for text in [*written.values(), output.read_text(), cache.read_text(), done.stderr, resumed.stdout, resumed.stderr]:
        assert SECRET not in text
        assert other not in text
    explanations = [json.loads(line)["explanation"] for line in output.read_text().splitlines()]
    assert explanations[0] == "Your request carried Authorization: Bearer *** and proxy token Bearer ***."


@pytest.mark.parametrize("value", [SECRET, "sk-proj-Abc123_def456-ghi789", "key with spaces", "9STARTS_WITH_DIGIT"])
def test_a_key_given_as_api_key_env_is_refused_without_being_shown(tmp_path, value):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_script) as server:
        done = cli(*rubric_args(source, server, "--api-key-env", value, "--output", tmp_path / "o.jsonl"))
        assert server.requests == 0
    assert done.returncode == 2
    assert "--api-key-env must name an environment variable" in done.stderr
    assert value not in done.stderr + done.stdout
    assert not (tmp_path / "o.jsonl").exists()
    assert not record_path(tmp_path / "o.jsonl").exists()


def refused_after(graded: int, message: str):
    """A server script: the first ``graded`` requests are graded, then the key is refused (HTTP 401).

    A first batch graded is kept with its checkpoint record when the key is refused, so what the
    record holds can be read.
    """
    sent = Counter()

    def script(request):
        sent["requests"] += 1
        return grading_script(request) if sent["requests"] <= graded else Reply(status=401, message=message)

    return script


def test_a_refused_key_names_the_variable_only_when_it_is_set(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(20))  # a batch of 16 rows graded, then a 401
    unset = "Gsk_live_0123456789abcdefABCDEF"  # a key shaped like a variable's name, given by mistake
    args = ("--concurrency", "1")
    with OpenAIServer(refused_after(16, "Incorrect API key provided")) as server:
        mistaken = cli(*rubric_args(source, server, "--api-key-env", unset, *args, "--output", tmp_path / "a.jsonl"))
    with OpenAIServer(refused_after(16, "Incorrect API key provided")) as server:
        named = cli(*rubric_args(source, server, *args, "--output", tmp_path / "b.jsonl"), env=env_with_key())
    assert mistaken.returncode == named.returncode == 2
    assert unset not in mistaken.stderr
    assert "the variable it names is not set" in mistaken.stderr
    assert unset not in record_path(tmp_path / "a.jsonl").read_text()
    assert "the key in $ANSWER_EVAL_CLI_KEY" in named.stderr


@pytest.mark.slow
@pytest.mark.subprocess
def test_max_calls_bounds_the_whole_file_across_resume(tmp_path):
    # Batches of 16 rows: stopped after one or two batches (16 or 32 calls), the budget is not spent yet.
    count, budget = 100, 50
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output = tmp_path / "graded.jsonl"
    slow = lambda request: Reply(texts=[grading_script(request)], delay=0.05)  # noqa: E731 - a one-line script
    with OpenAIServer(slow) as server:
        args = rubric_args(source, server, "--output", output, "--max-calls", str(budget), "--concurrency", "1")
        interrupted(*args, "--checkpoint-seconds", "0", "--api-key-env", "NO_SUCH_KEY_VARIABLE", output=output)
        first = server.requests
        assert 0 < first < budget
        resumed = cli(*args, "--resume", "--format", "json")
        assert resumed.returncode == 0, resumed.stderr
        assert server.requests == budget  # not 30 more after the resume
    summary = json.loads(resumed.stdout)
    assert summary["calls"] == budget
    assert summary["failure_counts"]["budget_stop"] == count - budget
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["failure_kind"] for row in graded] == [None] * budget + ["budget_stop"] * (count - budget)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(texts=['{"score": 1}'], sse=True),
        Reply(body=b"<html><body>Sign in to continue</body></html>", content_type="text/html"),
        Reply(texts=['{"score": 1}'], sse=True, content_type="application/json"),
    ],
    ids=["server-sent events", "a web page", "events labelled as JSON"],
)
def test_a_server_that_answers_with_a_stream_or_a_web_page_stops_the_run_saying_so(tmp_path, reply):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(20))
    with OpenAIServer(lambda request: reply) as server:
        done = cli(*rubric_args(source, server, "--output", tmp_path / "o.jsonl"), env=env_with_key())
        assert server.requests <= 4  # the requests in flight, no more
    assert done.returncode == 2
    assert "answered a chat completion request with something that is not a JSON chat completion" in done.stderr
    assert "it usually ends in /v1" in done.stderr
    assert "AssertionError" not in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--timeout", "nan"),
        ("--timeout", "inf"),
        ("--timeout", "0"),
        ("--timeout", "-1"),
        ("--timeout", "1e12"),
        ("--temperature", "nan"),
        ("--max-retries", "-1"),
        ("--max-calls", "-1"),
        ("--concurrency", "0"),
    ],
)
def test_non_finite_and_non_positive_limits_are_refused_before_any_request(tmp_path, flag, value):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_script) as server:
        done = cli(*rubric_args(source, server, flag, value, "--output", tmp_path / "o.jsonl"), env=env_with_key())
        assert server.requests == 0
    assert done.returncode == 2
    assert flag in done.stderr
    assert "Traceback" not in done.stderr


def test_a_password_in_the_server_url_is_never_printed_or_saved(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(20))  # a batch of 16 rows graded, then a 401
    output = tmp_path / "graded.jsonl"
    password = "url-password-9999"
    with OpenAIServer(refused_after(16, f"bad password {password}")) as server:
        url = server.url.replace("http://", f"http://grader:{password}@")
        args = ("--api-base-url", url, "--concurrency", "1", "--output", output, "--format", "json")
        done = cli(*rubric_args(source, server, *args))
        # A key in the query string: OpenAI's client cannot reach the server with it (404 at once), and says so unseen.
        queried = cli(*rubric_args(source, server, "--api-base-url", f"{server.url}?api-key=query-key-8888"))
    assert done.returncode == queried.returncode == 2
    assert record_path(output).exists()
    for text in (done.stdout, done.stderr, record_path(output).read_text()):
        assert password not in text
    assert "grader:***@" in record_path(output).read_text()  # still tells servers apart
    assert "api-key=***" in queried.stderr
    assert "query-key-8888" not in queried.stdout + queried.stderr


def test_a_fifo_or_a_huge_file_as_the_rubric_is_refused_without_waiting(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(1))
    fifo = tmp_path / "rubric.json"
    os.mkfifo(fifo)
    with OpenAIServer(grading_script) as server:
        args = ("rubric", source, "--api-base-url", server.url, "--model", "grader", "--no-progress", "--rubric")
        waited = cli(*args, fifo, timeout=60)
        endless = cli(*args, "/dev/zero", timeout=60)
        assert server.requests == 0
    assert waited.returncode == endless.returncode == 2
    assert "--rubric is not a regular file" in waited.stderr
    assert "--rubric is not a regular file" in endless.stderr


def test_a_rubric_file_that_is_not_json_or_holds_a_huge_number_is_named(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(1))
    huge = tmp_path / "huge.json"
    huge.write_text('{"name": "x", "scale": [1, ' + "9" * 5000 + "]}", encoding="utf-8")
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x",', encoding="utf-8")
    with OpenAIServer(grading_script) as server:
        args = ("rubric", source, "--api-base-url", server.url, "--model", "grader", "--no-progress", "--rubric")
        done = {path: cli(*args, path) for path in (huge, broken)}
        assert server.requests == 0
    for path, said in ((huge, "a number has more than 4300 digits"), (broken, "Expecting property name")):
        assert done[path].returncode == 2
        assert f"--rubric {path} is not valid JSON: {said}" in done[path].stderr
        assert "set_int_max_str_digits" not in done[path].stderr


def test_a_rubric_scale_value_no_reply_can_state_is_refused_before_any_call(tmp_path):
    # A value of 401 digits made the mean of the grades an OverflowError (exit 1) after the calls were paid for.
    source = write_jsonl(tmp_path / "answers.jsonl", rows(1))
    rubric = {
        "name": "huge",
        "description": "a scale no reply can state",
        "criteria": [["right", "the answer is right"]],
        "scale": [[0, "wrong"], [10**400, "right"]],
        "inputs": ["prediction"],
    }
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps(rubric), encoding="utf-8")
    with OpenAIServer(grading_script) as server:
        args = ("rubric", source, "--api-base-url", server.url, "--model", "grader", "--no-progress", "--rubric")
        done = cli(*args, path, env={**os.environ, "OPENAI_API_KEY": "k"}, timeout=60)
        assert server.requests == 0
    assert done.returncode == 2, done.stderr
    assert "scale values must be between -999,999,999 and 999,999,999" in done.stderr
    assert "--rubric" in done.stderr
    assert "0" * 40 not in done.stderr  # the value is not echoed, 401 digits long
