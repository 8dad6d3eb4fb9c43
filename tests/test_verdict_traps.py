"""Answers a careful person grades one way and the package once graded the other: the rows of docs/bad-inputs.md.

Hedged answers to unanswerable questions, numbers written in another form, text folding, the
judge's denials, hedges between candidates and near-names, prediction forms, and the judge's time
on long texts.
"""

from __future__ import annotations

import json
import random
import string
import time
from decimal import Decimal
from typing import Any

import pytest

from answer_eval import NOT_IN_DOCUMENT, contains_answer, fold, is_not_found, read_output
from answer_eval.text.matching import find_numbers
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    AnswerJudgeEvaluator,
    TypedAnswerEvaluator,
)
from tests.conftest import DATA

CONTAINS = AnswerContainsEvaluator()
JUDGE = AnswerJudgeEvaluator()


def contains_verdict(prediction: Any, label: Any) -> tuple[int, str | None]:
    result = CONTAINS.run(ground_truth_answers=[label], predicted_answers=[prediction])
    return result["individual_scores"][0], result["failure_kinds"][0]


def judge_verdict(prediction: Any, label: Any) -> tuple[int, str | None]:
    result = JUDGE.run(ground_truth_answers=[label], predicted_answers=[prediction])
    return result["individual_scores"][0], result["failure_kinds"][0]


# -- reports of absence, and answers given anyway --------------------------------------------------
HEDGED = [
    "The context does not specify, however the answer is 42.",
    "I don't know. Just kidding: it is 42.",
    "The document does not mention it, but it is likely 42.",
    "Although the passage doesn't say, it is 42.",
    "Not stated in the text. Best guess: 42.",
    "It's 42, though the document doesn't confirm it.",
]
ABSTAINING = [
    "The answer is unknown.",
    "No idea.",
    "I'm not sure.",
    "The text does not say. Please provide more context.",
    # A review's abstentions that a first version of the rule read as answers:
    "The context does not specify the exact date, but it's likely mentioned elsewhere in the book.",
    "I couldn't find it in the text - it may be in another chapter.",
    "The document does not mention it. It seems the question is outside its scope.",
    "The document doesn't say. Typically, such details are found in the appendix.",
    "The question asks about the year Einstein was born. The text does not say.",
    "Here is what I found: the text does not mention the year.",
    "The provided context does not include the author's name; it would be speculation to guess.",
    "The context does not provide this information; it's about a different topic.",
]


def _precision_recall(rows: list[dict[str, Any]]) -> tuple[float, float]:
    predicted = [is_not_found(row["text"]) if isinstance(row["text"], str) else False for row in rows]
    actual = [row["not_found"] for row in rows]
    hits = sum(p and a for p, a in zip(predicted, actual, strict=True))
    return hits / sum(predicted), hits / sum(actual)


def test_hedged_answers_are_answers() -> None:
    for text in HEDGED:
        assert not is_not_found(text), text
        for verdict in (contains_verdict, judge_verdict):
            assert verdict(text, NOT_IN_DOCUMENT) == (0, "wrong"), text  # unanswerable: an answer is wrong
            assert verdict(text, "42") == (1, None), text  # answerable: graded as the answer it gives
            assert verdict(text, "17") == (0, "wrong"), text  # not "the document does not say"
    for text in ABSTAINING:
        assert is_not_found(text), text
        assert contains_verdict(text, NOT_IN_DOCUMENT) == (1, None), text
        assert contains_verdict(text, "42") == (0, "not_in_document"), text
    # Measured on phrasings written after the change by writers who never saw the detector
    # (docs/answer-contains.md): the second set was never used to change it.
    development = [json.loads(line) for line in (DATA / "not_found_phrasings_2.jsonl").read_text().splitlines()]
    held_out = [json.loads(line) for line in (DATA / "not_found_heldout.jsonl").read_text().splitlines()]
    assert len(development) >= 250
    assert len(held_out) >= 250
    precision, recall = _precision_recall(development)
    assert precision >= 0.94
    assert recall >= 0.97
    precision, recall = _precision_recall(held_out)
    assert precision >= 0.74
    assert recall >= 0.60


# -- numbers in other forms ------------------------------------------------------------------------
NUMBERS = [
    # (answer, label, contained): one decision each, the same in every evaluator
    ("１２，４００ units", "12400", True),  # fullwidth separators
    ("١٢٬٤٠٠ units", "12400", True),  # Arabic thousands separator
    ("It is １２．５ m", "12.5", True),  # fullwidth decimal point
    ("It is ١٢٫٥ m", "12.5", True),  # Arabic decimal separator
    ("It costs 12.50 dollars", "12.5", True),  # trailing zeros keep the value
    ("It costs 12.5 dollars", "12.50", True),
    ("It is 12.0 m", "12", True),
    ("About 1.5e3 units", "1500", True),  # scientific notation is one number
    ("About 1.5e3 units", "1.5", False),
    ("About 1.5 × 10^3 units", "1500", True),
    ("About 1.5x10³ units", "1.5", False),
    ("Three quarters: 3/4 of them", "0.75", True),  # a fraction with a slash
    ("3/4 of them", "3", False),
    ("Open 24/7", "24", True),  # not a fraction: the numbers stand apart
    ("The 1984/85 season", "1984", True),
    ("2½ furlongs", "2.5", True),  # a mixed number
    ("2½ furlongs", "2", False),
    ("2 ½ furlongs", "2", False),
    ("½ of it", "1/2", True),
    ("The 9/11 attacks", "11", False),  # a fraction with no finite decimal keeps its slash
    ("An area of 10² m", "100", True),  # a power
    ("An area of 10² m", "102", False),
    ("An area of 5 m²", "2", False),  # a superscript that is not a power is not a digit
    ("It costs $.50", "0.5", False),  # ".5" is not "0.5" as text, but the zero goes: ".50" folds as ".5"
    ("It costs $.50", ".5", True),
    ("In 1990 ½ of them", "1990", True),  # a year, then a fraction
]


@pytest.mark.parametrize(("answer", "label", "contained"), NUMBERS)
def test_numbers_in_other_forms(answer: str, label: str, contained: bool) -> None:
    assert contains_answer(answer, label) is contained
    assert contains_verdict(answer, label)[0] == contained
    if contained:
        assert judge_verdict(answer, label)[0] == 1
    # The typed numerical rule reads the same numbers: the answer's last number is the label's value.
    typed = TypedAnswerEvaluator(default_type="numerical", decimals=None)
    score = typed.run(ground_truth_answers=[label], predicted_answers=[answer])["individual_scores"][0]
    values = [mention.value for mention in find_numbers(answer)]
    assert (score == 1.0) == (bool(values) and values[-1] == find_numbers(label)[-1].value)
    assert fold(fold(answer)) == fold(answer)


def test_the_typed_rule_reads_fullwidth_and_arabic_decimals() -> None:
    typed = TypedAnswerEvaluator(default_type="numerical")
    result = typed.run(ground_truth_answers=["12.5", "12.5", "1500"], predicted_answers=["１２．５", "١٢٫٥", "1.5e3"])
    assert result["individual_scores"] == [1.0, 1.0, 1.0]
    assert [str(m.value) for m in find_numbers("１２，４００ and 1/3")] == ["12400", str(Decimal(1) / Decimal(3))]


# -- folding ---------------------------------------------------------------------------------------
def test_compatibility_folding_and_invisible_labels() -> None:
    assert fold("ＰＡＲＩＳ") == "paris"  # fullwidth letters
    assert fold("İstanbul") == fold("ISTANBUL") == "istanbul"  # the Turkish dotted capital I
    assert fold("𝐏𝐚𝐫𝐢𝐬 and the ﬁnal") == "paris and the final"  # mathematical letters, ligatures
    assert fold("a\u200e\u2066b\ufe0f") == "ab"  # direction marks, isolates, variation selectors
    assert contains_verdict("ＴＨＥ ＣＡＰＩＴＡＬ ＩＳ ＰＡＲＩＳ", "Paris") == (1, None)
    assert contains_verdict("Welcome to İstanbul", "Istanbul") == (1, None)
    for invisible in ("\u200b", "\u200b\u200d\ufeff", " \u2060 ", "\u00ad"):
        for run in (contains_verdict, judge_verdict):
            with pytest.raises(ValueError, match="position 0 is blank"):
                run("anything", invisible)
        with pytest.raises(ValueError, match="blank"):
            contains_answer("anything", invisible)


# -- the judge: denials and near-names -------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "gold", "accepted"),
    [
        ("Not Paris, but Lyon.", "Paris", False),
        ("It wasn't Paris; it was Lyon.", "Paris", False),
        ("The capital is Lyon rather than Paris.", "Paris", False),
        ("Paris, not Lyon.", "Paris", True),
        ("Not only Paris but also Lyon.", "Paris", True),
        ("George H. W. Bush", "George W. Bush", False),
        ("Elizabeth II", "Elizabeth I", False),
        ("George V", "George VI", False),
        ("George Walker Bush", "George W. Bush", True),
        ("Queen Elizabeth I", "Elizabeth I", True),
        ("Henry II, and later Henry V", "Henry II", True),
        ("It was none other than George Washington.", "George Washington", True),
        ("Louis XV", "Louis XIV", False),
        ("Benedict XVI", "Benedict XV", False),
    ],
)
def test_judge_denials_and_near_names(answer: str, gold: str, accepted: bool) -> None:
    result = JUDGE.run(ground_truth_answers=[gold], predicted_answers=[answer])
    assert result["individual_scores"] == [int(accepted)], result["evidence"]
    if not accepted:
        assert result["failure_kinds"] == ["wrong"]


# -- the judge: a hedge between candidates, a gold named to be denied (issue 26) -------------------
def test_judge_refuses_a_hedge_or_a_denial_without_claiming_certainty() -> None:
    golds = [["Saturn"], ["Richard Nixon"]]
    answers = ["It's probably Saturn or Jupiter", "Richard Nixon did not resign; it was Gerald Ford."]
    result = JUDGE.run(ground_truth_answers=golds, predicted_answers=answers)
    assert result["individual_scores"] == [0, 0]
    assert result["failure_kinds"] == ["wrong", "wrong"]
    assert 'names the acceptable answer "Saturn" only as one of several candidates' in result["evidence"][0]
    assert 'names the acceptable answer "Richard Nixon" only to deny it' in result["evidence"][1]
    # The human-judged sets hold too few such answers to measure: unsure (0.5), not 0.97 either way.
    assert result["confidence"] == [0.5, 0.5]
    assert result["acceptance"] == [0.5, 0.5]
    assert all("too few such answers" in words for words in result["evidence"])
    # Decision: AnswerContainsEvaluator stays a lexical contains rule (docs/answer-contains.md).
    assert CONTAINS.run(ground_truth_answers=golds, predicted_answers=answers)["individual_scores"] == [1, 1]


HEDGES_AND_DENIALS = [
    # hedges between candidates: no answer
    ("Either Saturn or Jupiter.", "Saturn", False),
    ("either Jupiter or Saturn", "Saturn", False),
    ("Saturn, or maybe Jupiter.", "Saturn", False),
    ("Jupiter, or perhaps Saturn.", "Saturn", False),
    ("It could be Saturn but possibly Jupiter.", "Saturn", False),
    ("It could be Jupiter but possibly Saturn.", "Saturn", False),
    ("Saturn, though it might be Jupiter.", "Saturn", False),
    ("I think it's Saturn or Jupiter.", "Saturn", False),
    ("I\u2019d say Saturn or Jupiter.", "Saturn", False),
    ("Probably Saturn/Jupiter.", "Saturn", False),
    ("It's one of Mercury, Venus, Saturn or Jupiter.", "Saturn", False),
    ("Probably Mercury, Venus, Saturn, or Jupiter.", "Saturn", False),
    ("Not sure if it's Saturn or Jupiter.", "Saturn", False),
    ("Maybe the planet Saturn or Jupiter.", "Saturn", False),
    ("probably 2019 or 2020", "2020", False),
    # denials of the gold: no answer
    ("Not Nixon but Ford.", "Nixon", False),
    ("Nixon is often credited, but it was actually Ford.", "Nixon", False),
    ("Nixon? No, Ford.", "Nixon", False),
    ("Contrary to popular belief, not Nixon.", "Nixon", False),
    ("It wasn't Nixon, it was Ford.", "Nixon", False),
    ("It wasn\u2019t Nixon, it was Ford.", "Nixon", False),
    ("Nixon didn\u2019t resign; Ford did.", "Nixon", False),
    ("Nixon never resigned. It was Ford.", "Nixon", False),
    ("Many people think it was Nixon, but it was Ford.", "Nixon", False),
    ("Nixon is not the answer; Ford is.", "Nixon", False),
    ("Nixon is a common misconception; it was Ford.", "Nixon", False),
    # right answers that look alike: still right
    ("Saturn or Jupiter", "Saturn", True),  # no word of doubt: often a second name ("orca or killer whale")
    ("Saturn/Jupiter", "Saturn", True),
    ("Mercury, Venus, Saturn, Jupiter", "Saturn", True),  # a list, no alternation: the list feature grades it
    ("Nixon or, in full, Richard Milhous Nixon", "Richard Nixon", True),
    ("Saturn (not Jupiter)", "Saturn", True),
    ("Not only Saturn but also Jupiter", "Saturn", True),
    ("Probably Saturn and Jupiter", "Saturn", True),
    ("Probably Saturn.", "Saturn", True),
    ("It's probably Saturn or Jupiter. The answer is Saturn.", "Saturn", True),
    ("Many people think it was Ford, but it was Nixon.", "Nixon", True),
    ("Contrary to popular belief, Nixon did resign.", "Nixon", True),
    ("Nixon was not impeached; he resigned.", "Nixon", True),
    ("Nixon did not resign until August 1974; it was his second term.", "Nixon", True),
    ("Nixon didn't run in 1964, but he did in 1968.", "Nixon", True),
    ("Nixon? No doubt.", "Nixon", True),
    ("The answer is Nixon, but it was actually Ford who pardoned him.", "Nixon", True),
]


@pytest.mark.parametrize(("answer", "gold", "accepted"), HEDGES_AND_DENIALS)
def test_hedges_and_denials_of_the_gold_are_no_answer(answer: str, gold: str, accepted: bool) -> None:
    result = JUDGE.run(ground_truth_answers=[gold], predicted_answers=[answer])
    assert result["individual_scores"] == [int(accepted)], result["evidence"]
    if not accepted:
        assert result["failure_kinds"] == ["wrong"]
        assert "only as one of several candidates" in result["evidence"][0] or "only to deny" in result["evidence"][0]
        assert result["confidence"] == [0.5]


def test_alternatives_that_are_all_acceptable_are_an_answer() -> None:
    golds = [["evaporation", "vaporization"], ["Lesley Sharp", "Suranne Jones"], ["LESLEY SHARP or SURANNE JONES"]]
    answers = [
        "It is probably evaporation or vaporization.",
        "Either Suranne Jones or Lesley Sharp.",
        "Either Suranne Jones or Lesley Sharp starred in it.",
    ]
    assert JUDGE.run(ground_truth_answers=golds, predicted_answers=answers)["individual_scores"] == [1, 1, 1]
    # One rival among them makes it a hedge again.
    hedged = JUDGE.run(
        ground_truth_answers=[golds[0]], predicted_answers=["Probably evaporation, boiling or vaporization."]
    )
    assert hedged["individual_scores"] == [0]


# -- prediction forms ------------------------------------------------------------------------------
def test_content_parts_and_empty_errors() -> None:
    parts = [{"type": "text", "text": "The capital is "}, {"type": "text", "text": "Paris."}]
    message = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": parts}]}
    assert read_output(message).text == "The capital is Paris."
    assert contains_verdict(message, "Paris") == (1, None)
    assert contains_verdict({"role": "assistant", "content": parts}, "Paris") == (1, None)
    refused = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
    assert contains_verdict(refused, "Paris") == (0, "refusal")
    for empty in ([], {}, "", 0, False, None, 0.0):
        assert contains_verdict({"answer": "Paris", "error": empty}, "Paris") == (1, None), empty
    assert contains_verdict({"answer": "Paris", "error": "timeout"}, "Paris") == (0, "error")
    assistants = {"role": "assistant", "content": [{"type": "text", "text": {"value": "Paris", "annotations": []}}]}
    assert contains_verdict(assistants, "Paris") == (1, None)
    assert read_output({"content": "a retrieved document", "meta": {}}).text is None  # a document is no answer


# -- time ------------------------------------------------------------------------------------------
def test_judge_is_linear_in_length() -> None:
    # Quadratic word matching took about 20 s for an answer and a gold of 16,000 words; linear
    # takes a fraction of a second. A generous bound on 8x the words: under 30x the time.
    rng = random.Random(15)
    vocabulary = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))) for _ in range(40000)]

    def seconds(words: int) -> float:
        answer = " ".join(rng.choice(vocabulary) for _ in range(words))
        gold = " ".join(rng.choice(vocabulary) for _ in range(words))
        started = time.perf_counter()
        JUDGE.run(ground_truth_answers=[gold], predicted_answers=[answer])
        return time.perf_counter() - started

    small = min(seconds(2000) for _ in range(2))
    large = seconds(16000)
    assert large < 30 * small + 0.5, (small, large)

    # Every mention denied, many times over: each mention is found once, not reread.
    def denied(mentions: int) -> float:
        answer, gold = "not ab " * mentions, " not ".join(["ab"] * (mentions // 2))
        started = time.perf_counter()
        JUDGE.run(ground_truth_answers=[gold], predicted_answers=[answer])
        return time.perf_counter() - started

    small = min(denied(2000) for _ in range(2))
    assert denied(16000) < 30 * small + 0.5


def test_hedges_and_corrections_stay_linear_in_length() -> None:
    # Every mention hedged, or followed by a correction: each is read through bounded windows once.
    def seconds(piece: str, mentions: int) -> float:
        started = time.perf_counter()
        JUDGE.run(ground_truth_answers=[["ab"]], predicted_answers=[piece * mentions])
        return time.perf_counter() - started

    for piece in ("probably ab or cd, ", "either ab/cd or ", "ab did not go; it was cd. ", "ab? no, cd. "):
        small = min(seconds(piece, 2000) for _ in range(2))
        assert seconds(piece, 16000) < 30 * small + 0.5, piece


# -- the judge: a denial of the question's predicate, the gold beside the question's words (issue 39) --
BOOK = "Which book won the Northern Book Prize?"
TWIN = "Which city is Birmingham twinned with?"
QUESTION_TRAPS = [
    # the gold as the subject of a negation that repeats the question: denied (wrong, 0.5)
    ("The Glass Orchard did not win the Northern Book Prize", "The Glass Orchard", BOOK),
    ("The Glass Orchard did not win the Northern Book Prize.", "The Glass Orchard", BOOK),
    ("The Glass Orchard never won the Northern Book Prize.", "The Glass Orchard", BOOK),
    ("The Glass Orchard has never won the prize.", "The Glass Orchard", BOOK),
    ("The Glass Orchard didn\u2019t win the prize.", "The Glass Orchard", BOOK),
    ("The Glass Orchard was not the winner.", "The Glass Orchard", BOOK),
    ("The Glass Orchard was not the winner; it was The Salt Road.", "The Glass Orchard", BOOK),
    ("It wasn't The Glass Orchard.", "The Glass Orchard", BOOK),
    ("Nixon was not impeached; he resigned.", "Nixon", "Which president was impeached?"),
    ("Glass Orchard did not win the Northern Book Prize", "Glass Orchard", BOOK),
    # the gold where the question names something, another name in the answer's place (unsure, 0.5)
    ("Lyon is twinned with Saint-Aubin.", "Lyon", TWIN),
    ("Lyon is twinned with Saint-Aubin", "Lyon", TWIN),
    ("Lyon is also twinned with the Saint-Aubin commune.", "Lyon", TWIN),
    ("Birmingham is twinned with Frankfurt.", "Birmingham", "Which city is Lyon twinned with?"),
    ("Birmingham is twinned with Saint-Aubin, not Lyon.", "Birmingham", "Which town is Lyon twinned with?"),
]


@pytest.mark.parametrize(("answer", "gold", "question"), QUESTION_TRAPS)
def test_answers_that_deny_the_question_or_fill_another_slot_are_not_confident(
    answer: str, gold: str, question: str
) -> None:
    result = JUDGE.run(ground_truth_answers=[[gold]], predicted_answers=[answer], questions=[question])
    assert result["confidence"][0] < 0.9, result["evidence"]
    assert result["confidence"] == [0.5]  # unsure: a threshold never keeps it
    assert "too few such answers" in result["evidence"][0]
    if "twinned" not in answer:
        assert result["individual_scores"] == [0], result["evidence"]
        assert "only to deny it" in result["evidence"][0]
    else:
        assert "only beside the question's words" in result["evidence"][0]


QUESTION_TRAPS_RIGHT = [
    # still right, and confident: the gold asserted, the denial of another thing
    ("The Glass Orchard won, not The Salt Road.", "The Glass Orchard", BOOK),
    ("The Glass Orchard, not The Salt Road", "The Glass Orchard", BOOK),
    ("The Glass Orchard won the Northern Book Prize.", "The Glass Orchard", BOOK),
    ("The Glass Orchard did not win the Booker, but it won the Northern Book Prize.", "The Glass Orchard", BOOK),
    ("The Glass Orchard did not win the prize in 2019; it won in 2020.", "The Glass Orchard", BOOK),
    ("The Glass Orchard did not win the prize until 2020.", "The Glass Orchard", BOOK),
    ("The Glass Orchard, which The Salt Road did not beat.", "The Glass Orchard", BOOK),
    ("Nixon was not impeached; he resigned.", "Nixon", "Which president resigned?"),
    ("Nixon was not impeached; he resigned.", "Nixon", None),
    ("Pete Sampras did not win the French Open.", "French Open", "Which grand slam did Pete Sampras not win?"),
    ("The French Open was never won by Sampras.", "French Open", "Which grand slam did Pete Sampras never win?"),
    # the gold in the answer's place
    ("Lyon is twinned with Birmingham.", "Lyon", TWIN),
    ("Birmingham is twinned with Lyon.", "Lyon", TWIN),
    ("Lyon.", "Lyon", TWIN),
    ("Lyon is twinned with Birmingham and Saint-Aubin.", "Lyon", TWIN),
    ("lyon is twinned with saint-aubin", "Lyon", TWIN),  # lower case: no name to read
    ("Lyon is twinned with Saint-Aubin.", "Lyon", None),  # no question: nothing to restate
    ("Heath Ledger played the Joker in The Dark Knight.", "Heath Ledger", "Who played the Joker in The Dark Knight?"),
    ("Jim Parsons plays Sheldon Cooper.", "Jim Parsons", "Who plays Sheldon in The Big Bang Theory?"),
    ("Paris is the capital of France.", "Paris", "What is the capital of France?"),
    (
        "George Cornell was shot at the Blind Beggar pub in Whitechapel.",
        "Blind Beggar",
        "What was the name of the pub in which he was shot?",
    ),
]


@pytest.mark.parametrize(("answer", "gold", "question"), QUESTION_TRAPS_RIGHT)
def test_answers_that_assert_the_gold_stay_confidently_right(answer: str, gold: str, question: str | None) -> None:
    result = JUDGE.run(ground_truth_answers=[[gold]], predicted_answers=[answer], questions=[question])
    assert result["individual_scores"] == [1], result["evidence"]
    assert result["confidence"][0] > 0.9, result["evidence"]


def test_a_denial_of_the_question_needs_the_question() -> None:
    from answer_eval.text.denials import asked, only_denied

    folded = "the glass orchard did not win the northern book prize"
    assert only_denied(folded, "the glass orchard", asked("Which book won the Northern Book Prize?"))
    assert not only_denied(folded, "the glass orchard")  # no question: no correction, so not denied
    assert not only_denied(folded, "the glass orchard", asked("Which book did not win the prize?"))
    assert not only_denied("nixon didn't resign, but he did later.", "nixon", asked("Who resigned?"))
