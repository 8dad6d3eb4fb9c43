"""A jury of judges: several chat generators grade the same items, and their samples are pooled into one grade.

Verga et al. (2024, "Replacing Judges with Juries: Evaluating LLM Generations with a Panel of
Diverse Models") found that a panel of three smaller models from different families agrees with
people better than one large judge, at a seventh of the cost. Here each judge grades every item as
a single grader would (:mod:`answer_eval.llm.grading`), ``samples`` replies each, and:

- **the consensus** is taken over *all* the judges' samples, as one grader's is over its own: the
  median of the scores, or the majority choice in each order of a pair (then a tie when the two
  orders differ, as with one grader);
- **confidence** is the share of all samples asked for, of every judge, that agree with it (an
  unreadable or missing sample agrees with nothing);
- **each judge's own consensus** is kept (:func:`judge_column`), and the panel's agreement beyond
  chance is reported (:func:`panel_agreement`): Krippendorff's alpha on the ordinal level for a
  graded scale, Fleiss' kappa for pairwise choices, over the items every judge graded.

A judge that fails on an item (error, refusal, budget, unreadable reply) leaves it to the others;
an item no judge graded fails with each judge's reason. A judge the server refuses to serve at all
(:class:`~answer_eval.llm.calls.GraderUnavailable`) stops the whole run, as it does for one grader:
a panel missing a member for every item is not the panel asked for.

The judges run at once, each its own :class:`~answer_eval.llm.calls.ChatCaller` run in a task of its
own (its own concurrency limit: they are different servers), spending from one
:class:`~answer_eval.llm.calls.Budget`; their usage is summed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from answer_eval.llm.calls import GraderUnavailable, Usage
from answer_eval.llm.generators import describe_generator
from answer_eval.llm.grading import BASELINE, CANDIDATE, TIE, Cost, Grade, PairGrade, majority_choice, median_consensus
from answer_eval.reports.formatting import rounded
from answer_eval.stats.reliability import fleiss_kappa, krippendorff_alpha

__all__ = [
    "ALPHA_LEVEL",
    "check_panel",
    "judge_column",
    "panel_agreement",
    "pool_grades",
    "pool_pair_grades",
    "run_panel",
    "sum_usage",
]

T = TypeVar("T")

ALPHA_LEVEL = "ordinal"
"""Krippendorff's alpha of a graded scale is on the ordinal level: a rubric's values are ordered labels,
not measured intervals (a 4 is better than a 3, not by as much as a 2 is better than a 1)."""


def check_panel(name: str, generators: Any, check: Any) -> list[Any]:
    """``generators`` as a list of two or more distinct chat generators; ``check(label, one)`` checks each one.

    :raises ValueError: For an empty list, one of a single generator (give it alone), or the same
        generator twice (its type, server, model and options: that is more samples, not another judge).
    :raises TypeError: For a member that is not a chat generator (``check``'s, naming its position).
    """
    panel = list(generators)
    if not panel:
        raise ValueError(f"{name} is an empty list: give a chat generator, or a list of two or more (a jury)")
    for position, generator in enumerate(panel):
        check(f"{name}[{position}]", generator)
    if len(panel) == 1:
        raise ValueError(f"{name} is a list of one generator: give it alone, or two or more for a jury")
    seen: dict[str, int] = {}
    for position, generator in enumerate(panel):
        described = repr(sorted(describe_generator(generator).items()))
        if described in seen:
            raise ValueError(
                f"{name}[{position}] is the same generator as {name}[{seen[described]}] (type, server, model and "
                "options): one judge twice is more samples, not a jury; raise samples instead"
            )
        seen[described] = position
    return panel


async def run_panel(runs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run every judge's work at once, each in a task of its own; the results in the judges' order.

    The first judge that cannot serve stops the panel: the others are cancelled, and its
    :class:`GraderUnavailable` is raised again with the judge's number in front.
    """
    tasks = [asyncio.ensure_future(run()) for run in runs]  # each task runs in a copy of the context
    try:
        return list(await asyncio.gather(*tasks))
    except GraderUnavailable as exc:
        judge = next((number for number, task in enumerate(tasks, 1) if _raised(task, exc)), 0)
        raise type(exc)(f"judge {judge}: {exc}") from None
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _raised(task: asyncio.Future[Any], exc: BaseException) -> bool:
    return task.done() and not task.cancelled() and task.exception() is exc


def sum_usage(usages: Sequence[Usage]) -> Usage:
    """The judges' usage, added up figure by figure."""
    return Usage(**{one.name: sum(getattr(usage, one.name) for usage in usages) for one in fields(Usage)})


def _failed(grades: Sequence[Grade | PairGrade]) -> tuple[str, str]:
    """The kind of an item no judge graded (the most common among the judges') and each judge's reason."""
    kinds = Counter(grade.failure_kind for grade in grades if grade.failure_kind is not None)
    kind = kinds.most_common(1)[0][0] if kinds else "error"
    detail = "; ".join(f"judge {number}: {grade.detail}" for number, grade in enumerate(grades, 1))
    return kind, detail


def _cost(grades: Sequence[Grade | PairGrade]) -> Cost:
    return Cost(
        sum(grade.cost.calls for grade in grades),
        sum(grade.cost.prompt_tokens for grade in grades),
        sum(grade.cost.completion_tokens for grade in grades),
    )


def _explanation(grades: Sequence[Grade | PairGrade], consensus: Any) -> str | None:
    """The words of the first judge whose own consensus is the panel's; else the first graded judge's, said so."""
    for grade in grades:
        if _value(grade) == consensus:
            return grade.explanation
    number, grade = next((n, g) for n, g in enumerate(grades, 1) if _value(g) is not None)
    return f"(No judge's own consensus was the panel's; judge {number} gave {_value(grade)}.) {grade.explanation}"


def _value(grade: Grade | PairGrade) -> Any:
    return grade.score if isinstance(grade, Grade) else grade.choice


def pool_grades(judged: Sequence[Sequence[Grade]], samples: int) -> list[Grade]:
    """Each item's grade from every judge's (``judged[judge][item]``), ``samples`` per judge: see the module."""
    pooled = []
    for grades in zip(*judged, strict=True):
        if not any(grade.samples for grade in grades):  # no call was made (no response text): the same for all
            pooled.append(grades[0])
            continue
        every = tuple(value for grade in grades for value in grade.samples)
        readable = [value for value in every if value is not None]
        used = sum(grade.samples_used or 0 for grade in grades)
        cost, cut = _cost(grades), sum(grade.cut_replies for grade in grades)
        if not readable:
            kind, detail = _failed(grades)
            pooled.append(Grade(None, None, None, kind, detail, every, cost, 0, cut))
            continue
        score = median_consensus(readable)
        confidence = every.count(score) / (samples * len(grades))
        explanation = _explanation(grades, score)
        pooled.append(Grade(score, explanation, confidence, None, None, every, cost, used, cut))
    return pooled


def pool_pair_grades(judged: Sequence[Sequence[PairGrade]], samples: int, swap: bool) -> list[PairGrade]:
    """Each pair's choice from every judge's (``judged[judge][item]``): the majority in each order, pooled."""
    pooled = []
    for grades in zip(*judged, strict=True):
        if not any(grade.samples for grade in grades):  # decided without a call (a response without text)
            pooled.append(grades[0])
            continue
        orders = [[c for grade in grades for c in grade.samples[start : start + samples]] for start in (0, samples)]
        every = tuple(choice for order in orders for choice in order)
        consensus = [majority_choice(read) for read in ([c for c in order if c] for order in orders) if read]
        cost, cut = _cost(grades), sum(grade.cut_replies for grade in grades)
        if not consensus:
            kind, detail = _failed(grades)
            pooled.append(PairGrade(None, None, None, None, kind, detail, every, cost, 0, cut))
            continue
        both = len(consensus) == 2
        choice = TIE if both and consensus[0] != consensus[1] else consensus[0]
        flipped = set(consensus) == {CANDIDATE, BASELINE} if both and swap else None
        confidence = every.count(choice) / (samples * (2 if swap else 1) * len(grades))
        explanation = _explanation(grades, choice)
        used = sum(grade.samples_used or 0 for grade in grades)
        pooled.append(PairGrade(choice, explanation, confidence, flipped, None, None, every, cost, used, cut))
    return pooled


def judge_column(judged: Sequence[Sequence[Grade] | Sequence[PairGrade]]) -> list[list[Any]]:
    """Per item, each judge's own consensus (score or choice; ``None`` where that judge gave none), in judge order."""
    return [[_value(grade) for grade in grades] for grades in zip(*judged, strict=True)]


def panel_agreement(column: Sequence[Sequence[Any]], pairwise: bool) -> dict[str, Any]:
    """The judges' agreement beyond chance, over the items every judge graded (:func:`judge_column`'s).

    :returns: ``judges``, ``items`` (those graded by every judge), and ``krippendorff_alpha`` with
        its ``level`` (ordinal) for scores, or ``fleiss_kappa`` for pairwise choices; ``None`` where
        undefined (no item every judge graded, or every grade the same).
    """
    complete = [list(grades) for grades in column if all(grade is not None for grade in grades)]
    judges = len(column[0]) if column else 0
    if pairwise:
        kappa = fleiss_kappa(complete) if judges > 1 and complete else None
        return {"judges": judges, "items": len(complete), "fleiss_kappa": _rounded(kappa)}
    alpha = krippendorff_alpha(complete, ALPHA_LEVEL) if judges > 1 else None
    return {"judges": judges, "items": len(complete), "level": ALPHA_LEVEL, "krippendorff_alpha": _rounded(alpha)}


def _rounded(value: float | None) -> float | None:
    return None if value is None else rounded(value, 4)  # a kappa of -0.00003: 0.0, never -0.0
