"""RubricJury: the rubric grader with a panel of judges, each a :class:`RubricCore` of the same options.

How the panel's grades are pooled, and what it says of its own agreement, is
:mod:`answer_eval.llm.jury`'s. Here: one core per judge (so each has its own
:class:`~answer_eval.llm.calls.ChatCaller`, its own generator and concurrency limit), one reply cache
shared by all (its key names each judge's generator, so a file serves the whole panel), one budget
per run that buys whole panels item by item (:class:`~answer_eval.llm.jury.PanelBudget`; on the
command line cut from what the file's ``--max-calls`` has left), and a signature that names every
judge. The judges are chat generators given in code (the components' ``chat_generator=[g1, g2]``)
or the servers the options name (``--model a --model b``: :meth:`RubricOptions.judges`);
:class:`RubricCore` holds the panel and runs it, for the component, the command line and Dask alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from answer_eval.errors import OptionError
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.generators import shown_generator
from answer_eval.llm.grading import Grade, PairGrade
from answer_eval.llm.jury import (
    PanelBudget,
    check_generator,
    check_panel,
    judge_column,
    panel_agreement,
    pool_grades,
    pool_pair_grades,
    run_panel,
    sum_usage,
)
from answer_eval.llm.spending import Budget, Usage

if TYPE_CHECKING:  # only annotations: the core holds its jury
    from answer_eval.evaluators.rubric_grading import RubricCore, RubricOptions

__all__ = ["JURY_POOLS_SAMPLES", "JuryResult", "RubricJury"]

_SERVER_OPTIONS = ("model", "api_base_url", "temperature", "max_tokens")

JURY_POOLS_SAMPLES = "'logprobs' weighs one generator's reply: a jury pools sampled grades"
"""Why a jury refuses ``scoring="logprobs"``: a weighed score is no sample, and pooling one has no documented rule."""

JuryResult = tuple[Sequence[Grade] | Sequence[PairGrade], Usage, list[list[Any]]]
"""The pooled grades, the panel's usage, and per item each judge's own consensus."""


class RubricJury:
    """The rubric grader with a panel of judges: each grades every item, the samples are pooled.

    :param options: The grader's options (every judge's): the rubric, samples, limits, cache.
    :param judges: Two or more cores, one per distinct judge (:func:`~answer_eval.llm.jury.check_panel`).
    """

    def __init__(self, options: RubricOptions, judges: Sequence[RubricCore]) -> None:
        """The panel of ``judges``, the first one's reply cache shared by all.

        :raises OptionError: For ``scoring="logprobs"``: a jury pools its judges' sampled grades.
        """
        if options.scoring == "logprobs":
            raise OptionError("scoring", JURY_POOLS_SAMPLES)
        self.judges = list(judges)
        self.options = options
        self._share_cache()

    @classmethod
    def of(cls, options: RubricOptions, generator: Any, core: type[RubricCore]) -> RubricJury | None:
        """The panel of a list of generators, or of the models ``options`` names; ``None`` for one grader.

        :param core: The class of each judge's core (given: the core's module imports this one).
        """
        if isinstance(generator, list | tuple):
            generators = check_panel("chat_generator", generator, check_generator)
            return cls(options, [core(options, generator=one) for one in generators])
        judges = range(len(options.judges()))
        return cls(options, [core(options.judge_options(judge)) for judge in judges]) if judges else None

    def _share_cache(self) -> None:
        """Every judge's caller on the first one's cache: one file, one object, whose lock orders every write."""
        first = self.judges[0].caller
        cache = None if first is None else first.cache
        for judge in self.judges[1:]:
            if judge.caller is not None:
                judge.caller.cache = cache

    @property
    def callers(self) -> list[ChatCaller | None]:
        """The judges' callers, in order (a server's judge: ``None`` until warmed up)."""
        return [judge.caller for judge in self.judges]

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
        """Open the shared reply cache and warm every judge's generator up (a server's judges: made now)."""
        for judge in self.judges:
            judge.warm_up()
        self._share_cache()

    def new_budget(self, max_calls: int | None) -> PanelBudget:
        """A budget of ``max_calls`` requests that buys whole panels (after :meth:`warm_up`: it reads the callers)."""
        callers = [judge.caller for judge in self.judges if judge.caller is not None]
        return PanelBudget(max_calls, [self._requests_per_item(caller) for caller in callers])

    def work(
        self,
        columns: Mapping[str, Sequence[Any]],
        called: Mapping[str, str] | None = None,
        progress: Callable[[], None] | None = None,
        budget: PanelBudget | None = None,
    ) -> Any:
        """The panel's grading of a batch, for :meth:`in_loop`: every judge at once, one budget.

        ``progress``: called as each judge finishes an item (:meth:`ChatCaller.run_async`'s).
        ``budget``: the run's (default: a new one of ``max_calls``, a component's run).

        :raises MissingInput: As :meth:`RubricCore.work` (checked before any request).
        """
        works = [judge.work(columns, called) for judge in self.judges]
        callers = [judge.caller for judge in self.judges if judge.caller is not None]
        # One run's, spent by every judge on whole items: each judge's requests for an item held for it.
        spent = self.new_budget(self.options.max_calls) if budget is None else budget

        async def grade() -> JuryResult:
            seats = [spent.seat(judge) for judge in range(len(callers))]
            runs = [
                (lambda caller=caller, work=work, seat=seat: caller.run_async(work, seat, progress))
                for caller, work, seat in zip(callers, works, seats, strict=True)
            ]
            results = await run_panel(runs)
            judged = [list(grades) for grades, _ in results]
            usage = sum_usage([usage for _, usage in results])
            samples, stopped = self.options.samples, spent.stopped
            if self.options.pairwise:
                pairs = cast("list[list[PairGrade]]", judged)
                return pool_pair_grades(pairs, samples, self.options.swap, stopped), usage, judge_column(pairs)
            return pool_grades(cast("list[list[Grade]]", judged), samples, stopped), usage, judge_column(judged)

        return grade

    def within(self, columns: Mapping[str, Sequence[Any]], budget: Budget) -> Callable[[], JuryResult]:
        """A batch's grading (the command line's) from a file's ``budget``: whole panels from what it has left.

        :raises MissingInput: As :meth:`work` (now, before any request).
        """
        left = None if budget.max_calls is None else max(0, budget.max_calls - budget.sent)
        panel = self.new_budget(left)
        grade = self.work(columns, None, None, panel)

        def run() -> JuryResult:
            try:
                return self.in_loop(grade)
            finally:
                budget.resume(budget.sent + panel.sent)

        return run

    def _requests_per_item(self, caller: ChatCaller) -> int:
        """The requests a judge sends for one item when nothing fails.

        Its samples (one request of ``n``, or one each), in both orders of a pair with ``swap``.
        """
        samples = self.options.samples
        requests = 1 if caller.asks_n or samples == 1 else samples
        return requests * (2 if self.options.pairwise and self.options.swap else 1)

    def in_loop(self, grade: Any) -> JuryResult:
        """Run :meth:`work`'s grading from sync code (an event loop of its own, as :meth:`ChatCaller.run_sync`'s)."""
        first = self.judges[0].caller
        assert first is not None
        # The first judge's caller only provides the loop (in a thread when one is running already); each
        # judge's run, with its usage, is its own inside it, and the outer run sends nothing.
        result, _ = first.run_sync(grade, Budget(0))
        return cast("JuryResult", result)

    def run_sync(
        self,
        columns: Mapping[str, Sequence[Any]],
        called: Mapping[str, str] | None = None,
        progress: Callable[[], None] | None = None,
    ) -> JuryResult:
        """Grade a batch from sync code, within a budget of its own (a component's run)."""
        self.warm_up()
        return self.in_loop(self.work(columns, called, progress))

    async def run_async(
        self,
        columns: Mapping[str, Sequence[Any]],
        called: Mapping[str, str] | None = None,
        progress: Callable[[], None] | None = None,
    ) -> JuryResult:
        """Grade a batch in the running event loop."""
        self.warm_up()
        return cast("JuryResult", await self.work(columns, called, progress)())

    def agreement(self, column: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """The judges' agreement (:func:`~answer_eval.llm.jury.panel_agreement`) of :meth:`work`'s per-judge column."""
        return panel_agreement(column, self.options.pairwise)
