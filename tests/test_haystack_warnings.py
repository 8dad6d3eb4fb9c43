"""Haystack's warning for each cut reply: counted for the run that caused it, not printed; shown as ever elsewhere.

Through the real ``OpenAIChatGenerator`` against the loopback test server, whose replies are cut
by the token limit (``finish_reason: length``): Haystack logs one warning a reply.
"""

from __future__ import annotations

import logging
import os
import threading

import pytest

from answer_eval.llm.calls import LOGGERS, ChatCaller
from tests.openai_server import GRADER_KEY_ENV, OpenAIServer, Reply
from tests.openai_server import grader_generator as generator

CUT = Reply(texts=['{"explanation": "cut short", "score": 3}'], finish_reason="length")


@pytest.fixture(autouse=True)
def _grader_key(monkeypatch):
    monkeypatch.setenv(GRADER_KEY_ENV, os.environ.get(GRADER_KEY_ENV, "sk-test"))


def cut_warnings(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if "truncated" in record.getMessage()]


def draw_all(caller: ChatCaller, prompts: int):
    async def work():
        return [await caller.draw([("user", f"grade {n}")], 1) for n in range(prompts)]

    return caller.run_sync(work)


def test_a_runs_cut_reply_warnings_are_counted_in_its_usage_not_logged(caplog):
    caplog.set_level(logging.WARNING)
    with OpenAIServer(lambda request: CUT) as server:
        caller = ChatCaller(generator(server), retries=0)
        drawn, usage = draw_all(caller, 3)
        assert server.requests == 3
    assert [one.samples[0].finish_reason for one in drawn] == ["length"] * 3
    assert usage.cut_reply_warnings == 3
    assert usage.as_dict()["cut_reply_warnings"] == 3
    assert cut_warnings(caplog) == []


def test_outside_a_run_the_generator_warns_as_ever_and_the_filter_is_gone(caplog):
    from haystack.dataclasses import ChatMessage

    caplog.set_level(logging.WARNING)
    with OpenAIServer(lambda request: CUT) as server:
        chat = generator(server)
        caller = ChatCaller(chat, retries=0)
        draw_all(caller, 1)
        assert all(not logging.getLogger(name).filters for name in LOGGERS)  # restored after the run
        chat.run(messages=[ChatMessage.from_user("grade")])  # the user's own call, not a run's
    assert len(cut_warnings(caplog)) == 1


def test_runs_in_two_threads_count_their_own_warnings_and_the_filter_goes_with_the_last(caplog):
    caplog.set_level(logging.WARNING)
    counts: dict[int, int] = {}
    start = threading.Barrier(2)
    with OpenAIServer(lambda request: Reply(texts=CUT.texts, finish_reason="length", delay=0.05)) as server:

        def run(prompts: int) -> None:
            caller = ChatCaller(generator(server), retries=0, concurrency=2)
            start.wait()
            counts[prompts] = draw_all(caller, prompts)[1].cut_reply_warnings

        threads = [threading.Thread(target=run, args=(prompts,)) for prompts in (2, 5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.requests == 7
    assert counts == {2: 2, 5: 5}
    assert cut_warnings(caplog) == []
    assert all(not logging.getLogger(name).filters for name in LOGGERS)
