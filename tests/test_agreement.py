import pytest

from answer_eval.stats.agreement import agreement, best_threshold, cohen_kappa


def wikipedia_example():
    # Cohen's kappa worked example (Wikipedia): 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa 0.4
    a = [True] * 20 + [True] * 5 + [False] * 10 + [False] * 15
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    return a, b


def test_kappa_against_a_published_example():
    a, b = wikipedia_example()
    assert agreement(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_is_symmetric_and_bounded():
    a, b = wikipedia_example()
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa(b, a))
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa(a, [not x for x in a]) < 0


def test_degenerate_kappa():
    assert cohen_kappa([True, True], [True, True]) == 1.0
    assert cohen_kappa([True, True], [False, False]) == 0.0


def test_best_threshold():
    scores = [0.1, 0.4, 0.6, 0.9]
    labels = [False, False, True, True]
    assert best_threshold(scores, labels) == (0.6, 1.0)
    assert best_threshold([0.5, 0.5], [False, False])[1] == 1.0  # above every score: all "no"


def test_errors():
    with pytest.raises(ValueError, match="length"):
        agreement([True], [True, False])
    with pytest.raises(ValueError, match="no verdicts"):
        cohen_kappa([], [])
