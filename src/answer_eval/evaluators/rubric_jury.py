"""RubricJury: the rubric grader with a panel of chat generators, each a :class:`RubricCore` of the same options.

How the panel's grades are pooled, and what it says of its own agreement, is
:mod:`answer_eval.llm.jury`'s. Here: one core per judge (so each has its own
:class:`~answer_eval.llm.calls.ChatCaller`, its own generator and concurrency limit), one reply cache
shared by all (its key names each judge's generator, so a file serves the whole panel), one budget
per run that buys whole panels item by item (:class:`~answer_eval.llm.jury.PanelBudget`), and a
signature that names every judge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from answer_eval.errors import OptionError
from answer_eval.evaluators.rubric_grading import RubricCore, RubricOptions
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.generators import shown_generator
from answer_eval.llm.grading import Grade, PairGrade
from answer_eval.llm.jury import (
    PanelBudget,
    judge_column,
    panel_agreement,
    pool_grades,
    pool_pair_grades,
    run_panel,
    sum_usage,
)
from answer_eval.llm.spending import Budget, Usage

__all__ = ["RubricJury"]

_SERVER_OPTIONS = ("model", "api_base_url", "temperature", "max_tokens")

JuryResult = tuple[Sequence[Grade] | Sequence[PairGrade], Usage, list[list[Any]]]
"""The pooled grades, the panel's usage, and per item each judge's own consensus."""


class RubricJury:
    """The rubric grader with a panel of judges: each grades every item, the samples are pooled.

    :param options: The grader's options (every judge's): the rubric, samples, limits, cache.
    :param generators: Two or more distinct chat generators (:func:`~answer_eval.llm.jury.check_panel`).
    """

    def __init__(self, options: RubricOptions, generators: Sequence[Any]) -> None:
        """One core per judge, the first one's reply cache shared by all.

        :raises OptionError: For ``scoring="logprobs"``: a jury pools its judges' sampled grades.
        """
        if options.scoring == "logprobs":
            # A weighed score is no sample: pooling one would need its own rule, and none is documented.
            raise OptionError("scoring", "'logprobs' weighs one generator's reply: a jury pools sampled grades")
        self.judges = [RubricCore(options, generator=generator) for generator in generators]
        cache = self.judges[0].caller.cache if self.judges[0].caller is not None else None
        for judge in self.judges[1:]:
            assert judge.caller is not None
            judge.caller.cache = cache  # one file, one object: its lock orders every judge's writes
        self.options = options

    @property
    def generators(self) -> list[Any]:
        """The judges' chat generators, in order."""
        return [judge.generator for judge in self.judges]

    @property
    def signature(self) -> str:
        """The options' signature, then each judge's generator class, server, model, options (``judge1.model:``)."""
        items = [(key, value) for key, value in self.options.signed_items() if key not in _SERVER_OPTIONS]
        for number, generator in enumerate(self.generators, 1):
            described = shown_generator(generator)
            items += [
                (f"judge{number}.generator", type(generator).__name__),
                (f"judge{number}.server", described["api_base_url"]),
                (f"judge{number}.model", described["model"]),
                *((f"judge{number}.{key}", value) for key, value in sorted(described["generation_kwargs"].items())),
            ]
        return self.options.signature(self.judges[0].name, items)

    def warm_up(self) -> None:
        """Open the shared reply cache and warm every judge's generator up."""
        for judge in self.judges:
            judge.warm_up()

    def work(
        self,
        columns: Mapping[str, Sequence[Any]],
        called: Mapping[str, str],
        progress: Callable[[], None] | None = None,
    ) -> Any:
        """The panel's grading of a batch, for :meth:`run_sync`/:meth:`run_async`: every judge at once, one budget.

        ``progress``: called as each judge finishes an item (:meth:`ChatCaller.run_async`'s).

        :raises MissingInput: As :meth:`RubricCore.work` (checked before any request).
        """
        works = [judge.work(columns, called) for judge in self.judges]
        callers = [judge.caller for judge in self.judges if judge.caller is not None]
        # One run's, spent by every judge on whole items: each judge's requests for an item held for it.
        budget = PanelBudget(self.options.max_calls, [self._requests_per_item(caller) for caller in callers])

        async def grade() -> JuryResult:
            seats = [budget.seat(judge) for judge in range(len(callers))]
            runs = [
                (lambda caller=caller, work=work, seat=seat: caller.run_async(work, seat, progress))
                for caller, work, seat in zip(callers, works, seats, strict=True)
            ]
            results = await run_panel(runs)
            judged = [list(grades) for grades, _ in results]
            usage = sum_usage([usage for _, usage in results])
            samples, stopped = self.options.samples, budget.stopped
            if self.options.pairwise:
                pairs = cast("list[list[PairGrade]]", judged)
                return pool_pair_grades(pairs, samples, self.options.swap, stopped), usage, judge_column(pairs)
            return pool_grades(cast("list[list[Grade]]", judged), samples, stopped), usage, judge_column(judged)

        return grade

    def _requests_per_item(self, caller: ChatCaller) -> int:
        """The requests a judge sends for one item when nothing fails.

        Its samples (one request of ``n``, or one each), in both orders of a pair with ``swap``.
        """
        samples = self.options.samples
        requests = 1 if caller.asks_n or samples == 1 else samples
        return requests * (2 if self.options.pairwise and self.options.swap else 1)

    def run_sync(
        self,
        columns: Mapping[str, Sequence[Any]],
        called: Mapping[str, str],
        progress: Callable[[], None] | None = None,
    ) -> JuryResult:
        """Grade a batch from sync code (an event loop of its own, as :meth:`ChatCaller.run_sync`'s)."""
        self.warm_up()
        grade = self.work(columns, called, progress)
        first = self.judges[0].caller
        assert first is not None
        # The first judge's caller only provides the loop (in a thread when one is running already); each
        # judge's run, with its usage, is its own inside it, and the outer run sends nothing.
        result, _ = first.run_sync(grade, Budget(0))
        return cast("JuryResult", result)

    async def run_async(
        self,
        columns: Mapping[str, Sequence[Any]],
        called: Mapping[str, str],
        progress: Callable[[], None] | None = None,
    ) -> JuryResult:
        """Grade a batch in the running event loop."""
        self.warm_up()
        return cast("JuryResult", await self.work(columns, called, progress)())

    def agreement(self, column: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """The judges' agreement (:func:`~answer_eval.llm.jury.panel_agreement`) of :meth:`work`'s per-judge column."""
        return panel_agreement(column, self.options.pairwise)
