import pytest
from hypothesis import given
from hypothesis import strategies as st

from answer_eval import fold

SEPARATORS = [",", " ", "\u00a0", "\u2009", "\u202f", "\u2007"]


def test_case_is_folded_with_casefold():
    assert fold("STRASSE Straße") == "strasse strasse"


@pytest.mark.parametrize("space", [" ", "\t", "\n", "\r\n", "\u00a0", "\u2009", "\u202f", "\u2007", "  \n\t "])
def test_every_white_space_run_becomes_one_space(space):
    assert fold(f"  Paris{space}France  ") == "paris france"


@pytest.mark.parametrize("separator", SEPARATORS)
def test_thousands_separator_between_digits_is_dropped(separator):
    assert fold(f"1{separator}204") == "1204"
    assert fold(f"12{separator}400{separator}000 units") == "12400000 units"


@pytest.mark.parametrize("text", ["1,2", "12,5", "1,2345", "12,40", "3,14159"])
def test_separator_before_other_than_three_digits_stays(text):
    assert fold(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2012 345", "2012 345"),  # a four-digit lead group is not a grouped number
        ("0.5 100", "0.5 100"),  # nor is the tail of a decimal
        ("1990, 2000 and 2010", "1990, 2000 and 2010"),  # a list, not a number
        ("1,204.5", "1204.5"),
        ("-1,204", "-1204"),
        ("$1,250", "$1250"),
    ],
)
def test_grouped_number_edges(text, expected):
    assert fold(text) == expected


def test_labels_and_answers_fold_alike():
    assert fold("100000") == fold("100,000")
    assert fold("1,204") == fold("1204") == fold("1 204") == fold("1\u202f204")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\u0661\u0662\u0664", "124"),  # Arabic-Indic
        ("\u0967\u0968", "12"),  # Devanagari
        ("\uff11\uff12", "12"),  # fullwidth
        ("\u2212 12", "- 12"),  # minus sign
        ("12\u201315", "12-15"),  # en dash
        ("12\u221215", "12-15"),
    ],
)
def test_unicode_digits_and_dashes(text, expected):
    assert fold(text) == expected


def test_superscripts_are_not_digits():
    assert fold("5 m\u00b2") == "5 m\u00b2"


def test_invisible_characters_do_not_split_numbers():
    assert fold("12\u200b400") == "12400"
    assert fold("\ufeffParis") == "paris"


# ---- properties ------------------------------------------------------------------------------

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
number_chunks = st.lists(st.integers(min_value=0, max_value=999), min_size=1, max_size=4)


@given(texts)
def test_fold_is_idempotent(text):
    once = fold(text)
    assert fold(once) == once


@given(
    st.integers(min_value=1, max_value=999),
    st.lists(st.integers(0, 999), min_size=1, max_size=4),
    st.sampled_from(SEPARATORS),
    st.text(alphabet="abc .;:%$", max_size=8),
    st.text(alphabet="abc .;:%$", max_size=8),
)
def test_fold_is_invariant_under_thousands_separators(lead, groups, separator, before, after):
    # Guard the contexts so the number stands alone, as the rule requires.
    before = before + " " if before and before[-1] in "." else before
    after = " " + after if after[:1] in ".," else after
    digits = str(lead) + "".join(f"{g:03d}" for g in groups)
    grouped = str(lead) + "".join(f"{separator}{g:03d}" for g in groups)
    assert fold(before + grouped + after) == fold(before + digits + after)


@given(texts, st.sampled_from([" ", "\t", "\n", "\u00a0", "\u2009", "  "]))
def test_fold_is_invariant_under_white_space(text, space):
    words = text.split()
    assert fold(space.join(words)) == fold(" ".join(words))


@pytest.mark.parametrize(
    "text", ["12 1e2", "12 10^2", "5 3^-1", "3/4 1.5e3 1/3", "1500 1/3", "1,000\u00bd", "0.00\u00bd"]
)
def test_numbers_written_out_fold_to_a_fixed_point(text):
    # A number written out next to another one can form a grouped or mixed number: fold runs its
    # number steps until nothing changes, so a second fold changes nothing.
    assert fold(fold(text)) == fold(text)


@pytest.mark.parametrize("text", ["\ufe32", "\u1ffd", "\u212b", "\ufffe\ufe32\u30ff"])
def test_regression_compatibility_forms_fold_to_a_fixed_point(text):
    # Found by the text fuzzer: "︲" (a vertical en dash) became an en dash that a second fold turned
    # into "-", and "῾" (Greek oxia) became "´", whose compatibility form a second fold applied.
    assert fold(fold(text)) == fold(text)
