"""Log-probability scores (``scoring="logprobs"``, G-Eval style) through the real OpenAIChatGenerator.

The loopback server returns scripted log-probabilities (its ``Reply.logprobs``), none (``null``,
as a server that ignores ``logprobs: true``) or hostile ones; every grade is checked against the
weighted mean and confidence computed by hand.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

from answer_eval.errors import OptionError
from answer_eval.evaluators.rubric_grading import RubricOptions
from answer_eval.evaluators.rubric_summary import RubricSummary
from answer_eval.llm.reply_cache import MAX_ALTERNATIVES, MAX_POSITIONS, Logprobs, TokenChoice, from_meta, weigh
from haystack_integrations.components.evaluators.answer_eval import RubricEvaluator
from tests.cli_runs import cli, write_jsonl
from tests.openai_server import OpenAIServer, Reply
from tests.openai_server import grader_generator as generator

ANSWER = {
    "predicted_answers": ["Paris is the capital of France."],
    "questions": ["What is the capital of France?"],
    "contexts": [["France's capital is Paris."]],
}

# An explanation with a digit of its own ("3 criteria"), so the score's token must be found by its key.
REPLY = '{"explanation": "All 3 criteria are met.", "score": 4}'
# At the score: 4, 5, 3 and a word; the word is off the scale, so the rest is renormalised over 0.875.
SCORE_ALTERNATIVES = [("4", 0.5), ("5", 0.25), ("3", 0.125), ("four", 0.125)]
BY_HAND_SCORE = (4 * 0.5 + 5 * 0.25 + 3 * 0.125) / 0.875  # 29 / 7 = 4.142857...
BY_HAND_CONFIDENCE = 0.5 / 0.875  # 4 / 7


def tokens_of(text: str) -> list[str]:
    """A tokenizer of sorts: words with the spaces before them, each digit, mark or run of spaces (they spell it)."""
    tokens = re.findall(r"\s*[A-Za-z]+|\d|[^\w\s]|\s+", text)
    assert "".join(tokens) == text
    return tokens


def logprobs_for(text: str, at_score: list[tuple[str, float]], elsewhere: list[tuple[str, float]] | None = None):
    """OpenAI's ``choice.logprobs`` for ``text``: the last digit (the score) has ``at_score`` as its top alternatives.

    Every other digit has ``elsewhere`` (default: 1, 2 and 3 equally likely), to show it is not weighed.
    """
    tokens = tokens_of(text)
    last_digit = max(index for index, token in enumerate(tokens) if token.strip().isdigit())
    content = []
    for index, token in enumerate(tokens):
        top: list[tuple[str, float]] = []
        if index == last_digit:
            top = at_score
        elif token.strip().isdigit():
            top = elsewhere or [("1", 1 / 3), ("2", 1 / 3), ("3", 1 / 3)]
        chosen = next((p for t, p in top if t == token), 1.0)
        content.append(
            {
                "token": token,
                "logprob": math.log(chosen),
                "bytes": list(token.encode()),
                "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in top],
            }
        )
    return {"content": content, "refusal": None}


def grade(server: OpenAIServer, **options: Any) -> dict[str, Any]:
    return RubricEvaluator(chat_generator=generator(server), scoring="logprobs", **options).run(**ANSWER)


def test_scripted_logprobs_give_the_weighted_mean_and_confidence_computed_by_hand():
    with OpenAIServer(lambda request: Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, SCORE_ALTERNATIVES))) as server:
        result = grade(server)
        (body,) = server.bodies
    assert body["logprobs"] is True
    assert body["top_logprobs"] == 20
    assert body.get("n") in (None, 1)
    assert body["response_format"]["type"] == "json_schema"  # structured="auto": the score's key is then sure
    assert result["individual_scores"] == [round(BY_HAND_SCORE, 4)] == [4.1429]
    assert result["confidences"] == [round(BY_HAND_CONFIDENCE, 4)] == [0.5714]
    assert result["score"] == pytest.approx(4.1429)
    assert result["failure_kinds"] == [None]
    assert result["explanations"] == ["All 3 criteria are met."]
    assert result["samples_used"] == [1]
    assert result["usage"]["calls"] == 1
    assert "scoring:logprobs" in result["signature"]


def test_a_server_refusing_the_schema_is_asked_again_in_the_next_format_still_for_logprobs():
    def refuses_json_schema(request: dict[str, Any]) -> Reply:
        if (request.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=400, message="Invalid schema for response_format 'grade'")
        return Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, SCORE_ALTERNATIVES))

    with OpenAIServer(refuses_json_schema) as server:
        result = grade(server)
        bodies = server.bodies
    assert [body["response_format"]["type"] for body in bodies] == ["json_schema", "json_object"]
    assert all(body["logprobs"] is True and body["top_logprobs"] == 20 for body in bodies)
    assert result["individual_scores"] == [4.1429]
    assert result["usage"]["structured_fallbacks"] == 1


def test_two_spellings_of_a_value_add_up_and_a_value_not_offered_has_no_weight():
    alternatives = [("4", 0.4), (" 4", 0.2), ("2", 0.2), ("**", 0.2)]  # 4: 0.6, 2: 0.2, over 0.8
    with OpenAIServer(lambda request: Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, alternatives))) as server:
        result = grade(server)
    assert result["individual_scores"] == [round((4 * 0.6 + 2 * 0.2) / 0.8, 4)] == [3.5]
    assert result["confidences"] == [0.75]


def test_a_server_that_returns_no_logprobs_gives_no_logprobs_with_its_reason_never_the_texts_score():
    with OpenAIServer(lambda request: Reply(texts=[REPLY])) as server:  # "logprobs": null, as llama.cpp's old servers
        result = grade(server)
    assert result["individual_scores"] == [None]
    assert result["failure_kinds"] == ["no_logprobs"]
    assert result["failure_counts"]["no_logprobs"] == 1
    assert result["score"] is None
    assert result["graded"] == 0
    assert "returned no log-probabilities" in result["explanations"][0]
    assert "read as 4" in result["explanations"][0]


def test_the_reply_cache_replays_a_logprob_grade_without_a_request(tmp_path):
    cache = str(tmp_path / "replies.jsonl")
    with OpenAIServer(lambda request: Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, SCORE_ALTERNATIVES))) as server:
        first = grade(server, cache_path=cache)
        again = grade(server, cache_path=cache)
        assert server.requests == 1
    assert first["individual_scores"] == again["individual_scores"] == [4.1429]
    assert first["confidences"] == again["confidences"] == [0.5714]
    assert again["usage"]["calls"] == 0
    assert again["usage"]["cache_hits"] == 1
    lines = [json.loads(line) for line in Path(cache).read_text(encoding="utf-8").splitlines()[1:]]
    # Beside the reply, the structured output the server answered in (the reply cache's own record).
    (entry,) = [line for line in lines if line["samples"][0]["finish_reason"] != "accepted"]
    kept = entry["samples"][0]["logprobs"]
    assert len(kept["positions"]) == len(tokens_of(REPLY))
    # Alternatives are kept for the digits only: the two of this reply.
    assert sum(1 for position in kept["positions"] if position[2]) == 2


def test_a_reply_without_logprobs_is_not_cached_so_the_next_run_asks_again(tmp_path):
    cache = str(tmp_path / "replies.jsonl")
    with OpenAIServer(lambda request: Reply(texts=[REPLY])) as server:
        grade(server, cache_path=cache)
        grade(server, cache_path=cache)
        assert server.requests == 2


def test_the_score_is_the_value_of_the_last_score_key_not_the_first_digit():
    # "score" in words, then the JSON: the JSON's value (the last key) is the one weighed.
    text = 'My score is 2 at first. {"explanation": "Then 5.", "score": 3}'
    alternatives = [("3", 0.5), ("2", 0.5)]
    with OpenAIServer(lambda request: Reply(texts=[text], logprobs=logprobs_for(text, alternatives))) as server:
        result = grade(server)
    assert result["individual_scores"] == [2.5]
    assert result["confidences"] == [0.5]


def test_the_cli_scores_by_logprobs_and_its_summary_lists_no_logprobs(tmp_path):
    rows = [{"question": f"q{n}", "prediction": f"answer {n}", "context": "c"} for n in range(3)]
    source, output = write_jsonl(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"

    def script(request: dict[str, Any]) -> Reply:
        if "answer 2" in request["messages"][-1]["content"]:
            return Reply(texts=[REPLY])  # this one without log-probabilities
        return Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, SCORE_ALTERNATIVES))

    with OpenAIServer(script) as server:
        done = cli(
            "rubric",
            source,
            "--api-base-url",
            server.url,
            "--model",
            "grader",
            "--api-key-env",
            "ANSWER_EVAL_LOGPROB_KEY",
            "--scoring",
            "logprobs",
            "--no-progress",
            "--format",
            "json",
            "--output",
            output,
            env={**os.environ, "ANSWER_EVAL_LOGPROB_KEY": "k"},
        )
        assert server.requests == 3
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["graded"] == 2
    assert summary["mean_score"] == pytest.approx(4.1429)
    assert summary["scores"] == {"4": 2}  # each weighted score counted at its nearest value
    assert summary["failure_counts"] == {
        "parse_failure": 0,
        "budget_stop": 0,
        "refusal": 0,
        "error": 0,
        "no_logprobs": 1,
    }
    assert "scoring:logprobs" in summary["signature"]
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["score"] for row in graded] == [4.1429, 4.1429, None]
    assert [row["failure_kind"] for row in graded] == [None, None, "no_logprobs"]


def test_a_sampled_summary_does_not_list_no_logprobs_and_a_weighed_one_keeps_its_mean_across_resume():
    assert "no_logprobs" not in RubricSummary().counts()["failure_counts"]
    weighed = RubricSummary(scoring="logprobs")
    weighed.add_rows({}, {"score": [4.1429, 2.5, None], "failure_kind": [None, None, "no_logprobs"], **_costs(3)})
    restored = RubricSummary(scoring="logprobs")
    restored.load(weighed.state())
    for summary in (weighed, restored):
        counts = summary.counts()
        assert counts["mean_score"] == pytest.approx((4.1429 + 2.5) / 2)
        assert counts["scores"] == {"3": 1, "4": 1}  # 2.5 rounds up
        assert counts["failure_counts"]["no_logprobs"] == 1


def _costs(rows: int) -> dict[str, list[int]]:
    return {name: [0] * rows for name in ("calls", "prompt_tokens", "completion_tokens")}


# -- the bad-inputs row: a bad --scoring (docs/bad-inputs.md) ---------------------------------------------------------
def test_a_bad_scoring_value_is_refused_before_any_call(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"question": "q", "prediction": "p", "context": "c"}])
    with OpenAIServer(lambda request: REPLY) as server:
        done = cli("rubric", source, "--model", "m", "--api-base-url", server.url, "--scoring", "best")
        pairwise = cli(
            *("rubric", source, "--model", "m", "--api-base-url", server.url, "--scoring", "logprobs", "--pairwise"),
            env={**os.environ, "OPENAI_API_KEY": "k"},
        )
        with pytest.raises(ValueError, match="scoring is 'samples' or 'logprobs', got 'best'"):
            RubricEvaluator(chat_generator=generator(server), scoring="best")
        with pytest.raises(ValueError, match="samples is 1 with scoring logprobs"):
            RubricEvaluator(chat_generator=generator(server), scoring="logprobs", samples=3)
        assert server.requests == 0
    assert done.returncode == 2
    assert "--scoring: invalid choice: 'best'" in done.stderr
    assert pairwise.returncode == 2
    assert "a pairwise choice is not weighed" in pairwise.stderr
    with pytest.raises(OptionError, match="scoring"):
        RubricOptions(model="m", scoring=["logprobs"])  # type: ignore[arg-type]


# -- hostile log-probabilities: bounded, a failure, never a crash -------------------------------------------------
def _hostile_position(**fields: Any) -> dict[str, Any]:
    return {"content": [{"token": "4", "logprob": -0.1, "top_logprobs": [], **fields}]}


def _deep(levels: int) -> Any:
    value: Any = "4"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("logprobs", "why"),
    [
        (_hostile_position(logprob=float("nan")), "token 1 is not a token"),
        (_hostile_position(logprob="minus one"), "token 1 is not a token"),
        (_hostile_position(logprob=3.0), "token 1 is not a token"),
        (_hostile_position(token=_deep(300)), "token 1 is not a token"),
        (_hostile_position(token="4" * 65), "token 1 is not a token"),
        (_hostile_position(top_logprobs={"token": "4"}), "its top_logprobs is not a list"),
        (_hostile_position(top_logprobs=[{"token": "5", "logprob": float("inf")}]), "an alternative is not"),
        ({"content": "4"}, "their content is not a list"),
        ({"content": [_deep(300)]}, "token 1 is not a token"),
        # A JSON integer of 401 digits: no float holds it (float() raised OverflowError: exit 1 before).
        (_hostile_position(logprob=-(10**400)), "token 1 is not a token"),
        (_hostile_position(top_logprobs=[{"token": "5", "logprob": -(10**400)}]), "an alternative is not"),
        (_hostile_position(logprob=True), "token 1 is not a token"),
    ],
)
def test_hostile_logprobs_are_a_failure_with_its_reason_not_a_crash(logprobs, why):
    reply = '{"score": 4}'
    with OpenAIServer(lambda request: Reply(texts=[reply], logprobs=logprobs)) as server:
        result = grade(server)
    assert result["failure_kinds"] == ["no_logprobs"]
    assert why in result["explanations"][0]


def test_huge_logprobs_are_cut_to_their_bounds():
    # 5,000 tokens before the score: only the first 4,096 are kept, so the score's token is not among them.
    long_reply = '{"explanation": "' + "a " * 5_000 + '", "score": 4}'
    with OpenAIServer(lambda request: Reply(texts=[long_reply], logprobs=logprobs_for(long_reply, [("4", 1.0)]))) as s:
        cut = grade(s)
    assert cut["failure_kinds"] == ["no_logprobs"]
    assert f"only the first {MAX_POSITIONS:,} tokens' are kept" in cut["explanations"][0]
    # 500 alternatives at the score: the first 20 are weighed; a 5 beyond them would change the score.
    many = [("4", 0.5), ("3", 0.5 / 19), *[(f"w{n}", 1e-4) for n in range(18)], *[("5", 0.9)] * 480]
    with OpenAIServer(lambda request: Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, many))) as server:
        result = grade(server)
    assert len(many) > MAX_ALTERNATIVES
    p4, p3 = 0.5 / (0.5 + 0.5 / 19), (0.5 / 19) / (0.5 + 0.5 / 19)
    assert result["individual_scores"] == [round(4 * p4 + 3 * p3, 4)]
    assert result["confidences"] == [round(p4, 4)]


def test_a_value_written_over_several_tokens_is_not_weighed():
    tokens = (
        TokenChoice('{"score": ', 0.0),
        TokenChoice("1", -0.1, (("1", -0.1), ("9", -2.4))),
        TokenChoice("0}", 0.0),
    )
    assert "written over several tokens" in str(weigh(Logprobs(tokens), 10, range(1, 11)))
    assert from_meta({"logprobs": None}) is None
    # Another generator's meta may hold what OpenAI's SDK would have made a number: a string is no log-probability.
    assert from_meta({"logprobs": {"content": [{"token": "4", "logprob": "-0.1"}]}}).problem == (  # type: ignore[union-attr]
        "token 1 is not a token of at most 64 characters with a log-probability (a finite number at most 0)"
    )
    assert from_meta({"logprobs": {"content": None, "refusal": "no"}}) is None


def test_a_damaged_logprobs_entry_in_the_cache_is_dropped_and_the_prompt_asked_again(tmp_path):
    cache = tmp_path / "replies.jsonl"
    with OpenAIServer(lambda request: Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, SCORE_ALTERNATIVES))) as server:
        grade(server, cache_path=str(cache))
        lines = cache.read_text(encoding="utf-8").splitlines()
        entry = json.loads(lines[1])
        entry["samples"][0]["logprobs"]["positions"][0][1] = "NaN"  # not a number: not as this package writes it
        cache.write_text("\n".join([lines[0], json.dumps(entry)]) + "\n", encoding="utf-8")
        again = grade(server, cache_path=str(cache))
        assert server.requests == 2
    assert again["individual_scores"] == [4.1429]


def test_a_grader_saves_its_scoring():
    with OpenAIServer(lambda request: REPLY) as server:
        weighed = RubricEvaluator(chat_generator=generator(server), scoring="logprobs")
        sampled = RubricEvaluator(chat_generator=generator(server))
        again = RubricEvaluator.from_dict(json.loads(json.dumps(weighed.to_dict())))
    assert weighed.to_dict()["init_parameters"]["scoring"] == "logprobs"
    assert again.signature == weighed.signature
    assert "scoring:logprobs" in again.signature
    assert sampled.to_dict()["init_parameters"]["scoring"] == "samples"
    assert "scoring" not in sampled.signature


# -- numbers no float holds, from the server and from the cache (bad-inputs rows) -----------------------------------
HUGE = -(10**400)
"""A log-probability of 401 digits, as a JSON integer: float() of it raises OverflowError."""


def _rubric_cli(source: Path, server: OpenAIServer, output: Path, *more: Any) -> Any:
    return cli(
        *("rubric", source, "--api-base-url", server.url, "--model", "grader", "--api-key-env", "ANSWER_EVAL_LP_KEY"),
        *("--scoring", "logprobs", "--no-progress", "--format", "json", "--output", output, *more),
        env={**os.environ, "ANSWER_EVAL_LP_KEY": "k"},
    )


def _with_huge_score_logprob() -> dict[str, Any]:
    logprobs = logprobs_for(REPLY, SCORE_ALTERNATIVES)
    score_token = max(i for i, entry in enumerate(logprobs["content"]) if entry["token"] == "4")
    logprobs["content"][score_token]["logprob"] = HUGE
    return logprobs


def test_a_401_digit_logprob_from_the_server_is_no_logprobs_and_the_run_goes_on(tmp_path):
    rows = [{"question": f"q{n}", "prediction": f"answer {n}", "context": "c"} for n in range(3)]
    source, output = write_jsonl(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"

    def script(request: dict[str, Any]) -> Reply:
        if "answer 1" in request["messages"][-1]["content"]:
            return Reply(texts=[REPLY], logprobs=_with_huge_score_logprob())
        return Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, SCORE_ALTERNATIVES))

    with OpenAIServer(script) as server:
        done = _rubric_cli(source, server, output)
        assert server.requests == 3
    assert done.returncode == 0, done.stderr  # was 1: OverflowError, "this is a bug", the paid rows lost
    graded = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["failure_kind"] for row in graded] == [None, "no_logprobs", None]
    assert [row["score"] for row in graded] == [4.1429, None, 4.1429]
    assert "cannot be used: token" in graded[1]["explanation"]
    assert json.loads(done.stdout)["failure_counts"]["no_logprobs"] == 1


def test_a_401_digit_logprob_in_a_cache_line_is_a_damaged_line_and_its_prompt_asked_again(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"question": "q", "prediction": "answer", "context": "c"}])
    cache, output = tmp_path / "replies.jsonl", tmp_path / "out.jsonl"
    with OpenAIServer(lambda request: Reply(texts=[REPLY], logprobs=logprobs_for(REPLY, SCORE_ALTERNATIVES))) as server:
        assert _rubric_cli(source, server, output, "--cache", cache).returncode == 0
        lines = cache.read_text(encoding="utf-8").splitlines()
        # The reply's line (the cache also holds its marker and the structured-output format the server took).
        at = next(i for i, line in enumerate(lines) if '"samples"' in line)
        entry = json.loads(lines[at])
        positions = entry["samples"][0]["logprobs"]["positions"]
        score_token = max(i for i, position in enumerate(positions) if position[0] == "4")
        positions[score_token][1] = HUGE  # json.dumps writes it as the 401 digits a server or an editor would
        lines[at] = json.dumps(entry)
        cache.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        assert str(HUGE) in cache.read_text(encoding="utf-8")
        again = _rubric_cli(source, server, output, "--cache", cache)
        assert server.requests == 2  # was: exit 1 before any request, on every run with this cache
        third = _rubric_cli(source, server, output, "--cache", cache)
        assert server.requests == 2  # the line asked again was cached anew: this run is served from it
    assert again.returncode == 0, again.stderr
    assert "has 1 damaged line (skipped: their prompts are asked again)" in again.stderr
    assert json.loads(again.stdout)["mean_score"] == pytest.approx(4.1429)
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["calls"] == 0
    assert json.loads(third.stdout)["mean_score"] == pytest.approx(4.1429)
