"""AnswerJudgeEvaluator asks an LLM only when it is unsure: real HTTP to a loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import math
import os

import pytest
from haystack import Pipeline
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from answer_eval.evaluators.judge.guarantee import choose_threshold
from answer_eval.evaluators.judge.user_calibration import default_selection
from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator
from tests.cli_runs import cli, partial_path, record_path, write_jsonl
from tests.openai_server import OpenAIServer, Reply, escalation_candidate, last_user_text, refusing_format
from tests.openai_server import grader_generator as generator

GOLDS = [["Richard Nixon"], ["Dollree Mapp"], ["December 14, 1972"], ["Paris"], ["Paris"]]
PREDICTIONS = ["Nixon", "Dolly Mapp", "14 December 1972", "Paris", "Lyon"]
QUESTIONS = ["who resigned in 1974", "who was mapp", "when did apollo 17 leave the moon", "capital of france", "x"]


def says_yes_to(*accepted: str):
    """A grader that accepts the candidates named, in the plain style LLM graders commonly answer in."""

    def script(request):
        candidate = escalation_candidate(last_user_text(request))
        return "Yes, the candidate is correct." if candidate in accepted else "No, it names someone else."

    return script


def judge_alone() -> dict:
    return AnswerJudgeEvaluator().run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS, questions=QUESTIONS)


def test_only_the_verdicts_below_the_threshold_go_to_the_llm_and_its_verdict_replaces_them():
    alone = judge_alone()
    unsure = [confidence < 0.85 for confidence in alone["confidence"]]
    assert 0 < sum(unsure) < len(unsure)  # the example has both kinds
    with OpenAIServer(says_yes_to("Dolly Mapp")) as server:
        judge = AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=0.85)
        result = judge.run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS, questions=QUESTIONS)
        asked = [escalation_candidate(last_user_text(body)) for body in server.bodies]
    assert result["escalated"] == unsure
    assert sorted(asked) == sorted(p for p, flag in zip(PREDICTIONS, unsure, strict=True) if flag)
    assert result["escalated_share"] == sum(unsure) / len(unsure)
    for index, flag in enumerate(unsure):
        if flag:
            said = PREDICTIONS[index] == "Dolly Mapp"
            assert result["llm_verdicts"][index] is said
            assert result["individual_scores"][index] == int(said)
            assert result["stages"][index] == "llm"
            assert result["evidence"][index].startswith("LLM (")
        else:
            assert result["llm_verdicts"][index] is None
            assert result["individual_scores"][index] == alone["individual_scores"][index]
            assert result["stages"][index] == alone["stages"][index]
    assert result["confidence"] == alone["confidence"]  # the judge's own, kept
    assert result["usage"]["calls"] == sum(unsure)
    assert result["threshold"] == 0.85


def test_json_replies_are_read_and_a_failed_escalation_keeps_the_judges_verdict():
    alone = judge_alone()
    with OpenAIServer(lambda request: json.dumps({"explanation": "matches", "correct": True})) as server:
        result = AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=1.0).run(
            ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS
        )
    assert result["individual_scores"] == [1] * 5
    assert result["failure_kinds"] == [None] * 5
    with OpenAIServer(lambda request: Reply(status=500)) as server:
        result = AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=1.0, retry_backoff=0.0).run(
            ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS
        )
    assert result["llm_failures"] == ["error"] * 5
    assert result["individual_scores"] == alone["individual_scores"]
    assert result["failure_kinds"] == alone["failure_kinds"]


def test_the_default_threshold_with_an_llm_is_0_8_and_run_async_escalates_too():
    alone = judge_alone()
    with OpenAIServer(says_yes_to()) as server:
        judge = AnswerJudgeEvaluator(escalate_to=generator(server))
        result = asyncio.run(judge.run_async(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS))
    assert result["threshold"] == 0.8
    assert result["escalated"] == [confidence < 0.8 for confidence in alone["confidence"]]


def test_without_an_llm_a_target_agreement_abstains_below_the_chosen_threshold():
    selection = default_selection(0.8, 0.1, warn=False)  # the shipped default: NQ301 and EVOUNA, each on its own
    assert math.isfinite(selection.threshold)  # with all three sets no threshold passed: everything abstained
    result = AnswerJudgeEvaluator(target_agreement=0.8).run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS)
    assert result["threshold"] == selection.threshold
    assert result["abstained"] == [confidence < selection.threshold for confidence in result["confidence"]]
    assert "escalated" not in result  # no LLM: none of its sockets (test_judge.py: the sockets per instance)
    assert result["individual_scores"] == judge_alone()["individual_scores"]  # the verdicts stay, flagged


def test_an_unreachable_target_abstains_on_everything():
    selection = choose_threshold(0.999, 0.01)
    assert not selection.guarantee_met
    result = AnswerJudgeEvaluator(target_agreement=0.999, delta=0.01).run(
        ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS
    )
    assert math.isinf(result["threshold"])
    assert result["abstained_share"] == 1.0


def test_no_escalation_options_leave_the_judge_as_it_was():
    result = judge_alone()
    # No threshold and no LLM: the verdicts alone, no socket that could only say "nothing happened".
    assert set(result) == {
        "score",
        "individual_scores",
        "confidence",
        "acceptance",
        "evidence",
        "stages",
        "failure_kinds",
        "failure_counts",
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"escalate_below": 0.8, "target_agreement": 0.9}, "not both"),
        ({"escalate_below": 1.5}, r"escalate_below must be in \[0, 1\]"),
        ({"target_agreement": 1.0}, r"target_agreement must be in \(0, 1\)"),
        ({"target_agreement": 0.9, "delta": 0.0}, r"delta must be in \(0, 1\)"),
    ],
)
def test_bad_escalation_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        AnswerJudgeEvaluator(**options)


def test_a_saved_pipeline_keeps_the_escalation_without_the_api_key(monkeypatch):
    monkeypatch.setenv("ANSWER_EVAL_TEST_JUDGE_KEY", "sk-judge-secret-9876")
    with OpenAIServer(says_yes_to("Nixon")) as server:
        chat = OpenAIChatGenerator(
            api_key=Secret.from_env_var("ANSWER_EVAL_TEST_JUDGE_KEY"), api_base_url=server.url, model="g"
        )
        pipeline = Pipeline()
        pipeline.add_component("judge", AnswerJudgeEvaluator(escalate_to=chat, escalate_below=0.9, max_calls=10))
        text = pipeline.dumps()
        assert "sk-judge-secret-9876" not in text
        loaded = Pipeline.loads(text)
        result = loaded.run({"judge": {"ground_truth_answers": [["Richard Nixon"]], "predicted_answers": ["Nixon"]}})
    assert result["judge"]["escalated"] == [True]
    assert result["judge"]["llm_verdicts"] == [True]
    assert loaded.get_component("judge").to_dict()["init_parameters"]["max_calls"] == 10


def test_the_calibration_sets_chosen_are_the_ones_the_threshold_must_hold_on():
    from answer_eval.evaluators.judge.calibration import Calibration

    nq_like = AnswerJudgeEvaluator(target_agreement=0.85, calibration_sets=["nq301-dev"])
    expected = choose_threshold(0.85, 0.1, Calibration.load_sources(sets=["nq301-dev"]))
    assert expected.guarantee_met
    result = nq_like.run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS)
    assert result["threshold"] == expected.threshold
    assert nq_like.to_dict()["init_parameters"]["calibration_sets"] == ["nq301-dev"]
    with pytest.raises(ValueError, match="unknown or no sets"):
        AnswerJudgeEvaluator(target_agreement=0.85, calibration_sets=["squad"])


def test_an_error_echoing_the_api_key_never_reaches_the_outputs(monkeypatch):
    monkeypatch.setenv("ANSWER_EVAL_TEST_JUDGE_KEY", "sk-judge-echoed-4242")
    with OpenAIServer(lambda request: Reply(status=400, message="bad key sk-judge-echoed-4242")) as server:
        chat = OpenAIChatGenerator(
            api_key=Secret.from_env_var("ANSWER_EVAL_TEST_JUDGE_KEY"), api_base_url=server.url, model="g", max_retries=0
        )
        result = AnswerJudgeEvaluator(escalate_to=chat, escalate_below=1.0).run(
            ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS
        )
    assert result["llm_failures"] == ["error"] * 5
    assert all("HTTP 400" in words and "sk-judge-echoed-4242" not in words for words in result["llm_explanations"])


def test_a_refusal_field_and_a_quoted_key_in_the_escalation_reply():
    key = os.environ["ANSWER_EVAL_TEST_GRADER_KEY"]
    replies = {
        "Nixon": Reply(texts=[None], refusal="I can't help with that."),
        "Dolly Mapp": Reply(texts=[f"Yes. (Authorization: Bearer {key})"]),
    }

    def script(request):
        candidate = escalation_candidate(last_user_text(request))
        return replies.get(candidate, "No.")

    with OpenAIServer(script) as server:
        result = AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=1.0).run(
            ground_truth_answers=GOLDS[:2], predicted_answers=PREDICTIONS[:2], questions=QUESTIONS[:2]
        )
    assert result["llm_failures"] == ["refusal", None]
    assert result["llm_verdicts"] == [None, True]
    assert key not in json.dumps(result)
    assert "Bearer ***" in result["llm_explanations"][1]


def test_a_calibration_of_your_own_chooses_the_threshold_and_survives_a_saved_pipeline(tmp_path):
    from answer_eval.evaluators.judge.user_calibration import UserCalibration
    from tests.test_judge_trust_cli import calibration_file

    path = calibration_file(tmp_path / "calibration.json")
    expected = choose_threshold(0.9, 0.1, UserCalibration.from_dict(json.loads(path.read_text())).calibration)
    judge = AnswerJudgeEvaluator(calibration=str(path), target_agreement=0.9)
    result = judge.run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS, questions=QUESTIONS)
    assert result["threshold"] == expected.threshold
    assert result["abstained"] == [confidence < expected.threshold for confidence in result["confidence"]]
    pipeline = Pipeline()
    pipeline.add_component("judge", judge)
    loaded = Pipeline.loads(pipeline.dumps())
    again = loaded.run(
        {"judge": {"ground_truth_answers": GOLDS, "predicted_answers": PREDICTIONS, "questions": QUESTIONS}}
    )
    assert again["judge"]["abstained"] == result["abstained"]
    assert loaded.get_component("judge").to_dict()["init_parameters"]["calibration"] == str(path)
    as_content = AnswerJudgeEvaluator(calibration=json.loads(path.read_text()), target_agreement=0.9)
    assert as_content.run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS, questions=QUESTIONS) == result


def test_a_calibration_for_another_judge_or_not_json_is_refused_by_the_component(tmp_path):
    from answer_eval.evaluators.judge.judge_core import JudgeOptions
    from tests.test_judge_trust_cli import calibration_file

    other = calibration_file(tmp_path / "other.json", JudgeOptions(extra_not_found_phrases=("no idea",)), seed_rows=40)
    with pytest.raises(
        ValueError, match=r"made for another judge \(extra_not_found_phrases: \[\"no idea\"\], now \[\]"
    ):
        AnswerJudgeEvaluator(calibration=str(other), target_agreement=0.9)
    content = json.loads(other.read_text())
    content["answers"][0][0] = float("nan")
    with pytest.raises(ValueError, match="calibration must be JSON data"):
        AnswerJudgeEvaluator(calibration=content)
    with pytest.raises(
        ValueError, match="calibration_sets names shipped calibration sets and calibration gives your own"
    ):
        AnswerJudgeEvaluator(calibration=str(other), target_agreement=0.9, calibration_sets=["nq301-dev"])


# -- structured output of the escalation (issue 38, point 18) ------------------------------------------------------


def small_model(request):
    """As a small model answers: prose with no verdict in it, unless a response_format holds it to the schema."""
    asked = request.get("response_format")
    if asked is None:
        return "The candidate answer and the acceptable answers refer to the question about the subject."
    assert asked["type"] in ("json_schema", "json_object")
    return json.dumps({"explanation": "it names the same person", "correct": True})


def formats(server: OpenAIServer) -> list[str | None]:
    return [(body.get("response_format") or {}).get("type") for body in server.bodies]


def escalate(server: OpenAIServer, **options) -> dict:
    judge = AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=1.0, **options)
    return judge.run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS, questions=QUESTIONS)


def test_escalation_asks_for_the_verdict_schema_so_a_small_model_s_replies_are_read():
    with OpenAIServer(small_model) as server:
        off = escalate(server, structured="off")
    assert off["llm_failures"] == ["parse_failure"] * 5  # the prompt alone: no reply read
    with OpenAIServer(small_model) as server:
        result = escalate(server)  # auto, the rubric's default
        bodies = server.bodies
    assert result["llm_failures"] == [None] * 5
    assert result["llm_verdicts"] == [True] * 5
    assert [body["response_format"]["type"] for body in bodies] == ["json_schema"] * 5
    assert bodies[0]["response_format"]["json_schema"] == {
        "name": "verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"explanation": {"type": "string"}, "correct": {"type": "boolean"}},
            "required": ["explanation", "correct"],
            "additionalProperties": False,
        },
    }


def test_escalation_falls_back_from_a_refused_json_schema_to_json_object():
    with OpenAIServer(refusing_format(("json_schema",), small_model, status=500)) as server:
        result = escalate(server, concurrency=4)
        seen = formats(server)
    assert seen == ["json_schema"] + ["json_object"] * 5  # one refused request, the item asked again
    assert result["llm_verdicts"] == [True] * 5
    assert result["usage"]["structured_fallbacks"] == 1
    assert result["usage"]["retries"] == 0


def test_escalation_s_explicit_format_refused_is_a_value_error_after_one_request():
    with OpenAIServer(refusing_format(("json_schema",), small_model, status=500)) as server:
        with pytest.raises(ValueError, match="auto, json_object or off"):
            escalate(server, structured="json_schema")
        assert formats(server) == ["json_schema"]


def test_structured_is_saved_and_loaded_and_is_the_escalation_s():
    with OpenAIServer(small_model) as server:
        judge = AnswerJudgeEvaluator(escalate_to=generator(server), structured="json_object")
        data = judge.to_dict()
        assert data["init_parameters"]["structured"] == "json_object"
        again = AnswerJudgeEvaluator.from_dict(json.loads(json.dumps(data)))
        assert again.to_dict() == data
        again.run(ground_truth_answers=GOLDS[:1], predicted_answers=["Dick Nixon"], questions=QUESTIONS[:1])
        assert set(formats(server)) <= {"json_object"}
    with pytest.raises(ValueError, match="structured is the escalation's"):
        AnswerJudgeEvaluator(structured="off")
    with pytest.raises(ValueError, match="structured"):
        AnswerJudgeEvaluator(structured="yaml")
    assert AnswerJudgeEvaluator().to_dict()["init_parameters"]["structured"] == "auto"


def test_each_judge_of_an_escalation_jury_falls_back_on_its_own_server():
    with (
        OpenAIServer(refusing_format(("json_schema",), small_model, status=500)) as llama,
        OpenAIServer(small_model) as openai,
    ):
        judge = AnswerJudgeEvaluator(escalate_to=[generator(llama), generator(openai)], escalate_below=1.0)
        result = judge.run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS, questions=QUESTIONS)
        seen_llama, seen_openai = formats(llama), formats(openai)
    assert seen_llama == ["json_schema"] + ["json_object"] * 5
    assert seen_openai == ["json_schema"] * 5
    assert result["llm_verdicts"] == [True] * 5
    assert result["usage"]["structured_fallbacks"] == 1


def judge_cli(server: OpenAIServer, source, *more: str):
    env = {**os.environ, "ANSWER_EVAL_JUDGE_KEY": "sk-judge"}
    args = ("--escalate-model", "grader", "--api-base-url", server.url, "--api-key-env", "ANSWER_EVAL_JUDGE_KEY")
    return cli("judge", source, *args, "--escalate-below", "1.0", "--no-progress", *more, env=env)


def test_cli_judge_structured_modes(tmp_path):
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [{"question": q, "answers": g, "prediction": p} for q, g, p in zip(QUESTIONS, GOLDS, PREDICTIONS, strict=True)],
    )
    output = tmp_path / "out.jsonl"
    with OpenAIServer(refusing_format(("json_schema",), small_model, status=500)) as server:
        chosen = judge_cli(server, source, "--structured", "json_object", "-o", str(output))
        seen = formats(server)
        refused = judge_cli(server, source, "--structured", "json_schema", "-o", str(tmp_path / "no.jsonl"))
        seen_refused = formats(server)[len(seen) :]
    assert chosen.returncode == 0, chosen.stderr
    assert seen == ["json_object"] * 5
    judged = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [row["llm_verdict"] for row in judged] == [True] * 5
    assert refused.returncode == 2, refused.stderr
    assert seen_refused == ["json_schema"]
    assert "--structured json_schema" in refused.stderr
    assert "auto, json_object or off" in refused.stderr
    plain = cli("judge", source, "--structured", "off")
    assert plain.returncode == 2
    assert "--structured is the escalation's: it needs --escalate-model" in plain.stderr


def test_escalation_s_cached_rerun_sends_nothing_and_starts_from_the_format_the_server_took(tmp_path):
    cache = str(tmp_path / "replies.jsonl")
    with OpenAIServer(refusing_format(("json_schema",), small_model, status=500)) as server:
        first = escalate(server, cache_path=cache)
        sent = len(server.bodies)
        again = escalate(server, cache_path=cache)  # a new component: what it knows comes from the cache
        assert len(server.bodies) == sent
    assert sent == 6
    assert again["llm_verdicts"] == first["llm_verdicts"] == [True] * 5
    assert (again["usage"]["calls"], again["usage"]["structured_fallbacks"]) == (0, 0)


# ---- the sockets each judge declares, and the escalation's progress bar (issue 38, points 19 and 20) ----------


def _declared(judge: AnswerJudgeEvaluator) -> set[str]:
    pipeline = Pipeline()
    pipeline.add_component("judge", judge)
    return set(pipeline.outputs(include_components_with_connected_outputs=True)["judge"])


PLAIN = {"score", "individual_scores", "confidence", "acceptance", "evidence", "stages", "failure_kinds"}
LLM_SOCKETS = {
    "escalated",
    "llm_verdicts",
    "llm_explanations",
    "llm_failures",
    "escalated_share",
    "usage",
    "llm_judge_verdicts",
    "llm_agreement",
}


def test_a_judge_declares_the_llm_sockets_only_with_escalate_to_and_abstention_only_with_a_threshold():
    chat = OpenAIChatGenerator(api_key=Secret.from_env_var("ANSWER_EVAL_NO_SUCH_KEY", strict=False))
    alone = _declared(AnswerJudgeEvaluator())
    abstaining = _declared(AnswerJudgeEvaluator(escalate_below=0.8))
    escalating = _declared(AnswerJudgeEvaluator(escalate_to=chat))
    assert alone == PLAIN | {"failure_counts"}  # 8 outputs, where there were 19
    assert abstaining == alone | {"abstained", "abstained_share", "threshold"}
    assert escalating == alone | LLM_SOCKETS | {"threshold"}
    # What run returns is what is declared, key for key (Haystack passes on only declared sockets).
    result = AnswerJudgeEvaluator(escalate_below=0.8).run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS)
    assert set(result) == abstaining
    assert list(result)[-1] == "failure_counts"


def test_a_pipeline_connecting_an_llm_socket_validates_with_escalate_to_round_trips_and_runs():
    from haystack.components.joiners import ListJoiner
    from haystack.core.errors import PipelineConnectError

    plain = Pipeline()
    plain.add_component("judge", AnswerJudgeEvaluator())
    plain.add_component("verdicts", ListJoiner())
    with pytest.raises(PipelineConnectError, match="llm_verdicts"):  # refused when the pipeline is built
        plain.connect("judge.llm_verdicts", "verdicts.values")
    with OpenAIServer(says_yes_to("Dolly Mapp")) as server:
        pipeline = Pipeline()
        pipeline.add_component("judge", AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=0.85))
        pipeline.add_component("verdicts", ListJoiner())
        pipeline.connect("judge.llm_verdicts", "verdicts.values")
        loaded = Pipeline.loads(pipeline.dumps())  # __init__ declares the sockets again: the connection validates
        result = loaded.run({"judge": {"ground_truth_answers": GOLDS, "predicted_answers": PREDICTIONS}})
    unsure = sum(confidence < 0.85 for confidence in judge_alone()["confidence"])
    asked = [verdict for verdict in result["verdicts"]["values"] if verdict is not None]
    assert len(asked) == unsure > 0


def test_the_escalation_shows_a_progress_bar_over_the_unsure_answers_and_saves_the_choice(capsys):
    unsure = sum(confidence < 0.85 for confidence in judge_alone()["confidence"])
    capsys.readouterr()
    with OpenAIServer(says_yes_to("Dolly Mapp")) as server:
        shown = AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=0.85)
        shown.run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS, questions=QUESTIONS)
        bar = capsys.readouterr().err
        quiet = AnswerJudgeEvaluator(escalate_to=generator(server), escalate_below=0.85, progress_bar=False)
        asyncio.run(quiet.run_async(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS, questions=QUESTIONS))
        silent = capsys.readouterr().err
    assert "AnswerJudgeEvaluator: 100%" in bar
    assert f"{unsure}/{unsure}" in bar
    assert "AnswerJudgeEvaluator" not in silent
    saved = quiet.to_dict()
    assert saved["init_parameters"]["progress_bar"] is False
    assert AnswerJudgeEvaluator.from_dict(saved).progress_bar is False
    assert AnswerJudgeEvaluator().progress_bar is True  # Haystack's LLMEvaluator's default
    with pytest.raises(TypeError, match="progress_bar must be a bool"):
        AnswerJudgeEvaluator(progress_bar="no")


def test_cli_a_stop_mid_batch_keeps_the_escalations_answered_before_it_for_resume(tmp_path):
    # The server answers the first two answers, then refuses the key. The rows before the first unanswered
    # escalation are written and kept (they, and their paid verdicts, were thrown away with the batch).
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [{"question": q, "answers": g, "prediction": p} for q, g, p in zip(QUESTIONS, GOLDS, PREDICTIONS, strict=True)],
    )
    output = tmp_path / "out.jsonl"
    recovered = {"yes": False}

    def script(request):
        candidate = escalation_candidate(last_user_text(request))
        if recovered["yes"] or candidate in ("Nixon", "Dolly Mapp"):
            return json.dumps({"explanation": "it names the same person", "correct": True})
        return Reply(status=401, message="Incorrect API key provided")

    with OpenAIServer(script) as server:
        stopped = judge_cli(server, source, "--structured", "off", "--concurrency", "1", "-o", str(output))
        assert stopped.returncode == 2, stopped.stderr
        assert "401" in stopped.stderr
        assert json.loads(record_path(output).read_text())["position"]["rows"] == 2
        kept = [json.loads(line) for line in partial_path(output).read_text().splitlines()]
        assert [row["llm_verdict"] for row in kept] == [True, True]
        recovered["yes"] = True
        before = server.requests
        resumed = judge_cli(server, source, "--structured", "off", "--concurrency", "1", "-o", str(output), "--resume")
        assert resumed.returncode == 0, resumed.stderr
        assert server.requests - before == 3  # only the rows not kept are asked
    assert len(output.read_text().splitlines()) == 5
