"""The typed-answer rules: answer spans, every question type, type names, custom types, failure kinds."""

import doctest
from decimal import Decimal

import pytest
from haystack.dataclasses import ChatMessage, GeneratedAnswer

import answer_eval.evaluators.text_metrics
import answer_eval.evaluators.typed_rules
import answer_eval.evaluators.typed_scoring
import answer_eval.inputs.reading
from answer_eval.evaluators.typed_scoring import BUILTIN_TYPES, UNKNOWN_TYPE, TypedAnswerScorer, TypedOptions, type_key
from answer_eval.inputs.reading import AnswerSpan, extract_answer, find_answer

SCORER = TypedAnswerScorer()


def score(prediction, reference, question_type, **options):
    scorer = TypedAnswerScorer(TypedOptions.from_dict(options)) if options else SCORER
    return scorer.score(prediction, reference, question_type)


@pytest.mark.parametrize(
    "module",
    [
        answer_eval.inputs.reading,
        answer_eval.evaluators.typed_rules,
        answer_eval.evaluators.text_metrics,
        answer_eval.evaluators.typed_scoring,
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0


# --- answer spans ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is <answer>B</answer>", AnswerSpan("B", "span")),
        ("<ANSWER>  42.5\n</Answer> trailing", AnswerSpan("42.5", "span")),
        ("< answer >x</ answer >", AnswerSpan("x", "span")),
        ("<answer>first</answer> <answer>second</answer>", AnswerSpan("first", "span")),
        ("Use <answer> tags: <answer>C</answer>", AnswerSpan("C", "span")),
        ("Reasoning... <answer>B", AnswerSpan("B", "unclosed")),
        ("  no tags here  ", AnswerSpan("no tags here", "whole")),
        (" 3 < 4 and <b>5</b> ", AnswerSpan("3 < 4 and <b>5</b>", "whole")),
        ("<answer></answer>", AnswerSpan("", "span")),
    ],
)
def test_answer_span(text, expected):
    assert find_answer(text) == expected
    assert extract_answer(text) == expected.text


def test_untagged_texts_are_compared_whole_not_as_empty_strings():
    # The reference design reads "" from both untagged texts and scores them 1.0.
    assert score("apples", "oranges", "free-form").score == 0.0
    assert score("C", "B", "multiple choice").score == 0.0
    assert score("7", "5", "numerical").score == 0.0
    assert score("apples and pears", "apples and pears", "free-form").score == 1.0


def test_tags_on_one_side_only():
    assert score("The answer is <answer>B</answer>", "B", "multiple choice").score == 1.0
    assert score("B", "The correct answer is <answer>B</answer>", "mcq").score == 1.0
    assert score("It is <answer>12</answer>, not 13", "12", "numerical").score == 1.0


def test_empty_answer_span_is_a_parse_failure_and_an_empty_reference_span_is_refused():
    result = score("<answer> </answer>", "B", "multiple choice")
    assert (result.score, result.failure_kind, result.outcome) == (0.0, "parse_failure", None)
    with pytest.raises(ValueError, match=r"blank once its <answer> span is taken"):
        SCORER.score("B", "<answer></answer>", "multiple choice")


# --- numerical ------------------------------------------------------------------------------


def test_the_two_numbers_the_reference_design_gets_wrong():
    assert score("1,204", "1204", "numerical").score == 1.0
    assert (
        score("The result is <answer>42.5</answer>", "The answer is <answer>42.50</answer>", "numerical").score == 1.0
    )
    assert score("It cost 1 204 euros", "1204", "numerical").score == 1.0


def test_the_last_number_counts_by_default():
    assert score("6 times 7 is 42", "42", "numerical").score == 1.0
    assert score("6 times 7 is 42", "6", "numerical").score == 0.0
    assert score("6 times 7 is 42", "6", "numerical", number="first").score == 1.0


def test_only_mode_makes_several_different_numbers_wrong():
    result = score("12 or 13", "12", "numerical", number="only")
    assert (result.score, result.failure_kind) == (0.0, "wrong")
    assert score("12, that is 12.0", "12", "numerical", number="only").score == 1.0


def test_rounding_to_decimals():
    assert score("3.14159", "3.14", "numerical").score == 1.0
    assert score("3.14159", "3.14", "numerical", decimals=4).score == 0.0
    assert score("3.14159", "3.14", "numerical", decimals=None).score == 0.0
    assert score("42.50", "42.5", "numerical", decimals=None).score == 1.0  # equal values
    assert score("3.7", "4", "numerical", decimals=0).score == 1.0


def test_rounding_is_half_away_from_zero_on_the_written_decimal():
    assert round(2.675, 2) == 2.67  # binary floats: what float rounding would do
    assert score("2.675", "2.68", "numerical").score == 1.0
    assert score("-2.675", "-2.68", "numerical").score == 1.0


def test_signs_and_unicode_minus():
    assert score("\u22123.5", "-3.5", "numerical").score == 1.0
    assert score("3.5", "-3.5", "numerical").score == 0.0


def test_tolerances():
    assert score("99.5", "100", "numerical", rel_tol=0.01).score == 1.0
    assert score("98", "100", "numerical", rel_tol=0.01).score == 0.0
    assert score("10.4", "10", "numerical", abs_tol=0.5).score == 1.0
    assert score("10.6", "10", "numerical", abs_tol=0.5).score == 0.0


@pytest.mark.parametrize(
    ("percent", "equal_to_45", "equal_to_fraction"),
    [("unit", True, False), ("fraction", False, True), ("either", True, True)],
)
def test_percent(percent, equal_to_45, equal_to_fraction):
    assert (score("45%", "45", "numerical", percent=percent).score == 1.0) is equal_to_45
    assert (score("45 percent", "0.45", "numerical", percent=percent).score == 1.0) is equal_to_fraction
    assert score("45%", "45%", "numerical", percent=percent).score == 1.0


def test_no_number():
    result = score("I do not know", "12", "numerical")
    assert (result.score, result.failure_kind, result.outcome) == (0.0, "parse_failure", None)
    assert score("12,5", "12.5", "numerical").failure_kind == "parse_failure"  # decimal commas are not read
    with pytest.raises(ValueError, match=r"ground truth at position 2 \(numerical\) holds no number"):
        SCORER.score("12", "twelve", "numerical", 2)


def test_huge_numbers_do_not_break_the_comparison():
    assert score("1e999999", "1e999999", "numerical").score == 1.0
    assert score("1e999999", "2", "numerical").score == 0.0
    assert score("1e-999999", "0", "numerical").score == 1.0
    assert score("1e999999", "2", "numerical", rel_tol=0.1).score == 0.0
    assert score("1e999999", "2", "regression").score == 0.0


def test_number_ground_truths():
    assert score("1,204 units", 1204, "numerical").score == 1.0
    assert score("42.50", 42.5, "numerical").score == 1.0
    assert score("0.1", 0.1, "numerical").score == 1.0
    with pytest.raises(ValueError, match="nan"):
        SCORER.score("1", float("nan"), "numerical")
    with pytest.raises(TypeError, match="str or a number"):
        SCORER.score("1", True, "numerical")


# --- regression -----------------------------------------------------------------------------


def test_regression_closeness():
    assert score("9", "10", "regression").score == 0.9
    assert score("11", "10", "regression").score == 0.9
    assert score("-9", "-10", "regression").score == 0.9
    assert score("7.5", "10", "regression").score == 0.75
    result = score("25", "10", "regression")
    assert (result.score, result.failure_kind) == (0.0, "wrong")
    assert score("10.0", "10", "regression").failure_kind is None


def test_regression_with_a_zero_reference_needs_exactly_zero():
    assert score("0", "0", "regression").score == 1.0
    assert score("0.0", "-0", "regression").score == 1.0
    assert score("0.001", "0", "regression").score == 0.0


def test_regression_without_a_number_and_with_percent():
    assert score("about ten", "10", "regression").failure_kind == "parse_failure"
    assert score("45%", "0.45", "regression", percent="either").score == 1.0
    assert score("45%", "0.45", "regression").score == 0.0


# --- OCR and free-form ----------------------------------------------------------------------


def test_ocr():
    assert score("hello world", "hello there world", "OCR").score == 1 - 1 / 3
    assert score("Hello World", "hello world", "OCR").score == 0.0  # case-sensitive by default
    assert score("Hello World", "hello world", "OCR", ocr_ignore_case=True).score == 1.0
    assert score("hello, world!", "hello world", "OCR").score == 0.0
    assert score("hello, world!", "hello world", "OCR", ocr_ignore_punctuation=True).score == 1.0
    result = score("completely different text here", "hello world", "OCR")
    assert (result.score, result.failure_kind) == (0.0, "wrong")
    assert score("hello wrld", "hello world", "ocr").failure_kind is None  # partly right: graded, no failure


def test_free_form():
    assert score("The cat sat on the mat", "The cat sat on the mat", "free-form").score == 1.0
    # One word has no bigram: ROUGE-2 is 0, so an identical one-word answer scores 2/3 (as in rouge-score).
    assert score("Paris", "Paris", "free-form").score == 2 / 3
    result = score("!!!", "Paris", "free-form")
    assert (result.score, result.failure_kind) == (0.0, "wrong")
    no_stem = TypedAnswerScorer(TypedOptions(use_stemmer=False))
    assert (
        score("cats running", "cat runs", "free-form").score
        > no_stem.score("cats running", "cat runs", "free-form").score
    )
    assert score("cats", "cat", "free-form", rouge_types=["rouge1"]).score == 1.0


# --- question types -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("multiple choice", "multiple choice"),
        ("Multiple Choice", "multiple choice"),
        ("multiple_choice", "multiple choice"),
        ("MULTIPLE-CHOICE", "multiple choice"),
        ("mcq", "multiple choice"),
        ("Numerical", "numerical"),
        ("numeric", "numerical"),
        ("ocr", "OCR"),
        ("free-form", "free-form"),
        ("Free Form", "free-form"),
        ("freeform", "free-form"),
        (" regression ", "regression"),
    ],
)
def test_type_names_match_case_and_separator_insensitively(name, canonical):
    assert SCORER.resolve(name) == canonical
    assert SCORER.score("5", "5", name).question_type == canonical


def test_type_key():
    assert type_key("Multiple_Choice") == type_key("multiple choice") == "multiplechoice"


def test_unknown_type_raises_naming_the_item_and_the_known_types():
    with pytest.raises(ValueError, match=r"unknown question type 'essay' at position 7; known types:") as error:
        SCORER.score("x", "y", "essay", 7)
    for name in BUILTIN_TYPES:
        assert repr(name) in str(error.value)
    with pytest.raises(TypeError, match=r"question type at position 1 must be a str, got NoneType"):
        SCORER.score("x", "y", None, 1)


def test_unknown_type_scores_zero_on_request():
    scorer = TypedAnswerScorer(TypedOptions(on_unknown="zero"))
    batch = scorer.score_batch(["B", "x", "y"], ["B", "y", "y"], ["mcq", "Essay ", "essay "])
    assert batch.individual_scores == [1.0, 0.0, 0.0]
    assert batch.failure_kinds == [None, UNKNOWN_TYPE, UNKNOWN_TYPE]
    assert batch.per_type == {"multiple choice": {"score": 1.0, "count": 1}, "Essay": {"score": 0.0, "count": 1},
                              "essay": {"score": 0.0, "count": 1}}  # fmt: skip
    assert batch.failure_counts[UNKNOWN_TYPE] == 2
    with pytest.raises(ValueError, match="on_unknown"):
        TypedAnswerScorer(TypedOptions(on_unknown="ignore"))


# --- custom types ---------------------------------------------------------------------------


def yes_no(answer: str, reference: str) -> bool:
    return answer.strip(" .!").casefold() == reference.casefold()


def test_custom_type_gets_the_span_texts_and_its_result_is_a_score():
    seen = []

    def spy(answer, reference):
        seen.append((answer, reference))
        return 0.25

    scorer = TypedAnswerScorer(custom_types={"Yes/No": yes_no, "spy": spy})
    assert scorer.score("<answer>Yes.</answer>", "yes", "yes_no").score == 1.0
    assert scorer.score("No", "yes", "YES NO").failure_kind == "wrong"
    assert scorer.score("<answer> a </answer>", "<answer>b</answer>", "spy").score == 0.25
    assert seen == [("a", "b")]
    assert scorer.registry.known_types == (*BUILTIN_TYPES, "Yes/No", "spy")
    assert scorer.score("", "yes", "Yes/No").failure_kind == "parse_failure"  # never called on a blank answer


def test_custom_type_errors():
    with pytest.raises(ValueError, match="clashes with the type 'multiple choice'"):
        TypedAnswerScorer(custom_types={"MCQ": yes_no})
    with pytest.raises(ValueError, match="non-blank name"):
        TypedAnswerScorer(custom_types={" _ ": yes_no})
    with pytest.raises(TypeError, match="must be callable"):
        TypedAnswerScorer(custom_types={"essay": "not a function"})
    for bad in (1.5, -0.1, float("nan"), "1", None):
        scorer = TypedAnswerScorer(custom_types={"essay": lambda a, r, bad=bad: bad})
        with pytest.raises(ValueError, match=r"custom type 'essay' returned .*; it must return a number in \[0, 1\]"):
            scorer.score("a", "b", "essay")


# --- batches, references and failure kinds ---------------------------------------------------


def test_per_type_aggregation():
    batch = SCORER.score_batch(
        ["B", "C", "42", "9", "hello world"],
        ["B", "B", "42.0", "10", "hello world"],
        ["multiple choice", "mcq", "numerical", "regression", "OCR"],
    )
    assert batch.individual_scores == [1.0, 0.0, 1.0, 0.9, 1.0]
    assert batch.score == pytest.approx(3.9 / 5)
    assert batch.per_type == {
        "multiple choice": {"score": 0.5, "count": 2},
        "numerical": {"score": 1.0, "count": 1},
        "regression": {"score": 0.9, "count": 1},
        "OCR": {"score": 1.0, "count": 1},
    }
    assert batch.outcomes == ["B", "C", "42", "9", "hello world"]


def test_batch_shape_errors():
    with pytest.raises(ValueError, match="predicted_answers has 2, ground_truth_answers has 1, question_types has 2"):
        SCORER.score_batch(["a", "b"], ["a"], ["OCR", "OCR"])
    with pytest.raises(ValueError, match="empty"):
        SCORER.score_batch([], [], [])
    with pytest.raises(TypeError, match="question_types must be a list"):
        SCORER.score_batch(["a"], ["a"], "OCR")


def test_several_acceptable_references_take_the_best():
    assert score("9", ["100", "10"], "regression").score == 0.9
    assert score("B", ["A", "B"], "multiple choice").score == 1.0
    with pytest.raises(ValueError, match="empty list"):
        SCORER.score("B", [], "multiple choice", 0)


def test_prediction_forms_and_failure_kinds():
    reply = ChatMessage.from_assistant("The answer is <answer>B</answer>")
    assert score(reply, "B", "mcq").score == 1.0
    assert score(GeneratedAnswer(data="42.50", query="q", documents=[]), "42.5", "numerical").score == 1.0
    assert score({"replies": ["<answer>7</answer>"], "meta": [{}]}, "7", "numerical").score == 1.0
    assert score(None, "7", "numerical").failure_kind == "parse_failure"
    assert score(RuntimeError("timeout"), "7", "numerical").failure_kind == "error"
    assert score({"answer": "7", "failure_kind": "tool_error"}, "7", "numerical").failure_kind == "tool_error"
    cut = {"replies": ["The answer is 1"], "meta": [{"finish_reason": "length"}]}
    assert score(cut, "12", "numerical").failure_kind == "budget_stop"
    cut_right = {"replies": ["The answer is 12"], "meta": [{"finish_reason": "length"}]}
    assert score(cut_right, "12", "numerical").score == 1.0  # a stopped run that still answered right is right
    refused = {"answer": "I cannot help with that", "status": "refused"}
    assert score(refused, "B", "mcq").failure_kind == "refusal"


def test_outcome_values():
    assert SCORER.score("Sales: 12,400 units", "12400", "numerical").outcome == "12400"
    assert SCORER.score("45 %", "45", "numerical").outcome == "45 %"
    assert SCORER.score("A or C", "B", "mcq").outcome == "A,C"
    assert SCORER.score("Paris", "B", "mcq").outcome == "paris"


def test_number_values_are_decimal():
    mention, _ = SCORER.numbers.read("The result is 42.50")
    assert mention.value == Decimal("42.50")
    with pytest.raises(ValueError, match="decimals"):
        TypedAnswerScorer(TypedOptions(decimals=-1))
    with pytest.raises(ValueError, match="rel_tol"):
        TypedAnswerScorer(TypedOptions(rel_tol=float("inf")))
    with pytest.raises(ValueError, match="percent"):
        TypedAnswerScorer(TypedOptions(percent="ratio"))
    with pytest.raises(ValueError, match="number"):
        TypedAnswerScorer(TypedOptions(number="middle"))


def test_a_batch_reads_each_reference_once_and_scores_like_single_items():
    rows = [
        ("Sales were 12,400 units", "12400", "numerical"),
        ("12399", 12400, "numerical"),
        ("12400.0", "12400", "numerical"),
        ("the cat sat on the mat", ["a cat sat", "the mat"], "free-form"),
        ("a dog sat on a mat", ["a cat sat", "the mat"], "free-form"),
        ("a cat sat", "a cat sat", "free-form"),
        ("a cat sat", "a cat sat", "OCR"),
        ("A cat sat", "a cat sat", "OCR"),
        ("<answer>B</answer>", "B", "mcq"),
        ("C", "B", "mcq"),
        ("B", "B", "multiple choice"),
    ]
    predictions, truths, kinds = (list(column) for column in zip(*rows, strict=True))
    batch = SCORER.score_batch(predictions, truths, kinds)
    singles = [SCORER.score(*row) for row in rows]
    assert batch.items == singles
    assert [item.score for item in batch.items][:3] == [1.0, 0.0, 1.0]
    assert batch.items[3].score != batch.items[4].score


def test_a_bad_reference_repeated_in_a_batch_is_named_at_its_first_position():
    with pytest.raises(ValueError, match=r"position 1 .*numerical"):
        SCORER.score_batch(["1", "2", "3"], ["1", "no number", "no number"], ["numerical"] * 3)
