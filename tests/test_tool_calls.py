"""Tool-call metrics on every input form, strict and normalised values, call alignment, and ToolCallEvaluator."""

import asyncio
import json

import pytest
from haystack import Pipeline
from haystack.core.errors import DeserializationError
from haystack.dataclasses import ChatMessage, ToolCall
from haystack.evaluation import EvaluationRunResult

from answer_eval.evaluators.tool_call_scoring import ToolCallScorer, ToolCallsOptions, read_tool_calls, values_match
from haystack_integrations.components.evaluators.answer_eval import ToolCallEvaluator

# The reference document's example call.
ARGUMENTS = {
    "movie": "Mission Impossible Dead Reckoning Part 1",
    "theater": "Regal Edwards 14",
    "location": "Mountain View CA",
    "showtime": "7:30",
    "date": "2024-03-30",
    "num_tix": "2",
}
REFERENCE = json.dumps({"content": "", "tool_calls": [{"name": "book_tickets", "arguments": ARGUMENTS}]})
ALL = ("tool_call_valid", "tool_name_match", "tool_parameter_key_match", "tool_parameter_kv_match")


def message(*calls, content=""):
    return json.dumps({"content": content, "tool_calls": list(calls)})


def call(name="book_tickets", **changes):
    arguments = {key: value for key, value in {**ARGUMENTS, **changes}.items() if value is not None}
    return {"name": name, "arguments": arguments}


def scores(prediction, reference=REFERENCE, **options):
    verdict = ToolCallScorer(ToolCallsOptions.from_dict(options)).score(prediction, reference)
    return [verdict.scores[name] for name in ALL], verdict.failure_kind


PERFECT = ([1, 1, 1.0, 1.0], None)


@pytest.mark.parametrize(
    "prediction",
    [
        REFERENCE,
        json.loads(REFERENCE),
        json.dumps({"content": "", "tool_calls": json.dumps([call()])}),  # tool_calls JSON-encoded
        json.dumps({"content": "", "tool_calls": [{"name": "book_tickets", "arguments": json.dumps(ARGUMENTS)}]}),
        json.dumps([call()]),  # a bare list of calls
        json.dumps(call()),  # a single call
        [call()],
        {"tool_call": [call()]},  # the document's other spelling
        ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="book_tickets", arguments=ARGUMENTS, id="1")]),
        ToolCall(tool_name="book_tickets", arguments=ARGUMENTS),
        [ToolCall(tool_name="book_tickets", arguments=ARGUMENTS)],
        {"replies": [ChatMessage.from_assistant(tool_calls=[ToolCall("book_tickets", ARGUMENTS)])]},
        {
            "messages": [
                ChatMessage.from_user("Book two tickets"),
                ChatMessage.from_assistant(tool_calls=[ToolCall("book_tickets", ARGUMENTS)]),
                ChatMessage.from_tool("booked", origin=ToolCall("book_tickets", ARGUMENTS)),
                ChatMessage.from_assistant("Done."),
            ]
        },
        {
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "book_tickets", "arguments": json.dumps(ARGUMENTS)},
                }
            ]
        },
        json.dumps({"tool_calls": [{"name": "book_tickets", "parameters": ARGUMENTS}]}),
    ],
    ids=[
        "json-string",
        "decoded-mapping",
        "tool_calls-encoded",
        "arguments-encoded",
        "list-json",
        "single-call-json",
        "list-of-dicts",
        "tool_call-key",
        "ChatMessage",
        "ToolCall",
        "list-of-ToolCall",
        "generator-replies",
        "agent-messages",
        "openai-function",
        "parameters-key",
    ],
)
def test_every_input_form_reads_as_the_same_call(prediction):
    assert scores(prediction) == PERFECT
    # The same forms work as references.
    assert scores(REFERENCE, reference=prediction) == PERFECT


def test_chat_message_content_is_kept_beside_the_calls():
    read = read_tool_calls(ChatMessage.from_assistant("Booking now", tool_calls=[ToolCall("book_tickets", {})]))
    assert read.content == "Booking now"
    assert read.calls[0].name == "book_tickets"
    assert read_tool_calls(message(call(), content="ok")).content == "ok"


@pytest.mark.parametrize(
    ("prediction", "problem"),
    [
        ('{"content": "", "tool_calls": [{"name": "book_tickets", "argu', "not valid JSON"),
        ("", "blank"),
        ("Sure, booking your tickets now!", "not valid JSON"),
        (message(), "no tool call"),
        (message(content="Which showtime?"), "no tool call"),
        (json.dumps({"content": "hi"}), "no tool_calls field"),
        (json.dumps({"tool_calls": "[{"}), "tool_calls is not valid JSON"),
        (json.dumps({"tool_calls": 3}), "must be a list"),
        (message({"arguments": ARGUMENTS}), "no tool name"),
        (message({"name": "", "arguments": ARGUMENTS}), "no tool name"),
        (message({"name": 7, "arguments": ARGUMENTS}), "no tool name"),
        (message({"name": "book_tickets"}), "not an object"),
        (message({"name": "book_tickets", "arguments": ["a", "b"]}), "not an object (got list)"),
        (message({"name": "book_tickets", "arguments": "{'movie': 1}"}), "arguments is not valid JSON"),
        (message("book_tickets"), "must be an object"),
        (None, "cannot read"),
        (42, "cannot read"),
        (b"{}", "cannot read"),
        ("[" * 5000 + "]" * 5000, "nested"),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 40 else None,
)
def test_invalid_predictions_score_zero_as_parse_failures_and_never_raise(prediction, problem):
    verdict = ToolCallScorer().score(prediction, REFERENCE)
    assert verdict.scores == dict.fromkeys(ALL, 0)
    assert verdict.failure_kind == "parse_failure"
    assert problem in verdict.problem


def test_an_exception_as_prediction_is_an_error():
    verdict = ToolCallScorer().score(TimeoutError("model timed out"), REFERENCE)
    assert verdict.failure_kind == "error"
    assert verdict.scores["tool_call_valid"] == 0


def test_object_whose_attributes_raise_is_a_parse_failure():
    class Broken:
        role = "assistant"
        texts = ()

        @property
        def tool_calls(self):
            raise RuntimeError("boom")

    assert scores(Broken()) == ([0, 0, 0.0, 0.0], "parse_failure")


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        (message(call(name="buy_tickets")), [1, 0, 1.0, 1.0]),
        (message(call(showtime=None)), [1, 1, 5 / 6, 5 / 6]),
        (message(call(date="2024-03-31")), [1, 1, 1.0, 5 / 6]),
        (message(call(date=None, showtime=None, num_tix="3")), [1, 1, 4 / 6, 3 / 6]),
        (message({"name": "book_tickets", "arguments": {}}), [1, 1, 0.0, 0.0]),
        (message(call(seat="aisle")), [1, 1, 1.0, 1.0]),
    ],
    ids=["wrong-name", "missing-key", "wrong-value", "several", "no-arguments", "extra-key-ignored"],
)
def test_metric_values(prediction, expected):
    got, kind = scores(prediction)
    assert got == pytest.approx(expected)
    assert kind == ("wrong" if expected != [1, 1, 1.0, 1.0] else None)


def test_extra_keys_penalize_counts_keys_the_reference_lacks():
    got, kind = scores(message(call(seat="aisle", row="F")), extra_keys="penalize")
    assert got == pytest.approx([1, 1, 6 / 8, 6 / 8])
    assert kind == "wrong"
    got, _ = scores(message(call(seat="aisle", date=None)), extra_keys="penalize")
    assert got == pytest.approx([1, 1, 5 / 7, 5 / 7])


def test_calls_without_parameters_on_both_sides_match_fully():
    reference = message({"name": "get_time", "arguments": {}})
    assert scores(message({"name": "get_time", "arguments": {}}), reference) == PERFECT
    assert scores(message({"name": "get_time", "arguments": {"tz": "UTC"}}), reference)[0][2] == 1.0
    assert (
        scores(message({"name": "get_time", "arguments": {"tz": "UTC"}}), reference, extra_keys="penalize")[0][2] == 0
    )


@pytest.mark.parametrize(
    ("predicted", "reference", "normalised", "strict"),
    [
        ("2", "2", True, True),
        (2, "2", True, False),
        (2.0, 2, True, True),
        ("2.50", 2.5, True, False),
        ("1,000", 1000, True, False),
        ("7:30", "7:30", True, True),
        ("7:30", "7.30", False, False),
        ("2024-03-30", "2024-03-30", True, True),
        ("2024-03-30", "2024-3-30", False, False),
        ("Regal Edwards 14", "regal  edwards 14", True, False),
        (" Mountain View CA ", "Mountain View CA", True, False),
        ("Mountain View, CA", "Mountain View CA", False, False),
        ("Straße", "STRASSE", True, False),
        ("two", 2, False, False),
        (True, True, True, True),
        ("true", True, True, False),
        (1, True, False, False),
        (0, False, False, False),
        (None, None, True, True),
        (None, "", False, False),
        ("45%", 45, True, False),
        (["A", "b"], ["a", "B"], True, False),
        (["a", "b"], ["b", "a"], False, False),
        ({"x": "1"}, {"x": 1}, True, False),
        ({"x": 1}, {"x": 1, "y": 2}, False, False),
        ({"x": 1}, [1], False, False),
    ],
)
def test_values_match_normalised_and_strict(predicted, reference, normalised, strict):
    assert values_match(predicted, reference) is normalised
    assert values_match(predicted, reference, strict=True) is strict


def test_strict_option_changes_kv_match_only():
    prediction = message(call(num_tix=2, theater="regal edwards 14"))
    assert scores(prediction) == PERFECT
    assert scores(prediction, strict=True) == ([1, 1, 1.0, pytest.approx(4 / 6)], "wrong")


LOOKUP = {"name": "get_showtimes", "arguments": {"movie": ARGUMENTS["movie"], "location": ARGUMENTS["location"]}}


def test_only_the_first_call_is_inspected_by_default():
    # A malformed second call does not count; a look-up before the booking is compared instead of it.
    assert scores(message(call(), {"name": "oops"})) == PERFECT
    got, kind = scores(message(LOOKUP, call()))
    assert got == pytest.approx([1, 0, 2 / 6, 2 / 6])
    assert kind == "wrong"


def test_all_calls_by_order_and_by_name():
    two = message(LOOKUP, call())
    reference_two = message(call(), LOOKUP)
    by_order, _ = scores(two, reference_two, calls="all")
    # Pairs (lookup, booking) and (booking, lookup): names differ; keys 2/6 then 2/2.
    assert by_order == pytest.approx([1, 0.0, (2 / 6 + 1) / 2, (2 / 6 + 1) / 2])
    by_name = scores(two, reference_two, calls="all", alignment="name")
    assert by_name == ([1, 1.0, 1.0, 1.0], None)


def test_all_calls_count_missing_and_extra_calls_as_zero():
    got, kind = scores(message(LOOKUP, call()), REFERENCE, calls="all", alignment="name")
    assert got == pytest.approx([1, 0.5, 0.5, 0.5])  # two slots, the booking matches, the look-up is extra
    assert kind == "wrong"
    got, _ = scores(message(call()), message(call(), LOOKUP), calls="all", alignment="name")
    assert got == pytest.approx([1, 0.5, 0.5, 0.5])  # the look-up is missing


def test_name_alignment_pairs_what_is_left_in_order():
    reference = message(call(), {"name": "notify", "arguments": {"email": "a@b.c"}})
    prediction = message({"name": "send_mail", "arguments": {"email": "a@b.c"}}, call())
    got, _ = scores(prediction, reference, calls="all", alignment="name")
    # booking<->booking by name; then notify<->send_mail by order: keys and values match, name does not.
    assert got == pytest.approx([1, 0.5, 1.0, 1.0])


def test_all_calls_need_every_call_well_formed():
    verdict = ToolCallScorer(ToolCallsOptions(calls="all")).score(message(call(), {"name": "oops"}), REFERENCE)
    assert verdict.failure_kind == "parse_failure"
    assert verdict.scores["tool_call_valid"] == 0


@pytest.mark.parametrize(
    ("reference", "message_part"),
    [
        ("not json", "cannot be read"),
        (message(), "holds no tool call"),
        (message({"name": "f", "arguments": "[1]"}), "malformed"),
    ],
)
def test_a_bad_reference_raises_naming_its_position(reference, message_part):
    with pytest.raises(ValueError, match=message_part):
        ToolCallScorer().score(REFERENCE, reference)
    with pytest.raises(ValueError, match=f"position 1.*{message_part}|{message_part}.*position 1"):
        ToolCallEvaluator().run(predicted_answers=[REFERENCE, REFERENCE], ground_truth_answers=[REFERENCE, reference])


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"metrics": ["tool_call_valid", "bleu"]}, ValueError, "bleu"),
        ({"metrics": []}, ValueError, "non-empty"),
        ({"metrics": ["tool_name_match", "tool_name_match"]}, ValueError, "at most once"),
        ({"calls": "some"}, ValueError, "calls"),
        ({"alignment": "id"}, ValueError, "alignment"),
        ({"extra_keys": "count"}, ValueError, "extra_keys"),
        ({"strict": "yes"}, TypeError, "strict"),
        ({"calls": 1}, TypeError, "calls"),
        ({"metrics": "tool_name_match"}, TypeError, "metrics"),
    ],
)
def test_bad_parameters_are_refused_in_init_and_from_dict(options, error, text):
    with pytest.raises(error, match=text):
        ToolCallEvaluator(**options)
    data = ToolCallEvaluator().to_dict()
    data["init_parameters"].update(options)
    with pytest.raises(error, match=text):
        ToolCallEvaluator.from_dict(data)


PREDICTIONS = [
    REFERENCE,
    ChatMessage.from_assistant(tool_calls=[ToolCall("book_tickets", {**ARGUMENTS, "num_tix": 2})]),
    message(call(name="buy_tickets")),
    message(call(showtime=None)),
    REFERENCE[:60],
]


def test_component_outputs():
    result = ToolCallEvaluator(metrics=["tool_parameter_kv_match", "tool_call_valid"]).run(
        predicted_answers=PREDICTIONS, ground_truth_answers=[REFERENCE] * 5
    )
    assert list(result["metrics"]) == ["tool_parameter_kv_match", "tool_call_valid"]
    assert result["individual_scores"] == pytest.approx([1.0, 1.0, 1.0, 5 / 6, 0.0])
    assert result["score"] == pytest.approx((3 + 5 / 6) / 5)
    assert type(result["score"]) is float
    assert result["metrics"]["tool_call_valid"] == {"score": 0.8, "individual_scores": [1, 1, 1, 1, 0]}
    assert result["failure_kinds"] == [None, None, None, "wrong", "parse_failure"]
    assert result["failure_counts"]["parse_failure"] == 1
    assert result["problems"][:4] == [None] * 4
    assert "not valid JSON" in result["problems"][4]


@pytest.mark.parametrize(
    ("predicted", "truths", "error", "text"),
    [
        (
            [REFERENCE, REFERENCE],
            [REFERENCE],
            ValueError,
            "ground_truth_answers has 1 items but predicted_answers has 2",
        ),
        ([], [], ValueError, "empty"),
        (REFERENCE, [REFERENCE], TypeError, "predicted_answers must be a list"),
        ([REFERENCE], REFERENCE, TypeError, "ground_truth_answers must be a list"),
    ],
)
def test_bad_inputs_raise(predicted, truths, error, text):
    with pytest.raises(error, match=text):
        ToolCallEvaluator().run(predicted_answers=predicted, ground_truth_answers=truths)


def test_to_dict_from_dict_and_run_async():
    evaluator = ToolCallEvaluator(metrics=["tool_name_match"], strict=True, calls="all", alignment="name")
    data = evaluator.to_dict()
    assert data == {
        "type": "haystack_integrations.components.evaluators.answer_eval.tool_calls.ToolCallEvaluator",
        "init_parameters": {
            "metrics": ["tool_name_match"],
            "strict": True,
            "calls": "all",
            "alignment": "name",
            "extra_keys": "ignore",
        },
    }
    loaded = ToolCallEvaluator.from_dict(data)
    inputs = {"predicted_answers": PREDICTIONS, "ground_truth_answers": [REFERENCE] * 5}
    assert loaded.run(**inputs) == evaluator.run(**inputs)
    assert asyncio.run(loaded.run_async(**inputs)) == evaluator.run(**inputs)
    with pytest.raises(DeserializationError):
        ToolCallEvaluator.from_dict({"type": "subprocess.Popen", "init_parameters": {}})


def test_pipeline_round_trip_and_evaluation_run_result():
    pipeline = Pipeline()
    pipeline.add_component("tools", ToolCallEvaluator(strict=True))
    loaded = Pipeline.loads(pipeline.dumps())
    data = {"predicted_answers": PREDICTIONS, "ground_truth_answers": [REFERENCE] * 5}
    result = loaded.run({"tools": data})["tools"]
    assert result == pipeline.run({"tools": data})["tools"]
    report = EvaluationRunResult(
        run_name="agent",
        inputs={"question": [f"q{i}" for i in range(5)], **data},
        results={"tool_call_valid": result},
    )
    assert report.aggregated_report(output_format="json") == {"metrics": ["tool_call_valid"], "score": [0.8]}
    assert report.detailed_report(output_format="json")["tool_call_valid"] == [1, 1, 1, 1, 0]
