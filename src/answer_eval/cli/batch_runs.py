"""``--batch``: an LLM grader's file command through the provider's batch API, resumable across days.

``answer-eval rubric FILE --output OUT --batch`` (and ``judge ... --escalate-model M --batch``)
grades every row as the live run would, sending nothing: the requests it would send (after the
reply cache) become a batch (:mod:`answer_eval.llm.batch_jobs`). It prints the batch's id, its
requests and their estimated cost (at ``--price-per-million-tokens``, the batch price), and exits 0.

The same command with ``--resume`` asks how the batch is doing. While it runs: its status and
counts, exit :data:`~answer_eval.llm.batch_jobs.EXIT_RUNNING` (75), as after sending a new batch for
what the last one left; exit 0 means the output is written. Once it has ended: its results
are collected and every row graded from them as the live path grades
(:mod:`answer_eval.llm.batches`); the output is written atomically, byte for byte the live run's,
and the summary adds what the batches used. Requests the batch did not answer (it expired or was
cancelled, a transient failure, a line that could not be read) go into a new batch, at most
``--max-retries`` more times; ``--finish-live`` sends them live instead, at once.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_eval.errors import InputError, NothingGraded
from answer_eval.evaluators.base import Evaluator
from answer_eval.evaluators.registry import Entry

if TYPE_CHECKING:  # the batch modules are imported when --batch is given
    from answer_eval.engine.row_transforms import RoleField
    from answer_eval.evaluators.summaries import Summary
    from answer_eval.llm.batch_jobs import BatchRun, Job
    from answer_eval.llm.batches import Answer, Results

    Built = tuple[Evaluator, tuple[RoleField, ...], tuple[tuple[str, str], ...]]
    Pass = Callable[[argparse.Namespace], Summary]

__all__ = ["BATCH_FLAGS", "add_batch_options", "run_batch"]

BATCH_FLAGS = frozenset({"batch", "finish_live"})
"""The flags' destinations: neither changes a result, so a run's checkpoint record leaves them out."""


def add_batch_options(parser: argparse.ArgumentParser) -> None:
    """``--batch`` and ``--finish-live``."""
    group = parser.add_argument_group("batch API (about half the price, results within 24 hours)")
    group.add_argument(
        "--batch",
        action="store_true",
        help="send the LLM requests as a batch (OpenAI's Batch API or a compatible one) and exit; run the same "
        "command with --resume to collect it (exit 75 while it runs); needs --output",
    )
    group.add_argument(
        "--finish-live",
        action="store_true",
        help="with --batch --resume: send live what the batches left unanswered (expired, cancelled, failed "
        "transiently), instead of in a new batch",
    )


def _check(entry: Entry, args: argparse.Namespace) -> None:
    if args.output is None:
        raise InputError("--batch needs --output: the batch run's record is kept beside it, for --resume")
    if args.engine != "local":
        raise InputError("--batch runs on the local engine: the provider does the work")
    if args.file == "-":
        raise InputError("--batch reads its input once a pass, and standard input only once: save it to a file")
    if args.finish_live and not args.resume:
        raise InputError("--finish-live goes with --batch --resume: it sends live what a batch left unanswered")


def run_batch(
    entry: Entry,
    args: argparse.Namespace,
    build: Callable[[Entry, argparse.Namespace], Built],
    grade: Callable[[Evaluator, tuple[RoleField, ...], tuple[tuple[str, str], ...]], Pass],
) -> int:
    """Run ``entry``'s command through the batch API (see the module docstring); the exit code.

    :param build: ``(entry, args) -> (evaluator, fields, written)``, as the live command builds them.
    :param grade: ``(evaluator, fields, written) -> (args -> summary)``: one pass over the file, as the live
        command runs it, writing to ``args.output``.
    """
    from answer_eval.llm.batch_jobs import EXIT_RUNNING, BatchApiError, BatchRun, advance

    _check(entry, args)
    evaluator, fields, written = build(entry, args)
    callers = _batch_callers(evaluator)
    try:
        record = BatchRun.load(args.output)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if record is not None and not args.resume:
        raise InputError(
            f"a batch run of {args.output} is recorded ({len(record.jobs)} batches): run the same command with "
            f"--resume to continue it, or delete {record.path} to start over"
        )
    if record is None:
        record = BatchRun(Path(args.output))
        record.remove()  # what a run that ended uncleanly left beside the output, never read as this run's
    try:
        running = advance(record, [caller.generator for caller in callers], _say_collected)
        if running:
            if args.format == "json":
                print(json.dumps({"batch": "running", "batches": [_job_json(job) for job in record.jobs]}))
            else:
                for job in running:
                    _say_running(job)
            return EXIT_RUNNING
        return _pass(entry, args, evaluator, grade(evaluator, fields, written), record)
    except BatchApiError as exc:
        raise NothingGraded(str(exc)) from None


def _batch_callers(evaluator: Evaluator) -> list[Any]:
    from answer_eval.llm.batch_grading import batch_callers

    try:
        return batch_callers(evaluator, "this run sends none (the judge: give --escalate-model)")
    except ValueError as exc:
        raise InputError(f"--batch: {exc}") from None


def _pass(entry: Entry, args: argparse.Namespace, evaluator: Evaluator, grade: Pass, record: BatchRun) -> int:
    """Grade every row from the batches' answers: the output when all were answered, else a new batch."""
    from answer_eval.cli.dry_run_estimate import estimate_words
    from answer_eval.engine.checkpoint import checkpoint_paths
    from answer_eval.engine.runner import check_side_files
    from answer_eval.llm.batch_jobs import EXIT_RUNNING, submit
    from answer_eval.llm.batches import serving

    output = Path(args.output)
    check_side_files(args.file, output, evaluator.files_written(), evaluator.files_read())
    book = record.book(evaluator.options, args.finish_live)
    # Rows are written to a file of the pass's own, which becomes the output only when every request was answered.
    graded = output.with_name(f".batch-pass.{output.name}")
    # A stopped --finish-live pass keeps the rows it paid for: its next run continues them.
    resume = args.finish_live and checkpoint_paths(graded)[0].exists()
    try:
        with serving(book):
            summary = grade(argparse.Namespace(**{**vars(args), "output": str(graded), "resume": resume}))
    finally:
        record.settle(book)
    if book.pending:
        graded.unlink(missing_ok=True)
        pending = list(book.pending.values())
        estimate = estimate_words(pending, args)  # a price no float holds is refused here, before anything is paid
        jobs = submit(record, pending)
        _say_submitted(entry, args, jobs, estimate, len(book.answers))
        return EXIT_RUNNING if args.resume else 0  # exit 0 after --resume means: the output is written
    used = _batch_usage(record, book.answers, args)
    os.replace(graded, output)
    summary.output = str(output)
    summary.finish()
    if args.format == "json":
        print(json.dumps({**summary.to_json(), "batch": used}, allow_nan=False))
    else:
        print(summary.text(entry.command) + "\n" + _usage_line(used))
    record.remove()
    failure = evaluator.run_failure(summary)
    if failure is not None:
        raise NothingGraded(f"{failure}; the output {output} is written, each row with its failure")
    return 0


def _say_collected(job: Job, results: Results) -> None:
    answered = sum(1 for answer in results.answers.values() if answer.answered)
    words = [f"batch {job.id} {job.status}: {answered} of {len(job.ids)} requests answered"]
    for count, what in (
        (results.unknown, "lines for requests it did not hold, dropped"),
        (results.unreadable, "lines that could not be read (their requests are asked again)"),
        (results.repeated, "repeated lines, the first kept"),
    ):
        if count:
            words.append(f"{count} {what}")
    print(
        "answer-eval: " + "; ".join(words) + "".join(f"\n  {problem}" for problem in results.problems), file=sys.stderr
    )


def _say_running(job: Job) -> None:
    counts = job.counts
    done = f"{counts.get('completed', 0)} of {counts.get('total', len(job.ids))} requests done"
    failed = f", {counts['failed']} failed" if counts.get("failed") else ""
    print(
        f"answer-eval: batch {job.id} ({job.model} at {job.server}) is {job.status}: {done}{failed}. Run the same "
        "command again later (exit 75: still running)"
    )


def _say_submitted(entry: Entry, args: argparse.Namespace, jobs: Sequence[Job], estimate: str, kept: int) -> None:
    if args.format == "json":
        data = {"batch": "submitted", "batches": [_job_json(job) for job in jobs], "answers_kept": kept}
        print(json.dumps({**data, "estimate": estimate}))
        return
    for job in jobs:
        where = f"{job.model} at {job.server}"
        print(f"answer-eval {entry.command}: batch {job.id} created ({where}): {len(job.ids)} requests")
    if kept:
        print(f"  {kept} answers of earlier batches are kept; it asks what they left (not answered, or asked after)")
    print("  " + estimate)
    print("  run the same command with --resume to collect it (it exits 75 while a batch runs, 0 once written)")


def _job_json(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "server": job.server,
        "model": job.model,
        "requests": len(job.ids),
        "status": job.status,
        "counts": job.counts,
    }


def _batch_usage(record: BatchRun, answers: Mapping[str, Answer], args: argparse.Namespace) -> dict[str, Any]:
    """What the run's batches used (``answers``: all they gave): ids, requests, tokens, money at the price given."""
    from answer_eval.llm.spending import CostTooLarge, money, token_count

    prompt = completion = answered = 0
    for answer in answers.values():
        if answer.answered and isinstance(answer.body, dict):
            answered += 1
            prompt += token_count(answer.body.get("usage"), "prompt_tokens")
            completion += token_count(answer.body.get("usage"), "completion_tokens")
    given = getattr(args, "price_per_million_tokens", None)
    try:  # never printed as inf nor written as Infinity (spending's rule for a cost, the dry run's too)
        cost = None if given is None else money(prompt, given[0]) + money(completion, given[1])
        if cost is not None and not math.isfinite(cost):  # two finite parts whose sum is not
            raise CostTooLarge("the prompt's and the completion's costs add up to more than any float holds")
    except CostTooLarge as exc:
        raise InputError(f"--price-per-million-tokens: {exc}; give the prices of a million tokens") from None
    return {
        "batches": [job.id for job in record.jobs],
        "requests": sum(len(job.ids) for job in record.jobs),
        "answered": answered,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "price_per_million_tokens": given,
        "cost": cost,
    }


def _usage_line(used: dict[str, Any]) -> str:
    cost = (
        ""
        if used["cost"] is None
        else f"; cost {used['cost']:.6g} at {used['price_per_million_tokens'][0]:g} / "
        + (f"{used['price_per_million_tokens'][1]:g} a million tokens")
    )
    return (
        f"  batches          {len(used['batches'])} ({', '.join(used['batches'])}): {used['requests']} requests, "
        f"{used['answered']} answered; tokens {used['prompt_tokens']} prompt, {used['completion_tokens']} "
        f"completion{cost}"
    )
