"""RubricEvaluator and PairwiseRubricEvaluator against a real OpenAI-compatible server on loopback.

Every request goes through Haystack's real OpenAIChatGenerator over HTTP; nothing inside it is
patched. The server answers from a script: well-formed JSON, plain replies, garbage, refusals,
cut replies, errors, slow replies and several samples.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from haystack import Pipeline
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from answer_eval.llm.rubric_prompts import catalogue
from haystack_integrations.components.evaluators.answer_eval import PairwiseRubricEvaluator, RubricEvaluator
from tests.openai_server import OpenAIServer, Reply, last_user_text, scripted, texts_for_n
from tests.openai_server import grader_generator as generator

KEY_ENV = "ANSWER_EVAL_TEST_LLM_KEY"
SECRET = "sk-test-never-written-0123456789"


def score_reply(score: int, words: str = "reasoned") -> str:
    return json.dumps({"explanation": words, "score": score})


QA = {
    "predicted_answers": ["Paris is the capital of France.", "Lyon."],
    "questions": ["What is the capital of France?", "What is the capital of France?"],
    "contexts": [["France's capital is Paris."], ["France's capital is Paris."]],
}


def test_a_json_reply_gives_score_explanation_confidence_and_usage():
    with OpenAIServer(lambda request: score_reply(4, "it answers the question")) as server:
        result = RubricEvaluator(chat_generator=generator(server)).run(**QA)
    assert result["individual_scores"] == [4, 4]
    assert result["score"] == 4.0
    assert result["explanations"] == ["it answers the question"] * 2
    assert result["confidences"] == [1.0, 1.0]
    assert result["failure_kinds"] == [None, None]
    assert result["usage"]["calls"] == 2
    assert result["usage"]["prompt_tokens"] == 20
    assert result["usage"]["completion_tokens"] == 10
    assert "metric:question_answering_quality" in result["signature"]


@pytest.mark.parametrize("name", sorted(catalogue()))
def test_every_catalogue_metric_sends_its_inputs_and_reads_its_scale(name):
    rubric = catalogue()[name]
    top = rubric.values[-1]
    inputs = {
        "questions": ["INSTRUCTION-TEXT"],
        "contexts": ["CONTEXT-TEXT"],
        "ground_truth_answers": ["REFERENCE-TEXT"],
    }
    with OpenAIServer(lambda request: f"{top} - fits the top of the scale") as server:
        result = RubricEvaluator(metric=name, chat_generator=generator(server)).run(
            predicted_answers=["PREDICTION-TEXT"], **inputs
        )
        prompt = last_user_text(server.bodies[0])
    assert result["individual_scores"] == [top]
    assert "PREDICTION-TEXT" in prompt
    shown = {"instruction": "INSTRUCTION-TEXT", "context": "CONTEXT-TEXT", "reference": "REFERENCE-TEXT"}
    for input_name, text in shown.items():
        assert (text in prompt) == (input_name in rubric.shown_inputs()), input_name
    for rating in rubric.scale:
        assert f"- {rating.value}: {rating.label}" in prompt
    for criterion in rubric.criteria:
        assert criterion.description in prompt


def test_a_missing_required_input_is_a_value_error_naming_it():
    with OpenAIServer(lambda request: score_reply(1)) as server:
        grader = RubricEvaluator(metric="question_answering_correctness", chat_generator=generator(server))
        with pytest.raises(ValueError, match=r"ground_truth_answers \(reference\)"):
            grader.run(predicted_answers=["Paris"], questions=["Capital of France?"])
        with pytest.raises(ValueError, match=r"ground_truth_answers.*item 1 has none"):
            grader.run(predicted_answers=["Paris", "Rome"], questions=["q", "q"], ground_truth_answers=["Paris", ""])
        assert server.requests == 0


def test_an_unknown_metric_and_a_bad_rubric_are_refused():
    with pytest.raises(ValueError, match=r"unknown metric 'qa'.*question_answering_quality"):
        RubricEvaluator(metric="qa", chat_generator=OpenAIChatGenerator(api_key=Secret.from_token("x")))
    with pytest.raises(ValueError, match="needs a scale"):
        RubricEvaluator(
            metric={"name": "mine", "description": "d", "criteria": [["c", "d"]], "scale": [[1, "x"]], "inputs": []},
            chat_generator=OpenAIChatGenerator(api_key=Secret.from_token("x")),
        )


def test_a_user_rubric_is_graded_and_saved_as_data():
    mine = {
        "name": "politeness",
        "description": "Whether the response is polite.",
        "criteria": [["Polite", "The response is courteous."]],
        "scale": [[0, "Rude"], [1, "Polite"]],
        "inputs": ["prediction"],
    }
    with OpenAIServer(lambda request: score_reply(1)) as server:
        grader = RubricEvaluator(metric=mine, chat_generator=generator(server))
        assert grader.run(predicted_answers=["Thank you kindly."])["individual_scores"] == [1]
        assert "The response is courteous." in last_user_text(server.bodies[0])
    assert grader.to_dict()["init_parameters"]["metric"] == mine


def test_self_consistency_reports_the_median_and_the_share_that_agrees():
    samples = [4, 4, 5, 4, 2]
    with OpenAIServer(lambda request: texts_for_n(request, lambda i: score_reply(samples[i]))) as server:
        result = RubricEvaluator(chat_generator=generator(server), samples=5).run(**QA)
        asked_n = [body.get("n") for body in server.bodies]
    assert result["individual_scores"] == [4, 4]
    assert result["confidences"] == [0.6, 0.6]
    assert asked_n == [5, 5]  # OpenAI's generator is asked for n replies in one request


def test_samples_are_topped_up_when_the_server_ignores_n_and_drawn_one_by_one_with_calls():
    replies = scripted([score_reply(3), score_reply(3), score_reply(1)])
    with OpenAIServer(replies) as server:  # one reply a request, whatever n says
        result = RubricEvaluator(chat_generator=generator(server), samples=3).run(predicted_answers=["x"], **_one())
        assert server.requests == 3
    assert result["individual_scores"] == [3]
    assert result["confidences"] == [round(2 / 3, 4)]
    with OpenAIServer(lambda request: score_reply(2)) as server:
        RubricEvaluator(chat_generator=generator(server), samples=2, sampling="calls").run(
            predicted_answers=["x"], **_one()
        )
        assert [body.get("n", 1) for body in server.bodies] == [1, 1]


def _one() -> dict[str, list[str]]:
    return {"questions": ["q"], "contexts": ["c"]}


def test_hostile_counts_from_the_server_are_no_counts_and_extra_choices_no_samples():
    # usage: a 401-digit count and a negative one (each would have been added as it came); five choices to a
    # request for one (each was a sample: a confidence of 5.0 and samples_used 5), three to a request for n=2.
    huge = Reply(texts=[score_reply(4)] * 5, prompt_tokens=10**400, completion_tokens=-5)
    with OpenAIServer(lambda request: huge) as server:
        one = RubricEvaluator(chat_generator=generator(server)).run(predicted_answers=["x"], **_one())
    assert one["individual_scores"] == [4]
    assert one["confidences"] == [1.0]
    assert one["samples_used"] == [1]
    assert one["usage"]["prompt_tokens"] == one["usage"]["completion_tokens"] == 0
    many = [score_reply(4), score_reply(2), score_reply(2)]
    with OpenAIServer(lambda request: Reply(texts=many, prompt_tokens=7, completion_tokens=3)) as server:
        two = RubricEvaluator(chat_generator=generator(server), samples=2).run(predicted_answers=["x"], **_one())
        assert [body.get("n") for body in server.bodies] == [2]
    assert two["samples_used"] == [2]
    assert two["confidences"] == [0.5]  # 4 and 2: the third choice, never asked for, is not a vote
    # The usage is the request's, as the server billed it (3 tokens a choice it sent), extra choices included.
    assert (two["usage"]["prompt_tokens"], two["usage"]["completion_tokens"]) == (7, 9)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(texts=["The answer deserves praise."]), "parse_failure"),
        (Reply(texts=["I'm sorry, but I can't help with grading this."]), "refusal"),
        (Reply(texts=[""], finish_reason="content_filter"), "refusal"),
        (Reply(texts=['{"explanation": "The response is thorough and'], finish_reason="length"), "budget_stop"),
        (Reply(status=400, message="bad request"), "error"),
    ],
)
def test_unreadable_replies_and_errors_are_failure_kinds_per_item(reply, kind):
    with OpenAIServer(lambda request: reply) as server:
        result = RubricEvaluator(chat_generator=generator(server), max_retries=0).run(predicted_answers=["x"], **_one())
    assert result["individual_scores"] == [None]
    assert result["failure_kinds"] == [kind]
    assert result["failure_counts"][kind] == 1
    assert result["score"] is None


def test_a_partly_graded_run_says_how_many_were_graded_warns_once_and_shows_the_unread_reply(caplog):
    replies = scripted([score_reply(4), "The answer deserves praise.", "Quite good overall."])
    with OpenAIServer(replies) as server, caplog.at_level("WARNING"):
        grader = RubricEvaluator(chat_generator=generator(server), concurrency=1, max_retries=0)
        result = grader.run(predicted_answers=["a", "b", "c"], questions=["q"] * 3, contexts=["c"] * 3)
    assert result["individual_scores"] == [4, None, None]
    assert result["score"] is None  # 1 of 3 is below min_graded_share (0.8): no mean over a third passed as one
    assert (result["graded"], result["graded_share"]) == (1, pytest.approx(1 / 3))
    warnings = [record.getMessage() for record in caplog.records if "graded 1 of 3" in record.getMessage()]
    assert len(warnings) == 1
    assert "parse_failure 2" in warnings[0]
    assert "below min_graded_share 0.8, so score is None (over the graded ones it would be 4)" in warnings[0]
    assert "The answer deserves praise." in result["explanations"][1]  # the reply that could not be read


def test_a_budget_that_cuts_samples_marks_the_items_graded_on_fewer():
    with OpenAIServer(scripted([score_reply(4)] * 4)) as server:
        # structured="off": under auto the first item's draw (its three requests) proves the schema alone, first
        grader = RubricEvaluator(
            chat_generator=generator(server), samples=3, max_calls=2, sampling="calls", structured="off"
        )
        result = grader.run(predicted_answers=["a", "b"], questions=["q"] * 2, contexts=["c"] * 2)
        assert server.requests == 2
    assert result["samples_used"] == [1, 1]
    assert result["confidences"] == [round(1 / 3, 4)] * 2


def test_a_fully_graded_run_warns_nothing(caplog):
    with OpenAIServer(scripted([score_reply(4)])) as server, caplog.at_level("WARNING"):
        result = RubricEvaluator(chat_generator=generator(server)).run(predicted_answers=["a"], **_one())
    assert (result["graded"], result["graded_share"]) == (1, 1.0)
    assert not [record for record in caplog.records if "graded" in record.getMessage()]


def test_plain_replies_that_start_with_the_score_are_read():
    replies = ["Score: 5. Clear and complete.", "3\nIt is OK.", "```json\n" + score_reply(2) + "\n```"]
    with OpenAIServer(scripted(replies)) as server:
        grader = RubricEvaluator(chat_generator=generator(server), concurrency=1)
        got = [grader.run(predicted_answers=["x"], **_one())["individual_scores"][0] for _ in replies]
    assert got == [5, 3, 2]


def test_a_429_then_success_is_retried_and_a_persistent_500_stops_after_the_retries():
    with OpenAIServer(scripted([Reply(status=429, headers={"Retry-After": "0"}), score_reply(5)])) as server:
        result = RubricEvaluator(chat_generator=generator(server), retry_backoff=0.0).run(
            predicted_answers=["x"], **_one()
        )
        assert server.requests == 2
    assert result["individual_scores"] == [5]
    assert result["usage"]["retries"] == 1
    with OpenAIServer(lambda request: Reply(status=500)) as server:
        result = RubricEvaluator(chat_generator=generator(server), max_retries=2, retry_backoff=0.0).run(
            predicted_answers=["x"], **_one()
        )
        assert server.requests == 3
    assert result["failure_kinds"] == ["error"]


def test_a_reply_slower_than_the_timeout_is_an_error_not_a_hang():
    with OpenAIServer(lambda request: Reply(texts=[score_reply(3)], delay=5.0)) as server:
        result = RubricEvaluator(chat_generator=generator(server, timeout=0.3), max_retries=1, retry_backoff=0.0).run(
            predicted_answers=["x"], **_one()
        )
        assert server.requests == 2  # the first try and one retry, then it stops
    assert result["failure_kinds"] == ["error"]


def test_the_call_budget_stops_the_items_left_with_budget_stop():
    with OpenAIServer(lambda request: score_reply(4)) as server:
        result = RubricEvaluator(chat_generator=generator(server), max_calls=2, concurrency=1).run(
            predicted_answers=["a", "b", "c", "d"], questions=["q"] * 4, contexts=["c"] * 4
        )
        assert server.requests == 2
    assert result["individual_scores"] == [4, 4, None, None]
    assert result["failure_kinds"] == [None, None, "budget_stop", "budget_stop"]


def test_the_cache_answers_a_prompt_asked_again_without_a_request(tmp_path):
    cache = str(tmp_path / "replies.jsonl")
    with OpenAIServer(lambda request: score_reply(5)) as server:
        first = RubricEvaluator(chat_generator=generator(server), cache_path=cache).run(**QA)
        again = RubricEvaluator(chat_generator=generator(server), cache_path=cache).run(**QA)
        assert server.requests == 2
    assert again["individual_scores"] == first["individual_scores"] == [5, 5]
    assert again["usage"]["calls"] == 0
    assert again["usage"]["cache_hits"] == 2
    assert "test-key" not in (tmp_path / "replies.jsonl").read_text()


def test_the_concurrency_limit_holds_for_run_and_run_async():
    with OpenAIServer(lambda request: Reply(texts=[score_reply(3)], delay=0.2)) as server:
        grader = RubricEvaluator(chat_generator=generator(server), concurrency=3)
        grader.run(predicted_answers=[f"x{n}" for n in range(9)], questions=["q"] * 9, contexts=["c"] * 9)
        assert server.max_in_flight == 3
    with OpenAIServer(lambda request: Reply(texts=[score_reply(3)], delay=0.2)) as server:
        grader = RubricEvaluator(chat_generator=generator(server), concurrency=2)
        answers = [f"x{n}" for n in range(6)]
        result = asyncio.run(grader.run_async(predicted_answers=answers, questions=["q"] * 6, contexts=["c"] * 6))
        assert server.max_in_flight == 2
    assert result["individual_scores"] == [3] * 6


def test_run_works_inside_a_running_event_loop():
    async def inside() -> list[int | None]:
        return RubricEvaluator(chat_generator=generator(server)).run(predicted_answers=["x"], **_one())[
            "individual_scores"
        ]

    with OpenAIServer(lambda request: score_reply(2)) as server:
        assert asyncio.run(inside()) == [2]


def test_a_saved_pipeline_round_trips_without_the_api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with OpenAIServer(lambda request: score_reply(4)) as server:
        chat = OpenAIChatGenerator(api_key=Secret.from_env_var(KEY_ENV), api_base_url=server.url, model="grader")
        pipeline = Pipeline()
        pipeline.add_component("grader", RubricEvaluator(chat_generator=chat, samples=2, cache_path=None))
        text = pipeline.dumps()
        assert SECRET not in text
        assert KEY_ENV in text
        loaded = Pipeline.loads(text)
        result = loaded.run({"grader": {"predicted_answers": ["x"], "questions": ["q"], "contexts": ["c"]}})
    assert result["grader"]["individual_scores"] == [4]
    assert loaded.get_component("grader").to_dict()["init_parameters"]["samples"] == 2


def pairwise_script(bias: str | None = None):
    """A grader that prefers the longer response, or always answers ``bias`` (position bias)."""

    def script(request):
        text = last_user_text(request)
        first = text.split("<Response A>\n", 1)[1].split("\n</Response A>", 1)[0]
        second = text.split("<Response B>\n", 1)[1].split("\n</Response B>", 1)[0]
        choice = bias or ("A" if len(first) > len(second) else "B")
        return json.dumps({"explanation": f"{choice} is better", "choice": choice})

    return script


PAIRS = {
    "predicted_answers": ["France is a country in Western Europe.", "A country."],
    "baseline_answers": ["France is a country.", "France is a country located in Western Europe."],
    "questions": ["Where is France?"] * 2,
    "contexts": ["France is a country located in Western Europe."] * 2,
}


def test_pairwise_choices_win_rate_and_p_value():
    with OpenAIServer(pairwise_script()) as server:
        result = PairwiseRubricEvaluator(chat_generator=generator(server)).run(**PAIRS)
        assert server.requests == 4  # each pair in both orders
    assert result["pairwise_choices"] == ["CANDIDATE", "BASELINE"]
    assert result["wins"] == result["losses"] == 1
    assert result["win_rate"] == 0.5
    assert result["p_value"] == 1.0
    assert result["position_flips"] == 0
    assert result["confidences"] == [1.0, 1.0]


def test_swap_turns_a_position_biased_choice_into_a_tie_and_reports_the_flip():
    with OpenAIServer(pairwise_script(bias="A")) as server:
        swapped = PairwiseRubricEvaluator(chat_generator=generator(server)).run(**PAIRS)
        once = PairwiseRubricEvaluator(chat_generator=generator(server), swap=False).run(**PAIRS)
    assert swapped["pairwise_choices"] == ["TIE", "TIE"]
    assert swapped["position_flips"] == 2
    assert swapped["flip_rate"] == 1.0
    assert "position bias" in swapped["explanations"][0]
    assert once["pairwise_choices"] == ["CANDIDATE", "CANDIDATE"]  # the bias, uncancelled
    assert once["flip_rate"] is None


def test_pairwise_refuses_a_metric_that_does_not_compare_pairs():
    with pytest.raises(ValueError, match=r"compares pairs: 'fluency' does not.*question_answering_quality"):
        PairwiseRubricEvaluator(metric="fluency", chat_generator=OpenAIChatGenerator(api_key=Secret.from_token("x")))


def test_pairwise_round_trips_and_runs_async():
    with OpenAIServer(pairwise_script()) as server:
        compare = PairwiseRubricEvaluator(chat_generator=generator(server), samples=1)
        data = compare.to_dict()
        assert data["init_parameters"]["chat_generator"]["init_parameters"]["api_base_url"] == server.url
        loaded = PairwiseRubricEvaluator.from_dict(data)
        assert loaded.to_dict() == data
        result = asyncio.run(loaded.run_async(**PAIRS))
    assert result["pairwise_choices"] == ["CANDIDATE", "BASELINE"]


def test_rubric_results_feed_an_evaluation_run_result_beside_haystacks_evaluators():
    from haystack.components.evaluators import AnswerExactMatchEvaluator
    from haystack.evaluation import EvaluationRunResult

    truths = ["Paris", "Paris"]
    with OpenAIServer(lambda request: score_reply(5 if "Paris is" in last_user_text(request) else 1)) as server:
        graded = RubricEvaluator(metric="question_answering_correctness", chat_generator=generator(server)).run(
            predicted_answers=QA["predicted_answers"], questions=QA["questions"], ground_truth_answers=truths
        )
    exact = AnswerExactMatchEvaluator().run(ground_truth_answers=truths, predicted_answers=QA["predicted_answers"])
    report = EvaluationRunResult(
        "rag",
        {"questions": QA["questions"], "predicted_answers": QA["predicted_answers"]},
        {"correctness": graded, "exact_match": exact},
    )
    assert graded["individual_scores"] == [None, 1]  # 5 is off the 0/1 scale: unreadable, not clipped
    assert graded["failure_kinds"] == ["parse_failure", None]
    detailed = report.detailed_report(output_format="json")
    assert detailed["correctness"] == [None, 1]
    # One answer of two graded: below min_graded_share, so the report shows no score rather than 1.0 over one.
    assert report.aggregated_report(output_format="json")["score"] == [None, 0.0]


def test_run_async_works_again_in_a_new_event_loop():
    # A pipeline run with asyncio.run twice: an async client bound to the first loop would fail the second.
    with OpenAIServer(lambda request: score_reply(4)) as server:
        grader = RubricEvaluator(chat_generator=generator(server))
        for _ in range(3):
            result = asyncio.run(grader.run_async(predicted_answers=["x"], **_one()))
            assert result["individual_scores"] == [4]
            assert result["usage"]["calls"] == 1


def test_two_runs_at_once_have_their_own_budget_limit_and_usage():
    import concurrent.futures

    with OpenAIServer(lambda request: Reply(texts=[score_reply(4)], delay=0.1)) as server:
        grader = RubricEvaluator(chat_generator=generator(server), concurrency=2, max_calls=6)

        def one_run(tag):
            answers = [f"{tag}-{n}" for n in range(6)]
            return grader.run(predicted_answers=answers, questions=["q"] * 6, contexts=["c"] * 6)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(one_run, ["a", "b"]))
        assert server.requests == 12
        assert server.max_in_flight <= 4  # two runs of at most 2 each
    for result in results:
        assert result["individual_scores"] == [4] * 6
        assert result["usage"]["calls"] == 6


def test_identical_prompts_in_one_run_are_sent_once():
    with OpenAIServer(lambda request: score_reply(3)) as server:
        result = RubricEvaluator(chat_generator=generator(server)).run(
            predicted_answers=["same"] * 5, questions=["q"] * 5, contexts=["c"] * 5
        )
        assert server.requests == 1
    assert result["individual_scores"] == [3] * 5
    assert result["usage"]["calls"] == 1


def test_a_refused_key_stops_the_run_with_a_clear_error():
    from answer_eval.llm.generators import GraderUnavailable

    with OpenAIServer(lambda request: Reply(status=401, message="Incorrect API key provided")) as server:
        grader = RubricEvaluator(chat_generator=generator(server), max_retries=3)
        with pytest.raises(GraderUnavailable, match="HTTP 401"):
            grader.run(predicted_answers=["a", "b", "c"], questions=["q"] * 3, contexts=["c"] * 3)
        assert server.requests <= 3  # no retry of a refused key


def test_an_error_that_echoes_the_key_is_redacted_even_where_it_would_be_cut():
    from answer_eval.llm.calls import ChatCaller

    key = os.environ["ANSWER_EVAL_TEST_GRADER_KEY"]
    with OpenAIServer(lambda request: Reply(status=400, message="x" * 200 + f" Bearer {key} rejected")) as server:
        caller = ChatCaller(generator(server), retries=0, redact=(key,))
        drawn, _ = caller.run_sync(lambda: caller.draw([("user", "grade")], 1))
    assert drawn.failure == "error"
    assert key not in drawn.detail
    assert key[:4] not in drawn.detail.rsplit("Bearer", 1)[-1]


def test_a_reply_with_only_openais_refusal_field_is_a_refusal_and_an_empty_text_is_not():
    refusal = Reply(texts=[None], refusal="I'm sorry, I can't assist with grading this.")
    with OpenAIServer(lambda request: refusal) as server:
        result = RubricEvaluator(chat_generator=generator(server), max_retries=0).run(predicted_answers=["x"], **_one())
    assert result["failure_kinds"] == ["refusal"]
    with OpenAIServer(lambda request: Reply(texts=[""])) as server:
        empty = RubricEvaluator(chat_generator=generator(server), max_retries=0).run(predicted_answers=["x"], **_one())
    assert empty["failure_kinds"] == ["parse_failure"]
    with OpenAIServer(lambda request: Reply(texts=[None], finish_reason="length")) as server:
        cut = RubricEvaluator(chat_generator=generator(server), max_retries=0).run(predicted_answers=["x"], **_one())
    assert cut["failure_kinds"] == ["budget_stop"]  # no content because the token limit cut it: not a refusal


@pytest.mark.parametrize(
    "reply",
    [
        Reply(texts=[score_reply(3)], sse=True),
        Reply(body=b"<!doctype html><title>Sign in</title>", content_type="text/html"),
        Reply(texts=[score_reply(3)], sse=True, content_type="application/json"),
    ],
    ids=["server-sent events", "a web page", "events labelled as JSON"],
)
def test_a_stream_or_a_web_page_instead_of_a_completion_raises_saying_what_the_server_did(reply):
    from answer_eval.llm.generators import GraderUnavailable, ServerMisbehaves

    with OpenAIServer(lambda request: reply) as server:
        grader = RubricEvaluator(chat_generator=generator(server), max_retries=2, concurrency=1)
        with pytest.raises(ServerMisbehaves, match="not a JSON chat completion") as raised:
            grader.run(predicted_answers=["a", "b", "c"], questions=["q"] * 3, contexts=["c"] * 3)
        assert server.requests == 1  # not retried, nor asked again for the other answers
    assert isinstance(raised.value, GraderUnavailable)
    assert "AssertionError" not in str(raised.value)


def test_a_reply_quoting_the_key_is_redacted_before_it_is_cached_or_returned(tmp_path):
    key = os.environ["ANSWER_EVAL_TEST_GRADER_KEY"]
    quoted = score_reply(4, f"The request header was 'Authorization: Bearer {key}'; api-key: {key}")
    cache = tmp_path / "replies.jsonl"
    with OpenAIServer(lambda request: quoted) as server:
        result = RubricEvaluator(chat_generator=generator(server), cache_path=str(cache)).run(
            predicted_answers=["x"], **_one()
        )
    assert result["individual_scores"] == [4]
    assert result["explanations"] == ["The request header was 'Authorization: Bearer ***'; api-key: ***"]
    assert key not in cache.read_text()


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"retry_backoff": float("nan")}, "retry_backoff must be a finite number"),
        ({"retry_backoff": float("inf")}, "retry_backoff must be a finite number"),
        ({"retry_backoff": -1.0}, "retry_backoff must be a finite number"),
        ({"timeout": float("nan")}, "timeout must be a finite number"),
        ({"timeout": float("inf")}, "timeout must be a finite number"),
        ({"timeout": 0}, "timeout must be a finite number of seconds above 0"),
        ({"timeout": 1e12}, "timeout must be at most 86400"),
        # 401 digits: math.isfinite of it raised OverflowError, not a ValueError naming the parameter
        ({"timeout": 10**400}, r"timeout must be a finite number of seconds above 0, got 10+\.\.\. \(401 digits\)"),
        ({"retry_backoff": -(10**400)}, "retry_backoff must be a finite number"),
        ({"cache_path": "  "}, "cache_path must name a file"),
    ],
)
def test_non_finite_and_non_positive_limits_are_refused_by_every_llm_component(parameters, message):
    from answer_eval.llm.calls import ChatCaller
    from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator

    chat = OpenAIChatGenerator(api_key=Secret.from_token("x"))
    for make in (
        lambda: RubricEvaluator(chat_generator=chat, **parameters),
        lambda: PairwiseRubricEvaluator(chat_generator=chat, **parameters),
        lambda: AnswerJudgeEvaluator(escalate_to=chat, **parameters),
    ):
        with pytest.raises(ValueError, match=message):
            make()
    if "retry_backoff" in parameters:
        with pytest.raises(ValueError, match="backoff must be a finite number"):
            ChatCaller(chat, backoff=parameters["retry_backoff"])
        with pytest.raises(ValueError, match="max_backoff must be a finite number"):
            ChatCaller(chat, max_backoff=parameters["retry_backoff"])


def test_a_generators_own_timeout_no_float_holds_is_no_deadline_and_the_default_applies():
    from answer_eval.llm.call_limits import DEFAULT_DEADLINE, generator_deadline

    # A loaded pipeline's generator with timeout: 1000...0 (401 digits) raised OverflowError at warm-up.
    chat = OpenAIChatGenerator(api_key=Secret.from_token("x"), timeout=10**400)
    assert generator_deadline(chat, None) == DEFAULT_DEADLINE
    RubricEvaluator(chat_generator=chat).warm_up()  # raised OverflowError: the pipeline could not even start


def test_credentials_in_the_generators_options_or_url_stay_out_of_the_signature():
    chat = OpenAIChatGenerator(
        api_key=Secret.from_token("x"),
        api_base_url="https://user:url-secret-1234@llm.example/v1",
        model="grader",
        generation_kwargs={"extra_headers": {"Authorization": "Bearer header-secret-5678"}, "temperature": 0.2},
    )
    signature = RubricEvaluator(chat_generator=chat).signature
    assert "url-secret-1234" not in signature
    assert "header-secret-5678" not in signature
    assert '|server:"https://user:***@llm.example/v1"|' in signature
    assert '|extra_headers:"***"|' in signature
    assert "|temperature:0.2" in signature


def test_a_budget_that_pays_for_one_order_of_a_pair_does_not_decide_it_by_that_order():
    with OpenAIServer(pairwise_script("A")) as server:  # position bias: always the first shown
        result = PairwiseRubricEvaluator(chat_generator=generator(server), max_calls=3, concurrency=1).run(**PAIRS)
        assert server.requests == 3
    assert result["pairwise_choices"] == ["TIE", None]  # not CANDIDATE, as the candidate-first order alone says
    assert result["failure_kinds"] == [None, "budget_stop"]
    assert result["explanations"][1] == "the budget of 3 calls is spent before the pair was asked in both orders"


# ---- issue 38: a score over a few graded answers (17), progress bars (19), the signature's options (20) ----------


def some_unreadable(request):
    """A grader that scores the answers marked `good` and answers the others with no score (a small model's prose)."""
    text = last_user_text(request)
    return score_reply(1) if "good answer" in text else "The response is fine, I think, more or less."


def _graded_pipeline(grader: RubricEvaluator) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("correctness", grader)
    return pipeline


def test_a_score_over_a_few_graded_answers_is_none_in_haystacks_aggregated_report(caplog):
    from haystack.evaluation import EvaluationRunResult

    # As the local-model trial: structured output off, most replies unreadable (2 of 6 here; 21 of 60 there).
    answers = ["good answer 1", "bad 2", "good answer 3", "bad 4", "bad 5", "bad 6"]
    inputs = {"predicted_answers": answers, "questions": ["q"] * 6, "ground_truth_answers": ["r"] * 6}
    metric = "question_answering_correctness"
    with OpenAIServer(some_unreadable) as server, caplog.at_level("WARNING"):
        strict = _graded_pipeline(RubricEvaluator(metric=metric, chat_generator=generator(server), structured="off"))
        loaded = Pipeline.loads(strict.dumps())  # the share saved with the pipeline, as every parameter
        graded = loaded.run({"correctness": inputs})["correctness"]
        lenient = RubricEvaluator(
            metric=metric, chat_generator=generator(server), structured="off", min_graded_share=0.0
        )
        as_haystack = _graded_pipeline(lenient).run({"correctness": inputs})["correctness"]
    assert graded["individual_scores"] == [1, None, 1, None, None, None]
    assert (graded["graded"], graded["failure_counts"]["parse_failure"]) == (2, 4)
    run = EvaluationRunResult("trial", {"questions": inputs["questions"]}, {"correctness": graded})
    assert run.aggregated_report(output_format="json") == {"metrics": ["correctness"], "score": [None]}
    assert run.detailed_report(output_format="json")["correctness"] == graded["individual_scores"]
    assert any("graded 2 of 6" in r.getMessage() and "would be 1" in r.getMessage() for r in caplog.records)
    # min_graded_share=0: the mean over whatever was graded, as Haystack's FaithfulnessEvaluator gives it.
    old_style = EvaluationRunResult("trial", {"questions": inputs["questions"]}, {"correctness": as_haystack})
    assert old_style.aggregated_report(output_format="json")["score"] == [1.0]


def test_haystacks_faithfulness_evaluator_gives_the_mean_over_the_items_it_could_read():
    # The comparison docs/model-based-metrics.md makes, measured: Haystack's LLM evaluators with
    # raise_on_failure=False give a failed item NaN and `score` the mean of the others (a log line says so).
    from haystack.components.evaluators import FaithfulnessEvaluator
    from haystack.evaluation import EvaluationRunResult

    def script(request):
        if "good answer" in last_user_text(request).rsplit("Inputs:", 1)[-1]:
            return json.dumps({"statements": ["s"], "statement_scores": [1]})
        return "The answer is faithful, I believe."

    answers = ["good answer 1", "bad 2", "bad 3", "bad 4"]
    with OpenAIServer(script) as server:
        chat = generator(server)
        faithfulness = FaithfulnessEvaluator(chat_generator=chat, raise_on_failure=False, progress_bar=False)
        result = faithfulness.run(questions=["q"] * 4, contexts=[["c"]] * 4, predicted_answers=answers)
    assert result["individual_scores"][0] == 1
    assert all(score != score for score in result["individual_scores"][1:])  # NaN
    run = EvaluationRunResult("trial", {"questions": ["q"] * 4}, {"faithfulness": result})
    assert run.aggregated_report(output_format="json")["score"] == [1.0]  # one item of four, shown as the score


@pytest.mark.parametrize(("readable", "score"), [(4, 1.0), (3, None)])
def test_the_score_is_given_from_the_documented_share_graded(readable, score):
    answers = [f"good answer {i}" for i in range(readable)] + [f"bad {i}" for i in range(5 - readable)]
    with OpenAIServer(some_unreadable) as server:
        result = RubricEvaluator(chat_generator=generator(server), structured="off").run(
            predicted_answers=answers, questions=["q"] * 5, contexts=["c"] * 5
        )
    assert result["graded_share"] == readable / 5  # 4 of 5 is exactly 0.8: given; 3 of 5 is not
    assert result["score"] == score


def test_a_pairwise_win_rate_over_a_few_graded_pairs_is_none():
    def script(request):
        text = last_user_text(request)
        return pairwise_script()(request) if "Western" in text.split("<Response A>")[1] else "Both are fine."

    pairs = {key: values * 2 for key, values in PAIRS.items()}
    pairs["predicted_answers"] = ["France is a country in Western Europe.", "A.", "B.", "C."]
    pairs["baseline_answers"] = ["France is a country.", "D.", "E.", "F."]
    with OpenAIServer(script) as server:
        strict = PairwiseRubricEvaluator(chat_generator=generator(server), swap=False).run(**pairs)
        lenient = PairwiseRubricEvaluator(chat_generator=generator(server), swap=False, min_graded_share=0).run(**pairs)
    assert strict["pairwise_choices"] == ["CANDIDATE", None, None, None]
    assert (strict["wins"], strict["graded"]) == (1, 1)  # the counts stay: they say what they count
    assert strict["win_rate"] is None
    assert strict["p_value"] is None
    assert lenient["win_rate"] == 1.0


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
def test_a_graded_share_outside_0_to_1_is_refused(value):
    chat = OpenAIChatGenerator(api_key=Secret.from_token("x"))
    with pytest.raises(ValueError, match="min_graded_share must be a number from 0 to 1"):
        RubricEvaluator(chat_generator=chat, min_graded_share=value)
    with pytest.raises(TypeError, match="min_graded_share must be a number"):
        PairwiseRubricEvaluator(chat_generator=chat, min_graded_share="0.5")


def test_a_run_shows_a_progress_bar_as_haystacks_llm_evaluator_unless_told_not_to(capsys):
    second = OpenAIChatGenerator  # a second judge: the same server, another model
    with OpenAIServer(lambda request: score_reply(4)) as server:
        capsys.readouterr()
        RubricEvaluator(chat_generator=generator(server)).run(predicted_answers=["a", "b", "c"], **_three())
        one = capsys.readouterr().err
        panel = [generator(server), second(api_key=Secret.from_token("x"), api_base_url=server.url, model="other")]
        RubricEvaluator(chat_generator=panel).run(predicted_answers=["a", "b"], **_three(2))
        jury = capsys.readouterr().err
        quiet = RubricEvaluator(chat_generator=generator(server), progress_bar=False)
        asyncio.run(quiet.run_async(predicted_answers=["a", "b", "c"], **_three()))
        PairwiseRubricEvaluator(chat_generator=generator(server), progress_bar=False).run(**PAIRS)
        silent = capsys.readouterr().err
        PairwiseRubricEvaluator(chat_generator=generator(server)).run(**PAIRS)
        pairs = capsys.readouterr().err
    assert "RubricEvaluator: 100%" in one
    assert "3/3" in one
    assert "4/4" in jury  # two answers, two judges
    assert "PairwiseRubricEvaluator: 100%" in pairs
    assert "2/2" in pairs
    assert silent == ""
    saved = quiet.to_dict()["init_parameters"]
    assert (saved["progress_bar"], saved["min_graded_share"]) == (False, 0.8)
    assert RubricEvaluator.from_dict(quiet.to_dict()).progress_bar is False
    with pytest.raises(TypeError, match="progress_bar must be a bool"):
        RubricEvaluator(chat_generator=OpenAIChatGenerator(api_key=Secret.from_token("x")), progress_bar=1)


def _three(count: int = 3) -> dict[str, list[str]]:
    return {"questions": ["q"] * count, "contexts": ["c"] * count}


def test_a_pointwise_signature_names_no_swap_and_a_pairwise_one_does():
    chat = OpenAIChatGenerator(api_key=Secret.from_token("x"))
    assert "swap" not in RubricEvaluator(chat_generator=chat).signature
    assert "|swap:yes|" in PairwiseRubricEvaluator(chat_generator=chat).signature
    assert "|swap:no|" in PairwiseRubricEvaluator(chat_generator=chat, swap=False).signature
