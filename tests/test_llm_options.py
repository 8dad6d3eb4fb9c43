"""One set of LLM options for every layer: ``answer-eval rubric``, the judge's escalation and the LLM components.

The limits (timeout, concurrency, retries, backoff, budget, reply cache) are declared once
(:class:`answer_eval.llm.caller_setup.LLMOptions`), under the components' names, checked once with the
same words everywhere, and made into a caller one way; the rubric command has the components'
``retry_backoff`` and ``sampling`` too. The LLM requests go to ``tests/openai_server.py`` through
Haystack's real ``OpenAIChatGenerator``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from answer_eval.errors import OptionError
from answer_eval.evaluators.judge.judge_options import JudgeOptions
from answer_eval.evaluators.rubric_grading import RubricCore, RubricOptions
from answer_eval.llm.caller_setup import LLMOptions
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerJudgeEvaluator,
    PairwiseRubricEvaluator,
    RubricEvaluator,
)
from tests.cli_runs import cli, write_jsonl
from tests.openai_server import OpenAIServer, texts_for_n

LIMITS = ("timeout", "concurrency", "max_retries", "retry_backoff", "max_calls", "cache_path")
KEY_ENV = "ANSWER_EVAL_TEST_OPTIONS_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-options-test")


def _chat() -> OpenAIChatGenerator:
    # A key from the environment: a token secret cannot be serialised, and to_dict is read here.
    return OpenAIChatGenerator(api_key=Secret.from_env_var(KEY_ENV))


def _defaults(options: type[Any]) -> dict[str, Any]:
    return {item.name: item.default for item in dataclasses.fields(options)}


def test_the_limits_are_declared_once_and_cannot_change_a_grade():
    declared = _defaults(LLMOptions)
    assert tuple(declared) == LIMITS
    for options in (RubricOptions, JudgeOptions):
        fields = dataclasses.fields(options)
        # None of them can change a grade: a --resume with one changed goes on.
        assert not any(item.metadata["signed"] for item in fields if item.name in LIMITS)
    changed = {"timeout": 5.0, "concurrency": 9, "max_retries": 0, "retry_backoff": 0.0, "max_calls": 3}
    assert RubricOptions(model="m", cache_path="c", sampling="calls", **changed).signature("rubric") == (
        RubricOptions(model="m").signature("rubric")
    )
    assert JudgeOptions(cache_path="c", **changed).signature("judge") == JudgeOptions().signature("judge")


BAD_LIMITS = [
    ({"timeout": float("nan")}, "timeout must be a finite number of seconds above 0, got nan"),
    ({"timeout": 0}, "timeout must be a finite number of seconds above 0, got 0"),
    ({"timeout": 1e12}, "timeout must be at most 86400 seconds (a day), got 1000000000000.0"),
    ({"concurrency": 0}, "concurrency must be at least 1, got 0"),
    ({"max_retries": -1}, "max_retries must not be negative, got -1"),
    ({"max_calls": -1}, "max_calls must not be negative, got -1"),
    ({"retry_backoff": -1.0}, "retry_backoff must be a finite number of seconds >= 0, got -1.0"),
    ({"cache_path": "  "}, "cache_path must name a file, got a blank string"),
]


@pytest.mark.parametrize(("parameters", "message"), BAD_LIMITS)
def test_a_bad_limit_gets_the_same_words_from_every_layer(parameters, message):
    makers = (
        lambda: RubricOptions(model="grader", **parameters),
        lambda: JudgeOptions(**parameters),
        lambda: RubricEvaluator(chat_generator=_chat(), **parameters),
        lambda: PairwiseRubricEvaluator(chat_generator=_chat(), **parameters),
        lambda: AnswerJudgeEvaluator(escalate_to=_chat(), **parameters),
    )
    for make in makers:
        with pytest.raises(OptionError) as caught:
            make()
        assert str(caught.value) == message
        assert caught.value.option == next(iter(parameters))


def test_a_bad_sampling_is_refused_by_the_rubric_command_and_the_components_alike():
    for make in (
        lambda: RubricOptions(model="grader", sampling="many"),
        lambda: RubricEvaluator(chat_generator=_chat(), sampling="many"),
        lambda: PairwiseRubricEvaluator(chat_generator=_chat(), sampling="many"),
    ):
        with pytest.raises(OptionError, match="sampling is 'auto', 'n' or 'calls', got 'many'"):
            make()


@pytest.mark.parametrize(
    ("command", "more", "message"),
    [
        ("rubric", ("--cache", "  "), "--cache must name a file, got a blank string"),
        ("rubric", ("--timeout", "nan"), "--timeout must be a finite number of seconds above 0, got nan"),
        ("rubric", ("--concurrency", "0"), "--concurrency must be at least 1, got 0"),
        ("judge", ("--cache", "  "), "--cache must name a file, got a blank string"),
        ("judge", ("--timeout", "nan"), "--timeout must be a finite number of seconds above 0, got nan"),
    ],
)
def test_a_bad_limit_on_the_command_line_is_named_by_its_flag_before_any_request(tmp_path, command, more, message):
    source = write_jsonl(tmp_path / "answers.jsonl", [{"question": "q", "prediction": "p", "answers": ["p"]}])
    work = tmp_path / "work"
    work.mkdir()
    with OpenAIServer() as server:
        model = ("--model",) if command == "rubric" else ("--escalate-below", "0.9", "--escalate-model")
        done = cli(command, source, *model, "grader", "--api-base-url", server.url, "--no-progress", *more, cwd=work)
        assert server.requests == 0
    assert list(work.iterdir()) == []  # the rubric command used to make a reply cache called "  " here
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("sampling", "requests"), [("auto", 1), ("calls", 3)])
def test_the_rubric_command_draws_samples_as_its_sampling_option_says(sampling, requests):
    def three_scores(request: dict[str, Any]) -> list[str]:
        return texts_for_n(request, lambda _: json.dumps({"explanation": "fine", "score": 4}))

    with OpenAIServer(three_scores) as server:
        options = RubricOptions(
            model="grader", api_base_url=server.url, api_key_env=KEY_ENV, samples=3, sampling=sampling
        )
        asked = {"prediction": ["Paris."], "question": ["The capital of France?"], "context": ["Paris is its capital."]}
        graded = RubricCore(options).score(asked)
        assert server.requests == requests
    assert graded["score"] == [4]
    assert graded["confidence"] == [1.0]
    assert graded["calls"] == [requests]
