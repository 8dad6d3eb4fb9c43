import json

import pytest

from answer_eval import NOT_IN_DOCUMENT, NotFoundDetector, is_not_found
from tests.conftest import DATA

PHRASINGS = [json.loads(line) for line in (DATA / "not_found_phrasings.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("row", PHRASINGS, ids=lambda row: row["text"][:40])
def test_phrasing(row):
    assert is_not_found(row["text"]) is row["not_found"]


def test_precision_and_recall_on_the_phrasing_set(capsys):
    predicted = [is_not_found(row["text"]) for row in PHRASINGS]
    actual = [row["not_found"] for row in PHRASINGS]
    true_positives = sum(p and a for p, a in zip(predicted, actual, strict=False))
    precision = true_positives / sum(predicted)
    recall = true_positives / sum(actual)
    with capsys.disabled():
        print(f"\nnot-found detector: precision {precision:.3f}, recall {recall:.3f} on {len(PHRASINGS)} phrasings")
    assert sum(actual) >= 70
    assert len(PHRASINGS) - sum(actual) >= 45
    assert precision == 1.0
    assert recall >= 0.95


@pytest.mark.parametrize("text", ["NOT_IN_DOCUMENT", "not_in_document", "Not_In_Document.", "Answer: NOT_IN_DOCUMENT"])
def test_the_bare_label_in_any_case(text):
    assert is_not_found(text)


def test_the_label_must_stand_as_a_word():
    assert not is_not_found("xnot_in_documentx")


def test_extra_phrases_extend_the_built_in_ones():
    detector = NotFoundDetector(extra_phrases=["keine Angabe", "pas mentionné"])
    assert detector("Dazu gibt es KEINE  ANGABE im Text.")
    assert detector("Ce n'est pas mentionné.")
    assert detector("The document does not say.")  # built-ins still apply
    assert not is_not_found("Keine Angabe")  # the default detector is unchanged


def test_a_custom_label_replaces_the_default():
    detector = NotFoundDetector(label="UNANSWERABLE")
    assert detector("unanswerable")
    assert detector("UNANSWERABLE.")
    assert not detector("Not_In_Document but close")  # the default label is a word, not a report
    assert NotFoundDetector().label == NOT_IN_DOCUMENT


@pytest.mark.parametrize("bad", ["", "   "])
def test_blank_label_or_phrase_is_refused(bad):
    with pytest.raises(ValueError, match="non-blank"):
        NotFoundDetector(label=bad)
    with pytest.raises(ValueError, match="non-blank"):
        NotFoundDetector(extra_phrases=[bad])


def test_curly_apostrophes_are_read_as_straight_ones():
    assert is_not_found("The context doesn\u2019t say.")
    assert is_not_found("I don\u2019t know.")
