"""A jury from the command line and from the core alone: ``answer-eval rubric --model A --model B`` and
``answer-eval judge --escalate-model A --escalate-model B``, the same panel the components run.

Loopback servers behind Haystack's real OpenAIChatGenerator, the command line run in process. The rubric
jury's figures are the component's on the same servers (tests/test_jury.py works them out by hand), the
judge jury's Fleiss' kappa the one tests/test_jury.py works out (0.1).
"""

from __future__ import annotations

import json

import pytest

from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore
from answer_eval.evaluators.judge.judge_options import JudgeOptions
from answer_eval.evaluators.rubric_grading import RubricCore, RubricOptions
from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator, RubricEvaluator
from tests.cli_runs import cli, stopped_at, write_jsonl
from tests.openai_server import OpenAIServer
from tests.openai_server import grader_generator as generator
from tests.test_jury import ANSWERS, FIRST, GOLDS, INPUTS, JUDGE_A, JUDGE_B, PREDICTIONS, SECOND, THIRD, judge_script

RUBRIC_ROWS = [{"question": "q", "context": "c", "prediction": answer} for answer in ANSWERS]
JUDGE_ROWS = [
    {"answers": golds, "prediction": prediction} for golds, prediction in zip(GOLDS, PREDICTIONS, strict=True)
]
KAPPA = {"judges": 3, "items": 5, "fleiss_kappa": 0.1}


def rubric_jury(source, first, second, *more):
    servers = ("--model", "ga", "--api-base-url", first.url, "--model", "gb", "--api-base-url", second.url)
    return cli("rubric", source, *servers, "--samples", "2", "--no-progress", *map(str, more))


def judge_jury(source, servers, *more):
    named = [
        flag
        for number, server in enumerate(servers)
        for flag in ("--escalate-model", f"m{number}", "--api-base-url", server.url)
    ]
    return cli("judge", source, "--escalate-below", "1.0", *named, "--no-progress", *map(str, more))


def read_rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_rubric_jury_from_the_command_line_gives_the_components_grades_per_judge_grades_and_agreement(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", RUBRIC_ROWS)
    output = tmp_path / "graded.jsonl"
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        done = rubric_jury(source, first, second, "--output", output, "--format", "json")
        text = rubric_jury(source, first, second)
        component = RubricEvaluator(chat_generator=[generator(first), generator(second)], samples=2).run(**INPUTS)
        assert (first.requests, second.requests) == (12, 12)  # 4 answers, 3 runs, every judge every answer
    assert done.returncode == 0, done.stderr
    rows = read_rows(output)
    assert [row["score"] for row in rows] == component["individual_scores"]
    assert [row["confidence"] for row in rows] == component["confidences"]
    assert [row["judge_grades"] for row in rows] == component["judge_scores"]
    summary = json.loads(done.stdout)
    assert summary["judge_agreement"] == component["judge_agreement"]
    assert summary["judge_agreement"]["judges"] == 2
    assert "model:[ga,gb]" in summary["signature"]
    alpha = component["judge_agreement"]["krippendorff_alpha"]
    assert f"judge agreement  krippendorff alpha (ordinal) {alpha:.4f} over 3 rows every judge graded (2 judges)" in (
        text.stdout
    )


def test_one_model_keeps_its_columns_summary_and_signature(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", RUBRIC_ROWS)
    with OpenAIServer(judge_script(JUDGE_A)) as server:
        done = cli("rubric", source, "--model", "ga", "--api-base-url", server.url, "--no-progress", "--format", "json")
        output = tmp_path / "o.jsonl"
        cli("rubric", source, "--model", "ga", "--api-base-url", server.url, "--no-progress", "--output", output)
    summary = json.loads(done.stdout)
    assert "judge_agreement" not in summary
    assert "|model:ga|" in summary["signature"]
    assert "judge_grades" not in read_rows(output)[0]


def test_two_models_on_one_server_are_two_judges_the_server_given_once(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", RUBRIC_ROWS)
    scripts = {"ga": judge_script(JUDGE_A), "gb": judge_script(JUDGE_B)}
    output = tmp_path / "graded.jsonl"
    with OpenAIServer(lambda request: scripts[request["model"]](request)) as server:
        done = cli(
            "rubric", source, "--model", "ga", "--model", "gb", "--api-base-url", server.url, "--samples", "2",
            "--no-progress", "--output", output, "--format", "json",
        )  # fmt: skip
        assert server.requests == 8
    assert done.returncode == 0, done.stderr
    assert [row["judge_grades"] for row in read_rows(output)] == [[4, 4], [2, 2], [5, 3], [1, None]]


def test_the_budget_buys_whole_panels_and_the_cache_makes_a_rerun_free(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", RUBRIC_ROWS)
    cache, output = tmp_path / "replies.jsonl", tmp_path / "graded.jsonl"
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        # Two judges of one request each (n=2) an answer: 3 calls buy one panel, not one and a half.
        cut = rubric_jury(source, first, second, "--max-calls", "3", "--output", output, "--format", "json")
        assert (first.requests, second.requests) == (1, 1)
        kinds = [row["failure_kind"] for row in read_rows(output)]
        assert kinds == [None, "budget_stop", "budget_stop", "budget_stop"]
        assert json.loads(cut.stdout)["calls"] == 2
        full = rubric_jury(source, first, second, "--cache", cache, "--output", output, "--format", "json")
        rows = read_rows(output)
        again = rubric_jury(source, first, second, "--cache", cache, "--output", output, "--format", "json")
        # The rerun sent only what no cache keeps: judge B's unreadable replies to answer-3, asked again.
        assert (first.requests, second.requests) == (5, 6)
    assert full.returncode == again.returncode == 0
    graded = ("score", "confidence", "explanation", "judge_grades")
    assert [[row[name] for name in graded] for row in read_rows(output)] == [[row[n] for n in graded] for row in rows]
    assert json.loads(again.stdout)["judge_agreement"] == json.loads(full.stdout)["judge_agreement"]
    assert json.loads(again.stdout)["calls"] == 1


def test_a_resumed_jury_spends_what_is_left_of_the_budget_on_whole_panels_and_keeps_the_agreement(tmp_path):
    source = write_jsonl(
        tmp_path / "answers.jsonl", [{"question": "q", "context": "c", "prediction": f"p{n}"} for n in range(40)]
    )
    output = tmp_path / "graded.jsonl"
    reply = lambda request: json.dumps({"explanation": "x", "score": 1 + len(request["model"]) % 2})  # noqa: E731
    with OpenAIServer(reply) as server:
        jury = ("rubric", "--model", "ga", "--model", "gbb", "--api-base-url", server.url, "--no-progress")
        stopped_at(20, jury, source, output, "--max-calls", "50", "--checkpoint-seconds", "0")
        first = server.requests
        resumed = cli(
            *jury[:1], source, *jury[1:], "--output", output, "--max-calls", "50", "--resume", "--format", "json"
        )
        assert resumed.returncode == 0, resumed.stderr
        assert 0 < first < 50 == server.requests  # 25 panels of two, across the resume
    rows = read_rows(output)
    assert [row["failure_kind"] for row in rows] == [None] * 25 + ["budget_stop"] * 15
    assert {tuple(row["judge_grades"]) for row in rows[:25]} == {(1, 2)}  # by the length of the model's name
    summary = json.loads(resumed.stdout)
    assert summary["calls"] == 50
    assert summary["judge_agreement"] == {"judges": 2, "items": 25, "level": "ordinal", "krippendorff_alpha": -0.96}


def test_a_judge_escalation_jury_from_the_command_line_decides_by_majority(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", JUDGE_ROWS)
    output = tmp_path / "judged.jsonl"
    with OpenAIServer(FIRST) as one, OpenAIServer(SECOND) as two, OpenAIServer(THIRD) as three:
        done = judge_jury(source, (one, two, three), "--output", output, "--format", "json")
        text = judge_jury(source, (one, two, three))
        component = AnswerJudgeEvaluator(
            escalate_to=[generator(one), generator(two), generator(three)], escalate_below=1.0
        ).run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS)
    assert done.returncode == 0, done.stderr
    rows = read_rows(output)
    assert [row["llm_judge_verdicts"] for row in rows] == component["llm_judge_verdicts"]
    assert [row["llm_verdict"] for row in rows] == component["llm_verdicts"] == [True, True, False, True, False]
    assert [int(row["correct"]) for row in rows] == component["individual_scores"]
    summary = json.loads(done.stdout)
    assert summary["llm_agreement"] == component["llm_agreement"] == KAPPA
    assert summary["calls"] == 15
    assert "llm agreement    fleiss kappa 0.1000 over 5 rows every judge gave a verdict on (3 judges)" in text.stdout


def test_the_cores_alone_run_a_jury_of_servers_or_of_generators():
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        options = RubricOptions(model=("ga", "gb"), api_base_url=(first.url, second.url), samples=2)
        columns = {"prediction": ANSWERS, "question": ["q"] * 4, "context": ["c"] * 4}
        by_servers = RubricCore(options).score(columns)
        core = RubricCore(RubricOptions(samples=2), generator=[generator(first), generator(second)])
        grades, usage, per_judge = core.grade(columns)
    assert by_servers["judge_grades"] == per_judge == [[4, 4], [2, 2], [5, 3], [1, None]]
    assert by_servers["score"] == core.columns(grades)["score"]
    assert usage.calls == 8
    assert core.agreement(per_judge) == RubricCore(options).agreement(per_judge)
    with OpenAIServer(FIRST) as one, OpenAIServer(SECOND) as two, OpenAIServer(THIRD) as three:
        servers = tuple(server.url for server in (one, two, three))
        judge = AnswerJudgeCore(JudgeOptions(escalate_model=("a", "b", "c"), api_base_url=servers, escalate_below=1.0))
        judged = judge.score({"answers": GOLDS, "prediction": PREDICTIONS})
    assert judged["llm_verdict"] == [True, True, False, True, False]
    assert judge.agreement([row for row in judged["llm_judge_verdicts"] if row]) == KAPPA


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model", "a", "--api-key-env", "K1", "--api-key-env", "K2", "--model", "b", "--model", "c"],
         "--api-key-env is given 2 times for 3 models: give it once, or once per model in order"),
        (["--model", "a", "--model", "a"], "--model names 'a' on one server twice (judges 1 and 2)"),
        (["--model", "a", "--model", "b", "--scoring", "logprobs"],
         "--scoring 'logprobs' weighs one generator's reply: a jury pools sampled grades"),
    ],
)  # fmt: skip
def test_a_jury_the_options_cannot_make_is_refused_before_any_request(tmp_path, flags, message):
    source = write_jsonl(tmp_path / "answers.jsonl", RUBRIC_ROWS)
    done = cli("rubric", source, *flags, "--no-progress")
    assert done.returncode == 2
    assert message in done.stderr


def test_calibrate_refuses_a_jury_of_escalation_models(tmp_path):
    labels = write_jsonl(tmp_path / "labels.jsonl", [{**row, "label": True} for row in JUDGE_ROWS])
    done = cli("calibrate", labels, "--label-field", "label", "--escalate-model", "a", "--escalate-model", "b")
    assert done.returncode == 2
    assert "--escalate-model is given more than once: calibrate grades the LLM level of one model" in done.stderr


def test_a_dry_run_of_a_jury_counts_every_judges_requests_and_sends_none(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", RUBRIC_ROWS)
    done = cli("rubric", source, "--model", "a", "--model", "b", "--samples", "2", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "requests           8 (16 replies asked" in done.stdout  # 4 rows, 2 judges, a request of n=2 each
