import pytest
from haystack.dataclasses import ChatMessage, GeneratedAnswer

from answer_eval import FAILURE_KINDS, AnswerContainsScorer, FailureKind

scorer = AnswerContainsScorer()


def verdict(prediction, labels):
    return scorer.score(prediction, labels)


def test_right_answer_has_no_failure_kind_and_a_folded_outcome():
    result = verdict("Sheffield produced 12,400 units.", "12400")
    assert result.correct
    assert result.failure_kind is None
    assert result.score == 1
    assert result.outcome == "sheffield produced 12400 units."


@pytest.mark.parametrize("prediction", [None, "", "   \n", 42, object(), {"answer": None}, {"replies": []}])
def test_parse_failure_when_there_is_no_answer_text(prediction):
    result = verdict(prediction, "Paris")
    assert (result.correct, result.failure_kind, result.outcome) == (False, FailureKind.PARSE_FAILURE, None)


@pytest.mark.parametrize(
    "prediction",
    [
        {"answer": "The plant opened in", "partial": True, "notes": ["cost_cap_reached"]},
        {"answer": "The plant opened in", "partial": True, "notes": ["call_cap_reached"]},
        {"answer": "The plant opened in", "partial": True, "notes": ["limit_refused"]},
        ChatMessage.from_assistant("The plant opened in", meta={"finish_reason": "length"}),
    ],
)
def test_budget_stop(prediction):
    assert verdict(prediction, "2019").failure_kind == FailureKind.BUDGET_STOP


def test_partial_without_limit_note_is_just_wrong():
    assert verdict({"answer": "The plant", "partial": True}, "2019").failure_kind == FailureKind.WRONG


@pytest.mark.parametrize(
    "prediction",
    [
        {"answer": "I can't help.", "trace": [{"finish_reason": "stop"}, {"finish_reason": "refusal"}]},
        {"answer": "I can't help.", "trace": [{"finish_reason": "content_filter"}]},
        ChatMessage.from_assistant("Filtered.", meta={"finish_reason": "content_filter"}),
        {"answer": "No.", "status": "refused"},
    ],
)
def test_refusal(prediction):
    assert verdict(prediction, "Marie Curie").failure_kind == FailureKind.REFUSAL


@pytest.mark.parametrize(
    "prediction", ["NOT_IN_DOCUMENT", "The document does not say who audited the accounts.", "Unknown."]
)
def test_not_in_document_when_an_answer_was_expected(prediction):
    assert verdict(prediction, "Deloitte").failure_kind == FailureKind.NOT_IN_DOCUMENT


def test_wrong():
    assert verdict("Lyon", "Paris").failure_kind == FailureKind.WRONG


@pytest.mark.parametrize(
    "prediction",
    [RuntimeError("reader crashed"), {"error": "timeout"}, {"answer": "x", "status": "error"}, {"status": "failed"}],
)
def test_error_for_failed_results(prediction):
    assert verdict(prediction, "Paris").failure_kind == FailureKind.ERROR


def test_failed_result_is_wrong_even_when_its_text_holds_the_answer():
    result = verdict({"answer": "Paris", "error": "the judge step failed"}, "Paris")
    assert (result.correct, result.failure_kind, result.outcome) == (False, FailureKind.ERROR, "paris")


def test_carried_failure_kind_is_kept():
    assert verdict({"answer": "Paris", "failure_kind": "timeout"}, "Paris").failure_kind == "timeout"
    assert verdict({"error": "x", "failure_kind": "budget_stop"}, "Paris").failure_kind == "budget_stop"
    assert verdict({"answer": "Paris", "failure_kind": None}, "Paris").correct


# ---- unanswerable items ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prediction",
    [
        "NOT_IN_DOCUMENT",
        "not_in_document",
        "The document does not contain this information.",
        "I could not find it in the text.",
    ],
)
def test_not_found_report_is_right_on_an_unanswerable_item(prediction):
    assert verdict(prediction, "NOT_IN_DOCUMENT").correct


def test_an_answer_to_an_unanswerable_item_is_wrong():
    assert verdict("The CEO earned $2 million.", "NOT_IN_DOCUMENT").failure_kind == FailureKind.WRONG


def test_a_negation_is_not_a_not_found_report():
    assert verdict("There is no doubt: it is Paris.", "NOT_IN_DOCUMENT").failure_kind == FailureKind.WRONG


@pytest.mark.parametrize(
    ("prediction", "kind"),
    [
        ({"answer": "NOT_IN_DOCUMENT", "partial": True, "notes": ["cost_cap_reached"]}, FailureKind.BUDGET_STOP),
        (
            ChatMessage.from_assistant("The text does not say.", meta={"finish_reason": "length"}),
            FailureKind.BUDGET_STOP,
        ),
        ({"answer": "NOT_IN_DOCUMENT", "trace": [{"finish_reason": "refusal"}]}, FailureKind.REFUSAL),
    ],
)
def test_not_found_from_a_stopped_or_refused_run_is_that_stop(prediction, kind):
    assert verdict(prediction, "NOT_IN_DOCUMENT").failure_kind == kind


def test_stopped_or_refused_run_that_still_found_the_answer_is_right():
    stopped = {"answer": "It opened in 2019 and", "partial": True, "notes": ["cost_cap_reached"]}
    refused = ChatMessage.from_assistant("2019, but I cannot say more.", meta={"finish_reason": "content_filter"})
    assert verdict(stopped, "2019").correct
    assert verdict(refused, "2019").correct


def test_custom_label_and_phrases():
    custom = AnswerContainsScorer(not_found_label="UNANSWERABLE", extra_not_found_phrases=["keine Angabe"])
    assert custom.score("Keine Angabe.", "UNANSWERABLE").correct
    assert custom.score("unanswerable", "UNANSWERABLE").correct
    # with a custom label, NOT_IN_DOCUMENT is an ordinary label again
    assert custom.score("The text does not say.", "NOT_IN_DOCUMENT").failure_kind == FailureKind.NOT_IN_DOCUMENT


def test_label_list_mixing_an_answer_and_the_not_found_label():
    assert verdict("Paris", ["Paris", "NOT_IN_DOCUMENT"]).correct
    assert verdict("The text does not say.", ["Paris", "NOT_IN_DOCUMENT"]).correct
    assert verdict("Lyon", ["Paris", "NOT_IN_DOCUMENT"]).failure_kind == FailureKind.WRONG


def test_generated_answer_on_an_unanswerable_item():
    answer = GeneratedAnswer(data="There is no information about the author in the text.", query="q", documents=[])
    assert verdict(answer, "NOT_IN_DOCUMENT").correct


# ---- batches -----------------------------------------------------------------------------------


def test_batch_summary():
    result = scorer.score_batch(["Paris", "12400", ["7"]], ["paris", "Lyon", None])
    assert result.individual_scores == [1, 0, 0]
    assert result.score == pytest.approx(1 / 3)
    assert result.failure_kinds == [None, "wrong", "parse_failure"]
    assert set(FAILURE_KINDS) <= set(result.failure_counts)
    assert result.failure_counts["wrong"] == 1
    assert result.failure_counts["parse_failure"] == 1
    assert sum(result.failure_counts.values()) == 2


def test_carried_custom_kinds_are_counted_too():
    result = scorer.score_batch(["a", "b"], [{"answer": "a", "failure_kind": "timeout"}, "b"])
    assert result.failure_counts["timeout"] == 1


def test_batch_errors_name_the_position():
    with pytest.raises(ValueError, match="2 items but predicted_answers has 1"):
        scorer.score_batch(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="position 1 is an empty list"):
        scorer.score_batch(["a", []], ["a", "b"])
    with pytest.raises(ValueError, match="position 0 is not a finite number"):
        scorer.score_batch([float("nan")], ["a"])
    with pytest.raises(TypeError, match="must be a list"):
        scorer.score_batch("abc", ["a", "b", "c"])
    with pytest.raises(ValueError, match="nothing to score"):
        scorer.score_batch([], [])
