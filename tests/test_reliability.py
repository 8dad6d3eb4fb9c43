"""Krippendorff's alpha and Fleiss' kappa against their published worked examples."""

from __future__ import annotations

import pytest

from answer_eval.stats.rater_agreement import ALPHA_LEVELS, fleiss_kappa, krippendorff_alpha

N = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four observers, twelve units,
# values 1 to 5, some missing. Rows are observers A to D.
OBSERVERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]
UNITS = list(zip(*OBSERVERS, strict=True))


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_alpha_matches_krippendorffs_worked_example(level, published):
    assert round(krippendorff_alpha(UNITS, level), 3) == published


def test_alpha_is_the_same_whatever_the_raters_order_and_leaves_out_unpairable_units():
    shuffled = [tuple(reversed(unit)) for unit in UNITS]
    assert krippendorff_alpha(shuffled, "ordinal") == pytest.approx(krippendorff_alpha(UNITS, "ordinal"))
    # Unit 12 has one value (3): unpairable, so dropping it changes nothing.
    assert krippendorff_alpha(UNITS[:11], "interval") == pytest.approx(krippendorff_alpha(UNITS, "interval"))


def test_alpha_of_a_small_table_by_hand():
    # Units (1, 1), (1, 2): n1 = 3, n2 = 1, n = 4; o12 = o21 = 1. Interval: observed 2 * 1 = 2,
    # expected 2 * 3 * 1 * 1 = 6; alpha = 1 - 3 * 2 / 6 = 0.
    assert krippendorff_alpha([(1, 1), (1, 2)], "interval") == pytest.approx(0.0)
    # Perfect agreement with some variation: 1.
    assert krippendorff_alpha([(1, 1), (3, 3)], "ordinal") == pytest.approx(1.0)


def test_alpha_is_undefined_without_variation_or_pairs():
    assert krippendorff_alpha([(4, 4), (4, 4)], "ordinal") is None
    assert krippendorff_alpha([(4, None), (None, 2)], "interval") is None
    assert krippendorff_alpha([], "nominal") is None


def test_alpha_refuses_an_unknown_level_and_text_on_a_numeric_level():
    with pytest.raises(ValueError, match="level is one of nominal, ordinal, interval, ratio"):
        krippendorff_alpha(UNITS, "likert")
    with pytest.raises(ValueError, match="needs finite numbers"):
        krippendorff_alpha([("a", "b"), ("a", "a")], "interval")
    assert krippendorff_alpha([("a", "b"), ("a", "a")], "nominal") is not None
    assert set(ALPHA_LEVELS) == {"nominal", "ordinal", "interval", "ratio"}


# Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories (counts per category).
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_kappa_matches_the_wikipedia_worked_example():
    items = [[category for category, count in enumerate(row) for _ in range(count)] for row in FLEISS_TABLE]
    assert round(fleiss_kappa(items), 3) == 0.210


def test_kappa_by_hand_and_its_edges():
    # Two items, two raters: (A, B), (A, A). P = (0 + 1) / 2; shares A 3/4, B 1/4: Pe = 10/16; kappa = -1/3.
    assert fleiss_kappa([["A", "B"], ["A", "A"]]) == pytest.approx(-1 / 3)
    assert fleiss_kappa([["A", "A"], ["B", "B"]]) == pytest.approx(1.0)
    assert fleiss_kappa([["A", "A"], ["A", "A"]]) is None  # one category: chance agreement is perfect
    assert fleiss_kappa([]) is None
    with pytest.raises(ValueError, match="same number of ratings"):
        fleiss_kappa([["A", "B"], ["A"]])
