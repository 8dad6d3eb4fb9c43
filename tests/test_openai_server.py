"""The loopback OpenAI-compatible server, driven over real HTTP by Haystack's unpatched OpenAIChatGenerator."""

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from answer_eval.llm.rubric_prompts import correctness_messages
from tests.conftest import ROOT
from tests.openai_server import OpenAIServer, Reply, echo_n, replay_server_script, scripted, texts_for_n

JUDGE_DATA = ROOT / "benchmarks" / "data" / "nq301-dev-gpt4-judge.jsonl"


def generator(server: OpenAIServer, timeout: float = 5.0, **kwargs: Any) -> OpenAIChatGenerator:
    return OpenAIChatGenerator(
        api_key=Secret.from_token("test-key"),
        api_base_url=server.url,
        max_retries=0,
        timeout=timeout,
        **kwargs,
    )


def ask(server: OpenAIServer, text: str = "Is Paris the capital of France?", **kwargs: Any) -> list[ChatMessage]:
    return generator(server, **kwargs).run(messages=[ChatMessage.from_user(text)])["replies"]


def judge_prompt(question: str, prediction: str) -> str:
    return f"Question: {question}?\nCandidate answer: {prediction}\nIs the candidate correct? Answer yes or no."


def test_plain_reply_comes_back_with_finish_reason_and_usage() -> None:
    with OpenAIServer(lambda request: Reply(texts=["Yes."], prompt_tokens=12, completion_tokens=3)) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.url.endswith("/v1")
        replies = ask(server, model="gpt-4o-mini")
    assert [reply.text for reply in replies] == ["Yes."]
    meta = replies[0].meta
    assert meta["finish_reason"] == "stop"
    assert meta["model"] == "gpt-4o-mini"
    assert meta["usage"]["prompt_tokens"] == 12
    assert meta["usage"]["completion_tokens"] == 3
    assert meta["usage"]["total_tokens"] == 15
    assert server.requests == 1
    assert server.bodies[0]["model"] == "gpt-4o-mini"
    assert server.bodies[0]["messages"][-1]["role"] == "user"


def test_plain_string_script_and_derived_texts() -> None:
    with OpenAIServer(lambda request: "No.") as server:
        assert [reply.text for reply in ask(server)] == ["No."]
    with OpenAIServer(lambda request: Reply()) as server:  # texts=None echoes the last user message
        assert [reply.text for reply in ask(server, "echo me")] == ["echo me"]


def test_n_choices_from_texts_for_n() -> None:
    with OpenAIServer(lambda request: texts_for_n(request, lambda i: f"answer {i}")) as server:
        replies = ask(server, generation_kwargs={"n": 3})
    assert [reply.text for reply in replies] == ["answer 0", "answer 1", "answer 2"]
    assert [reply.meta["index"] for reply in replies] == [0, 1, 2]
    assert replies[0].meta["usage"]["completion_tokens"] == 15  # 5 per choice
    assert server.bodies[0]["n"] == 3


def test_echo_n_honours_n_but_a_single_string_ignores_it() -> None:
    with OpenAIServer(echo_n("yes")) as server:
        assert [reply.text for reply in ask(server, generation_kwargs={"n": 2})] == ["yes", "yes"]
    with OpenAIServer(lambda request: "only one") as server:  # a server that ignores n
        assert [reply.text for reply in ask(server, generation_kwargs={"n": 3})] == ["only one"]


def test_finish_reason_length_surfaces_in_meta() -> None:
    with OpenAIServer(lambda request: Reply(texts=["Ye"], finish_reason="length")) as server:
        replies = ask(server)
    assert replies[0].text == "Ye"
    assert replies[0].meta["finish_reason"] == "length"


def test_status_429_raises_rate_limit_error() -> None:
    with OpenAIServer(lambda request: Reply(status=429, message="slow down", headers={"Retry-After": "1"})) as server:
        with pytest.raises(openai.RateLimitError) as caught:
            ask(server)
        assert server.requests == 1  # max_retries=0: no retry
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "1"
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["message"] == "slow down"
    assert body["type"] == "rate_limit_error"


def test_status_500_raises_internal_server_error() -> None:
    with OpenAIServer(lambda request: Reply(status=500)) as server, pytest.raises(openai.InternalServerError) as caught:
        ask(server)
    assert caught.value.status_code == 500


def test_script_exception_is_a_500_and_the_server_keeps_serving() -> None:
    def script(request: dict[str, Any]) -> str:
        if "boom" in request["messages"][-1]["content"]:
            raise RuntimeError("script failed")
        return "fine"

    with OpenAIServer(script) as server:
        with pytest.raises(openai.InternalServerError, match="script failed"):
            ask(server, "boom")
        assert [reply.text for reply in ask(server, "calm")] == ["fine"]
        assert server.requests == 2


def test_delay_past_timeout_raises_api_timeout_error_quickly() -> None:
    started = time.monotonic()
    with OpenAIServer(lambda request: Reply(texts=["late"], delay=5.0)) as server:
        with pytest.raises(openai.APITimeoutError):
            ask(server, timeout=0.5)
        assert server.in_flight == 1  # the handler is still sleeping when the client gives up
    assert time.monotonic() - started < 2.0  # stopping wakes the sleeping handler


def test_a_trickling_reply_passes_a_read_timeout_shorter_than_the_whole_reply() -> None:
    with OpenAIServer(lambda request: Reply(texts=["slowly"], trickle=0.01)) as server:
        started = time.monotonic()
        replies = ask(server, timeout=0.5)  # no read waits 0.5 s; the whole body takes longer
        took = time.monotonic() - started
    assert [reply.text for reply in replies] == ["slowly"]
    assert took > 0.5


def _raw(server: OpenAIServer) -> tuple[str, bytes]:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(f"{server.url}/chat/completions", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read()


def test_misbehaviours_a_stream_a_content_type_a_raw_body_and_a_refusal_field() -> None:
    with OpenAIServer(lambda request: Reply(texts=["streamed"], sse=True)) as server:
        kind, data = _raw(server)
    assert kind == "text/event-stream"
    events = [line.removeprefix("data: ") for line in data.decode().split("\n\n") if line]
    assert events[-1] == "[DONE]"
    assert json.loads(events[0])["choices"][0]["delta"]["content"] == "streamed"
    with OpenAIServer(lambda request: Reply(body=b"<html>sign in</html>", content_type="text/html")) as server:
        assert _raw(server) == ("text/html", b"<html>sign in</html>")
    with OpenAIServer(lambda request: Reply(texts=[None], refusal="I can't help with that.")) as server:
        message = json.loads(_raw(server)[1])["choices"][0]["message"]
        assert message == {"role": "assistant", "content": None, "refusal": "I can't help with that."}
        replies = ask(server)
    assert replies[0].text is None  # Haystack's generator does not pass the refusal on


def test_concurrent_requests_are_served_in_parallel() -> None:
    with OpenAIServer(lambda request: Reply(texts=["ok"], delay=0.3)) as server:
        shared = generator(server)
        shared.warm_up()
        barrier = threading.Barrier(4)
        texts: list[str] = []
        errors: list[BaseException] = []
        lock = threading.Lock()

        def call() -> None:
            barrier.wait(5)
            try:
                reply = shared.run(messages=[ChatMessage.from_user("hi")])["replies"][0]
            except BaseException as error:  # noqa: BLE001 - reported by the assertion below
                with lock:
                    errors.append(error)
                return
            with lock:
                texts.append(reply.text or "")

        threads = [threading.Thread(target=call) for _ in range(4)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        elapsed = time.monotonic() - started
        assert errors == []
        assert texts == ["ok"] * 4
        assert server.requests == 4
        assert server.max_in_flight == 4
        assert server.wait_idle()
        assert server.in_flight == 0
        assert elapsed < 1.2  # four 0.3 s replies overlapped rather than queued


def test_scripted_replies_in_order_then_repeat_the_last() -> None:
    with OpenAIServer(scripted(["first", Reply(status=429), "last"])) as server:
        assert ask(server)[0].text == "first"
        with pytest.raises(openai.RateLimitError):
            ask(server)
        assert ask(server)[0].text == "last"
        assert ask(server)[0].text == "last"
        assert server.requests == 4
        assert len(server.bodies) == 4


def test_models_endpoint_and_unknown_paths() -> None:
    with OpenAIServer() as server:
        with urllib.request.urlopen(f"{server.url}/models", timeout=5) as response:
            models = json.load(response)
        assert models["object"] == "list"
        assert len(models["data"]) == 1
        assert models["data"][0]["object"] == "model"
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(f"{server.url}/nowhere", timeout=5)
        assert caught.value.code == 404
        assert json.load(caught.value)["error"]["type"] == "not_found_error"
        caught.value.close()
        client = openai.OpenAI(api_key="test-key", base_url=server.url, max_retries=0, timeout=5)
        assert [model.id for model in client.models.list()] == [OpenAIServer.MODEL]
        client.close()


def test_replay_script_picks_the_matching_row() -> None:
    rows = [
        {"question": "who wrote hamlet", "prediction": "Shakespeare", "gpt4_reply": "Yes, short."},
        {"question": "who wrote hamlet", "prediction": "William Shakespeare", "gpt4_reply": "Yes, full name."},
        {"question": "who wrote hamlet", "prediction": "Marlowe", "gpt4_reply": "No."},
        {"question": "who painted the mona lisa?", "prediction": "Shakespeare", "gpt4_reply": "No, da Vinci."},
    ]
    with OpenAIServer(replay_server_script(rows, "gpt4_reply")) as server:
        judge = generator(server)

        def grade(question: str, prediction: str) -> str | None:
            return judge.run(messages=[ChatMessage.from_user(judge_prompt(question, prediction))])["replies"][0].text

        assert grade("who wrote hamlet", "William Shakespeare") == "Yes, full name."  # longest prediction wins
        assert grade("who wrote hamlet", "Shakespeare") == "Yes, short."
        assert grade("who wrote hamlet", "Marlowe") == "No."
        assert grade("who painted the mona lisa", "Shakespeare") == "No, da Vinci."  # "?" on the row, not the prompt
        with pytest.raises(openai.BadRequestError, match="no recorded row"):
            grade("who wrote hamlet", "Bacon")


def escalation_prompt(question: str, answers: list[str], prediction: str) -> str:
    """The user message of the package's escalated correctness check (it has a <Candidate> block)."""
    roles = dict(correctness_messages(question, answers, prediction))
    return roles["user"]


def test_replay_script_prefers_the_exact_candidate_line() -> None:
    # "Asha Bhosle" is both a recorded prediction and the acceptable answer, so it occurs in every
    # request about the question; matched anywhere, it (the longest) would answer them all.
    question, golds = "who sang the song in the film", ["Asha Bhosle"]
    rows = [
        {"question": question, "prediction": "Asha Bhosle", "gpt4_reply": "Yes, it is the answer."},
        {"question": question, "prediction": "Lata Mangeshkar", "gpt4_reply": "No, her sister."},
        {"question": question, "prediction": "Bhosle", "gpt4_reply": "Yes, the surname."},
        {"question": question + " in 1970", "prediction": "Bhosle", "gpt4_reply": "Yes, in 1970."},
        {"question": "who sang the other song", "prediction": "Lata Mangeshkar", "gpt4_reply": "Yes, the other one."},
    ]
    with OpenAIServer(replay_server_script(rows, "gpt4_reply")) as server:
        judge = generator(server)

        def grade(text: str) -> str | None:
            return judge.run(messages=[ChatMessage.from_user(text)])["replies"][0].text

        assert grade(escalation_prompt(question, golds, "Lata Mangeshkar")) == "No, her sister."
        assert grade(escalation_prompt(question, golds, "Bhosle")) == "Yes, the surname."
        assert grade(escalation_prompt(question, golds, "Asha Bhosle")) == "Yes, it is the answer."
        assert grade(escalation_prompt(question + " in 1970", golds, "Bhosle")) == "Yes, in 1970."  # longest question
        assert grade(escalation_prompt("who sang the other song", golds, "Lata  Mangeshkar ")) == "Yes, the other one."
        # A Candidate block with no recorded prediction is a miss, though "Asha Bhosle" is in the message.
        with pytest.raises(openai.BadRequestError, match="no recorded row"):
            grade(escalation_prompt(question, golds, "Kishore Kumar"))
        # Without a Candidate block the substring rule applies, and the longest prediction in the message
        # wins, here the acceptable answer over the candidate: what the Candidate block is for.
        assert grade(judge_prompt(question, "Bhosle") + "\nAcceptable: Asha Bhosle") == "Yes, it is the answer."


def test_replay_script_gives_every_recorded_row_its_own_reply() -> None:
    # Through the escalation prompt, every row of the recorded file (81 of whose predictions are an
    # acceptable answer) gets its own reply; the rows that share a question and prediction share it.
    with JUDGE_DATA.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    assert sum(row["prediction"] in row["answers"] for row in rows) > 0
    script = replay_server_script(rows, "gpt4_reply")
    for row in rows:
        request = {
            "messages": [
                {"role": "user", "content": escalation_prompt(row["question"], row["answers"], row["prediction"])}
            ]
        }
        assert script(request) == row["gpt4_reply"]


def test_replay_script_on_the_recorded_judge_file() -> None:
    with JUDGE_DATA.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    assert {"question", "answers", "prediction", "human_acceptable", "gpt4_reply"} <= set(rows[0])
    script = replay_server_script(rows, "gpt4_reply")
    picks = rows[:: max(1, len(rows) // 40)]
    with OpenAIServer(script) as server:
        judge = generator(server)
        for row in picks:
            prompt = judge_prompt(row["question"], row["prediction"])
            reply = judge.run(messages=[ChatMessage.from_user(prompt)])["replies"][0].text
            # Several rows may match one prompt (a prediction inside a longer one): the longest prediction wins.
            matching = [
                other
                for other in rows
                if other["question"] == row["question"] and other["prediction"] in row["prediction"]
            ]
            best = max(matching, key=lambda other: len(other["prediction"]))
            assert reply == best["gpt4_reply"]
        assert server.requests == len(picks)
