"""A deadline on the whole request: a reply that trickles in (one byte every half second) never holds a run.

An HTTP client's timeout bounds each wait for bytes, so a trickling reply passes it forever. These
tests make the loopback server trickle, over real HTTP, and check that the command line and the
components give up at the deadline, that a second Ctrl-C ends the command line at once keeping
its last checkpoint record, and that a call left behind never keeps the process alive.

A server that answers one request at a time (a local llama.cpp) is not one that trickles: the
requests queue, and those past their deadline waited their turn. The tests make the loopback
server serve one at a time and check that the run keeps every item it graded, lowers its
concurrency, and says the server queues, naming what to change.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from haystack import component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.generators import ServerMisbehaves
from haystack_integrations.components.evaluators.answer_eval import RubricEvaluator
from tests.cli_runs import cli, partial_path, record_path, start_cli, wait_for_record, write_jsonl
from tests.conftest import ROOT
from tests.openai_server import OpenAIServer, Reply, last_user_text

os.environ.setdefault("ANSWER_EVAL_TEST_GRADER_KEY", "test-key")
REPLY = json.dumps({"explanation": "reasoned", "score": 1})
TRICKLE = Reply(texts=[REPLY], trickle=0.5)  # a byte every 0.5 s: minutes for the whole completion
ITEM = {"predicted_answers": ["Paris."], "questions": ["Capital of France?"], "contexts": ["Paris is."]}


def rows(count: int) -> list[dict[str, str]]:
    return [{"question": f"q{n}?", "context": "c", "prediction": f"answer {n}"} for n in range(count)]


def rubric_args(source, server, *more):
    return ("rubric", source, "--api-base-url", server.url, "--model", "grader", "--no-progress", *more)


def test_timeout_bounds_a_reply_that_trickles_in_on_the_command_line(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    output = tmp_path / "out.jsonl"
    with OpenAIServer(lambda request: TRICKLE) as server:
        started = time.monotonic()
        args = rubric_args(source, server, "--timeout", "1", "--max-retries", "0", "--output", output)
        done = cli(*args, "--format", "json", timeout=60)
        took = time.monotonic() - started
        assert server.requests == 2
    assert done.returncode == 3, done.stderr  # no item graded, no request answered in time: nothing to use
    assert "or none within --timeout" in done.stderr
    assert took < 50  # each reply would take minutes
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["failure_kind"] for row in graded] == ["error", "error"]
    assert all("no complete reply within 1 s" in row["explanation"] for row in graded)
    # Nothing else was answered either: not a queue; said as what it may be, and what to do.
    assert all("no other request was answered meanwhile" in row["explanation"] for row in graded)
    assert all("a byte at a time" in row["explanation"] for row in graded)
    assert "queues" not in done.stderr


def test_a_server_that_holds_every_request_open_stops_the_run_naming_it(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(40))
    output = tmp_path / "out.jsonl"
    with OpenAIServer(lambda request: TRICKLE) as server:
        done = cli(*rubric_args(source, server, "--timeout", "1", "--output", output), timeout=60)
        assert server.requests <= 12  # no more than 2 x concurrency left open, plus the one round in flight
    assert done.returncode == 2, done.stderr
    assert "still open after their deadline of 1 s" in done.stderr
    assert "a byte at a time" in done.stderr
    assert "queues" not in done.stderr
    # no reply came back, so no row was graded: there is nothing to keep and nothing to resume
    assert not output.exists()
    assert "--resume" not in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_second_ctrl_c_ends_a_trickling_run_at_once_keeping_the_last_record(tmp_path):
    count = 40
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output = tmp_path / "out.jsonl"
    fast = {"left": 16}  # the first batch is answered at once, then every reply trickles
    lock = threading.Lock()

    def script(request):
        with lock:
            fast["left"] -= 1
            return REPLY if fast["left"] >= 0 else TRICKLE

    with OpenAIServer(script) as server:
        args = rubric_args(source, server, "--timeout", "120", "--output", output)
        process = start_cli(*args)
        record = wait_for_record(process, output)
        while server.requests < 20:  # the second batch is in flight, trickling
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            pytest.fail("a second SIGINT did not end the run")
        assert time.monotonic() - started < 25
        assert process.returncode == 130, stderr
        kept = partial_path(output).read_text().splitlines()
        assert (
            len(kept)
            == 16
            == json.loads(record_path(output).read_text())["position"]["rows"]
            == record["position"]["rows"]
        )
        fast["left"] = 10**6  # the server recovers: --resume finishes without asking the rows kept again
        before = server.requests
        resumed = cli(*args, "--resume")
        assert resumed.returncode == 0, resumed.stderr
        assert server.requests - before == count - 16
    assert len(output.read_text().splitlines()) == count


@component
class StuckChatGenerator:
    """A chat generator whose ``run`` never returns on its own (no timeout of its own to rely on)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], **kwargs: object) -> dict[str, list[ChatMessage]]:
        self.release.wait()
        return {"replies": [ChatMessage.from_assistant(REPLY)]}


def test_a_component_gives_up_at_its_timeout_whatever_the_generator():
    stuck = StuckChatGenerator()
    grader = RubricEvaluator(chat_generator=stuck, timeout=0.5, max_retries=1, retry_backoff=0.0)
    started = time.monotonic()
    result = grader.run(**ITEM)
    assert time.monotonic() - started < 20
    stuck.release.set()
    assert result["failure_kinds"] == ["error"]
    assert result["usage"]["calls"] == 2  # the first try and one retry, each given up at 0.5 s


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_component_over_a_trickling_server_uses_the_generators_timeout_and_the_process_exits(tmp_path):
    # In a process of its own: a call given up must neither hold the run nor keep the process alive.
    with OpenAIServer(lambda request: TRICKLE) as server:
        script = textwrap.dedent(
            f"""
            import json
            from haystack.components.generators.chat import OpenAIChatGenerator
            from haystack.utils import Secret
            from haystack_integrations.components.evaluators.answer_eval import RubricEvaluator

            chat = OpenAIChatGenerator(
                api_key=Secret.from_token("k"), api_base_url={server.url!r}, model="g", max_retries=0, timeout=1.0
            )
            result = RubricEvaluator(chat_generator=chat, max_retries=0).run(
                predicted_answers=["x"], questions=["q"], contexts=["c"]
            )
            print(json.dumps(result["failure_kinds"]))
            """
        )
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
        )
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == ["error"]
    assert took < 50  # the reply takes minutes; the process ends well before


def test_the_deadline_comes_from_the_generator_when_the_component_gives_none():
    chat = OpenAIChatGenerator(api_key=Secret.from_token("k"), api_base_url="http://127.0.0.1:9/v1", timeout=7.5)
    assert RubricEvaluator(chat_generator=chat)._evaluator.caller.timeout == 7.5
    assert RubricEvaluator(chat_generator=chat, timeout=3)._evaluator.caller.timeout == 3.0
    assert RubricEvaluator(chat_generator=StuckChatGenerator())._evaluator.caller.timeout == 600.0


QUEUED = Reply(texts=[REPLY], delay=0.4)  # one at a time, 0.4 s each: of 8 queued at once, 2 fit in a 1 s deadline


def judges(server: OpenAIServer) -> list[OpenAIChatGenerator]:
    """Two judges on one server, as a jury on one local llama.cpp server is (each read may wait 10 s)."""
    return [
        OpenAIChatGenerator(
            api_key=Secret.from_token("k"), api_base_url=server.url, model=model, max_retries=0, timeout=10.0
        )
        for model in ("judge-a", "judge-b")
    ]


def answers(count: int) -> dict[str, list[str]]:
    return {
        "predicted_answers": [f"answer {n}" for n in range(count)],
        "questions": ["Capital of France?"] * count,
        "contexts": ["Paris is."] * count,
    }


def test_a_jury_on_a_server_that_answers_one_request_at_a_time_returns_its_grades(caplog):
    # The run: two judges of concurrency 4 put 8 requests in one queue. It used to raise
    # ServerMisbehaves ("a byte at a time") and return nothing.
    with OpenAIServer(lambda request: QUEUED, one_at_a_time=True) as server:
        grader = RubricEvaluator(chat_generator=judges(server), timeout=1.0, retry_backoff=0.0)
        with caplog.at_level(logging.WARNING, logger="answer_eval.llm.calls"):
            result = grader.run(**answers(8))
    assert result["graded"] >= 1
    for kind, explanation in zip(result["failure_kinds"], result["explanations"], strict=True):
        assert kind is None or (kind == "error" and "it queues requests" in explanation), explanation
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "it queues requests" in said
    assert "Concurrency lowered from 4 to 2" in said
    assert "concurrency=2 (--concurrency) or a longer timeout (--timeout)" in said
    assert "a byte at a time" not in said


def test_the_items_a_queueing_server_did_not_answer_in_time_are_marked_and_the_rest_kept():
    with OpenAIServer(lambda request: QUEUED, one_at_a_time=True) as server:
        grader = RubricEvaluator(chat_generator=judges(server), timeout=1.0, max_retries=0)
        result = grader.run(**answers(8))
    kinds = result["failure_kinds"]
    # Of the first 8 requests (items 0-3, both judges) at most 2 are answered in time: some item has no grade.
    assert "error" in kinds
    assert result["graded"] >= 1
    for kind, score, explanation in zip(kinds, result["individual_scores"], result["explanations"], strict=True):
        if kind is None:
            assert score == 1
            # Graded by both judges, or by the one that was answered in time, saying so (a partial panel).
            assert explanation in ("reasoned", "(Graded by 1 of 2 judges; none from judge 1: error.) reasoned") or (
                explanation == "(Graded by 1 of 2 judges; none from judge 2: error.) reasoned"
            ), explanation
            continue
        assert score is None
        assert "no complete reply within 1 s" in explanation
        assert "while the server answered" in explanation
        assert "it queues requests" in explanation
        assert "a lower concurrency or a longer timeout" in explanation


def test_the_command_line_on_a_server_that_answers_one_request_at_a_time_writes_every_row(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(12))
    output = tmp_path / "out.jsonl"
    with OpenAIServer(lambda request: QUEUED, one_at_a_time=True) as server:
        done = cli(*rubric_args(source, server, "--timeout", "1", "--output", output))
    assert done.returncode == 0, done.stderr
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(graded) == 12
    assert any(row["failure_kind"] is None and row["score"] == 1 for row in graded)
    failed = [row for row in graded if row["failure_kind"] is not None]
    assert all("it queues requests" in row["explanation"] for row in failed)
    assert "Concurrency lowered from 4 to 2" in done.stderr
    assert "--concurrency" in done.stderr
    assert "ServerMisbehaves" not in done.stderr
    assert "a byte at a time" not in done.stderr


def test_a_component_keeps_the_items_answered_before_the_server_held_every_request_open(caplog):
    def script(request):
        # The first four answers get replies, the others are held, a byte at a time (by row, not by arrival:
        # two requests in flight may reach the server in either order).
        return REPLY if int(re.search(r"answer (\d+)", last_user_text(request)).group(1)) < 4 else TRICKLE

    with OpenAIServer(script) as server:
        chat = OpenAIChatGenerator(
            api_key=Secret.from_token("k"), api_base_url=server.url, model="g", max_retries=0, timeout=10.0
        )
        # A deadline of 2 s: a reply must not miss it on a busy machine (the four answered ones are the point).
        grader = RubricEvaluator(chat_generator=chat, timeout=2.0, max_retries=0, concurrency=2)
        with caplog.at_level(logging.WARNING, logger="answer_eval.llm.calls"):
            result = grader.run(**answers(10))  # it raised ServerMisbehaves, and the 4 grades were lost
    assert result["individual_scores"][:4] == [1, 1, 1, 1]
    assert result["failure_kinds"][4:] == ["error"] * 6
    stopped = [text for text in result["explanations"][4:] if text.startswith("not sent: the run stopped: ")]
    assert stopped
    assert all("still open after their deadline of 2 s" in text for text in stopped)
    assert all("a byte at a time" in text for text in stopped)
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "the items graded before are returned, the others are error" in said


def test_a_component_whose_server_holds_its_first_requests_open_still_raises():
    with OpenAIServer(lambda request: TRICKLE) as server:
        chat = OpenAIChatGenerator(
            api_key=Secret.from_token("k"), api_base_url=server.url, model="g", max_retries=0, timeout=10.0
        )
        grader = RubricEvaluator(chat_generator=chat, timeout=1.0, max_retries=0, concurrency=2)
        with pytest.raises(ServerMisbehaves, match="still open after their deadline of 1 s"):
            grader.run(**answers(6))  # nothing answered: nothing to keep, the stop is the run's outcome


def test_a_queued_request_the_generators_own_timeout_ends_is_seen_as_queued_too(caplog):
    # A deadline longer than the generator's read timeout: a queued request meets the read timeout first
    # (no byte for 0.5 s), as APITimeoutError; the server answered others meanwhile, so it queues.
    with OpenAIServer(lambda request: Reply(texts=[REPLY], delay=0.2), one_at_a_time=True) as server:
        chat = OpenAIChatGenerator(
            api_key=Secret.from_token("k"), api_base_url=server.url, model="g", max_retries=0, timeout=0.5
        )
        grader = RubricEvaluator(chat_generator=chat, timeout=30.0, max_retries=0, concurrency=8)
        with caplog.at_level(logging.WARNING, logger="answer_eval.llm.calls"):
            result = grader.run(**answers(8))
    failed = [text for kind, text in zip(result["failure_kinds"], result["explanations"], strict=True) if kind]
    assert failed  # 8 queued at once, 0.2 s each: those past the second wait over 0.5 s for their first byte
    assert all("APITimeoutError" in text for text in failed)
    assert all("it queues requests" in text for text in failed)
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "Concurrency lowered from 8 to 4" in said


def test_the_command_line_keeps_the_rows_answered_before_the_server_held_every_request_open(tmp_path):
    count, fast = 20, 6  # one batch of 16 rows (4 x --concurrency 2, at least 16): 6 answered, then held
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output = tmp_path / "out.jsonl"
    recovered = threading.Event()

    def script(request):
        # By row, not by arrival: two requests in flight may reach the server in either order.
        row = int(re.search(r"answer (\d+)", last_user_text(request)).group(1))
        return REPLY if row < fast or recovered.is_set() else TRICKLE

    with OpenAIServer(script) as server:
        # A deadline of 2 s: an answered reply must not miss it on a busy machine.
        args = rubric_args(source, server, "--timeout", "2", "--max-retries", "0", "--concurrency", "2")
        done = cli(*args, "--output", output)
        assert done.returncode == 2, done.stderr
        assert "still open after their deadline of 2 s" in done.stderr
        # The 6 rows answered in the batch it stopped in are kept (they were thrown away with the batch).
        assert json.loads(record_path(output).read_text())["position"]["rows"] == fast
        assert len(partial_path(output).read_text().splitlines()) == fast
        recovered.set()  # the server recovers (restarted: the requests it held end)
        server.drop_connections()
        before = server.requests
        resumed = cli(*args, "--output", output, "--resume")
        assert resumed.returncode == 0, resumed.stderr
        assert server.requests - before == count - fast  # --resume asks only the rows not kept
    assert len(output.read_text().splitlines()) == count


def test_graders_of_one_server_named_by_url_share_its_queue_bookkeeping():
    # A generator that keeps its server in `url` (Ollama's): two judges on it share what tells queueing.
    class UrlGenerator:
        def __init__(self, url: str, model: str) -> None:
            self.url, self.model = url, model

        def run(self, messages, generation_kwargs=None):  # never called: no request is sent here
            raise AssertionError("not sent")

    one, two = (ChatCaller(UrlGenerator("http://127.0.0.1:11434", model)) for model in ("a", "b"))
    other = ChatCaller(UrlGenerator("http://127.0.0.1:11435", "a"))
    assert one.abandoned is two.abandoned
    assert one.abandoned is not other.abandoned
