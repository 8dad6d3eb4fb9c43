"""The failure patterns a held-out study of the judge found, each with the near misses that must stay wrong.

Every accepted form has a control beside it: the rule that accepts it must not accept its look-alike.
"""

from __future__ import annotations

import pytest

from answer_eval.evaluators.judge.cascade import AnswerJudge, Stage
from answer_eval.text.denials import only_denied
from answer_eval.text.folding import separate_citation_marks
from answer_eval.text.hedges import AcceptableForms, only_hedged
from answer_eval.text.lexical_tokens import content_tokens


@pytest.fixture(scope="module")
def judge() -> AnswerJudge:
    return AnswerJudge()


@pytest.mark.parametrize(
    ("answer", "gold", "question", "right"),
    [
        # a person's name without the middle name, inside a sentence
        ("The actor who played Spock is Zachary Quinto.", "Zachary John Quinto", "who played spock", True),
        ("It was made by George Barnes in 1938.", "George Warren Barnes", None, True),
        ("It was made by George Bush in 1938.", "George Warren Barnes", None, False),  # another surname
        ("The president was George Bush.", "George H. W. Bush", None, False),  # initials pin the person
        ("The actor is John Quinto.", "Zachary John Quinto", None, False),  # the first name is missing
        ("The actor is Zachary Smith Quinto.", "Zachary John Quinto", None, False),  # another middle name
        ("It is not Zachary Quinto.", "Zachary John Quinto", None, False),  # denied
        ("Zachary Quinto's brother Joe Quinto", "Zachary John Quinto", None, False),  # another Quinto too
        # units and forms
        ("Nine", "Nine years", "what was the minimum age of a child allowed to work", True),
        ("He is 5 feet 6 inches tall.", "5 ft 6 in", "how tall is he", True),
        ("91 mi", "91 miles", "how far is kingston from new york city", True),
        ("2", "2 terms", None, False),  # "terms" is not a unit: a bare number is not the answer
        ("Ten", "Nine years", None, False),  # another number
        ("He is 5 feet 7 inches tall.", "5 ft 6 in", None, False),
        ("It lasted 9 days.", "Nine years", None, False),  # another unit
        ("9 in", "9 ft", None, False),  # "in" at the end is inches
        ("9 %", "9 years", None, False),  # a unit symbol the gold does not have
        ("$9", "9 percent", None, False),
        ("9 mins", "9 minutes", None, True),  # one unit, short or long
        ("9", "9 days", None, True),
        # citation and footnote marks glued on by search-backed chat models
        ("It was published onMarch 6, 20181.", "March 6, 2018", "when was it published", True),
        ("It was published on March 6, 2018[1].", "March 6, 2018", None, True),
        ("It was published on March 6, 2018¹.", "March 6, 2018", None, True),
        ("It was published onMarch 6, 20171.", "March 6, 2018", None, False),  # another year under the mark
        # a gold with a parenthetical remark
        ("Bryophyta", "Bryophyta (disambiguation)", "mosses belong to which division", True),
        ("The War of the Spanish Succession.", "War of the Spanish Succession (1701-1714)", None, True),
        ("O", "O(n)", "worst case time complexity for insertion in bst", False),  # too short a bare form
        ("EE was originally branded as Orange.", "EE (network)", "EE was originally branded?", False),
        # the gold among rejected options
        ("They come from Belgium, not France or Switzerland.", "Switzerland", None, False),
        ("Neither France nor Switzerland: Belgium.", "Switzerland", None, False),
        ("Switzerland, not France or Belgium.", "Switzerland", None, True),  # asserted, then the others denied
        ("Not only France but Switzerland too.", "Switzerland", None, True),
        ("It was not completed until 1990 or 1991.", "1991", None, True),  # a time, not a denied list
    ],
)
def test_held_out_patterns(judge: AnswerJudge, answer: str, gold: str, question: str | None, right: bool) -> None:
    verdict = judge.judge(answer, [gold], question)
    assert verdict.correct is right, verdict.evidence


def test_each_new_acceptance_says_its_rule(judge: AnswerJudge) -> None:
    named = judge.judge("The actor is Zachary Quinto.", ["Zachary John Quinto"])
    assert (named.stage, "without the middle name" in named.evidence) == (Stage.LEXICAL, True)
    unit = judge.judge("Nine", ["Nine years"])
    assert "without its unit" in unit.evidence
    glued = judge.judge("It was published onMarch 6, 20181.", ["March 6, 2018"])
    assert "footnote marks" in glued.evidence
    assert glued.outcome == "it was published onmarch 6, 20181."  # the outcome is still the answer as given


def test_citation_marks_are_taken_apart_only_in_their_two_forms() -> None:
    assert separate_citation_marks("published onMarch 6, 20181.") == "published on March 6, 2018."
    assert separate_citation_marks("opened on 6 March 20182, and") == "opened on 6 March 2018, and"
    assert separate_citation_marks("Boston has 20181 residents.") == "Boston has 20181 residents."
    assert separate_citation_marks("the iPhone and MacBook") == "the iPhone and MacBook"
    assert separate_citation_marks("March 201812") == "March 2018"
    assert separate_citation_marks("March 2018123") == "March 2018123"  # three digits: not a footnote


def test_units_are_one_token_only_after_a_number() -> None:
    assert content_tokens("5 ft 6 in") == content_tokens("5 feet 6 inches") == ["5", "foot", "6", "inch"]
    assert content_tokens("born in 1990 in Paris") == ["born", "1990", "pari"]  # "in" stays a preposition
    assert "foot" not in content_tokens("the ft of the page")


def test_a_later_item_of_a_denied_list_is_denied() -> None:
    assert only_denied("belgium, not france or switzerland.", "switzerland")
    assert only_denied("not france, spain or switzerland", "switzerland")
    assert not only_denied("it is not rome. it is paris or lyon", "lyon")  # a new clause
    assert not only_denied("it is not paris, but lyon or nice", "nice")  # "but" ends the denial


def test_a_hedge_needs_a_word_of_doubt_and_a_rival_candidate() -> None:
    assert only_hedged("it's probably saturn or jupiter.", "saturn")
    assert only_hedged("saturn, or maybe jupiter", "saturn")
    assert only_hedged("it could be jupiter but possibly saturn", "saturn")
    assert not only_hedged("saturn or jupiter", "saturn")  # no word of doubt: maybe a second name
    assert not only_hedged("probably saturn, jupiter", "saturn")  # a list, not an alternation
    assert only_hedged("one of saturn, jupiter", "saturn")  # "one of" makes a list an alternation
    assert not only_hedged("probably saturn and jupiter", "saturn")
    assert not only_hedged("probably saturn or jupiter", "saturn", AcceptableForms(["saturn", "jupiter"]))
    assert not only_hedged("probably saturnine or jupiter", "saturn")  # inside a word: no item
    assert not only_hedged("probably saturn or jupiter. it is saturn.", "saturn")  # asserted once


def test_a_correction_after_the_gold_denies_it() -> None:
    assert only_denied("richard nixon did not resign; it was gerald ford.", "richard nixon")
    assert only_denied("nixon didn\u2019t resign, but ford did.", "nixon")
    assert not only_denied("nixon didn't resign, but he did later.", "nixon")  # a pronoun is the gold again
    assert not only_denied("nixon was not impeached; he resigned.", "nixon")  # no correction
    assert not only_denied("nixon did not resign until 1974; it was his second term.", "nixon")  # a word of time
    assert only_denied("nixon is often credited, but it was actually ford.", "nixon")
    assert not only_denied("the answer is nixon, but it was actually ford who pardoned him.", "nixon")


def test_a_hedged_name_without_its_middle_name_is_no_answer(judge: AnswerJudge) -> None:
    assert judge.judge("The actor is Zachary Quinto.", ["Zachary John Quinto"]).correct
    verdict = judge.judge("Probably Zachary Quinto or Chris Pine.", ["Zachary John Quinto"])
    assert not verdict.correct


def test_the_explanation_names_only_features_the_answer_has(judge: AnswerJudge) -> None:
    wrong = judge.judge("Lyon", ["Paris"])
    assert not wrong.correct
    assert "the rules accept it" not in wrong.evidence
    assert "the strict rules find" not in wrong.evidence


def test_an_answer_with_nothing_to_weigh_is_certain(judge: AnswerJudge) -> None:
    for prediction in ("", None, {"error": "timeout"}):
        verdict = judge.judge(prediction, ["Paris"])
        assert (verdict.stage, verdict.confidence, verdict.acceptance) == (Stage.NO_ANSWER, 1.0, 0.0)
        assert "probability" not in verdict.evidence
