"""Structured output (``structured``): the rubric graders ask for a JSON schema where the server takes one.

Every request goes through Haystack's real OpenAIChatGenerator over HTTP to the loopback test
server, whose script accepts or refuses the ``response_format`` as OpenAI, vLLM or llama.cpp
would. The grader hands OpenAI's generator the ``response_format`` in ``extra_body`` (the SDK's
``create`` endpoint); a generator that wraps it gets a ``response_format`` option, which Haystack
sends through the SDK's ``parse`` endpoint: both reach the server as the same JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading

import pytest
from haystack.components.generators.chat import AzureOpenAIChatGenerator, FallbackChatGenerator, OpenAIChatGenerator
from pydantic import BaseModel

from answer_eval.errors import OptionError
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.generators import StructuredRefused
from answer_eval.llm.reply_cache import ReplyCache, format_key
from haystack_integrations.components.evaluators.answer_eval import PairwiseRubricEvaluator, RubricEvaluator
from tests.cli_runs import cli, write_jsonl
from tests.openai_server import OpenAIServer, Reply, grader_generator, refusing_format

QA = {
    "predicted_answers": ["Paris is the capital of France.", "Lyon.", "Paris.", "It is Paris."],
    "questions": ["What is the capital of France?"] * 4,
    "ground_truth_answers": ["Paris"] * 4,
}
METRIC = "question_answering_correctness"  # a 0/1 scale


def grade(request: dict) -> str:
    return json.dumps({"explanation": "it matches the reference", "score": 1})


def refusing(kinds: tuple[str, ...], status: int = 400):
    """A script refusing a response_format of ``kinds`` with ``status``, naming it, and grading the rest."""

    def script(request: dict) -> Reply | str:
        asked = (request.get("response_format") or {}).get("type")
        if asked in kinds:
            return Reply(status=status, message=f"response_format type {asked!r} is not supported")
        return grade(request)

    return script


def formats(server: OpenAIServer) -> list[str | None]:
    return [(body.get("response_format") or {}).get("type") for body in server.bodies]


def test_the_schema_is_sent_and_the_reply_read():
    with OpenAIServer(grade) as server:
        result = RubricEvaluator(metric=METRIC, chat_generator=grader_generator(server)).run(**QA)
        bodies = server.bodies
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert result["explanations"] == ["it matches the reference"] * 4
    assert result["usage"]["structured_fallbacks"] == 0
    assert "|structured:auto|" in result["signature"]
    assert len(bodies) == 4
    wanted = {
        "type": "json_schema",
        "json_schema": {
            "name": "grade",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"explanation": {"type": "string"}, "score": {"type": "integer", "enum": [0, 1]}},
                "required": ["explanation", "score"],
                "additionalProperties": False,
            },
        },
    }
    assert all(body["response_format"] == wanted for body in bodies)
    # The explanation comes first, so that the score follows the reasoning.
    assert list(wanted["json_schema"]["schema"]["properties"]) == ["explanation", "score"]


def test_a_400_naming_response_format_falls_back_once_and_every_item_is_graded(caplog):
    script = refusing(("json_schema", "json_object"))
    with caplog.at_level(logging.WARNING), OpenAIServer(script) as server:
        grader = RubricEvaluator(metric=METRIC, chat_generator=grader_generator(server), concurrency=4)
        result = grader.run(**QA)
        seen = formats(server)
        again = grader.run(**QA)  # the same component's next run asks as the server answered
        seen_again = formats(server)[len(seen) :]
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert result["failure_kinds"] == [None] * 4
    # One refused request per format, whatever the concurrency; the refused item asked again.
    assert seen.count("json_schema") == 1
    assert seen.count("json_object") == 1
    assert seen.count(None) == 4
    assert len(seen) == 6
    assert result["usage"]["structured_fallbacks"] == 2
    assert result["usage"]["calls"] == 6
    assert sum(1 for r in caplog.records if "refused structured output" in r.getMessage()) == 2
    assert again["individual_scores"] == [1, 1, 1, 1]
    assert seen_again == [None] * 4
    assert again["usage"]["structured_fallbacks"] == 0


def test_llama_cpp_s_500_to_json_schema_is_not_retried_and_json_object_is_used():
    with OpenAIServer(refusing(("json_schema",), status=500)) as server:
        grader = RubricEvaluator(metric=METRIC, chat_generator=grader_generator(server), max_retries=2)
        result = grader.run(**QA)
        seen = formats(server)
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert seen == ["json_schema"] + ["json_object"] * 4  # no retry of the 500: every try would get it
    assert result["usage"]["retries"] == 0
    assert result["usage"]["structured_fallbacks"] == 1


def test_json_object_form_carries_the_schema():
    with OpenAIServer(grade) as server:
        grader = RubricEvaluator(metric=METRIC, chat_generator=grader_generator(server), structured="json_object")
        result = grader.run(**QA)
        bodies = server.bodies
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert {body["response_format"]["type"] for body in bodies} == {"json_object"}
    assert bodies[0]["response_format"]["schema"]["properties"]["score"] == {"type": "integer", "enum": [0, 1]}
    assert "|structured:json_object|" in result["signature"]


def test_an_explicit_format_refused_stops_the_run_at_its_first_request():
    # llama.cpp's server answers json_schema with HTTP 500: asked explicitly, every item would fail one by one.
    with OpenAIServer(refusing_format(("json_schema",), grade, status=500)) as server:
        grader = RubricEvaluator(
            metric=METRIC, chat_generator=grader_generator(server), structured="json_schema", concurrency=4
        )
        with pytest.raises(StructuredRefused) as raised:
            grader.run(**QA)
        seen = formats(server)
    assert seen == ["json_schema"]  # the probe alone: no other item was sent in a format the server refuses
    assert isinstance(raised.value, OptionError)  # a ValueError naming the option
    assert raised.value.option == "structured"
    words = str(raised.value)
    assert "HTTP 500" in words
    assert "auto, json_object or off" in words


def test_cli_explicit_format_refused_exits_2_naming_the_values_to_give(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", rows() * 7)  # 21 rows: more than a batch
    with OpenAIServer(refusing_format(("json_schema",), grade, status=500)) as server:
        done = rubric_cli(server, source, "--structured", "json_schema", "-o", str(tmp_path / "out.jsonl"))
        seen = formats(server)
    assert done.returncode == 2, done.stderr
    assert seen == ["json_schema"]
    assert "--structured json_schema" in done.stderr
    assert "give structured (--structured) auto, json_object or off instead" in done.stderr
    assert "check --model" not in done.stderr  # not a key or model problem
    assert "Traceback" not in done.stderr


def test_an_explicit_format_the_server_answered_is_an_item_error_when_refused_later():
    # Once the server answered the format, a refusal is that request's (one backend of several): not a stop.
    refusals = threading.Event()

    def script(request: dict) -> Reply | str:
        if len(server.bodies) > 1:
            refusals.set()
        return refusing_format(("json_schema",), grade, refused=refusals)(request)

    with OpenAIServer(script) as server:
        grader = RubricEvaluator(metric=METRIC, chat_generator=grader_generator(server), structured="json_schema")
        result = grader.run(**QA)
        seen = formats(server)
    assert result["failure_kinds"] == [None, "error", "error", "error"]
    assert result["individual_scores"][0] == 1
    assert seen == ["json_schema"] * 4


def test_a_refusal_named_past_300_characters_still_falls_back(caplog):
    # The refusal check reads the whole message; only what is shown is cut (at a word).
    preamble = "The request could not be processed because one of its fields is not accepted by this server. " * 4
    assert len(preamble) > 350
    script = refusing_format(("json_schema",), grade, status=400, preamble=preamble)
    with caplog.at_level(logging.WARNING), OpenAIServer(script) as server:
        result = RubricEvaluator(metric=METRIC, chat_generator=grader_generator(server)).run(**QA)
        seen = formats(server)
    assert result["failure_kinds"] == [None] * 4
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert seen == ["json_schema"] + ["json_object"] * 4
    assert result["usage"]["structured_fallbacks"] == 1
    (warning,) = [r.getMessage() for r in caplog.records if "refused structured output" in r.getMessage()]
    said = warning.split("It said: ", 1)[1]
    assert said.endswith("...")
    assert len(said) <= 300
    assert said[:-3].split()[-1] in preamble.split()  # a whole word before the cut, not half of one


def test_cli_a_long_400_refusal_falls_back_and_exits_0(tmp_path):
    preamble = "x" * 40 + " " + "The server cannot serve this request with the options it was given. " * 5
    source = write_jsonl(tmp_path / "in.jsonl", rows())
    with OpenAIServer(refusing_format(("json_schema",), grade, preamble=preamble)) as server:
        done = rubric_cli(server, source)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["graded"] == 3
    assert summary["structured_fallbacks"] == 1


def test_cli_the_cache_remembers_the_format_so_a_cached_rerun_sends_nothing(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", rows())
    cache = tmp_path / "replies.jsonl"
    with OpenAIServer(refusing_format(("json_schema",), grade, status=500)) as server:
        first = rubric_cli(server, source, "--cache", str(cache))
        sent_first = formats(server)
        again = rubric_cli(server, source, "--cache", str(cache))
        sent_again = formats(server)[len(sent_first) :]
        more = write_jsonl(tmp_path / "more.jsonl", [*rows(), {**rows()[0], "prediction": "Lyon"}])
        extended = rubric_cli(server, more, "--cache", str(cache))
        sent_extended = formats(server)[len(sent_first) + len(sent_again) :]
    assert first.returncode == 0, first.stderr
    assert sent_first == ["json_schema", "json_object", "json_object", "json_object"]
    assert again.returncode == 0, again.stderr
    assert sent_again == []  # every reply cached, and the format known: nothing sent
    summary = json.loads(again.stdout)
    assert (summary["graded"], summary["calls"], summary["structured_fallbacks"]) == (3, 0, 0)
    assert "refused structured output" not in again.stderr
    assert extended.returncode == 0, extended.stderr
    assert sent_extended == ["json_object"]  # the new row asked at once in the format the server took


def test_a_cache_record_naming_no_format_is_ignored(tmp_path):
    cache_path = tmp_path / "replies.jsonl"
    with OpenAIServer(grade) as server:
        generator = grader_generator(server)
        grader = RubricEvaluator(metric=METRIC, chat_generator=generator, cache_path=str(cache_path))
        server_key = grader._evaluator.caller.server
        ReplyCache(cache_path).put(format_key(server_key), [{"text": "yaml", "finish_reason": "accepted"}])
        result = grader.run(**QA)
        seen = formats(server)
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert seen == ["json_schema"] * 4
    lines = [json.loads(line) for line in cache_path.read_text(encoding="utf-8").splitlines()]
    records = [line for line in lines if line.get("key") == format_key(server_key)]
    assert [record["samples"][0]["text"] for record in records] == ["yaml", "json_schema"]  # the new one last
    assert ReplyCache(cache_path).accepted(server_key, ["json_schema", "json_object", "off"]) == "json_schema"


def test_off_sends_no_response_format():
    with OpenAIServer(grade) as server:
        result = RubricEvaluator(metric=METRIC, chat_generator=grader_generator(server), structured="off").run(**QA)
        seen = formats(server)
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert seen == [None] * 4
    assert "|structured:off|" in result["signature"]


def test_a_generator_that_is_not_openai_s_gets_no_response_format_under_auto():
    # Haystack's FallbackChatGenerator passes generation_kwargs on, but is no OpenAI generator itself.
    with OpenAIServer(grade) as server:
        wrapped = FallbackChatGenerator(chat_generators=[grader_generator(server)])
        result = RubricEvaluator(metric=METRIC, chat_generator=wrapped).run(**QA)
        seen = formats(server)
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert seen == [None] * 4


def test_pairwise_asks_for_a_choice_schema_and_falls_back():
    def script(request: dict) -> Reply | str:
        if (request.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=400, message="Invalid schema for response_format 'choice'")
        return json.dumps({"explanation": "A is right", "choice": "A"})

    pairs = {"predicted_answers": ["Paris."], "baseline_answers": ["Lyon."], "questions": ["Capital of France?"]}
    pairs["contexts"] = ["Paris is the capital of France."]
    with OpenAIServer(script) as server:
        grader = PairwiseRubricEvaluator(chat_generator=grader_generator(server), swap=False)
        result = grader.run(**pairs)
        bodies = server.bodies
    assert result["pairwise_choices"] == ["CANDIDATE"]
    schema = bodies[0]["response_format"]["json_schema"]
    assert schema["name"] == "choice"
    assert schema["schema"]["properties"]["choice"] == {"type": "string", "enum": ["A", "B", "TIE"]}
    assert [b["response_format"]["type"] for b in bodies] == ["json_schema", "json_object"]
    assert result["usage"]["structured_fallbacks"] == 1


def test_bad_structured_value_is_refused():
    with OpenAIServer(grade) as server, pytest.raises(ValueError, match="structured"):
        RubricEvaluator(metric=METRIC, chat_generator=grader_generator(server), structured="yes")
    done = cli("rubric", "nothing.jsonl", "--model", "m", "--structured", "maybe")
    assert done.returncode == 2
    assert "--structured" in done.stderr
    assert "maybe" in done.stderr


def rubric_cli(server: OpenAIServer, source, *more: str):
    env = {**os.environ, "ANSWER_EVAL_CLI_KEY": "sk-structured"}
    args = ("--api-base-url", server.url, "--model", "grader", "--api-key-env", "ANSWER_EVAL_CLI_KEY")
    return cli("rubric", source, "--metric", METRIC, *args, "--no-progress", "--format", "json", *more, env=env)


def rows() -> list[dict[str, str]]:
    return [{"question": "Capital of France?", "prediction": f"Paris ({n})", "reference": "Paris"} for n in range(3)]


def test_cli_structured_off_sends_none_and_auto_falls_back_once(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", rows())
    with OpenAIServer(grade) as server:
        off = rubric_cli(server, source, "--structured", "off")
        seen_off = formats(server)
    assert off.returncode == 0, off.stderr
    assert seen_off == [None] * 3
    summary = json.loads(off.stdout)
    assert summary["graded"] == 3
    assert summary["structured_fallbacks"] == 0
    assert "|structured:off|" in summary["signature"]
    with OpenAIServer(refusing(("json_schema", "json_object"))) as server:
        auto = rubric_cli(server, source)
        seen = formats(server)
    assert auto.returncode == 0, auto.stderr
    summary = json.loads(auto.stdout)
    assert summary["graded"] == 3
    assert summary["structured_fallbacks"] == 2
    assert seen == ["json_schema", "json_object", None, None, None]
    assert summary["calls"] == 5  # the refused requests are the run's cost too
    assert auto.stderr.count("refused structured output") == 2


class _Delegating:
    """A user's own chat generator that hands every call to OpenAI's (so a response_format is its option)."""

    def __init__(self, inner):
        self.inner = inner

    def run(self, messages, generation_kwargs=None):
        return self.inner.run(messages=messages, generation_kwargs=generation_kwargs)


@pytest.mark.parametrize("wrapped", [False, True], ids=["create endpoint", "parse endpoint"])
def test_a_reply_cut_under_a_schema_is_still_a_cut_reply(wrapped):
    # The parse endpoint (a response_format option, here through a user's delegating generator) raises for a reply
    # cut by the token limit; it is taken back as the reply it is, as the create endpoint returns it.
    with OpenAIServer(lambda request: Reply(texts=['{"explanation": "the answ'], finish_reason="length")) as server:
        generator = grader_generator(server)
        if wrapped:
            generator = _Delegating(generator)
        structured = "json_schema" if wrapped else "auto"
        grader = RubricEvaluator(metric=METRIC, chat_generator=generator, max_retries=0, structured=structured)
        result = grader.run(**QA)
        seen = formats(server)
    assert result["failure_kinds"] == ["budget_stop"] * 4
    assert result["usage"]["completion_tokens"] == 20
    assert seen == ["json_schema"] * 4


def test_the_generator_s_own_extra_body_is_sent_beside_the_schema():
    with OpenAIServer(grade) as server:
        generator = grader_generator(server)
        own = {"extra_body": {"top_k": 5, "response_format": {"type": "text"}}, "temperature": 0.0}
        generator.generation_kwargs = json.loads(json.dumps(own))
        result = RubricEvaluator(metric=METRIC, chat_generator=generator).run(**QA)
        bodies = server.bodies
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert [body.get("top_k") for body in bodies] == [5] * 4
    assert [body["response_format"]["type"] for body in bodies] == ["json_schema"] * 4  # the grader's wins
    assert generator.generation_kwargs == own  # not changed in place


class _Other(BaseModel):
    answer: str


def test_the_generator_s_own_response_format_is_overridden_not_parsed_against():
    # A pydantic response_format on the generator would send the request through the SDK's parse endpoint and
    # have it validate the grader's reply against the user's model: every item would fail.
    with OpenAIServer(grade) as server:
        generator = grader_generator(server)
        generator.generation_kwargs = {"response_format": _Other}
        result = RubricEvaluator(metric=METRIC, chat_generator=generator).run(**QA)
        bodies = server.bodies
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert [body["response_format"]["json_schema"]["name"] for body in bodies] == ["grade"] * 4
    assert generator.generation_kwargs == {"response_format": _Other}


class _OptionsInExtraBody(OpenAIChatGenerator):
    """As OpenRouter's generator builds its requests: every generation option goes out in ``extra_body``."""

    def _prepare_api_call(self, **arguments):
        options = {**self.generation_kwargs, **(arguments.pop("generation_kwargs", None) or {})}
        prepared = super()._prepare_api_call(generation_kwargs={}, **arguments)
        prepared["extra_body"] = options
        return prepared


def test_a_subclass_that_builds_its_own_requests_gets_the_option_as_it_is():
    with OpenAIServer(grade) as server:
        plain = grader_generator(server)
        generator = _OptionsInExtraBody(
            api_key=plain.api_key, api_base_url=server.url, model="grader", max_retries=0, timeout=10.0
        )
        result = RubricEvaluator(metric=METRIC, chat_generator=generator).run(**QA)
        bodies = server.bodies
    assert result["individual_scores"] == [1, 1, 1, 1]
    assert [body["response_format"]["type"] for body in bodies] == ["json_schema"] * 4
    assert all("extra_body" not in body for body in bodies)


def test_a_jury_judge_refusing_an_explicit_format_stops_the_run_naming_the_judge():
    with OpenAIServer(grade) as takes, OpenAIServer(refusing_format(("json_schema",), grade, status=500)) as refuses:
        panel = [grader_generator(takes), grader_generator(refuses)]
        grader = RubricEvaluator(metric=METRIC, chat_generator=panel, structured="json_schema")
        with pytest.raises(StructuredRefused, match=r"^judge 2: the server refused structured output json_schema"):
            grader.run(**QA)
        assert formats(refuses) == ["json_schema"]


def test_an_explicit_format_refused_in_an_event_loop_is_refused_again_on_the_next_run():
    # Run 1's refusal stops its other items too; it used to leave them asking after run_async returned, and an
    # item of theirs that was never sent settled the refused format: run 2 sent every item in it, each an error.
    def grade(request):
        return json.dumps({"explanation": "ok", "score": 1})

    async def twice(grader: RubricEvaluator) -> list[str]:
        outcomes = []
        for _ in range(2):
            try:
                await grader.run_async(**QA)
                outcomes.append("graded")
            except StructuredRefused:
                outcomes.append("refused")
            await asyncio.sleep(0.3)  # what the first run left running would ask now
        return outcomes

    with OpenAIServer(refusing_format(("json_schema",), grade, status=500)) as server:
        grader = RubricEvaluator(
            metric=METRIC, chat_generator=grader_generator(server), structured="json_schema", progress_bar=False
        )
        assert asyncio.run(twice(grader)) == ["refused", "refused"]
        assert len(server.bodies) == 2  # one probe a run


def test_the_format_a_server_took_is_kept_per_server_and_model_as_the_reply_cache_keys_them(tmp_path, monkeypatch):
    # Two Azure endpoints serving one deployment name are two servers: one's record is not the other's.
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "sk-azure")
    first, second = (
        ChatCaller(AzureOpenAIChatGenerator(azure_endpoint=f"http://127.0.0.1:{port}", azure_deployment="gpt"))
        for port in (9, 10)
    )
    assert format_key(first.server) != format_key(second.server)
    cache = ReplyCache(tmp_path / "replies.jsonl")
    cache.remember_accepted(first.server, "json_object")
    assert cache.accepted(first.server, ["json_schema", "json_object", "off"]) == "json_object"
    assert cache.accepted(second.server, ["json_schema", "json_object", "off"]) is None
    # A plain OpenAI generator's record is keyed as before: its type, URL and model.
    with OpenAIServer(grade) as server:
        plain = ChatCaller(grader_generator(server))
        assert plain.server == {"type": plain.server["type"], "api_base_url": server.url, "model": "grader"}
