"""The LLM graders' reply cache under attack and damage: links, foreign files, FIFOs, unreadable files, bad lines.

The cache path is the user's or a loaded pipeline's, so it is treated as the run's own work files
are: never followed, never a file this package did not write, checked before the first paid
request. Every test talks to the loopback server through Haystack's real OpenAIChatGenerator, or
runs the command line (in process; a real subprocess where root drops its file capabilities).
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from answer_eval.llm.reply_cache import MARKER, CacheError, ReplyCache
from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator, RubricEvaluator
from tests.cli_runs import cli_unless_limited, write_jsonl
from tests.openai_server import OpenAIServer, Reply
from tests.openai_server import grader_generator as generator
from tests.test_bad_inputs import _drop_file_capabilities

REPLY = json.dumps({"explanation": "reasoned", "score": 4})
ITEM = {"predicted_answers": ["Paris."], "questions": ["Capital of France?"], "contexts": ["Paris is."]}


def rubric_cli(source: Path, server: OpenAIServer, *more: object, preexec_fn=None):
    """``answer-eval rubric`` on ``source`` against ``server``: in process, or a subprocess running ``preexec_fn``."""
    args = ("rubric", source, "--api-base-url", server.url, "--model", "grader", "--no-progress", *more)
    return cli_unless_limited(*args, preexec_fn=preexec_fn, timeout=60)


def rows(count: int) -> list[dict[str, str]]:
    return [{"question": f"q{n}?", "context": "c", "prediction": f"answer {n}"} for n in range(count)]


def plant(tmp_path: Path, kind: str) -> tuple[Path, Path | None]:
    """A hostile file at a cache path: ``(cache path, the file that must stay as it was)``."""
    cache = tmp_path / "cache.jsonl"
    if kind == "symlink":
        target = tmp_path / "precious.txt"
        target.write_text("keep me\n")
        cache.symlink_to(target)
        return cache, target
    if kind == "dangling symlink":
        cache.symlink_to(tmp_path / "made-through-the-link.jsonl")
        return cache, None
    if kind == "foreign file":
        cache.write_text('{"question": "not a cache"}\n')
        return cache, cache
    if kind == "hard link":
        cache.write_text(json.dumps(MARKER) + "\n")
        os.link(cache, tmp_path / "other-name.jsonl")
        return cache, cache
    if kind == "directory":
        cache.mkdir()
        return cache, None
    assert kind == "fifo"
    os.mkfifo(cache)
    return cache, None


HOSTILE = ["symlink", "dangling symlink", "foreign file", "hard link", "directory", "fifo"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_link_special_or_foreign_file_at_the_cache_path_is_refused_before_any_request(tmp_path, kind):
    cache, kept = plant(tmp_path, kind)
    before = None if kept is None else kept.read_bytes()
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(lambda request: REPLY) as server:
        started = time.monotonic()
        done = rubric_cli(source, server, "--cache", cache, "--output", tmp_path / "out.jsonl")
        assert server.requests == 0
    assert time.monotonic() - started < 50  # a FIFO is refused, not waited on
    assert done.returncode == 2, done.stderr
    # A folder is refused with the other paths a run may not write (engine.output_files), before the cache looks.
    refusal = " (the reply cache, --cache) is a folder" if kind == "directory" else ": cannot be the reply cache"
    assert f"{cache}{refusal}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / "made-through-the-link.jsonl").exists()
    if kept is not None:
        assert kept.read_bytes() == before


def test_a_component_refuses_a_planted_link_at_warm_up_and_run_before_any_request(tmp_path):
    cache, target = plant(tmp_path, "symlink")
    with OpenAIServer(lambda request: REPLY) as server:
        grader = RubricEvaluator(chat_generator=generator(server), cache_path=str(cache))  # nothing opened yet
        with pytest.raises(CacheError, match="is a symbolic link"):
            grader.warm_up()
        with pytest.raises(CacheError, match="is a symbolic link"):
            grader.run(**ITEM)
        judge = AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=1.0, cache_path=str(cache))
        with pytest.raises(CacheError, match="is a symbolic link"):
            judge.warm_up()
        assert server.requests == 0
    assert target is not None
    assert target.read_text() == "keep me\n"


@pytest.mark.subprocess  # as root, the run drops its file capabilities: in a process of its own
@pytest.mark.parametrize("kind", ["unreadable file", pytest.param("read-only folder", marks=pytest.mark.slow)])
def test_an_unreadable_cache_or_a_read_only_folder_stops_the_run_before_it_pays(tmp_path, kind):
    folder = tmp_path / "caches"
    folder.mkdir()
    cache = folder / "cache.jsonl"
    if kind == "unreadable file":
        cache.write_text(json.dumps(MARKER) + "\n")
        cache.chmod(0o200)
    else:
        folder.chmod(0o555)
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    as_root = os.geteuid() == 0  # root meets permission bits only without its file capabilities
    try:
        with OpenAIServer(lambda request: REPLY) as server:
            done = rubric_cli(
                source,
                server,
                "--cache",
                cache,
                "--output",
                tmp_path / "out.jsonl",
                preexec_fn=_drop_file_capabilities if as_root else None,
            )
            assert server.requests == 0
    finally:
        folder.chmod(0o755)
        if cache.exists():
            cache.chmod(0o644)
    assert done.returncode == 2, done.stderr
    assert f"{cache}: cannot be the reply cache" in done.stderr
    assert "Permission denied" in done.stderr
    assert "Traceback" not in done.stderr


def test_damaged_lines_are_skipped_counted_and_said_once_never_fatal(tmp_path, caplog):
    good_key = "a" * 64
    cache = tmp_path / "cache.jsonl"
    cache.write_bytes(
        json.dumps(MARKER).encode()
        + b"\n\xff\xfe not UTF-8\n"
        + b"[" * 100_000
        + b"\n"  # nested far past the interpreter's recursion limit
        + b"not json\n"
        + json.dumps({"key": good_key, "samples": [{"text": "kept", "finish_reason": "stop"}]}).encode()
        + b"\n"
        + b'{"key": "cut by a crash'
    )
    with caplog.at_level(logging.WARNING, logger="answer_eval.llm.reply_cache"):
        opened = ReplyCache(cache).open()
    assert opened.damaged == 4
    assert opened.get(good_key) == [{"text": "kept", "finish_reason": "stop"}]
    warnings = [record.getMessage() for record in caplog.records if "damaged" in record.getMessage()]
    said = f"answer-eval: the reply cache {cache} has 4 damaged lines (skipped: their prompts are asked again)"
    assert warnings == [said]
    opened.put("b" * 64, [{"text": "new", "finish_reason": "stop"}])
    again = ReplyCache(cache).open()
    assert again.get("b" * 64) == [{"text": "new", "finish_reason": "stop"}]  # not glued to the cut line


def test_a_damaged_cache_on_the_command_line_is_read_and_the_run_goes_on(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    cache = tmp_path / "cache.jsonl"
    with OpenAIServer(lambda request: REPLY) as server:
        first = rubric_cli(source, server, "--cache", cache, "--output", tmp_path / "first.jsonl")
        assert first.returncode == 0, first.stderr
        with open(cache, "ab") as handle:
            handle.write(b"\xc3\x28 bad UTF-8\n" + b"{" * 50_000 + b"\n")
        again = rubric_cli(source, server, "--cache", cache, "--output", tmp_path / "again.jsonl", "--format", "json")
        assert server.requests == 2  # the rerun took both replies from the cache
    assert again.returncode == 0, again.stderr
    assert "has 2 damaged lines" in again.stderr
    assert json.loads(again.stdout)["calls"] == 0


def test_an_empty_file_is_an_empty_cache_and_an_earlier_versions_cache_is_still_read(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    with OpenAIServer(lambda request: REPLY) as server:  # one server: its URL is part of the key
        RubricEvaluator(chat_generator=generator(server), cache_path=str(empty)).run(**ITEM)
        assert server.requests == 1
        assert json.loads(empty.read_text().splitlines()[0]) == MARKER
        # A cache written before the marker existed: its first line is an entry.
        entries = empty.read_text().splitlines()[1:]
        old = tmp_path / "old.jsonl"
        old.write_text("".join(line + "\n" for line in entries))
        again = RubricEvaluator(chat_generator=generator(server), cache_path=str(old)).run(**ITEM)
        assert server.requests == 1
    assert again["individual_scores"] == [4]
    assert again["usage"]["cache_hits"] == 1


def test_a_full_disk_mid_run_stops_caching_not_the_run(tmp_path, caplog):
    cache = ReplyCache(tmp_path / "cache.jsonl").open()
    with open("/dev/full", "r+b", buffering=0) as full:  # Linux's device that fails every write, as a full disk does
        cache._file = full
        with caplog.at_level(logging.WARNING, logger="answer_eval.llm.reply_cache"):
            cache.put("c" * 64, [{"text": "t", "finish_reason": "stop"}])
            cache.put("d" * 64, [{"text": "t", "finish_reason": "stop"}])
        cache._file = None
    assert cache.get("c" * 64) == [{"text": "t", "finish_reason": "stop"}]  # kept for this run
    assert sum("cannot write the reply cache" in record.getMessage() for record in caplog.records) == 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply(texts=[None]),  # null content
        Reply(texts=["Nothing I could read as a grade."]),
        Reply(texts=['{"explanation": "The response is thorough and'], finish_reason="length"),
        Reply(texts=[""], finish_reason="content_filter"),
    ],
    ids=["null content", "garbage", "cut by the token limit", "content filter"],
)
def test_a_failed_reply_is_not_cached_so_a_rerun_asks_again(tmp_path, reply):
    cache = tmp_path / "cache.jsonl"
    with OpenAIServer(lambda request: reply) as server:
        first = RubricEvaluator(chat_generator=generator(server), cache_path=str(cache)).run(**ITEM)
        again = RubricEvaluator(chat_generator=generator(server), cache_path=str(cache)).run(**ITEM)
        assert server.requests == 2
    assert first["failure_kinds"] == again["failure_kinds"] != [None]
    assert again["usage"]["calls"] == 1
    marker, *records = cache.read_text().splitlines()
    assert marker == json.dumps(MARKER)
    # No reply: only the structured output the server answered in (the failure is the reply's, not the format's).
    assert [json.loads(line)["samples"] for line in records] == [[{"text": "json_schema", "finish_reason": "accepted"}]]


def test_failed_replies_an_earlier_version_cached_are_asked_again(tmp_path):
    from answer_eval.llm.generators import describe_generator
    from answer_eval.llm.reply_cache import cache_key
    from answer_eval.llm.rubric_prompts import pointwise_messages, rubric

    with OpenAIServer(lambda request: REPLY) as server:
        chat = generator(server)
        item = {"prediction": "Paris.", "instruction": "Capital of France?", "context": "Paris is."}
        key = cache_key(pointwise_messages(rubric("question_answering_quality"), item), describe_generator(chat))
        cache = tmp_path / "old.jsonl"
        cache.write_text(json.dumps({"key": key, "samples": [{"text": "garbage", "finish_reason": "stop"}]}) + "\n")
        result = RubricEvaluator(chat_generator=chat, cache_path=str(cache)).run(**ITEM)
        assert server.requests == 1
    assert result["individual_scores"] == [4]


def test_a_draws_request_options_reach_the_server_and_key_the_cache_apart(tmp_path):
    """A draw's own generation options are sent with its request, and a reply to them is cached under its own key."""
    from answer_eval.llm.calls import ChatCaller

    schema = {"type": "json_object"}
    with OpenAIServer(lambda _request: REPLY) as server:
        caller = ChatCaller(generator(server), cache=ReplyCache(str(tmp_path / "cache.jsonl")))
        messages = [("user", "grade this")]

        async def both():
            plain = await caller.draw(messages)
            shaped = await caller.draw(messages, request={"response_format": schema})
            again = await caller.draw(messages, request={"response_format": schema})
            return plain, shaped, again

        (plain, shaped, again), usage = caller.run_sync(both)
        bodies = server.bodies
    assert [body.get("response_format") for body in bodies] == [None, schema]
    assert usage.calls == 2
    assert again.cached == 1
    assert plain.samples[0].text == shaped.samples[0].text == REPLY


# What a key names (issue 38, point 7): a wrapper's every server and model; a generator that names none: no cache.
FOUR = {"predicted_answers": ["a", "b", "c", "d"], "questions": ["q"] * 4, "contexts": ["c"] * 4}


def by_model(request):
    """One server, two models that grade differently: what a cache must never mix up."""
    score = {"model-a": 1, "model-b": 5}[request["model"]]
    return json.dumps({"explanation": f"{request['model']} gives {score}", "score": score})


def openai_model(server: OpenAIServer, model: str):
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    from tests.openai_server import GRADER_KEY_ENV

    key = Secret.from_env_var(GRADER_KEY_ENV)
    return OpenAIChatGenerator(api_key=key, api_base_url=server.url, model=model, max_retries=0, timeout=10)


def fallback(*generators):
    from haystack.components.generators.chat import FallbackChatGenerator

    return FallbackChatGenerator(list(generators))


def test_two_fallback_wrappers_of_two_models_do_not_share_cached_replies(tmp_path):
    cache = str(tmp_path / "replies.jsonl")
    with OpenAIServer(by_model) as server:
        first = RubricEvaluator(chat_generator=fallback(openai_model(server, "model-a")), cache_path=cache).run(**FOUR)
        other = RubricEvaluator(chat_generator=fallback(openai_model(server, "model-b")), cache_path=cache).run(**FOUR)
        assert server.requests == 8  # model B is asked, not served model A's replies
        again = RubricEvaluator(chat_generator=fallback(openai_model(server, "model-a")), cache_path=cache).run(**FOUR)
        assert server.requests == 8  # and model A's are still there for model A
    assert first["individual_scores"] == again["individual_scores"] == [1, 1, 1, 1]
    assert other["individual_scores"] == [5, 5, 5, 5]
    assert other["usage"]["cache_hits"] == 0


def test_two_fallbacks_of_one_model_name_on_two_servers_do_not_share_cached_replies(tmp_path):
    cache = str(tmp_path / "replies.jsonl")
    low, high = (json.dumps({"explanation": "e", "score": score}) for score in (2, 4))
    with OpenAIServer(lambda request: low) as first, OpenAIServer(lambda request: high) as second:
        RubricEvaluator(chat_generator=fallback(generator(first)), cache_path=cache).run(**FOUR)
        result = RubricEvaluator(chat_generator=fallback(generator(second)), cache_path=cache).run(**FOUR)
        assert (first.requests, second.requests) == (4, 4)
    assert result["individual_scores"] == [4, 4, 4, 4]


def test_a_fallback_keys_every_generator_it_can_reach_in_order(tmp_path):
    cache = str(tmp_path / "replies.jsonl")
    with OpenAIServer(by_model) as server:
        a, b = openai_model(server, "model-a"), openai_model(server, "model-b")
        RubricEvaluator(chat_generator=fallback(a, b), cache_path=cache).run(**FOUR)
        # Only A answered, but B is what this wrapper falls back to: another wrapper is another key.
        RubricEvaluator(chat_generator=fallback(a), cache_path=cache).run(**FOUR)
        RubricEvaluator(chat_generator=fallback(fallback(a), b), cache_path=cache).run(**FOUR)
        assert server.requests == 12


def test_a_plain_openai_generator_keeps_the_key_earlier_versions_wrote(tmp_path):
    from answer_eval.llm.reply_cache import cache_key
    from answer_eval.llm.rubric_prompts import pointwise_messages, rubric

    with OpenAIServer(lambda request: "never asked") as server:
        chat = generator(server)
        item = {"prediction": "Paris.", "instruction": "Capital of France?", "context": "Paris is."}
        described = {  # the description every earlier version hashed, written out
            "type": "haystack.components.generators.chat.openai.OpenAIChatGenerator",
            "api_base_url": server.url,
            "model": "grader",
            "generation_kwargs": {},
        }
        key = cache_key(pointwise_messages(rubric("question_answering_quality"), item), described)
        cache = tmp_path / "old.jsonl"
        cache.write_text(json.dumps({"key": key, "samples": [{"text": REPLY, "finish_reason": "stop"}]}) + "\n")
        # Structured output off: a request's own options (a response_format) are part of its key.
        result = RubricEvaluator(chat_generator=chat, cache_path=str(cache), structured="off").run(**ITEM)
        assert server.requests == 0
    assert result["individual_scores"] == [4]


def relay(server: OpenAIServer):
    """A user's own chat generator that says nothing of what it talks to: a real Haystack component."""
    from haystack import component
    from haystack.dataclasses import ChatMessage

    @component
    class Relay:
        def __init__(self) -> None:
            self.inner = generator(server)  # not an attribute a wrapper is known by

        @component.output_types(replies=list[ChatMessage])
        def run(self, messages: list[ChatMessage], generation_kwargs: dict | None = None) -> dict:
            return self.inner.run(messages=messages, generation_kwargs=generation_kwargs)

    return Relay()


def test_a_generator_that_names_no_model_is_refused_a_cache(tmp_path):
    cache = tmp_path / "replies.jsonl"
    refused = r"cache_path cannot cache this chat generator's replies: Relay names no model"
    with OpenAIServer(lambda request: REPLY) as server:
        with pytest.raises(ValueError, match=refused):
            RubricEvaluator(chat_generator=relay(server), cache_path=str(cache))
        with pytest.raises(ValueError, match=refused):  # behind a fallback too
            RubricEvaluator(chat_generator=fallback(generator(server), relay(server)), cache_path=str(cache))
        with pytest.raises(ValueError, match=refused):
            AnswerJudgeEvaluator(escalate_to=relay(server), cache_path=str(cache))
        with pytest.raises(ValueError, match=refused):
            AnswerJudgeEvaluator(escalate_to=[generator(server), relay(server)], cache_path=str(cache))
        assert server.requests == 0
        assert not cache.exists()
        # Without a cache it grades, and two of them are two judges (each only itself).
        result = RubricEvaluator(chat_generator=[relay(server), relay(server)]).run(**ITEM)
    assert result["individual_scores"] == [4]


def test_a_wrapper_that_holds_itself_is_refused_a_cache_in_bounded_time(tmp_path):
    from answer_eval.llm.generators import describe_generator, shown_generator

    with OpenAIServer(lambda request: REPLY) as server:
        loop = fallback(generator(server))
        loop.chat_generators.append(loop)
        assert describe_generator(loop)["reaches"][1]["reaches"][1]["type"].endswith("FallbackChatGenerator")
        shown_generator(loop)  # ends: the wrapping is followed a bounded depth
        with pytest.raises(ValueError, match="wraps generators more than 8 deep"):
            RubricEvaluator(chat_generator=loop, cache_path=str(tmp_path / "replies.jsonl"))


def test_a_fallbacks_signature_names_its_models_and_its_members_keys_are_redacted():
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    secret = "sk-wrapped-member-key-0123456789"
    quoting = json.dumps({"explanation": f"your key is {secret}", "score": 3})
    with OpenAIServer(by_model) as named, OpenAIServer(lambda request: quoting) as leaky:
        member = OpenAIChatGenerator(api_key=Secret.from_token(secret), api_base_url=leaky.url, model="leaky")
        result = RubricEvaluator(chat_generator=fallback(member, openai_model(named, "model-b"))).run(**ITEM)
        urls = leaky.url, named.url
    assert result["explanations"] == ["your key is ***"]
    assert f'server:["{urls[0]}","{urls[1]}"]' in result["signature"]
    assert "model:[leaky,model-b]" in result["signature"]


def test_a_server_a_wrapper_reaches_is_named_when_it_misbehaves():
    from haystack import component
    from haystack.dataclasses import ChatMessage

    from answer_eval.llm.generators import ServerMisbehaves

    @component
    class PassThrough:  # a wrapper of one generator that lets its errors through
        def __init__(self, inner) -> None:
            self.chat_generator = inner

        @component.output_types(replies=list[ChatMessage])
        def run(self, messages: list[ChatMessage], generation_kwargs: dict | None = None) -> dict:
            return self.chat_generator.run(messages=messages, generation_kwargs=generation_kwargs)

    with OpenAIServer(lambda request: Reply(sse=True)) as server:
        grader = RubricEvaluator(chat_generator=PassThrough(generator(server)), max_retries=0)
        with pytest.raises(ServerMisbehaves, match=rf"the server \({server.url}\) answered"):
            grader.run(**ITEM)
