"""The optimised paths of the core against straightforward reference formulations (differential tests).

Each reference below is the plain formulation the optimised code replaced: fold one text at a
time, try every occurrence of a number label in a Python loop, run every not-found pattern on
every answer, score one prediction at a time. They must agree on everything.
"""

import json
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from answer_eval import AnswerContainsScorer, NotFoundDetector, check_ground_truths, fold, read_output
from answer_eval.errors import FailureKind, count_failures
from answer_eval.text import folding
from answer_eval.text.answer_despite_absence import answers_anyway
from answer_eval.text.folding import NUMBER_MARKS, fold_many, number_marks
from answer_eval.text.matching import contains_folded, contains_number, ends_with_number, starts_with_number
from answer_eval.text.not_found import _APOSTROPHES, _LONG_TEXT, _PATTERNS, _plain_apostrophes
from tests.conftest import DATA, EXAMPLES

# ---------------------------------------------------------------- folding

_FOLD_ALPHABET = st.sampled_from(
    [
        *"ab Zß12345 ,.-\t\n\x0b\x1c\x00",
        "\u00a0",
        "\u2009",
        "\u202f",
        "\u2212",
        "\u2013",
        "\u0664",
        "\u0665",
        "\u00ad",
        "\u0130",
        "e\u0301",
        "\u2019",
        "\u212a",  # Kelvin sign: non-ASCII, its casefold is ASCII "k"
        "\u200b",
        "\ufb01",  # "fi" ligature: casefold makes two characters of it
    ]
)
_TEXTS = st.lists(_FOLD_ALPHABET, max_size=30).map("".join)


@given(st.lists(_TEXTS, max_size=12))
@settings(max_examples=400)
def test_fold_many_is_fold_of_each(texts):
    expected = [fold(text) for text in texts]
    assert fold_many(texts) == expected
    assert fold_many(text for text in texts) == expected  # any iterable, read once


# The number-work screens as first written (alternatives); the optimised ones start with one
# character class. Only whether a text has a match counts, so they must agree on that.
_REFERENCE_NUMBER_WORK = r"[0-9](?:\.[0-9]*0(?![0-9])|e[+-]?[0-9]|[/⁄][0-9]|\^)|(?<![0-9])\.[0-9]*0(?![0-9])"
_NUMBER_WORK_TEXTS = st.lists(st.sampled_from([*"0123456789.,/ e+-^a", "\u2044", "10", "0."]), max_size=24).map("".join)


@given(_NUMBER_WORK_TEXTS)
@settings(max_examples=1000)
def test_the_number_work_screens_find_what_the_alternatives_find(text):
    plain = re.search(_REFERENCE_NUMBER_WORK, text) is not None
    assert (folding._WORK.search(text) is not None) == plain
    with_separators = re.search(r"[0-9][, ][0-9]|" + _REFERENCE_NUMBER_WORK, text) is not None
    assert (folding._NUMBER_WORK.search(text) is not None) == with_separators


def reference_fold_non_ascii(casefolded):
    """The non-ASCII step of fold with no pre-check: every text through the table."""
    translated = number_marks(casefolded.translate(folding._TABLE)).replace("i\u0307", "i")
    return unicodedata.normalize("NFC", translated)


_NON_ASCII = st.sampled_from([*"ab 1.\u00a0\u00a0\u2026\u00bd\u00b2\u2013\u0301\u2019\u200b\uff21\u00e9"])


@given(st.lists(_NON_ASCII, max_size=20))
@settings(max_examples=600)
def test_the_non_ascii_pre_check_skips_only_texts_the_table_leaves_alone(characters):
    text = "".join(characters).casefold()
    if not text.isascii():
        assert folding._fold_non_ascii(text) == reference_fold_non_ascii(text)


def test_fold_many_on_grouped_numbers_and_unicode():
    texts = ["Sheffield produced 12,400 units.", "1 204 567", "2012 345", "\u2212\u0664\u0665", "", "   ", "12,5"]
    assert fold_many(texts) == [fold(text) for text in texts]


# ---------------------------------------------------------------- matching


def reference_contains_folded(folded_text, folded_label):
    """The number-aware contains as first written: every occurrence tried in a Python loop."""
    if not folded_label:
        return False
    check_left = starts_with_number(folded_label)
    check_right = ends_with_number(folded_label)
    if not (check_left or check_right):
        return folded_label in folded_text
    digits = "0123456789"

    def left_ok(start):
        if start == 0:
            return True
        before = folded_text[start - 1]
        if before in digits or before == ".":
            return False
        if before == "-":
            return start >= 2 and folded_text[start - 2] in digits
        if before == ",":
            return not (start >= 2 and folded_text[start - 2] in digits)
        return True

    def right_ok(end):
        if end >= len(folded_text):
            return True
        after = folded_text[end]
        if after in digits:
            return False
        if after in ".,":
            return not (end + 1 < len(folded_text) and folded_text[end + 1] in digits)
        return True

    start = folded_text.find(folded_label)
    while start >= 0:
        if (not check_left or left_ok(start)) and (not check_right or right_ok(start + len(folded_label))):
            return True
        start = folded_text.find(folded_label, start + 1)
    return False


_NUMBERY = st.lists(st.sampled_from(list("0123456789.,- a")), max_size=40).map("".join)
_LABELS = st.lists(st.sampled_from(list("0123456789.,- a")), min_size=1, max_size=5).map("".join)


@given(_NUMBERY, _LABELS)
@settings(max_examples=1500)
def test_contains_folded_agrees_with_the_loop(text, label):
    assert contains_folded(text, label) == reference_contains_folded(text, label)


@given(st.integers(0, 300), st.sampled_from(["1", "12", "-1", "1.1", "11"]), st.sampled_from(["", " 1", " x1 ", "2-1"]))
@settings(max_examples=300)
def test_many_near_misses_then_a_hit(run, label, tail):
    # Past a few failed occurrences the search switches to one regular expression: same answer.
    text = "1" * run + tail
    left, right = starts_with_number(label), ends_with_number(label)
    assert contains_number(text, label, left, right) == reference_contains_folded(text, label)


# ---------------------------------------------------------------- not-found detection

_VOCABULARY = (  # noqa: SIM905 - a sentence of words reads better than a list literal
    "the this provided document text context passage does not doesn't n't cannot can not say mention contain "
    "is was not no none nowhere know november now note unknown n/a neither unable unanswerable fails to silent "
    "impossible insufficient lack lacks i we could find determine there information about in of answer . , ! "
).split()
_WORDS = st.sampled_from(
    [
        *_VOCABULARY,
        *"_no xno -no 'no \u02bcno \u2019 don\u2019t can\u2018t isn\u02bct".split(),  # noqa: SIM905
        *"be determined found mentioned not_in_document stated here anywhere".split(),  # noqa: SIM905
        "",
        " ",
    ]
)
_SENTENCES = st.lists(_WORDS, max_size=14).map(" ".join)


def reference_detector(detector):
    """Every pattern on every text: the detector with no pre-filter and no guards (answers given anyway still count)."""
    label = rf"(?<!\w){re.escape(fold(detector.label))}(?!\w)"
    pattern = re.compile("|".join([label, *_PATTERNS]))

    def reports(text):
        return pattern.search(text) is not None or any(phrase in text for phrase in detector._folded_phrases)

    def says(folded_text):
        text = folded_text if folded_text.isascii() else folded_text.translate(_APOSTROPHES)
        return reports(text) and not answers_anyway(text, reports)

    return says


_DETECTORS = [NotFoundDetector(), NotFoundDetector(label="UNANSWERABLE_Q", extra_phrases=["keine Angabe", "sin dato"])]


@pytest.mark.parametrize("detector", _DETECTORS, ids=["default", "custom"])
@given(texts=st.lists(_SENTENCES, min_size=1, max_size=8))
@settings(max_examples=400)
def test_detector_agrees_with_every_pattern(detector, texts):
    reference = reference_detector(detector)
    folded = [fold(text) for text in texts]
    expected = [reference(text) for text in folded]
    assert [detector.folded(text) for text in folded] == expected
    assert detector.folded_many(folded) == expected


def _real_texts():
    rows = [json.loads(line) for line in (DATA / "not_found_phrasings.jsonl").read_text(encoding="utf-8").splitlines()]
    texts = [row["text"] if "text" in row else str(row) for row in rows]
    for path in (EXAMPLES / "data").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            prediction = json.loads(line).get("prediction")
            if isinstance(prediction, str):
                texts.append(prediction)
    return texts


def test_detector_agrees_with_every_pattern_on_real_answers():
    detector = NotFoundDetector()
    reference = reference_detector(detector)
    folded = [fold(text) for text in _real_texts()]
    assert len(folded) > 300
    expected = [reference(text) for text in folded]
    assert any(expected)
    assert detector.folded_many(folded) == expected


@pytest.mark.parametrize("detector", _DETECTORS, ids=["default", "custom"])
@given(texts=st.lists(_SENTENCES, min_size=1, max_size=80))
@settings(max_examples=300)
def test_long_answers_tried_near_trigger_words_agree_with_every_pattern(detector, texts):
    # Past _LONG_TEXT characters the patterns are tried only near trigger words; the window logic
    # is exercised here on texts of every length, then through folded() on long ones.
    text = _plain_apostrophes(fold(" ".join(texts)))
    label = re.compile(rf"(?<!\w){re.escape(fold(detector.label))}(?!\w)")
    expected = label.search(text) is not None or re.search("|".join(_PATTERNS), text) is not None
    assert detector._search_near_triggers(text) == expected
    long_text = (text + " ") * (_LONG_TEXT // max(len(text), 1) + 1)
    assert len(long_text) > _LONG_TEXT
    assert detector.folded(long_text) == reference_detector(detector)(long_text)


def test_matches_whose_trigger_word_comes_last_are_found_in_long_answers():
    # Phrases whose trigger word is furthest from where the match starts (well within _REACH).
    far = [
        "information retrieved remains silent",
        "we were could find no mention",
        "the answer could not be determined",
        "the passages provided doesn't say",
    ]
    detector = NotFoundDetector()
    for phrase in far:
        text = "x " * (_LONG_TEXT // 2) + phrase + " y" * 10
        assert detector._search_near_triggers(text), phrase
        assert detector._search_near_triggers(text.replace(phrase, phrase.replace(" ", "  x "))) is False


def test_the_fold_pre_check_finds_every_character_the_table_changes():
    # fold skips the (slow, Python-mapping) translate step unless one search or the NFKC check
    # says a character may change: the two together must flag every character that does.
    listed = {**folding._DASHES, **folding._SEPARATORS}
    for code in range(0x80, 0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        character = chr(code)
        searched = folding._CHANGED_BY_TABLE.search(character) is not None
        in_search = (
            code in listed
            or folding._ignorable(code)
            or unicodedata.decimal(character, None) is not None
            or character in NUMBER_MARKS
            or character == "\u0307"
        )
        assert searched == in_search, hex(code)
        if folding._TABLE._fold(code) != character:
            assert searched or not unicodedata.is_normalized("NFKC", character), hex(code)


def test_a_run_of_source_words_is_still_found():
    # The guard that keeps "the the the ..." linear must not lose a match inside such a run.
    for text in ["the the the provided text does not say", "bathe document does not say", "the the"]:
        assert NotFoundDetector().folded(text) == reference_detector(NotFoundDetector())(text)


# ---------------------------------------------------------------- scoring


def reference_verdict(prediction, acceptable, detector):
    """AnswerContainsScorer.score_read as first written: one prediction, every label folded afresh."""
    output = read_output(prediction)
    says_absent = reference_detector(detector)
    outcome = fold(output.text) if output.text is not None else None
    outcome = outcome or None
    if output.failure_kind is not None:
        return False, output.failure_kind, outcome
    if output.error is not None:
        return False, FailureKind.ERROR, outcome
    if outcome is None:
        return False, FailureKind.PARSE_FAILURE, None
    accepts_not_found = False
    for label in acceptable:
        folded = fold(label)
        if folded == fold(detector.label):
            accepts_not_found = True
        elif reference_contains_folded(outcome, folded):
            return True, None, outcome
    stopped, refused, says = output.limit_stopped, output.was_refused, says_absent(outcome)
    if accepts_not_found and says and not (stopped or refused):
        return True, None, outcome
    if stopped:
        return False, FailureKind.BUDGET_STOP, outcome
    if refused:
        return False, FailureKind.REFUSAL, outcome
    if says and not accepts_not_found:
        return False, FailureKind.NOT_IN_DOCUMENT, outcome
    return False, FailureKind.WRONG, outcome


_PREDICTIONS = st.one_of(
    _SENTENCES,
    _NUMBERY,
    st.just(""),
    st.none(),
    st.integers(),
    st.lists(st.sampled_from(["Paris", "12", "Lyon"]), max_size=3),
    st.fixed_dictionaries(
        {"answer": st.one_of(_SENTENCES, st.none())},
        optional={
            "partial": st.booleans(),
            "notes": st.just(["cost_cap_reached"]),
            "trace": st.just([{"finish_reason": "refusal"}]),
            "failure_kind": st.sampled_from(["timeout", " "]),
            "error": st.sampled_from(["boom", ""]),
            "status": st.sampled_from(["error", "refused", "ok"]),
        },
    ),
)
_LABEL = st.one_of(_LABELS, st.sampled_from(["Paris", "12", "NOT_IN_DOCUMENT", "not_in_document", "\u200b"]))
_GROUND_TRUTH = st.one_of(_LABEL, st.lists(_LABEL, min_size=1, max_size=3), st.integers(0, 10**6))


@given(st.lists(st.tuples(_GROUND_TRUTH, _PREDICTIONS), min_size=1, max_size=20))
@settings(max_examples=300)
def test_batch_scoring_agrees_with_one_at_a_time(pairs):
    scorer = AnswerContainsScorer()
    golds = [gold for gold, _ in pairs]
    predictions = [prediction for _, prediction in pairs]
    try:
        labels = check_ground_truths(golds, predictions)
    except ValueError as problem:  # a blank label: the batch raises the same
        with pytest.raises(ValueError, match=re.escape(str(problem))):
            scorer.score_columns(golds, predictions)
        return
    expected = [reference_verdict(p, a, scorer.detector) for p, a in zip(predictions, labels, strict=True)]
    for _ in range(2):  # a second time from the label cache
        scores, kinds, outcomes = scorer.score_columns(golds, predictions)
        assert list(zip([s == 1 for s in scores], kinds, outcomes, strict=True)) == expected
        batch = scorer.score_batch(golds, predictions)
        assert [(v.correct, v.failure_kind, v.outcome) for v in batch.verdicts] == expected
        assert batch.failure_counts == count_failures(kind for _, kind, _ in expected)
        assert [scorer.score(p, g) for p, g in zip(predictions, golds, strict=True)] == batch.verdicts


_BAD_BATCHES = [
    (["Paris", ["Lyon", True]], ["a", "b"]),
    (["Paris", []], ["a", "b"]),
    ([["Paris"], ["  "]], ["a", "b"]),
    (["Paris", float("nan")], ["a", "b"]),
    ([["Paris", ["x"]], "b"], ["a", "b"]),
    (["a", "b"], ["a"]),
    ("ab", ["a", "b"]),
]


@pytest.mark.parametrize(("golds", "predictions"), _BAD_BATCHES)
def test_bad_batches_raise_what_the_checks_raise(golds, predictions):
    with pytest.raises((TypeError, ValueError)) as expected:
        check_ground_truths(golds, predictions)
    scorer = AnswerContainsScorer()
    scorer.score_batch(["Paris", ["Lyon"], "1"], ["a", "b", "c"])  # fill the caches first
    with pytest.raises(type(expected.value)) as raised:
        scorer.score_columns(golds, predictions)
    assert str(raised.value) == str(expected.value)


def test_cached_labels_never_skip_a_check():
    scorer = AnswerContainsScorer()
    # score_read takes labels as given; a blank one must not then pass a batch's checks.
    assert not scorer.score_read(read_output("x"), [" "]).correct
    with pytest.raises(ValueError, match="blank"):
        scorer.score_batch([" "], ["x"])
    scorer.score_batch([["1"]], ["1"])
    with pytest.raises(TypeError):  # (True,) == (1,) as keys: True must still be refused
        scorer.score_batch([[True]], ["1"])


def test_the_label_cache_stays_bounded():
    from answer_eval.inputs.labels import LABEL_CACHE_SIZE

    scorer = AnswerContainsScorer()
    golds = [f"label {i}" for i in range(LABEL_CACHE_SIZE + 500)]
    predictions = [f"it is label {i}." for i in range(len(golds))]
    scores, _, _ = scorer.score_columns(golds, predictions)
    assert all(scores)
    assert len(scorer._reader.labels) <= LABEL_CACHE_SIZE
    assert len(scorer._reader.label_sets) <= LABEL_CACHE_SIZE
    assert scorer.score_columns(golds[:3], ["label 0", "no", "label 2"])[0] == [1, 0, 1]


def test_a_batch_of_mixed_forms_and_an_over_long_text_scores_like_single_items():
    # The plain-text check runs over the batch at once; each item must come out as it does alone.
    from answer_eval.inputs.reading import MAX_ANSWER_CHARS

    over_long = "12400 " * (MAX_ANSWER_CHARS // 6 + 1)
    predictions = ["12400 units", ["x", "12,400"], over_long, "nothing", {"answer": "12400", "status": "failed"}]
    golds = ["12400"] * len(predictions)
    scorer = AnswerContainsScorer()
    together = scorer.score_columns(golds, predictions)
    alone = [scorer.score_columns([gold], [prediction]) for gold, prediction in zip(golds, predictions, strict=True)]
    assert together == tuple(list(column) for column in zip(*[[c[0] for c in one] for one in alone], strict=True))
    assert together[1][:4] == [None, None, "error", "wrong"]
    for plain_only in (predictions[:1] + predictions[3:4], [over_long, "12400"]):
        assert scorer.score_columns(["12400"] * 2, plain_only)[1] == [
            scorer.score_columns(["12400"], [text])[1][0] for text in plain_only
        ]


# ---------------------------------------------------------------- labels

_LABEL = st.one_of(
    st.text(st.sampled_from([*"ab 1.\t\x00\x0b", "\u00a0", "\u200b", "\u00e9", "\u2212"]), max_size=4),
    st.integers(-5, 5),
    st.none(),
    st.booleans(),
)


def _label_reference(value: object) -> tuple[str, ...] | type[Exception]:
    """The labels read one at a time (the formulation the list fast path replaced), or the error's type."""
    from answer_eval.inputs.reading import _one_label

    try:
        return tuple(_one_label(item, 3) for item in value)  # type: ignore[attr-defined]
    except (TypeError, ValueError) as error:
        return type(error)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LABEL, min_size=1, max_size=5))
def test_a_list_of_labels_reads_as_its_labels_one_by_one(values):
    from answer_eval.inputs.reading import acceptable_answers

    expected = _label_reference(values)
    try:
        got: object = acceptable_answers(values, 3)
    except (TypeError, ValueError) as error:
        got = type(error)
    assert got == expected
    if isinstance(got, tuple):
        assert all(type(label) is str for label in got)
