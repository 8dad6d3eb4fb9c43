"""``--dry-run``: the command line (in process) against the loopback server, which must count no request.

Each estimate is checked against what the real run then sends to the same server: the requests,
their prompts' characters / 4 (rounded up, a request), the replies asked (``n``), the completion
bound and the money, computed here from the request bodies the server saw.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore
from answer_eval.llm.spending import CostTooLarge, Planned, estimate, price
from tests.cli_runs import cli, write_jsonl
from tests.openai_server import OpenAIServer, texts_for_n
from tests.test_judge_trust_cli import KEY_ENV, escalate_args, says_yes_to_odd_rows
from tests.test_judge_trust_cli import columns as judge_columns
from tests.test_judge_trust_cli import rows as judge_rows
from tests.test_rubric_cli import grading_script, rows, rubric_args

PRICE = (0.15, 0.6)


def no_key() -> dict[str, str]:
    """The environment without the key's variable: a dry run needs none."""
    return {name: value for name, value in os.environ.items() if name not in ("ANSWER_EVAL_CLI_KEY", KEY_ENV)}


def with_key() -> dict[str, str]:
    return {**os.environ, "ANSWER_EVAL_CLI_KEY": "sk-dry-run-test", KEY_ENV: "sk-dry-run-test"}


def grading_n(request: dict[str, Any]) -> list[str]:
    return texts_for_n(request, lambda _i: grading_script(request))


def characters(body: dict[str, Any]) -> int:
    """The characters of every message's text in a request body."""
    total = 0
    for message in body["messages"]:
        content = message.get("content") or ""
        parts = [content] if isinstance(content, str) else [part.get("text") or "" for part in content]
        total += sum(len(part) for part in parts)
    return total


def sent(bodies: list[dict[str, Any]]) -> list[Planned]:
    """The requests the server saw, as the estimate counts them: prompt characters / 4 rounded up, replies asked."""
    return [Planned(math.ceil(characters(body) / 4), int(body.get("n") or 1)) for body in bodies]


def dry(*args: Any, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = cli(*args, "--dry-run", "--format", "json", env=env or no_key())
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_rubric_dry_run_sends_nothing_writes_nothing_and_predicts_the_real_run(tmp_path: Path) -> None:
    data = rows(5)
    data[3]["prediction"] = "   "  # no response text: graded without a call
    source = write_jsonl(tmp_path / "answers.jsonl", data)
    output, cache = tmp_path / "graded.jsonl", tmp_path / "cache.jsonl"
    more = ("--samples", "3", "--max-tokens", "50", "-o", output, "--cache", cache)
    with OpenAIServer(grading_n) as server:
        figures = dry(*rubric_args(source, server, *more, "--price-per-million-tokens", *PRICE))
        assert server.requests == 0
        assert not output.exists()
        assert not cache.exists()
        done = cli(*rubric_args(source, server, *more), env=with_key())
        assert done.returncode == 0, done.stderr
        bodies = list(server.bodies)
    assert len(bodies) == 4  # one request for n = 3 a row with text
    expected = estimate(sent(bodies), 50, price(PRICE))
    assert figures["requests"] == expected.requests == 4
    assert figures["replies"] == expected.replies == 12
    assert figures["prompt_tokens"] == expected.prompt_tokens
    assert figures["completion_tokens_max"] == 50 * 12
    assert figures["prompt_cost"] == pytest.approx(expected.prompt_tokens * 0.15 / 1e6)
    assert figures["cost_max"] == pytest.approx(expected.prompt_tokens * 0.15 / 1e6 + 600 * 0.6 / 1e6)
    assert figures["rows"] == 5
    assert figures["cached_prompts"] == 0
    assert figures["token_rule"] == "characters/4"


def test_a_warm_cache_reduces_the_requests_and_is_not_written(tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    with OpenAIServer(grading_n) as server:
        warm = write_jsonl(tmp_path / "first.jsonl", rows(4))
        assert cli(*rubric_args(warm, server, "--cache", cache), env=with_key()).returncode == 0
        before = cache.read_bytes()
        source = write_jsonl(tmp_path / "all.jsonl", rows(6))
        figures = dry(*rubric_args(source, server, "--cache", cache))
        assert server.requests == 4  # the dry run sent nothing
        assert cache.read_bytes() == before
        cli(*rubric_args(source, server, "--cache", cache), env=with_key())
        rest = list(server.bodies)[4:]
    assert figures["cached_prompts"] == 4
    assert figures["requests"] == len(rest) == 2
    assert figures["prompt_tokens"] == estimate(sent(rest), None).prompt_tokens
    assert figures["completion_tokens_max"] is None  # no --max-tokens: no bound


def test_max_calls_says_what_the_budget_lets_through(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "answers.jsonl", rows(5))
    budget = ("--max-calls", "2", "--concurrency", "1", "--max-tokens", "20")
    with OpenAIServer(grading_n) as server:
        figures = dry(*rubric_args(source, server, *budget, "--price-per-million-tokens", "1", "2"))
        assert server.requests == 0
        cli(*rubric_args(source, server, *budget), env=with_key())
        bodies = list(server.bodies)
    assert figures["requests"] == 5
    assert figures["max_calls"] == 2
    within = figures["within_max_calls"]
    expected = estimate(sent(bodies), 20, price(["1", "2"]))
    assert within["requests"] == expected.requests == 2
    assert within["prompt_tokens"] == expected.prompt_tokens
    assert within["cost_max"] == pytest.approx(expected.prompt_tokens / 1e6 + 2 * 20 * 2 / 1e6)


def test_the_judge_dry_run_counts_only_the_rows_it_would_escalate(tmp_path: Path) -> None:
    data = judge_rows(24)
    unsure = [c < 0.9 for c in AnswerJudgeCore().score(judge_columns(data))["confidence"]]
    assert 0 < sum(unsure) < len(unsure)
    source = write_jsonl(tmp_path / "answers.jsonl", data)
    with OpenAIServer(says_yes_to_odd_rows) as server:
        figures = dry(*escalate_args(source, server, "--price-per-million-tokens", "2", "8"))
        assert server.requests == 0
        done = cli(*escalate_args(source, server), env=with_key())
        assert done.returncode == 0, done.stderr
        bodies = list(server.bodies)
    assert figures["requests"] == len(bodies) == sum(unsure)
    assert figures["prompt_tokens"] == estimate(sent(bodies), None).prompt_tokens
    # The judge sends no max_tokens: the completion has no bound, and only the prompt's money is known.
    assert figures["completion_tokens_max"] is None
    assert figures["cost_max"] is None
    assert figures["prompt_cost"] == pytest.approx(figures["prompt_tokens"] * 2 / 1e6)


def test_the_text_estimate_states_its_rule_and_its_bounds(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_n) as server:
        args = rubric_args(source, server, "--max-tokens", "10", "--dry-run", "--price-per-million-tokens", "1", "1")
        done = cli(*args, env=no_key())
        assert server.requests == 0
    assert done.returncode == 0, done.stderr
    assert "nothing sent, nothing written" in done.stdout
    assert "estimated: characters/4" in done.stdout
    assert "at most 20 (--max-tokens 10 a reply, an upper bound)" in done.stdout
    assert "cost               at most" in done.stdout


@pytest.mark.parametrize(
    ("values", "said"),
    [
        (("-1", "2"), "expected finite numbers of 0 or more, got -1"),
        (("nan", "2"), "expected finite numbers of 0 or more, got nan"),
        (("1", "inf"), "expected finite numbers of 0 or more, got inf"),
        (("1", "cheap"), "expected numbers, got 'cheap'"),
        (("1",), "expected 2 arguments"),
    ],
)
def test_a_bad_price_is_refused_with_exit_2_before_any_call(tmp_path: Path, values: tuple[str, ...], said: str) -> None:
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_n) as server:
        done = cli(*rubric_args(source, server, "--dry-run", "--price-per-million-tokens", *values), env=no_key())
        assert server.requests == 0
    assert done.returncode == 2
    assert "--price-per-million-tokens" in done.stderr
    assert said in done.stderr


def test_a_price_without_dry_run_or_a_dry_run_with_no_llm_is_refused_with_exit_2(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_n) as server:
        priced = cli(*rubric_args(source, server, "--price-per-million-tokens", "1", "2"), env=with_key())
        assert server.requests == 0
    assert priced.returncode == 2
    assert "--price-per-million-tokens goes with --dry-run" in priced.stderr
    judged = write_jsonl(tmp_path / "judge.jsonl", judge_rows(3))
    plain = cli("judge", judged, "--dry-run", "--no-progress")
    assert plain.returncode == 2
    assert "this run sends none (the judge: give --escalate-model)" in plain.stderr


def test_a_prompt_with_some_samples_cached_asks_only_for_the_rest(tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    with OpenAIServer(grading_n) as server:
        assert cli(*rubric_args(source, server, "--cache", cache), env=with_key()).returncode == 0
        figures = dry(*rubric_args(source, server, "--cache", cache, "--samples", "3"))
        assert server.requests == 3
        cli(*rubric_args(source, server, "--cache", cache, "--samples", "3"), env=with_key())
        rest = list(server.bodies)[3:]
    assert figures["cached_prompts"] == 3
    assert figures["requests"] == len(rest) == 3
    assert figures["replies"] == sum(body["n"] for body in rest) == 6  # 2 more a prompt, 1 was cached


def test_the_estimate_rule_bounds_and_money_by_hand() -> None:
    from answer_eval.llm.spending import estimated_tokens, figures

    assert estimated_tokens(["abcd", "e"]) == 2  # 5 characters: 5 / 4 rounded up
    assert estimated_tokens([]) == 0
    planned = [Planned(10, 3), Planned(6, 1), Planned(4, 2)]
    every, within = figures(planned, 5, price([2, 4]), 2)
    assert (every.requests, every.replies, every.prompt_tokens, every.completion_tokens_max) == (3, 6, 20, 30)
    assert every.cost_max == pytest.approx((20 * 2 + 30 * 4) / 1e6)
    assert within is not None
    assert (within.requests, within.prompt_tokens, within.completion_tokens_max) == (2, 16, 20)
    unbounded = estimate(planned, None, price([1, 1]))
    assert unbounded.completion_tokens_max is None
    assert unbounded.cost_max is None
    assert unbounded.prompt_cost == pytest.approx(20 / 1e6)
    for bad in (["-1", "1"], ["nan", "1"], ["1"], ["1", "x"]):
        with pytest.raises(ValueError, match="takes"):
            price(bad)


# -- costs no float holds, and -0 (bad-inputs rows) -------------------------------------------------------------------
def test_prices_whose_cost_no_float_holds_are_refused_naming_the_flag_never_inf(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_n) as server:
        done = {
            form: cli(
                *rubric_args(source, server, "--max-tokens", "10", "--dry-run", "--format", form),
                *("--price-per-million-tokens", "1e308", "1e308"),
                env=no_key(),
            )
            for form in ("text", "json")
        }
        assert server.requests == 0
    for form, run in done.items():
        assert run.returncode == 2, (form, run.stdout)  # was 0: "cost at most inf", "cost_max": Infinity
        assert "--price-per-million-tokens" in run.stderr
        assert "cost more than any float holds" in run.stderr
        assert "inf" not in run.stdout.lower()
    with pytest.raises(CostTooLarge):  # each cost finite, their sum not: refused too
        estimate([Planned(1_000_000)], 1_000_000, price(["1e308", "1e308"]))
    with pytest.raises(CostTooLarge):
        estimate([Planned(10)], None, price(["1e308", "0"]))


def test_a_price_of_minus_zero_is_zero_and_a_max_tokens_no_reply_reaches_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_n) as server:
        args = rubric_args(source, server, "--max-tokens", "10", "--dry-run", "--price-per-million-tokens", "-0", "-0")
        text = cli(*args, env=no_key())
        data = cli(*args, "--format", "json", env=no_key())
        huge = cli(*rubric_args(source, server, "--max-tokens", "1" + "0" * 400, "--dry-run"), env=no_key())
        assert server.requests == 0
    assert text.returncode == 0, text.stderr
    assert "-0" not in text.stdout  # was "cost at most -0 (prompt -0, completion at most -0), at -0 / -0"
    assert "cost               at most 0 (prompt 0, completion at most 0), at 0 / 0 a million tokens" in text.stdout
    figures = json.loads(data.stdout)
    assert "-0.0" not in data.stdout
    assert figures["price_per_million_tokens"] == [0.0, 0.0]
    assert figures["cost_max"] == 0.0
    assert math.copysign(1.0, figures["cost_max"]) == 1.0
    # A 401-digit --max-tokens made the priced estimate raise OverflowError (exit 1); it is no reply's length.
    assert huge.returncode == 2
    assert "--max-tokens must be between 1 and 1,000,000,000, got 10000000000000000000..." in huge.stderr
