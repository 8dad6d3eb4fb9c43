"""The lenient lexical stage: what it accepts, and the near-misses it must refuse."""

import pytest

from answer_eval.evaluators.judge.lenient import content_tokens, lexical_evidence


def accepts(answer, golds, question=None):
    e = lexical_evidence(answer, golds, question)
    return not e.restates_question and (e.more_specific or e.less_specific or e.in_range or e.joined)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The sixth of December, 1972", ["6", "december", "1972"]),
        ("6th December 1972", ["6", "december", "1972"]),
        ("twenty-one pilots", ["21", "pilot"]),
        ("Dec. 14, 1972", ["december", "14", "1972"]),
        ("1972-12-14", ["december", "14", "1972"]),
        ("14/12/1972", ["december", "14", "1972"]),
        ("42.50 dollars", ["42.5", "dollar"]),
        ("Do\u00f1a Ana County", ["dona", "ana", "county"]),
        ("around 2.45\u00c2\u00a0billion years ago", ["2.45", "billion", "year", "ago"]),  # mojibake repaired
        ("Bachman\\u2013Turner", ["bachman", "turn"]),  # JSON escape left in the text
    ],
)
def test_content_tokens(text, tokens):
    assert content_tokens(text) == tokens


@pytest.mark.parametrize(
    ("answer", "golds", "question"),
    [
        ("washington metropolitan area", ["the Washington metropolitan area"], None),  # articles, order
        ("March 8 , 2018", ["March 8, 2018"], None),  # punctuation
        ("14 December 1972", ["December 14, 1972"], None),  # dates written differently
        ("10/09/2001", ["October 9, 2001"], None),
        ("six geese a-laying", ["6 geese a-laying"], None),  # spelled-out numbers
        ("the sixth", ["6th"], None),  # ordinals
        ("Nixon", ["Richard Nixon"], None),  # less specific
        ("Madison", ["Madison, Wisconsin"], None),
        ("Evgenia Armanovna Medvedeva", ["Evgenia Medvedeva"], None),  # more specific
        ("B. R. Ambedkar", ["Bhimrao Ramji Ambedkar"], None),  # initials
        ("william alan friedle", ["Will Friedle"], None),  # short form beside the surname
        ("abidali neemuchwala", ["Abid Ali Neemuchwala"], None),  # written together
        ("sharecroppers", ["Sharecropping"], None),  # word forms
        ("11.3 years", ["10\u201312 years"], None),  # inside the gold's range
        ("It became law in the United States in 1942.", ["June 22, 1942"], "when did it become law"),  # year of a date
        ("1965", ["1 August 1965"], None),
        ("George Walker Bush", ["George W. Bush"], None),  # the gold's initial, spelled out
        ("Paris, not Lyon.", ["Paris"], None),  # the denial is of another answer
        ("Henry II, and later Henry V", ["Henry II"], None),  # the gold's person is named too
    ],
)
def test_lenient_evidence_people_accept(answer, golds, question):
    assert accepts(answer, golds, question)


@pytest.mark.parametrize(
    ("answer", "golds", "question", "why"),
    [
        ("579", ["2,579"], None, "a different number that shares digits"),
        ("2.4 billion years ago", ["2.45 billion years ago"], None, "a number close to the gold is another number"),
        ("355 calories", ["55 calories"], None, "digits glued in front"),
        ("Dolly Mapp", ["Dollree Mapp"], None, "a different person who shares a surname"),
        ("Pat Nixon", ["Richard Nixon"], None, "a different person who shares a surname"),
        ("Titan", ["RMS Titanic"], None, "a prefix of a word is not the word"),
        ("p4010", ["Phosphorus pentoxide"], None, "initials count only beside a shared word"),
        ("New Mexico", ["southern New Mexico"], "where are the organ mountains in new mexico", "restates the question"),
        ("2011", ["2011\u20132014"], None, "one year of a span of years"),
        ("2", ["2 terms"], None, "a bare number is not a less specific answer"),
        ("Numbers 22:22", ["Numbers 22:28"], None, "an answer may drop words, not numbers"),
        ("December 16 2017", ["December 9, 2017"], None, "another day of the same month"),
        ("It became law in 1943.", ["June 22, 1942"], "when did it become law", "another year"),
        ("Not Paris, but Lyon.", ["Paris"], None, "names the gold only to deny it"),
        ("It was not Carol Vorderman but Mary.", ["Carol Vorderman"], None, "names the gold only to deny it"),
        ("George H. W. Bush", ["George W. Bush"], None, "extra initials name another person"),
        ("Elizabeth II", ["Elizabeth I"], None, "another regnal number names another person"),
        ("John Smith Sr.", ["John Smith Jr."], None, "another generation names another person"),
    ],
)
def test_lenient_evidence_must_not_fire(answer, golds, question, why):
    assert not accepts(answer, golds, question), why


def test_best_gold_is_reported():
    evidence = lexical_evidence("Nixon", ["Gerald Ford", "Richard Nixon"])
    assert evidence.gold == "Richard Nixon"
    assert evidence.less_specific


def test_needs_a_gold():
    with pytest.raises(ValueError, match="at least one"):
        lexical_evidence("x", [])
