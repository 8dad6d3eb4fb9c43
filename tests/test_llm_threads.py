"""The threads that run generator calls, the order items are begun in, and the command line's batch size.

A generator's sync ``run`` goes to a thread the caller keeps (:class:`CallThreads`), not to a new
thread per request; an abandoned call keeps its thread and is counted until it ends; items are
begun a few per request slot, in order, so the budget goes to the first; a command-line batch is
four rounds of ``--concurrency`` requests.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore
from answer_eval.evaluators.judge.judge_options import JudgeOptions
from answer_eval.evaluators.rubric_grading import RubricCore, RubricOptions
from answer_eval.llm.call_limits import Abandoned, CallThreads, DeadlinePassed, call_with_deadline
from answer_eval.llm.calls import ChatCaller
from haystack_integrations.components.evaluators.answer_eval import RubricEvaluator
from tests.openai_server import OpenAIServer, grader_generator

REPLY = json.dumps({"explanation": "fine", "score": 4})


def _wait(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_calls_one_after_another_run_in_one_kept_thread():
    threads = CallThreads()
    seen: list[threading.Thread] = []
    for _ in range(5):
        done = threading.Event()

        def task(done: threading.Event = done) -> None:
            seen.append(threading.current_thread())
            done.set()

        threads.submit(task)
        assert done.wait(10)
        assert _wait(lambda: threads._idle == 1)  # the thread is back, waiting for the next call
    assert len(set(seen)) == 1
    assert seen[0].daemon


def test_calls_at_once_each_get_a_thread_and_none_waits_for_another():
    threads = CallThreads()
    together = threading.Barrier(4, timeout=10)
    passed: list[bool] = []

    def task() -> None:
        together.wait()
        passed.append(True)

    for _ in range(4):
        threads.submit(task)
    assert _wait(lambda: len(passed) == 4)  # a barrier of 4: only passed if all four ran at once


def test_an_idle_thread_ends():
    threads = CallThreads(idle_seconds=0.05)
    seen: list[threading.Thread] = []
    threads.submit(lambda: seen.append(threading.current_thread()))
    assert _wait(lambda: bool(seen))
    seen[0].join(10)
    assert not seen[0].is_alive()
    after: list[threading.Thread] = []
    threads.submit(lambda: after.append(threading.current_thread()))  # a new thread serves the next call
    assert _wait(lambda: bool(after))
    assert after[0] is not seen[0]


def test_an_abandoned_call_keeps_its_thread_is_counted_until_it_ends_and_never_blocks_the_next():
    threads, abandoned, release = CallThreads(), Abandoned(), threading.Event()

    async def scenario() -> str:
        with pytest.raises(DeadlinePassed):
            await call_with_deadline(release.wait, 0.05, abandoned, threads)
        assert abandoned.running() == 1
        return str(await call_with_deadline(lambda: "next", 5.0, abandoned, threads))

    assert asyncio.run(scenario()) == "next"
    assert abandoned.running() == 1  # still stuck
    release.set()
    assert _wait(lambda: abandoned.running() == 0)


def test_a_call_that_ends_before_its_deadline_is_never_counted_abandoned():
    abandoned = Abandoned()
    assert asyncio.run(call_with_deadline(lambda: 7, 5.0, abandoned, CallThreads())) == 7
    assert abandoned.running() == 0


def test_a_components_run_sends_through_at_most_concurrency_threads():
    with OpenAIServer(lambda request: REPLY) as server:
        before = {thread for thread in threading.enumerate() if thread.name == "answer-eval-llm-call"}
        grader = RubricEvaluator(metric="coherence", chat_generator=grader_generator(server), concurrency=3)
        result = grader.run(predicted_answers=[f"answer {n}" for n in range(30)])
        kept = {thread for thread in threading.enumerate() if thread.name == "answer-eval-llm-call"} - before
        assert server.max_in_flight <= 3
    assert result["individual_scores"] == [4] * 30
    assert result["usage"]["calls"] == 30
    assert 1 <= len(kept) <= 3  # kept for the next run, one per request slot at most


def test_each_keeps_the_order_and_begins_a_few_items_per_slot():
    with OpenAIServer(lambda request: REPLY) as server:
        caller = ChatCaller(grader_generator(server), concurrency=3)
        begun: list[int] = []
        running = {"now": 0, "most": 0}

        async def work(item: int) -> int:
            begun.append(item)
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
            await asyncio.sleep(0.001 * (item % 4))
            running["now"] -= 1
            return item * 10

        results, _ = caller.run_sync(lambda: caller.each(work, list(range(40))))
        assert server.requests == 0
    assert results == [item * 10 for item in range(40)]
    assert begun[:6] == list(range(6))  # the first items first
    assert running["most"] == 6  # two per request slot, never every item at once


def test_the_budget_goes_to_the_first_items():
    with OpenAIServer(lambda request: REPLY) as server:
        grader = RubricEvaluator(metric="coherence", chat_generator=grader_generator(server), max_calls=5)
        result = grader.run(predicted_answers=[f"answer {n}" for n in range(12)])
        assert server.requests == 5
    assert result["individual_scores"] == [4] * 5 + [None] * 7
    assert result["failure_kinds"] == [None] * 5 + ["budget_stop"] * 7


@pytest.mark.parametrize(("concurrency", "rows"), [(1, 16), (4, 16), (5, 20), (16, 64)])
def test_a_command_line_batch_is_four_rounds_of_requests_at_least_16_rows(concurrency, rows):
    assert RubricCore(RubricOptions(model="grader", concurrency=concurrency)).batch_rows == rows
    judge = AnswerJudgeCore(JudgeOptions(escalate_model="grader", concurrency=concurrency))
    assert judge.batch_rows == rows
    assert AnswerJudgeCore(JudgeOptions(concurrency=concurrency)).batch_rows is None  # no LLM: the engine's batch
