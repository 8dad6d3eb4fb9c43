"""A jury on Dask: the local run's rows and summary exactly, on the same scripted replies; what Dask refuses, said.

The LLM graders run on Dask as locally (each worker sends its partitions' requests to the loopback servers,
its key read there from the variable named); a file's budget and a reply cache are one process's, refused
before a cluster starts.
"""

from __future__ import annotations

import pytest

from answer_eval.cli.main import main
from answer_eval.dask.engine import read_shards, score_dataframe
from answer_eval.dask.partition import make_plan
from answer_eval.evaluators.rubric_grading import RubricCore, RubricOptions
from tests.cli_runs import write_jsonl
from tests.dask_runs import run_both
from tests.openai_server import OpenAIServer
from tests.test_jury import FIRST, JUDGE_A, JUDGE_B, SECOND, THIRD, judge_script
from tests.test_jury_cli import JUDGE_ROWS, KAPPA, RUBRIC_ROWS

pytestmark = pytest.mark.xdist_group("dask_cluster")


def test_a_rubric_jury_on_dask_gives_the_local_rows_and_summary(dask_client, capsys, tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", RUBRIC_ROWS * 3)  # 12 rows: several partitions' worth
    address = dask_client.scheduler.address
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        servers = ("--model", "ga", "--api-base-url", first.url, "--model", "gb", "--api-base-url", second.url)
        both = run_both(capsys, address, tmp_path, "rubric", source, *servers, "--samples", "2")
        frame = read_shards([str(source)])
        options = RubricOptions(model=("ga", "gb"), api_base_url=(first.url, second.url), samples=2)
        scored = score_dataframe(frame, RubricCore(options)).compute()
    assert both["local"]["code"] == both["dask"]["code"] == 0, both
    assert both["same"], both
    local = both["local"]
    assert [row["judge_grades"] for row in local["rows"]] == [[4, 4], [2, 2], [5, 3], [1, None]] * 3
    assert local["summary"]["judge_agreement"]["judges"] == 2
    assert list(scored["judge_grades"]) == [row["judge_grades"] for row in local["rows"]]
    assert list(scored["score"]) == [row["score"] for row in local["rows"]]


def test_a_judge_escalation_jury_on_dask_gives_the_local_rows_and_summary(dask_client, capsys, tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", JUDGE_ROWS)
    address = dask_client.scheduler.address
    with OpenAIServer(FIRST) as one, OpenAIServer(SECOND) as two, OpenAIServer(THIRD) as three:
        named = [
            flag
            for number, server in enumerate((one, two, three))
            for flag in ("--escalate-model", f"m{number}", "--api-base-url", server.url)
        ]
        both = run_both(capsys, address, tmp_path, "judge", source, "--escalate-below", "1.0", *named)
    assert both["local"]["code"] == both["dask"]["code"] == 0, both
    assert both["same"], both
    assert both["local"]["summary"]["llm_agreement"] == both["dask"]["summary"]["llm_agreement"] == KAPPA


@pytest.mark.parametrize(
    ("command", "flags", "refused"),
    [
        (["rubric"], ["--model", "a", "--model", "b", "--max-calls", "10"], "--max-calls"),
        (["rubric"], ["--model", "a", "--cache", "replies.jsonl"], "--cache"),
        (["judge"], ["--escalate-model", "a", "--max-calls", "10"], "--max-calls"),
        (["judge"], ["--escalate-model", "a", "--escalate-model", "b", "--cache", "replies.jsonl"], "--cache"),
    ],
)
def test_what_one_process_keeps_is_refused_on_dask_before_a_cluster_starts(capsys, tmp_path, command, flags, refused):
    source = write_jsonl(tmp_path / "answers.jsonl", JUDGE_ROWS)
    capsys.readouterr()
    code = main([*command, str(source), *flags, "--engine", "dask", "--no-progress"])
    assert code == 2
    error = capsys.readouterr().err
    assert f"answer-eval {command[0]} --engine dask:" in error
    assert refused in error
    assert "Dask's workers" in error
    with pytest.raises(TypeError, match="does not run on Dask: max_calls"):
        make_plan(RubricCore(RubricOptions(model="a", max_calls=5)))


def test_a_core_given_chat_generators_is_refused_on_dask_a_plan_carries_options_not_objects():
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore
    from answer_eval.evaluators.judge.judge_options import JudgeOptions

    def generator(model: str) -> OpenAIChatGenerator:
        return OpenAIChatGenerator(api_key=Secret.from_token("sk-test"), model=model, api_base_url="http://127.0.0.1:9")

    with pytest.raises(TypeError, match="chat generators are objects a Dask plan cannot carry"):
        make_plan(RubricCore(RubricOptions(), generator=generator("g")))
    with pytest.raises(TypeError, match="chat generators are objects a Dask plan cannot carry"):
        make_plan(AnswerJudgeCore(JudgeOptions(escalate_below=0.9), generator=[generator("a"), generator("b")]))


def test_a_server_url_holding_a_password_is_refused_on_dask_the_plan_travels_in_the_clear():
    options = RubricOptions(
        model=("a", "b"), api_base_url=("http://u:pw-secret-7@127.0.0.1:9/v1", "http://127.0.0.1:9")
    )
    with pytest.raises(TypeError, match="a server URL holding a password") as raised:
        make_plan(RubricCore(options))
    assert "pw-secret-7" not in str(raised.value)


def test_the_rubric_and_its_examples_travel_to_dask_as_read_not_as_paths(tmp_path):
    import json

    from answer_eval.llm.rubric_prompts import catalogue

    rubric_file = tmp_path / "rubric.json"
    rubric_file.write_text(json.dumps(catalogue()["question_answering_correctness"].to_dict()), encoding="utf-8")
    examples = write_jsonl(
        tmp_path / "examples.jsonl",
        [{"question": "q", "reference": "Paris", "prediction": "Paris", "score": 1, "explanation": "same city"}],
    )
    local = RubricCore(RubricOptions(model="m", rubric_file=str(rubric_file), examples_file=str(examples)))
    plan = make_plan(local)
    options = plan.evaluator["options"]
    assert options["rubric_file"] is None
    assert options["examples_file"] is None
    rubric_file.unlink()  # the worker reads nothing: what it grades on is what this process read
    examples.unlink()
    rebuilt = RubricCore(RubricOptions.from_dict(options))
    assert rebuilt.chosen == local.chosen
    assert rebuilt.chosen.examples[0].explanation == "same city"
