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

A judge that fails on an item (error, refusal, unreadable reply) leaves it to the others, and the
explanation says so (``(Graded by 2 of 3 judges; none from judge 3: parse_failure.)``); an item no
judge graded fails with each judge's reason. A judge the server refuses to serve at all
(:class:`~answer_eval.llm.calls.GraderUnavailable`) stops the whole run, every judge's
(:func:`~answer_eval.llm.call_limits.one_stop`), as it does for one grader: a panel missing a member is
not the panel asked for.

The judges run at once, each its own :class:`~answer_eval.llm.calls.ChatCaller` run in a task of its
own (its own concurrency limit: they are different servers); their usage is summed. They spend from
one :class:`PanelBudget`, which buys **whole panels, item by item**: an item is sent to every judge
or to none, so that a budget never turns the jury into its fastest judge. An item the budget left
unfinished (a judge it stopped gave no grade) is ``budget_stop``, whatever the other judges said:
their grades stay in :func:`judge_column`, and their replies in the cache.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from answer_eval.errors import FailureKind, OptionError
from answer_eval.llm.call_limits import one_stop, seated
from answer_eval.llm.generators import GraderUnavailable, describe_generator, untold
from answer_eval.llm.grading import BASELINE, CANDIDATE, TIE, Cost, Grade, PairGrade, majority_choice, median_consensus
from answer_eval.llm.spending import Budget, Usage, current_item
from answer_eval.stats.rater_agreement import fleiss_kappa, krippendorff_alpha
from answer_eval.stats.written_numbers import rounded

__all__ = [
    "ALPHA_LEVEL",
    "PanelBudget",
    "check_generator",
    "check_panel",
    "judge_column",
    "panel_agreement",
    "pool_grades",
    "pool_pair_grades",
    "run_panel",
    "server_panel",
    "sum_usage",
    "unfinished_panel",
]

T = TypeVar("T")

ALPHA_LEVEL = "ordinal"
"""Krippendorff's alpha of a graded scale is on the ordinal level: a rubric's values are ordered labels,
not measured intervals (a 4 is better than a 3, not by as much as a 2 is better than a 1)."""


def check_generator(name: str, value: Any) -> None:
    """Raise ``TypeError`` naming ``name`` unless ``value`` looks like a Haystack chat generator (has ``run``)."""
    if not callable(getattr(value, "run", None)) or isinstance(value, type):
        raise TypeError(f"{name} must be a Haystack chat generator, got {type(value).__name__}")


def check_panel(name: str, generators: Any, check: Any) -> list[Any]:
    """``generators`` as a list of two or more distinct chat generators; ``check(label, one)`` checks each one.

    :raises ValueError: For an empty list, one of a single generator (give it alone), or the same
        generator twice (its type, server, model and options, a wrapper's every generator: that is more
        samples, not another judge; a generator whose model cannot be told, :func:`untold`, only as the
        same object twice).
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
        # What it talks to (a wrapper's every generator); one that cannot be told is only itself.
        told = untold(generator) is None
        described = repr(sorted(describe_generator(generator).items())) if told else f"object {id(generator)}"
        if described in seen:
            raise ValueError(
                f"{name}[{position}] is the same generator as {name}[{seen[described]}] (type, server, model and "
                "options): one judge twice is more samples, not a jury; raise samples instead"
            )
        seen[described] = position
    return panel


def server_panel(model_field: str, models: Any, urls: Any, keys: Any) -> list[tuple[str, str | None, str]]:
    """The judges a command line's options name: ``(model, server, key variable)`` each; ``[]`` for one model.

    ``models`` is one model or a tuple of two or more (``--model a --model b``); ``urls`` and
    ``keys`` are one value for every judge, or a tuple of one per model, in the same order.

    :raises OptionError: For a list of one model, a list of servers or key variables whose length is
        not the models', or one judge twice (the same model on the same server).
    """
    if not isinstance(models, tuple):
        for name, value in (("api_base_url", urls), ("api_key_env", keys)):
            if isinstance(value, tuple):
                raise OptionError(name, f"is given once per judge, but {model_field} names one model: give it once")
        return []
    if len(models) < 2:
        raise OptionError(model_field, "is a list of one model: give it alone, or two or more for a jury")
    for name, value in (("api_base_url", urls), ("api_key_env", keys)):
        if isinstance(value, tuple) and len(value) != len(models):
            raise OptionError(
                name, f"is given {len(value)} times for {len(models)} models: give it once, or once per model in order"
            )
    each = [
        (model, urls[at] if isinstance(urls, tuple) else urls, keys[at] if isinstance(keys, tuple) else keys)
        for at, model in enumerate(models)
    ]
    seen: dict[tuple[str, str | None], int] = {}
    for at, (model, url, _) in enumerate(each):
        if (model, url) in seen:
            raise OptionError(
                model_field,
                f"names {model!r} on one server twice (judges {seen[(model, url)] + 1} and {at + 1}): one judge "
                "twice is more samples, not a jury; raise samples instead",
            )
        seen[(model, url)] = at
    return each


async def run_panel(runs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run every judge's work at once, each in a task of its own; the results in the judges' order.

    The judges share one stop (:func:`~answer_eval.llm.call_limits.one_stop`): the first judge that
    cannot serve stops them all. Its :class:`GraderUnavailable` is raised again with the judge's
    number in front, the others cancelled; or, within :func:`~answer_eval.llm.call_limits.keeping_answered`
    once every judge was answered, every judge returns what it was, the items left ``error``.
    """
    with one_stop() as stop:  # each task runs in a copy of the context: the judges share one stop
        tasks = [asyncio.ensure_future(seated(number, run)) for number, run in enumerate(runs, 1)]
    try:
        return list(await asyncio.gather(*tasks))
    except GraderUnavailable as exc:
        judge = stop.judge or next((number for number, task in enumerate(tasks, 1) if _raised(task, exc)), 0)
        raise type(exc)(f"judge {judge}: {exc}") from None
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _raised(task: asyncio.Future[Any], exc: BaseException) -> bool:
    return task.done() and not task.cancelled() and task.exception() is exc


class PanelBudget:
    """One run's ``max_calls`` for a panel: spent item by item on whole panels, never judge by judge.

    Each judge's caller spends from its own :meth:`seat`. The first request of any judge for an item
    buys the item for the whole panel: it is taken only when the budget left (less what earlier items
    hold) covers every judge's ``nominal`` requests for it (a judge done with the item, from the cache,
    needs none), and those are then held for the judges until they send them or are done with the item.
    Otherwise the item is refused to every judge, and so is every later item (``budget_stop``): the
    budget goes to the first items, whole. A request past a judge's nominal ones (a retry, a top-up, a
    refused structured format) is taken from what no item holds, else refused to that judge alone.

    :param max_calls: The requests the panel may send in the run (``None``: no limit).
    :param nominal: Each judge's requests for one item when nothing fails (its samples and orders).
    """

    def __init__(self, max_calls: int | None, nominal: Sequence[int]) -> None:
        """A budget of ``max_calls`` requests for a panel whose judges need ``nominal`` requests an item."""
        self.max_calls = max_calls
        self.nominal = list(nominal)
        self.sent = 0
        self.stopped: set[tuple[int, int]] = set()
        """(judge, item): a request of that judge for that item was refused (0-based, in the run's order)."""
        self._held: dict[int, list[int]] = {}  # item -> the requests still held for each judge
        self._holding = 0  # their sum, over every item
        self._done: dict[int, set[int]] = {}  # item -> the judges done with it (nothing to hold for them)
        self._closed_from: int | None = None  # the first item the panel could not be bought for
        self._lock = threading.Lock()

    def seat(self, judge: int) -> Budget:
        """Judge ``judge``'s view of this budget (0-based), for its caller's run."""
        return _Seat(self, judge)

    def take(self, judge: int, item: int | None) -> bool:
        """Count one request of ``judge`` for ``item``; ``False`` when the budget cannot have it sent."""
        with self._lock:
            if self.max_calls is None:
                self.sent += 1
                return True
            held = None if item is None else self._held.get(item) or self._admit(item)
            if held is not None and held[judge] > 0:  # one of this judge's requests the item holds
                held[judge] -= 1
                self._holding -= 1
            elif (item is not None and held is None) or self.max_calls - self.sent - self._holding < 1:
                self.stopped.add((judge, -1 if item is None else item))
                return False
            self.sent += 1
            return True

    def _admit(self, item: int) -> list[int] | None:
        """Hold every judge's nominal requests for ``item`` when the budget left covers them; ``None`` when not."""
        assert self.max_calls is not None
        if self._closed_from is not None and item >= self._closed_from:
            return None
        done = self._done.get(item, set())
        need = [0 if judge in done else requests for judge, requests in enumerate(self.nominal)]
        if self.max_calls - self.sent - self._holding < sum(need):
            self._closed_from = item if self._closed_from is None else min(item, self._closed_from)
            return None
        self._held[item] = need
        self._holding += sum(need)
        return need

    def finish(self, judge: int, item: int) -> None:
        """``judge`` is done with ``item``: what was held for it and not sent is free again."""
        with self._lock:
            done = self._done.setdefault(item, set())
            done.add(judge)
            held = self._held.get(item)
            if held is not None:
                self._holding -= held[judge]
                held[judge] = 0
            if len(done) == len(self.nominal):  # every judge done: the item is forgotten
                self._held.pop(item, None)
                self._done.pop(item, None)

    def refusal(self, item: int | None) -> str:
        """Why a request for ``item`` was refused, in words."""
        if item is not None and self._closed_from is not None and item >= self._closed_from:
            return (
                f"the budget of {self.max_calls} calls is spent: what is left cannot buy this item's whole panel "
                f"({sum(self.nominal)} requests, {len(self.nominal)} judges)"
            )
        return f"the budget of {self.max_calls} calls is spent"


class _Seat(Budget):
    """One judge's view of a :class:`PanelBudget`: what its caller takes from and tells it is done with."""

    def __init__(self, panel: PanelBudget, judge: int) -> None:
        super().__init__(panel.max_calls)
        self.panel, self.judge = panel, judge

    def take(self) -> bool:
        return self.panel.take(self.judge, current_item())

    def finish(self, item: int) -> None:
        self.panel.finish(self.judge, item)

    def refusal(self) -> str:
        return self.panel.refusal(current_item())


def sum_usage(usages: Sequence[Usage]) -> Usage:
    """The judges' usage, added up figure by figure."""
    return Usage(**{one.name: sum(getattr(usage, one.name) for usage in usages) for one in fields(Usage)})


def _failed(grades: Sequence[Grade | PairGrade]) -> tuple[str, str]:
    """The kind of an item no judge graded (the most common among the judges') and each judge's reason."""
    kinds = Counter(grade.failure_kind for grade in grades if grade.failure_kind is not None)
    kind = kinds.most_common(1)[0][0] if kinds else FailureKind.ERROR
    detail = "; ".join(f"judge {number}: {grade.detail}" for number, grade in enumerate(grades, 1))
    return kind, detail


def _cut_short(grades: Sequence[Grade | PairGrade], item: int, stopped: Collection[tuple[int, int]]) -> str | None:
    """Why the budget left ``item``'s panel unfinished (a judge it stopped gave no grade), in words; else ``None``."""
    if not any(_value(grade) is None and (number, item) in stopped for number, grade in enumerate(grades)):
        return None
    return unfinished_panel([(None if _value(g) is None else str(_value(g)), g.detail) for g in grades])


def unfinished_panel(said: Sequence[tuple[str | None, str | None]]) -> str:
    """The words of an item the budget left unfinished, from each judge's (value given, else why not)."""
    reasons: dict[str, list[int]] = {}
    for number, (value, why) in enumerate(said, 1):
        if value is None:
            reasons.setdefault(why or "no reply", []).append(number)
    gave = [f"judge {number} gave {value}" for number, (value, _) in enumerate(said, 1) if value is not None]
    parts = [*gave, *(f"{_judges(numbers)}: {why}" for why, numbers in reasons.items())]
    return f"the panel was not finished within the budget ({'; '.join(parts)})"


def _judges(numbers: Sequence[int]) -> str:
    named = [f"judge {number}" for number in numbers]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def _partial(grades: Sequence[Grade | PairGrade]) -> str:
    """A note before a partial panel's explanation: how many judges graded the item, and why the others did not."""
    missing = [(number, grade) for number, grade in enumerate(grades, 1) if _value(grade) is None]
    if not missing:
        return ""
    why = "; ".join(f"judge {number}: {grade.failure_kind}" for number, grade in missing)
    return f"(Graded by {len(grades) - len(missing)} of {len(grades)} judges; none from {why}.) "


def _cost(grades: Sequence[Grade | PairGrade]) -> Cost:
    return Cost(
        sum(grade.cost.calls for grade in grades),
        sum(grade.cost.prompt_tokens for grade in grades),
        sum(grade.cost.completion_tokens for grade in grades),
    )


def _explanation(grades: Sequence[Grade | PairGrade], consensus: Any) -> str | None:
    """The words of the first judge whose own consensus is the panel's; else the first graded judge's, said so."""
    note = _partial(grades)
    for grade in grades:
        if _value(grade) == consensus:
            return note + (grade.explanation or "") if note else grade.explanation
    number, grade = next((n, g) for n, g in enumerate(grades, 1) if _value(g) is not None)
    return f"{note}(No judge's own consensus was the panel's; judge {number} gave {_value(grade)}.) {grade.explanation}"


def _value(grade: Grade | PairGrade) -> Any:
    return grade.score if isinstance(grade, Grade) else grade.choice


def pool_grades(
    judged: Sequence[Sequence[Grade]], samples: int, stopped: Collection[tuple[int, int]] = frozenset()
) -> list[Grade]:
    """Each item's grade from every judge's (``judged[judge][item]``), ``samples`` per judge: see the module.

    :param stopped: (judge, item) pairs the budget refused a request for (:attr:`PanelBudget.stopped`):
        an item a judge so stopped gave no grade is ``budget_stop``, whatever the others gave.
    """
    pooled = []
    for item, grades in enumerate(zip(*judged, strict=True)):
        if not any(grade.samples for grade in grades):  # no call was made (no response text): the same for all
            pooled.append(grades[0])
            continue
        every = tuple(value for grade in grades for value in grade.samples)
        readable = [value for value in every if value is not None]
        used = sum(grade.samples_used or 0 for grade in grades)
        cost, cut = _cost(grades), sum(grade.cut_replies for grade in grades)
        short = _cut_short(grades, item, stopped)
        if short is not None:
            pooled.append(Grade(None, None, None, FailureKind.BUDGET_STOP, short, every, cost, 0, cut))
            continue
        if not readable:
            kind, detail = _failed(grades)
            pooled.append(Grade(None, None, None, kind, detail, every, cost, 0, cut))
            continue
        score = median_consensus(readable)
        confidence = every.count(score) / (samples * len(grades))
        explanation = _explanation(grades, score)
        pooled.append(Grade(score, explanation, confidence, None, None, every, cost, used, cut))
    return pooled


def pool_pair_grades(
    judged: Sequence[Sequence[PairGrade]], samples: int, swap: bool, stopped: Collection[tuple[int, int]] = frozenset()
) -> list[PairGrade]:
    """Each pair's choice from every judge's (``judged[judge][item]``): the majority in each order, pooled.

    :param stopped: As :func:`pool_grades`'s.
    """
    pooled = []
    for item, grades in enumerate(zip(*judged, strict=True)):
        if not any(grade.samples for grade in grades):  # decided without a call (a response without text)
            pooled.append(grades[0])
            continue
        orders = [[c for grade in grades for c in grade.samples[start : start + samples]] for start in (0, samples)]
        every = tuple(choice for order in orders for choice in order)
        consensus = [majority_choice(read) for read in ([c for c in order if c] for order in orders) if read]
        cost, cut = _cost(grades), sum(grade.cut_replies for grade in grades)
        short = _cut_short(grades, item, stopped)
        if short is not None:
            pooled.append(PairGrade(None, None, None, None, FailureKind.BUDGET_STOP, short, every, cost, 0, cut))
            continue
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
