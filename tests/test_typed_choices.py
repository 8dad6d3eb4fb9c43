"""Multiple-choice answers: which option an answer names, and how it is compared with the reference."""

import pytest

from answer_eval.evaluators.typed_rules import read_choice
from answer_eval.evaluators.typed_scoring import TypedAnswerScorer

SCORER = TypedAnswerScorer()


def score(prediction, reference, question_type="multiple choice"):
    return SCORER.score(prediction, reference, question_type)


# --- multiple choice ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    ["B", "b", "(B)", "B)", "B.", "[B]", "Option B", "option (b)", "The answer is B", "The answer is b",
     "Answer: B", "**Answer:** (B)", "B. Paris", "(b) Paris", "I choose B", "I think the answer is B",
     "The correct option is B because it is larger", "B is correct", "<answer>B</answer>"],
)  # fmt: skip
def test_every_way_of_naming_option_b(answer):
    result = score(answer, "B", "multiple choice")
    assert (result.score, result.failure_kind, result.outcome) == (1.0, None, "B")


@pytest.mark.parametrize("answer", ["A cat is on the mat", "The answer is a cat", "I think so", "a"])
def test_prose_a_and_i_are_not_options(answer):
    assert read_choice(answer).letters == (() if answer != "a" else ("A",))


def test_capitals_that_are_options():
    assert read_choice("A is correct").letters == ("A",)
    assert read_choice("The answer is I.").letters == ("I",)
    assert read_choice("Z").letters == ("Z",)
    assert score("(z)", "Z", "multiple choice").score == 1.0


def test_letters_inside_words_numbers_and_abbreviations_are_not_options():
    for text in ("Vitamin B12", "the U.S. capital", "e.g. this one", "A-level", "answer-eval"):
        assert read_choice(text).letters == (), text


@pytest.mark.parametrize("answer", ["A or B", "Both A and C are right", "The answer is A or C", "B, C"])
def test_an_answer_naming_several_options_is_wrong(answer):
    result = score(answer, "B", "multiple choice")
    assert (result.score, result.failure_kind) == (0.0, "wrong")


def test_an_answer_statement_decides_over_other_mentions():
    # "The answer is B" names B; C is only discussed.
    assert score("C is tempting, but the answer is B.", "B", "multiple choice").score == 1.0
    assert score("The answer is B, not C", "B", "multiple choice").score == 1.0


def test_wrong_letter_and_no_option():
    assert score("C", "B", "multiple choice").failure_kind == "wrong"
    result = score("I have no idea", "B", "multiple choice")
    assert (result.score, result.failure_kind) == (0.0, "parse_failure")


def test_reference_given_as_option_text():
    assert score("B. Paris", "Paris", "multiple choice").score == 1.0
    assert score("The answer is Paris.", "paris", "multiple choice").score == 1.0
    assert score("B. Lyon", "Paris", "multiple choice").failure_kind == "wrong"
    # A bare letter cannot be checked against option text without the options: wrong.
    assert score("B", "Paris", "multiple choice").failure_kind == "wrong"
    # A capital inside option text does not make the reference a letter.
    assert score("Vitamin C", "Vitamin C", "multiple choice").score == 1.0
    assert score("World War I", "World War II", "multiple choice").score == 0.0


def test_reference_with_letter_and_text_accepts_either():
    assert score("Paris", "B. Paris", "multiple choice").score == 1.0
    assert score("(B)", "B. Paris", "multiple choice").score == 1.0
    assert score("Lyon", "B. Paris", "multiple choice").failure_kind == "wrong"


def test_reference_naming_several_options_is_refused():
    with pytest.raises(ValueError, match=r"position 4 \(multiple choice\) names several options \(A, C\)"):
        SCORER.score("A", "The answer is A or C", "multiple choice", 4)
