"""A reply that reports absence and answers anyway ("The context does not say; however, it is 42.") is an answer.

Such a reply is an answer, not a report that the document holds none: on an unanswerable
question it is wrong, and on an answerable one it is graded as the answer it gives.
:class:`answer_eval.NotFoundDetector` asks :func:`answers_anyway` about every text that reports
absence. The text (folded) is cut into clauses at sentence ends, semicolons, colons, dashes and
contrast words ("but", ", however", "just kidding"); a clause that is not itself a report of
absence gives an answer when it

- names one: "the answer is 42", "my best guess would be Paris", "answer: Paris";
- vouches for one: "I believe", "probably", "most likely", "based on my knowledge", "in fact",
  "typically", "my hunch", "roughly 3 million";
- states one about "it", "this" or "the answer", or guesses: "It was 1987.", "Might be 12?";
- comes before the report as a plain statement: "The speed of light is about 299,792 km/s. Note that
  this figure is not in the provided context.";
- or follows a contrast, a retraction or a conclusion ("but", "however", "just kidding", "scratch
  that", ", so", "although the text doesn't say, ...") or an answer label ("Best guess:") and says
  anything that is not about the source, a request or an apology.

A clause with a negation, a request ("please provide more context", "you may want to check"), an
apology, a description of the source ("it only discusses his early career", "the document is
about the 2019 season") or words about the search itself ("it's likely mentioned elsewhere", "it
may be in another chapter", "the question is outside its scope", "it would be speculation")
gives no answer, so "The text does not mention the year. It only discusses
his early career." stays a report of absence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

__all__ = ["answers_anyway"]

_CONTRAST = (
    r"(?:however|but|though|although|nevertheless|nonetheless|that said|that being said|having said that|"
    r"even so|still|regardless|anyway|anyhow|all the same|then again|just kidding|just joking|kidding|joking|"
    r"jk|actually|in fact|in reality|in truth|that aside|scratch that|on second thought|wait|correction|"
    r"never mind|jokes aside|kidding aside|so|therefore|thus|hence)"
)
# Words after a comma that go on to give an answer: "I'm not sure, maybe Tokyo?".
_GUESS_AFTER_COMMA = r"(?:maybe|perhaps|probably|possibly|likely|so|therefore|thus|hence)"
# Each alternative starts only at the start of its run of marks or spaces, so a long run is
# scanned once (tests/test_regex_linearity.py).
_SPLIT = re.compile(
    rf"(?<![.!?;])[.!?;]+(?:\s+|$)|:\s+|(?<!\s)\s+[-\u2013\u2014]+\s+|\u2014|,\s*(?={_CONTRAST}\b)"
    rf"|,\s*(?={_GUESS_AFTER_COMMA}\b)|(?<!\s)\s+(?=(?:but|however|just kidding|scratch that)\b)"
)
# A clause that only names what follows as the answer: "Answer:", "My best guess:".
_ANSWER_LABEL = re.compile(
    r"^(?:(?:the|my|our|a|final|short|best|likely|educated) )*(?:answer|guess)$"
    r"|^(?:so )?(?:based on|going by|from) what i (?:know|remember|recall)$"
    r"|^(?:if i had to guess|my (?:best )?guess is)$"
)
_MARKER = re.compile(rf"^{_CONTRAST}\b[\s,:!]*")
# "Although the text does not say, it is 42": the clause after the comma answers in contrast.
_CONCESSION = re.compile(r"^(?:although|though|even though|while|whilst|even if)\b(?P<given>[^,]*),\s*(?P<rest>.+)$")
_REQUEST = re.compile(
    r"\b(?:please|try|search|look (?:it )?up|check|consult|refer to|contact|visit|provide|clarify|rephrase|"
    r"let me know|sorry|apologi[sz]e|feel free|you (?:may|might|could|can|should|will)|"
    r"i (?:would |'d )?(?:recommend|suggest|advise)|(?:recommend|suggest|advise) (?:that you|you|checking|"
    r"consulting|looking|searching|asking)|more (?:context|information|details)|additional (?:context|information))\b"
)
_SOURCE_WORDS = (
    r"(?:it|they|the (?:\w+ )?(?:text|document|passage|context|article|source|paragraph|excerpt|snippet|"
    r"information|data|material|report|page|record)s?|this|these|that)"
)
_ELABORATION = re.compile(
    rf"^{_SOURCE_WORDS} (?:only |just |mainly |merely |mostly |does |do |did |also )*"
    r"(?:mentions?|says?|states?|discuss(?:es)?|talks?|describes?|focus(?:es)?|covers?|provides?|gives?|"
    r"contains?|includes?|lists?|notes?|refers?|explains?|deals?|concerns?|is about|are about|was about|"
    r"were about|speaks?|touches|addresses|indicates?|suggests?|shows?)\b"
    rf"|^{_SOURCE_WORDS}(?:'s| is| are| was| were) (?:only |mainly |mostly |just )?about\b"
    r"|^(?:that(?:'s| is) all|nothing (?:more|else)|no more)\b"
)
# Words about where the answer might be, the question or guessing, not an answer: "it's likely
# mentioned elsewhere", "it may be in another chapter", "the question is outside its scope",
# "it would be speculation to guess".
_ABOUT_THE_SEARCH = re.compile(
    r"\b(?:another (?:chapter|section|document|source|part|page|book|volume|article|passage)|"
    r"other (?:sources|documents|chapters|sections|parts|pages|books|articles|passages)|appendix|"
    r"(?:outside|beyond) (?:its|the|of|this|that|my)|scope|the question|your question|speculat\w*|"
    r"guess(?:ing|work)?|a different (?:topic|subject|question|matter)|another (?:topic|subject|question)|"
    r"(?:be|is|are|was|were|been) (?:\w+ )?(?:mentioned|covered|discussed|addressed|documented)|"
    r"(?:mentioned|found|covered|discussed|listed|given|stated|located) (?:elsewhere|in (?:an)?other))\b"
)
_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|neither|nor|cannot|unknown|unclear|uncertain)\b|n't\b")
_ANSWER_IS = re.compile(
    r"\b(?:answer|guess)(?:\s+(?:is|would be|might be|may be|could be|was|will be|appears to be|seems to be)\s+"
    r"|\s*[:=]\s*)(?=\S)"
)
_BELIEF = re.compile(
    r"\b(?:i (?:would |'d )?(?:believe|think|guess|suspect|assume|bet|say|reckon|estimate)|i'd say|"
    r"(?:generally|typically|usually|normally|commonly|historically|traditionally)(?: speaking)?|in general|"
    r"my (?:hunch|instinct|feeling|sense)|reading between the lines|(?:it )?(?:seems|appears|looks like)|"
    r"i can tell you|the closest (?:thing|answer)|judging by|going by|based on what i (?:know|remember|recall)|"
    r"according to (?:my|general|most|other|external|common|public|outside)|most sources|"
    r"i(?:'d| would| will|'ll) (?:go with|pick|choose|opt for)|"
    r"(?:approximately|roughly|around|about|nearly|almost|some|circa) [0-9]|"
    r"(?:most |very |quite )?(?:likely|probably|presumably|possibly|perhaps|maybe)|if i (?:had|have) to guess|"
    r"based on (?:my |general |common |outside |prior |external |historical |background |public |world )?"
    r"(?:knowledge|understanding|information|facts|sources|research|records)|"
    r"from (?:my |general |common |outside |prior |external |background |world )"
    r"(?:knowledge|information|understanding)|"
    r"to (?:my|the best of my) knowledge|as far as i (?:know|am aware|can tell)|"
    r"(?:is|are|was|were) (?:widely |generally |commonly |well |well-)?(?:known|believed|thought|reported|considered|"
    r"accepted) (?:to be|as|that)|the truth is|the real answer)\b"
)
_COPULA = re.compile(
    r"^(?:(?:it|this|that|the answer) )?(?:might|may|could|would|must) be\s+(?!possible\b|difficult|hard\b|worth)\S"
    r"|^(?:it|this|that|the answer)(?:'s| is| was| were| are| would be| might be| may be| could be| will be| must be)"
    r"\s+(?!possible\b|difficult|hard\b|clear\b|necessary|important|recommended|best\b|advisable|worth|"
    r"a (?:good|great|common|difficult|tricky|fair) question)\S"
)
_WORD = re.compile(r"\w")


def _clauses(text: str) -> Iterator[tuple[str, bool]]:
    """The clauses of a folded text, each with whether a contrast word or an answer label opened it.

    A clause that is only a contrast word ("just kidding:") or only names the answer ("best
    guess:") opens the next clause the same way.
    """
    pending = False
    for piece in _SPLIT.split(text):
        clause = piece.strip(" ,\"'`()[]?")
        if _ANSWER_LABEL.match(clause):
            pending = True
            continue
        concession = _CONCESSION.match(clause)
        if concession is not None:
            pending = False
            yield concession["given"].strip(), False
            yield concession["rest"].strip(), True
            continue
        marker = _MARKER.match(clause)
        contrast = pending or marker is not None
        if marker is not None:
            clause = clause[marker.end() :].strip(" ,\"'`()[]")
        if not clause:
            pending = contrast  # a contrast word on its own ("just kidding:") opens the next clause
            continue
        pending = False
        yield clause, contrast


def _gives_answer(clause: str, contrast: bool, absent: Callable[[str], bool]) -> bool:
    """Whether one clause that is not a report of absence gives an answer (``contrast``: a contrast opened it)."""
    if _REQUEST.search(clause) or _ELABORATION.match(clause):
        return False
    named = _ANSWER_IS.search(clause)
    if named is not None:
        content = clause[named.end() :].strip(" ,;\"'`")
        opening = " ".join(content.split()[:3])  # "the answer is, unfortunately, not in the text"
        return bool(_WORD.search(content)) and not absent(content) and _NEGATION.search(opening) is None
    if _NEGATION.search(clause) or _ABOUT_THE_SEARCH.search(clause):
        return False
    if _BELIEF.search(clause) or _COPULA.match(clause):
        return True
    return contrast and _WORD.search(clause) is not None


def _states_something(clause: str) -> bool:
    """A clause before the report of absence that states something: "The speed of light is 299792 km/s."."""
    return (
        len(_WORD_RUN.findall(clause)) >= 3
        and _STATEMENT.search(clause) is not None
        and _REQUEST.search(clause) is None
        and _ELABORATION.match(clause) is None
        and _NEGATION.search(clause) is None
        and _ABOUT_THE_SEARCH.search(clause) is None
        and _FILLER.match(clause) is None
    )


_WORD_RUN = re.compile(r"\w+")
_STATEMENT = re.compile(r"\b(?:is|was|are|were|has|have|had)\b|'s\b|[0-9]")
_FILLER = re.compile(
    r"^(?:good|great|interesting|tough|hard|difficult) question\b|^(?:hmm+|well|ok|okay|so|oh)\b"
    r"|^(?:here(?:'s| is)|this is|that's|that is) (?:what|the result|my answer)\b"
)


def answers_anyway(folded_text: str, absent: Callable[[str], bool]) -> bool:
    """Whether a folded text that reports absence goes on (or goes before) to give an answer.

    :param folded_text: The answer, folded (:func:`answer_eval.fold`), apostrophes plain.
    :param absent: Whether a piece of text reports absence (the detector's own rule).

    >>> from answer_eval import fold
    >>> from answer_eval.text.not_found import is_not_found
    >>> answers_anyway(fold("The context does not specify, however the answer is 42."), is_not_found)
    True
    >>> answers_anyway(fold("The text does not say. Please provide more context."), is_not_found)
    False
    """
    reported = False
    for clause, contrast in _clauses(folded_text):
        if absent(clause):
            reported = True
        elif _gives_answer(clause, contrast, absent) or (not reported and _states_something(clause)):
            return True
    return False
