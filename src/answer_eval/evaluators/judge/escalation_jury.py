"""The judge's escalation to a jury: several LLMs check each unsure answer, and the majority of their verdicts decides.

Each judge of the panel is asked the correctness check of :mod:`answer_eval.evaluators.judge.escalation`
once per unsure answer (one reply each, as with one LLM). The panel's verdict is the **majority**
of the judges that gave one; with as many yes as no (two judges that split, or one of three
failing), the panel gives no verdict and the judge's own verdict stands, its explanation saying
so (use an odd number of judges to avoid that). Its failure kind is ``None`` then: nothing failed.
An answer no judge gave a verdict on fails with the most common judge failure.

A verdict of part of the panel says so (``2 of 3 judges (no verdict from judge 3: error): ...``).
Its ``confidence`` is the majority's share of the whole panel (3 of 3: 1.0; 2 of 3, or 2 with one
judge silent: 0.667): the LLM level of the cascade keeps a verdict only above a threshold on it.

As for the rubric jury (:mod:`answer_eval.llm.jury`): the judges run at once, each with its own
caller and concurrency limit, from one reply cache and one budget per run, which buys whole panels
answer by answer (an answer is sent to every judge or to none; one the budget left unfinished is
``budget_stop``, the judge's own verdict standing); their usage is summed;
a judge the server refuses to serve stops the run (``GraderUnavailable`` naming it). The judges'
agreement is Fleiss' kappa of their yes/no over the answers every judge gave one on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from typing import Any

from answer_eval.errors import FailureKind
from answer_eval.evaluators.judge.escalation import LLMVerdict, check_answers
from answer_eval.evaluators.judge.options import JudgeOptions
from answer_eval.llm.calls import ChatCaller, Usage
from answer_eval.llm.grading import Cost
from answer_eval.llm.jury import PanelBudget, run_panel, sum_usage, unfinished_panel
from answer_eval.llm.structured import StructuredOutput
from answer_eval.stats.rater_agreement import fleiss_kappa
from answer_eval.stats.written_numbers import rounded

__all__ = ["EscalationJury", "panel_verdicts", "verdicts_agreement"]


def panel_verdicts(
    judged: Sequence[Sequence[LLMVerdict]], stopped: Collection[tuple[int, int]] = frozenset()
) -> list[LLMVerdict]:
    """Each answer's verdict from every judge's (``judged[judge][answer]``): the majority, see the module.

    :param stopped: (judge, answer) pairs the budget refused a request for
        (:attr:`~answer_eval.llm.jury.PanelBudget.stopped`): an answer a judge so stopped gave no verdict on is
        ``budget_stop``, whatever the others said (the judge's own verdict stands).
    """
    pooled = []
    for answer, verdicts in enumerate(zip(*judged, strict=True)):
        cost = Cost(
            sum(one.cost.calls for one in verdicts),
            sum(one.cost.prompt_tokens for one in verdicts),
            sum(one.cost.completion_tokens for one in verdicts),
        )
        said = [one.correct for one in verdicts if one.correct is not None]
        yes, no = said.count(True), said.count(False)
        silent = [(number, one) for number, one in enumerate(verdicts, 1) if one.correct is None]
        short = [number for number, _ in silent if (number - 1, answer) in stopped]
        # Who gave no verdict, and why: so a verdict of part of the panel says it is one.
        none = "; ".join(f"judge {number}: {one.failure_kind or 'no verdict'}" for number, one in silent)
        partial = f" (no verdict from {none})" if silent else ""
        if short:
            said_each = [(None if one.correct is None else _word(one), one.explanation) for one in verdicts]
            words = unfinished_panel(said_each)
            pooled.append(LLMVerdict(None, words, FailureKind.BUDGET_STOP, cost))
        elif not said:
            kinds = Counter(one.failure_kind for one in verdicts if one.failure_kind is not None)
            kind = kinds.most_common(1)[0][0] if kinds else FailureKind.ERROR
            words = "; ".join(f"judge {number}: {one.explanation}" for number, one in enumerate(verdicts, 1))
            pooled.append(LLMVerdict(None, words, kind, cost))
        elif yes == no:
            words = f"The judges split ({yes} yes, {no} no{partial}): the judge's verdict stands."
            pooled.append(LLMVerdict(None, words, None, cost))
        else:
            verdict = yes > no
            first = next(one for one in verdicts if one.correct is verdict)
            words = f"{max(yes, no)} of {len(verdicts)} judges{partial}: {first.explanation or ''}".strip()
            # The share of the whole panel: a judge that gave no verdict does not make the majority surer.
            pooled.append(LLMVerdict(verdict, words, None, cost, max(yes, no) / len(verdicts)))
    return pooled


def _word(verdict: LLMVerdict) -> str:
    return "yes" if verdict.correct else "no"


def verdicts_agreement(column: Sequence[Sequence[bool | None]]) -> dict[str, Any]:
    """The judges' Fleiss' kappa over the answers every judge gave a verdict on (``None``: undefined)."""
    complete = [list(verdicts) for verdicts in column if all(one is not None for one in verdicts)]
    kappa = fleiss_kappa(complete) if complete else None
    judges = len(column[0]) if column else 0
    return {"judges": judges, "items": len(complete), "fleiss_kappa": None if kappa is None else rounded(kappa, 4)}


class EscalationJury:
    """The escalation's panel: a caller per judge (one reply cache for all), run together from one budget.

    :param options: The judge's options (its limits and cache).
    :param generators: Two or more distinct chat generators (checked by the component).
    """

    def __init__(self, options: JudgeOptions, generators: Sequence[Any]) -> None:
        """A caller per judge, made now; the cache is opened at :meth:`warm_up`."""
        self.generators = list(generators)
        self.options = options
        self.callers: list[ChatCaller] = [options.caller(generator) for generator in self.generators]
        # Each judge's server refuses formats of its own: a structured output per judge.
        self.structured = [StructuredOutput(options.structured, generator) for generator in self.generators]
        for caller in self.callers[1:]:
            caller.cache = self.callers[0].cache  # one file, one object: its lock orders every judge's writes

    def warm_up(self) -> None:
        """Open the reply cache and warm every generator up."""
        cache = self.callers[0].cache
        if cache is not None:
            cache.open()
        for generator in self.generators:
            if callable(getattr(generator, "warm_up", None)):
                generator.warm_up()

    async def check(
        self,
        questions: Sequence[str | None],
        golds: Sequence[Any],
        predictions: Sequence[Any],
        progress: Callable[[], None] | None = None,
    ) -> tuple[list[LLMVerdict], Usage, list[list[bool | None]]]:
        """Every judge's check of the answers at once: the panel's verdicts, the usage, each judge's per answer.

        ``progress``: called as each judge finishes an answer (:meth:`ChatCaller.run_async`'s).
        """
        # One request a judge an answer: the budget buys whole panels, answer by answer.
        budget = PanelBudget(self.options.max_calls, [1] * len(self.callers))

        def run(judge: int, caller: ChatCaller, structured: StructuredOutput) -> Any:
            seat = budget.seat(judge)
            work = lambda: check_answers(caller, questions, golds, predictions, structured)  # noqa: E731
            return lambda: caller.run_async(work, seat, progress)

        judges = zip(self.callers, self.structured, strict=True)
        results = await run_panel([run(judge, *pair) for judge, pair in enumerate(judges)])
        judged = [verdicts for verdicts, _ in results]
        column = [[one.correct for one in verdicts] for verdicts in zip(*judged, strict=True)]
        return panel_verdicts(judged, budget.stopped), sum_usage([usage for _, usage in results]), column
