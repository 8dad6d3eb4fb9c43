from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answer_eval import contains_answer
from answer_eval.text.matching import find_numbers


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Sheffield produced 12,400 units.", "12400"),
        ("Sheffield produced 12400 units.", "12,400"),
        ("It cost 100,000 euros.", 100000),
        ("The answer is 12.", "12"),  # a full stop is not a decimal point
        ("12, 13 and 14", "12"),  # nor is a comma followed by a space
        ("145.2 or maybe 45.2", "45.2"),  # every occurrence is tried
        ("The mast is 45.2m high", "45.2"),  # units do not hide a number
        ("Take 5mg twice a day", "5"),
        ("Turnout was 45%", "45"),
        ("The fee is $1,250.", "1250"),
        ("Delivery takes 12-15 days", "12"),  # a range, not a minus sign
        ("Delivery takes 12-15 days", "15"),
        ("Delivery takes 12\u201315 days", "15"),
        ("Between 1,200-1,500 visitors", "1200"),
        ("Between 1,200-1,500 visitors", "1500"),
        ("It fell to \u221212 \u00b0C", "-12"),
        ("Paris, France", "paris"),  # text is a plain substring
        ("The 12th man", "12"),
        ("COVID-19 spread in 2020", "covid-19"),
    ],
)
def test_found(text, label):
    assert contains_answer(text, label)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("It measured 145.2 m", "45.2"),
        ("It measured 45.25 m", "45.2"),
        ("A rate of .12", "12"),
        ("A rate of 0.12", "12"),
        ("It fell to -12", "12"),
        ("It fell to \u221212", "12"),
        ("In 2012", "12"),
        ("About 12.5", "12"),
        ("We use version 3.12", "12"),
        ("Sales were 12,400", "12"),
        ("Sales were 12,5 million", "12"),  # decimal comma
        ("Lyon, France", "paris"),
        ("12-15", "-15"),  # a range hyphen is not a minus sign
        ("COVID-190", "covid-19"),
    ],
)
def test_not_found(text, label):
    assert not contains_answer(text, label)


def test_any_acceptable_answer_is_enough():
    assert contains_answer("It was Lyon.", ["Paris", "Lyon"])
    assert not contains_answer("It was Nice.", ["Paris", "Lyon"])


@pytest.mark.parametrize("bad", [True, b"12", {"a": 1}])
def test_labels_of_other_types_are_refused(bad):
    with pytest.raises(TypeError, match="str or a number"):
        contains_answer("12", bad)


def test_a_missing_label_is_named_missing():
    with pytest.raises(TypeError, match=r"is missing \(empty or null\)"):
        contains_answer("12", None)


def test_a_float_label_is_a_number_and_a_nan_is_refused():
    assert contains_answer("It is 1.5 metres.", 1.5)
    assert not contains_answer("It is 15 metres.", 1.5)
    with pytest.raises(ValueError, match="not a finite number"):
        contains_answer("12", float("nan"))


@pytest.mark.parametrize("bad", [[], "", "   "])
def test_empty_labels_are_refused(bad):
    with pytest.raises(ValueError, match=r"empty|blank"):
        contains_answer("anything", bad)


# ---- properties ------------------------------------------------------------------------------

numbers = st.integers(min_value=0, max_value=10**9).map(str) | st.decimals(
    min_value=0, max_value=10**6, places=2, allow_nan=False, allow_infinity=False
).map(str)
digit_strings = st.text(alphabet="0123456789", min_size=1, max_size=4)
words = st.text(alphabet="abcxyz %$", max_size=6)


@given(numbers, digit_strings, words, words)
def test_a_number_is_never_found_inside_a_longer_number_on_the_left(number, extra, before, after):
    # prefix digits, a decimal point or a minus sign glue onto the number (unless the glued
    # number has the same value: "0.0" is 0)
    for glue in (extra, extra + ".", "-", "0."):
        text = f"{before} {glue}{number} {after}"
        if _same_value(glue + number, number):
            continue
        assert not contains_answer(text, number), text


@given(numbers, digit_strings, words)
def test_a_number_is_never_found_inside_a_longer_number_on_the_right(number, extra, before):
    for glue in (extra, "." + extra, "," + extra, "e" + extra, "\u00b2", "\u00bd", "\u2044" + extra):
        text = f"{before} {number}{glue}"
        if glue.startswith(",") and len(extra) == 3:
            continue  # "12,400" is the grouped number 12400: covered by the folding tests
        if _same_value(number + glue, number):
            continue  # "5.0" is 5, "1\u00b2" is 1: the same number written another way
        if glue == "\u00bd" and "." in number:
            continue  # a vulgar fraction makes a mixed number with a whole number only
        assert not contains_answer(text, number), text


def _same_value(written: str, number: str) -> bool:
    mentions = find_numbers(written)
    return len(mentions) == 1 and mentions[0].value == Decimal(number)


@given(numbers, words, words)
def test_a_number_on_its_own_is_found(number, before, after):
    assert contains_answer(f"{before} {number} {after}", number)


def test_a_decimal_comma_glues_both_sides():
    assert not contains_answer("Der Wert ist 3,12", "12")
    assert not contains_answer("Der Wert ist 3,12", "3")
    assert contains_answer("Der Wert ist 3,12", "3,12")
