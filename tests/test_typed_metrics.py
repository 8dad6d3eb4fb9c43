"""Free-form ROUGE and OCR WER are the reference libraries' values, checked against rouge-score and jiwer.

The fixed corpus: the 301 (gold answers, model answer) pairs of the bundled NQ-301 file, the same
model answers paired with each other (longer texts on both sides), and hand-written edge cases.
"""

import json
import unicodedata

import jiwer
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from answer_eval.evaluators.text_metrics import (
    RougeMean,
    _lcs_length,
    clear_stem_cache,
    ocr_words,
    word_error_rate,
)
from answer_eval.evaluators.typed_scoring import TypedAnswerScorer
from tests.conftest import EXAMPLES

ROWS = [
    json.loads(line) for line in (EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl").read_text("utf-8").splitlines()
]
EDGE_PAIRS = [
    ("Paris", "Paris"),  # one word: no bigram, so ROUGE-2 is 0 even for identical texts
    ("A cat is sitting on a mat", "The cat is sitting on the mat"),
    ("running runs runner", "run running ran"),  # stemming
    ("!!!", "???"),  # no tokens on either side
    ("数学", "数学"),  # rouge-score's tokenizer keeps a-z and 0-9 only
    ("the the the the", "the the"),  # repeated n-grams: clipped counts
    ("12,400 units in 2019", "12400 units, in 2019!"),
    ("Straße café naïve", "strasse cafe naive"),
    ("line one\nline two", "line one line two"),
    ("x", ""),
    ("a b c d e f g h i j k l m n o p", "p o n m l k j i h g f e d c b a"),
    ("It's the U.S.A.'s 4th-largest city", "it s the u s a s 4th largest city"),
]
PAIRS = (
    [(" ".join(row["answers"]), row["prediction"]) for row in ROWS]
    + [(ROWS[i]["prediction"], ROWS[i + 1]["prediction"]) for i in range(0, 120, 2)]
    + EDGE_PAIRS
)


def test_the_corpus_is_large_enough():
    assert len(PAIRS) >= 50


@pytest.mark.parametrize("use_stemmer", [True, False])
def test_rouge_f_measures_equal_rouge_score_on_the_corpus(use_stemmer):
    types = ["rouge1", "rouge2", "rougeL"]
    reference = rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer)
    ours = RougeMean(types, use_stemmer=use_stemmer)
    for target, prediction in PAIRS:
        expected = reference.score(target, prediction)
        got = ours.fmeasures(target, prediction)
        assert got == {name: expected[name].fmeasure for name in types}, (target, prediction)


def test_rouge_values_do_not_depend_on_the_stem_cache():
    ours = RougeMean()
    warm = [ours.score(t, p) for t, p in PAIRS]
    clear_stem_cache()
    cold = [RougeMean().score(t, p) for t, p in PAIRS]
    assert warm == cold


def test_other_rouge_types_equal_rouge_score():
    types = ["rouge3", "rouge4", "rougeL", "rouge1"]
    reference = rouge_scorer.RougeScorer(types, use_stemmer=True)
    ours = RougeMean(types)
    for target, prediction in PAIRS[:80]:
        expected = reference.score(target, prediction)
        assert ours.fmeasures(target, prediction) == {name: expected[name].fmeasure for name in types}


def test_free_form_score_is_the_reference_designs_mean_of_rouge_score_values():
    scorer = TypedAnswerScorer()
    reference = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    checked = 0
    for target, prediction in PAIRS:
        if not target.strip() or not prediction.strip():
            continue  # a blank prediction is a parse failure; a blank reference is refused
        values = reference.score(target, prediction)
        expected = (values["rouge1"].fmeasure + values["rouge2"].fmeasure + values["rougeL"].fmeasure) / 3
        assert scorer.score(prediction, target, "free-form").score == expected
        checked += 1
    assert checked >= 50


WORDS = st.sampled_from(["cat", "cats", "sitting", "sits", "mat", "the", "a", "on", "running", "ran", "42", "x"])
TEXTS = st.lists(WORDS, max_size=25).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(TEXTS, TEXTS)
def test_rouge_equals_rouge_score_on_random_texts(target, prediction):
    types = ["rouge1", "rouge2", "rougeL"]
    expected = rouge_scorer.RougeScorer(types, use_stemmer=True).score(target, prediction)
    assert RougeMean(types).fmeasures(target, prediction) == {name: expected[name].fmeasure for name in types}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=70), st.lists(st.sampled_from("abcd"), max_size=70))
def test_bit_parallel_lcs_equals_rouge_scores_table(first, second):
    table = rouge_scorer._lcs_table(first, second)
    assert _lcs_length(first, second) == table[-1][-1]


def test_unsupported_rouge_types_are_refused():
    with pytest.raises(ValueError, match="rougeLsum"):
        RougeMean(["rougeLsum"])
    with pytest.raises(ValueError, match="empty"):
        RougeMean([])


def reference_design_wer(reference: str, hypothesis: str) -> float:
    """The reference design's WER: word edit distance over str.split() words, divided by max(1, len(reference))."""
    ref, hyp = reference.split(), hypothesis.split()
    previous = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, start=1):
        current = [i] + [0] * len(hyp)
        for j, other in enumerate(hyp, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other))
        previous = current
    return previous[-1] / max(1, len(ref))


def only_plain_spaces(text: str) -> bool:
    """jiwer's default transforms split at " " only: compare with them on such text."""
    return all(not character.isspace() or character == " " for character in text)


def test_ocr_score_equals_jiwer_and_the_reference_designs_wer_on_the_corpus():
    scorer = TypedAnswerScorer()
    checked = 0
    for reference, hypothesis in PAIRS:
        if not reference.split() or not hypothesis.split():
            continue
        got = scorer.score(hypothesis, reference, "OCR").score
        assert word_error_rate(reference, hypothesis) == reference_design_wer(reference, hypothesis)
        assert got == max(0.0, 1.0 - reference_design_wer(reference, hypothesis))
        if only_plain_spaces(reference + hypothesis):
            assert got == max(0.0, 1.0 - jiwer.wer(reference, hypothesis))
        checked += 1
    assert checked >= 50


def test_wer_splits_at_any_white_space_unlike_jiwers_default():
    # jiwer's default transform splits at " " only; the reference design (and this package) at any space.
    assert word_error_rate("a b c", "a\u00a0b\tc") == 0.0
    assert jiwer.wer("a b c", "a\u00a0b\tc") > 0


def test_wer_ignoring_case_and_punctuation_equals_jiwers_own_transforms():
    transform = jiwer.Compose(
        [
            jiwer.ToLowerCase(),
            jiwer.RemovePunctuation(),
            jiwer.RemoveMultipleSpaces(),
            jiwer.Strip(),
            jiwer.ReduceToListOfListOfWords(),
        ]
    )
    checked = 0
    for reference, hypothesis in PAIRS:
        if not (reference + hypothesis).isascii() or not only_plain_spaces(reference + hypothesis):
            continue
        ours = word_error_rate(reference, hypothesis, ignore_case=True, ignore_punctuation=True)
        if not transform(reference)[0] or not transform(hypothesis)[0]:
            continue
        expected = jiwer.wer(reference, hypothesis, reference_transform=transform, hypothesis_transform=transform)
        assert ours == expected, (reference, hypothesis)
        checked += 1
    assert checked >= 50


def test_ocr_words_case_and_punctuation():
    assert ocr_words("Hello,  World !") == ["Hello,", "World", "!"]
    assert ocr_words("Hello,  World !", ignore_case=True) == ["hello,", "world", "!"]
    assert ocr_words("Don't — stop.", ignore_punctuation=True) == ["Dont", "stop"]
    assert ocr_words("STRASSE Straße", ignore_case=True) == ["strasse", "strasse"]
    assert all(unicodedata.category(c).startswith("P") for c in "¿¡«»")
    assert ocr_words("¿Qué? «Sí»", ignore_punctuation=True) == ["Qué", "Sí"]


def test_wer_with_an_empty_reference_or_hypothesis():
    assert word_error_rate("", "") == 0.0
    assert word_error_rate("   ", "some words") == 1.0
    assert word_error_rate("two words", "") == 1.0
    # A reference of punctuation only is empty once punctuation is ignored.
    assert word_error_rate("...", "—", ignore_punctuation=True) == 0.0
    assert word_error_rate("...", "text", ignore_punctuation=True) == 1.0
