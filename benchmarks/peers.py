"""What users would otherwise use to score "does the answer contain the gold", each on the same items.

Every peer takes the corpus's acceptable answers (a list per item) and its predictions as plain
strings (``Corpus.texts``) and returns one 0/1 per item, best over the acceptable answers.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

from corpora import Corpus


def bare_loop(corpus: Corpus) -> list[bool]:
    """The floor of a contains-check in Python: ``any(g.lower() in p.lower() for g in golds)``."""
    return [any(g.lower() in p.lower() for g in golds) for golds, p in zip(corpus.golds, corpus.texts, strict=True)]


# SQuAD v1.1's answer normalisation, as published in its official evaluation script
# (evaluate-v1.1.py, normalize_answer): lower case, drop punctuation with a per-character filter
# over string.punctuation, drop the articles a/an/the, fix white space. Reimplemented here
# verbatim; used as a contains-check (normalised gold inside normalised prediction), not as
# exact match, so that it answers the same question as the others.
def squad_normalize_answer(s: str) -> str:
    """SQuAD v1.1 ``normalize_answer``, verbatim."""

    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text: str) -> str:
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def squad_contains(corpus: Corpus) -> list[bool]:
    """SQuAD-normalised contains: ``normalize(g) in normalize(p)`` for any gold."""
    normalize = squad_normalize_answer
    return [
        any(normalize(g) in normalize(p) for g in golds) for golds, p in zip(corpus.golds, corpus.texts, strict=True)
    ]


def haystack_exact_match(corpus: Corpus) -> Callable[[], list[int]]:
    """Haystack's ``AnswerExactMatchEvaluator.run``, best over the acceptable answers.

    It takes one ground truth per prediction, so every (gold, prediction) pair of the corpus goes
    into one ``run`` call (the same as one call per gold position, with fewer calls) and each
    item scores the best of its pairs. The flattening is done before timing; taking the best per
    item is timed.
    """
    from haystack.components.evaluators import AnswerExactMatchEvaluator

    evaluator = AnswerExactMatchEvaluator()
    truths: list[str] = []
    predicted: list[str] = []
    owners: list[int] = []
    for index, (golds, text) in enumerate(zip(corpus.golds, corpus.texts, strict=True)):
        for gold in golds:
            truths.append(gold)
            predicted.append(text)
            owners.append(index)

    def run() -> list[int]:
        scores = evaluator.run(ground_truth_answers=truths, predicted_answers=predicted)["individual_scores"]
        best = [0] * len(corpus)
        for owner, score in zip(owners, scores, strict=True):
            if score > best[owner]:
                best[owner] = score
        return best

    return run


def math_verify_contains(corpus: Corpus) -> Callable[[], list[bool]]:
    """``math_verify.verify(parse(gold), parse(prediction))``, best over the acceptable answers.

    math-verify reads the answer's final number (or expression) and compares values: a different
    rule from "contains", but what a user checking numeric answers would reach for.
    """
    from math_verify import parse, verify

    def run() -> list[bool]:
        results = []
        for golds, text in zip(corpus.golds, corpus.texts, strict=True):
            answer = parse(text)
            results.append(any(verify(parse(gold), answer) for gold in golds))
        return results

    return run


def answer_contains(corpus: Corpus) -> Callable[[], dict[str, Any]]:
    """This package: ``AnswerContainsEvaluator.run`` on the predictions as given (failure kinds included)."""
    from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

    evaluator = AnswerContainsEvaluator()

    def run() -> dict[str, Any]:
        return evaluator.run(ground_truth_answers=corpus.golds, predicted_answers=corpus.predictions)

    return run
