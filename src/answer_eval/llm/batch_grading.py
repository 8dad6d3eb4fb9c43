"""An LLM component's inputs graded through a provider's batch API from Python: submit now, collect within a day.

:class:`BatchGrading` does for an LLM component (``RubricEvaluator``, ``PairwiseRubricEvaluator``,
``AnswerJudgeEvaluator`` escalating to an LLM) what ``--batch`` does for a file
(:mod:`answer_eval.cli.batch_runs`): ``submit(**inputs)``, ``status()``, and ``collect(**inputs)``,
which returns the outputs the component's ``run`` returns for those inputs, graded from the batches'
answers (:mod:`answer_eval.llm.batches`). The component stays a synchronous Haystack component: nothing
waits for a batch, and the run's record (:class:`~answer_eval.llm.batch_jobs.BatchRun`) lets another
process collect it. :func:`llm_callers` and :func:`batch_callers` find an evaluator's callers, for the
command line too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from answer_eval.llm.batch_jobs import ENDED, BatchRun, advance, submit

__all__ = ["BatchGrading", "BatchRunning", "batch_callers", "llm_callers"]


def llm_callers(evaluator: Any) -> list[Any]:
    """Warm ``evaluator`` up: the callers of its LLM (a jury's, every judge's); ``[]`` when it sends no request."""
    from answer_eval.llm.calls import ChatCaller

    evaluator.warm_up()  # the callers the real run makes
    jury = getattr(evaluator, "jury", None)
    found = [getattr(evaluator, "caller", None)] if jury is None else list(jury.callers)
    callers = [caller for caller in found if isinstance(caller, ChatCaller)]
    return callers if len(callers) == len(found) else []


def batch_callers(evaluator: Any, none: str = "this evaluator sends none") -> list[Any]:
    """:func:`llm_callers`, each checked to send what a batch can hold; ``ValueError`` saying why not.

    :param none: The words for an evaluator that sends no request (the command line names its flag).
    """
    from answer_eval.llm.batches import batch_refusal

    callers = llm_callers(evaluator)
    if not callers:
        raise ValueError(f"grading through a batch sends LLM requests, and {none}")
    samples = int(getattr(evaluator.options, "samples", 1) or 1)
    for caller in callers:
        refused = batch_refusal(caller.generator, samples, caller.asks_n)
        if refused is not None:
            raise ValueError(refused)
    return callers


class BatchRunning(Exception):
    """A batch of the run has not ended yet (``status``: each batch's id, status and counts): collect later."""

    def __init__(self, status: list[dict[str, Any]]) -> None:
        """The batches' ``status`` (:meth:`BatchGrading.status`'s)."""
        running = [job for job in status if job["status"] not in ENDED]
        super().__init__(f"{len(running)} batch(es) still running: " + ", ".join(j["id"] for j in running))
        self.status = status


class BatchGrading:
    """Grade an LLM component's inputs through the provider's batch API: submit now, collect within a day.

    The outputs :meth:`collect` returns are the ones ``component.run(**inputs)`` returns live, on the
    same replies; the component stays a synchronous Haystack component (nothing here blocks for a batch).

    :param component: A ``RubricEvaluator``, ``PairwiseRubricEvaluator`` or ``AnswerJudgeEvaluator`` with
        ``escalate_to``, whose chat generator is Haystack's ``OpenAIChatGenerator`` (its client sends the batch).
    :param record: A path naming the run: its record and replies are kept beside it, hidden
        (``.NAME.batch.json``, ``.NAME.batch-replies.jsonl``), so a later process collects it.
    :param finish_live: Send live what the batches left unanswered (expired, cancelled), instead of in a new batch.

    Usage::

        grading = BatchGrading(RubricEvaluator(metric="faithfulness", chat_generator=generator), "nightly")
        grading.submit(predicted_answers=answers, contexts=contexts)     # sends the batch
        grading.status()                                                  # each batch's status and counts
        result = grading.collect(predicted_answers=answers, contexts=contexts)  # BatchRunning until it ends
    """

    def __init__(self, component: Any, record: str | os.PathLike[str], *, finish_live: bool = False) -> None:
        """Grade ``component``'s inputs, the run recorded at ``record``; ``ValueError`` for a component that cannot."""
        evaluator = getattr(component, "_evaluator", None)
        if evaluator is None or not callable(getattr(component, "run", None)):
            raise TypeError(f"BatchGrading takes an answer-eval LLM component, got {type(component).__name__}")
        self.component, self.finish_live = component, finish_live
        self._callers = batch_callers(evaluator)
        self._options = evaluator.options
        self.path = Path(record)

    def _record(self) -> BatchRun:
        return BatchRun.load(self.path) or BatchRun(self.path)

    def submit(self, **inputs: Any) -> list[dict[str, Any]]:
        """Send the requests ``component.run(**inputs)`` would send (the reply cache first) as a batch: its status.

        :raises ValueError: When a batch of this record is still to be collected.
        """
        if BatchRun.load(self.path) is not None:
            raise ValueError(f"a batch run of {self.path} is recorded: call collect() (or status()) to continue it")
        BatchRun(self.path).remove()  # what a run that ended uncleanly left beside the record's path
        try:
            self.collect(**inputs)
        except BatchRunning as running:
            return running.status
        return self.status()  # every request answered already (the cache): nothing sent

    def status(self) -> list[dict[str, Any]]:
        """Each batch of the run: its id, status and request counts, as the provider says now (ended ones collected)."""
        record = self._record()
        advance(record, [caller.generator for caller in self._callers])
        return self._status_of(record)

    def collect(self, **inputs: Any) -> dict[str, Any]:
        """The component's outputs for ``inputs``, graded from the batches' answers.

        Ended batches are collected first. Requests no batch answered yet go into a new batch (or are
        sent live, with ``finish_live``): then :class:`BatchRunning`. Once the outputs are returned the
        run's files are removed.

        :raises BatchRunning: While a batch runs, or when this call sent a new one.
        """
        from answer_eval.llm.batches import serving

        record = self._record()
        if advance(record, [caller.generator for caller in self._callers]):
            raise BatchRunning(self._status_of(record))
        book = record.book(self._options, self.finish_live)
        try:
            with serving(book):
                outputs: dict[str, Any] = self.component.run(**inputs)
        finally:
            record.settle(book)
        if book.pending:
            submit(record, list(book.pending.values()))
            raise BatchRunning(self._status_of(record))
        record.remove()
        return outputs

    @staticmethod
    def _status_of(record: BatchRun) -> list[dict[str, Any]]:
        return [{"id": job.id, "status": job.status, "counts": dict(job.counts)} for job in record.jobs]
