from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answer_eval import contains_answer
from answer_eval.text.matching import find_numbers, parse_number


def values(text):
    return [m.value for m in find_numbers(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sheffield produced 12,400 units.", ["12400"]),
        ("1\u202f204 people", ["1204"]),
        ("It fell to \u22123.5 \u00b0C", ["-3.5"]),
        ("12-15 days", ["12", "15"]),
        ("12\u201315 days", ["12", "15"]),
        ("1,200-1,500 visitors", ["1200", "1500"]),
        ("a rate of .5", ["0.5"]),
        ("The answer is 12.", ["12"]),
        ("1.2e5 metres", ["1.2E+5"]),
        ("\u0664\u0662", ["42"]),
        ("12,5", []),  # a decimal comma is not read
        ("no numbers here", []),
    ],
)
def test_find_numbers(text, expected):
    assert values(text) == [Decimal(v) for v in expected]


def test_percent_is_kept_as_a_unit():
    mentions = find_numbers("Turnout was 45% (45 percent), up from 40")
    assert [(m.value, m.percent) for m in mentions] == [(45, True), (45, True), (40, False)]


def test_positions_point_into_the_folded_text():
    mention = find_numbers("Made 12,400 units")[0]
    assert "made 12400 units"[mention.start : mention.end] == "12400"


def test_parse_number_policies():
    assert parse_number("6 times 7 is 42") == 42
    assert parse_number("6 times 7 is 42", which="first") == 6
    assert parse_number("42 or 42.0", which="only") == 42
    assert parse_number("42 or 43", which="only") is None
    assert parse_number("none") is None
    assert parse_number("42.50") == parse_number("42.5")
    with pytest.raises(ValueError, match="which"):
        parse_number("1", which="middle")


@given(st.integers(min_value=-(10**12), max_value=10**12), st.sampled_from([",", " ", "\u00a0", ""]))
def test_every_integer_reads_back_whatever_its_grouping(number, separator):
    digits = f"{abs(number):,}".replace(",", separator)
    text = f"about {'-' if number < 0 else ''}{digits} units"
    assert values(text) == [number]


@given(st.integers(min_value=0, max_value=10**9))
def test_found_numbers_agree_with_contains(number):
    text = f"It was {number:,} in 2019."
    for mention in find_numbers(text):
        assert contains_answer(text, mention.text)


def test_regression_a_fraction_with_a_huge_exponent_is_no_crash():
    # Found by the text fuzzer: "1/31" folds to "1⁄31", and with an exponent of 17 digits after it
    # the quotient overflowed Decimal's range, an exception out of find_numbers.
    assert [str(m.value) for m in find_numbers("1/31e42222222222222222")] == []
    assert parse_number("x 1/31e42222222222222222") is None
