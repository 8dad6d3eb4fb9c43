"""The judge (``answer-eval judge``): the verdict a person would give, with a calibrated acceptance and evidence.

With a threshold (:mod:`answer_eval.evaluators.judge.trust`: ``escalate_below``, or one chosen for
``target_agreement`` on the user's ``calibration`` or the shipped one), the verdicts below it are
not trusted: flagged ``abstained`` (for a person), or, with an LLM, escalated
(:mod:`answer_eval.evaluators.judge.escalation`): its yes or no replaces the judge's verdict. The
LLM is a server the options name (``escalate_model``: the command line, built when the judge warms
up, its key read from the environment then, as ``answer-eval rubric`` does), or a chat generator
given in code (the Haystack component's ``escalate_to``). One implementation for every layer: the
component wraps this class, the command line and Dask run it.

The cascade (:mod:`answer_eval.evaluators.judge.escalation`): with a target, an LLM and a calibration
holding an LLM level, an LLM verdict below the LLM level's threshold (or no verdict) is not trusted:
``abstained`` (for a person), the judge's own verdict in ``correct``, the LLM's in ``llm_verdict``.

An escalating judge runs in one process on the local engine (``local_only``: no ``--jobs``), scores 16
rows a call (an interrupt holds few paid replies unwritten), and ``max_calls`` bounds the whole file,
across ``--resume`` (:meth:`AnswerJudgeCore.resumed`). On Dask each worker sends its partitions'
requests, without a file's budget or cache (:meth:`AnswerJudgeCore.dask_refusal`).

A jury (``escalate_to=[g1, g2]``, or ``--escalate-model`` given two or more times): the core holds the
panel (:class:`~answer_eval.evaluators.judge.escalation.EscalationJury`) and runs it, for the component
(:meth:`AnswerJudgeCore.run`) and the command line and Dask (:meth:`AnswerJudgeCore.score`) alike; each
LLM's verdicts are the ``llm_judge_verdicts`` column, their agreement the summary's
(:class:`~answer_eval.evaluators.judge.trust.JudgeSummary`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import Any

from answer_eval.errors import FailureKind, OptionError, RowsKept, StoppedAfter
from answer_eval.evaluators.base import Columns, Evaluator, Role, Socket
from answer_eval.evaluators.contains import ANSWERS, PREDICTION, locate_bad_answers
from answer_eval.evaluators.judge.cascade import AnswerJudge, JudgeVerdict
from answer_eval.evaluators.judge.escalation import (
    EscalationJury,
    LLMVerdict,
    check_answers,
    merge_verdicts,
    verdicts_agreement,
)
from answer_eval.evaluators.judge.judge_options import JudgeOptions
from answer_eval.evaluators.judge.trust import JudgeSummary, Trust, choose_trust
from answer_eval.evaluators.judge.user_calibration import load_user_calibration
from answer_eval.evaluators.summaries import FileSummary
from answer_eval.llm.call_limits import keeping_answered
from answer_eval.llm.caller_setup import StructuredOutput
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.generators import GraderUnavailable, check_cacheable
from answer_eval.llm.jury import check_generator, check_panel
from answer_eval.llm.spending import Budget, Usage, unanswered

__all__ = ["AnswerJudgeCore", "JudgeOptions", "Judged", "per_answer"]


QUESTION = Role("question", "question", "the question, used when present", optional=True)

_PLAIN = {
    "correct": "bool",
    "confidence": "float64",
    "acceptance": "float64",
    "stage": "object",
    "evidence": "object",
    "failure_kind": "object",
    "outcome": "object",
}
_ESCALATED = {
    "escalated": "bool",
    "llm_verdict": "object",
    "llm_explanation": "object",
    "llm_failure": "object",
    "calls": "object",
}
_CASCADE = {"abstained": "bool", "llm_confidence": "object", "tokens": "object"}
_PLAIN_SOCKETS: dict[str, Socket] = {
    "score": Socket(float),
    "individual_scores": Socket(list[int], "correct", int),
    "confidence": Socket(list[float], "confidence"),
    "acceptance": Socket(list[float], "acceptance"),
    "evidence": Socket(list[str], "evidence"),
    "stages": Socket(list[str], "stage"),
    "failure_kinds": Socket(list[str | None], "failure_kind"),
}
_ABSTAINING_SOCKETS = {
    "abstained": Socket(list[bool], "abstained"),
    "abstained_share": Socket(float, "abstained_share"),
    "threshold": Socket(float | None, "threshold"),
}
_ESCALATING_SOCKETS = {
    "escalated": Socket(list[bool], "escalated"),
    "llm_verdicts": Socket(list[bool | None], "llm_verdict"),
    "llm_explanations": Socket(list[str | None], "llm_explanation"),
    "llm_failures": Socket(list[str | None], "llm_failure"),
    "escalated_share": Socket(float, "escalated_share"),
    "threshold": Socket(float | None, "threshold"),
    "usage": Socket(dict[str, int], "usage"),
    "llm_judge_verdicts": Socket(list[list[bool | None]], "llm_judge_verdicts"),
    "llm_agreement": Socket(dict[str, Any] | None, "llm_agreement"),
}
_CASCADING_SOCKETS = {
    "abstained": Socket(list[bool], "abstained"),
    "abstained_share": Socket(float, "abstained_share"),
    "llm_confidences": Socket(list[float | None], "llm_confidence"),
}
Work = Callable[[], Awaitable[list[LLMVerdict]]]
Chosen = tuple[list[Any], list[Any], list[Any]]
"""The escalated answers' questions, acceptable answers and predictions, in order."""
Judged = tuple[list[JudgeVerdict], list[bool], list[LLMVerdict], Usage, list[list[bool | None]]]
"""A batch's verdicts, which were not trusted, the LLM's verdicts on those, what they cost, and each LLM's verdicts."""
Bar = Callable[[int], AbstractContextManager[Callable[[], None] | None]]


@contextmanager
def _progress(bar: Bar | None, total: int) -> Iterator[Callable[[], None] | None]:
    if bar is None:
        yield None
        return
    with bar(total) as progress:
        yield progress


def _text_questions(chosen: Chosen) -> Chosen:
    """A jury is asked a question only when it is text (a component's input may hold other values)."""
    questions, golds, predictions = chosen
    return [question if isinstance(question, str) else None for question in questions], golds, predictions


def per_answer(unsure: Sequence[bool], per_judge: Sequence[Sequence[bool | None]]) -> list[list[bool | None]]:
    """Each answer's LLM verdicts, one per judge (an answer not escalated, or only abstained: an empty list)."""
    if not per_judge:
        return [[] for _ in unsure]
    asked = iter(per_judge)
    return [list(next(asked)) if flag else [] for flag in unsure]


def _generation(shown: Mapping[str, Any]) -> dict[str, Any]:
    """A shown generator's generation options; a wrapper's with its generators' own, in order (``reaches``)."""
    options = dict(shown.get("generation_kwargs") or {})
    reached = shown.get("reaches")
    return options if reached is None else {**options, "reaches": [_generation(one) for one in reached]}


class AnswerJudgeCore(Evaluator):
    """The AnswerJudge: the contains rules and lenient lexical rules, each verdict with its acceptance.

    With a threshold, the verdicts below it are abstained or escalated (see the module docstring).
    """

    name = "judge"
    component = "AnswerJudgeEvaluator"
    options_type = JudgeOptions
    roles = (ANSWERS, PREDICTION, QUESTION)
    options: JudgeOptions

    def __init__(self, options: JudgeOptions | None = None, generator: Any = None) -> None:
        """Make the judge: its model and the user's calibration are read now, the threshold chosen.

        :param options: The options (default: the defaults).
        :param generator: A Haystack chat generator to escalate to (the component's ``escalate_to``),
            instead of the server ``escalate_model`` names; a list of two or more is a jury
            (:class:`~answer_eval.evaluators.judge.escalation.EscalationJury`), as two or more
            ``escalate_model`` are.
        :raises ValueError: For a blank label or phrase, a calibration that cannot be used
            (:class:`~answer_eval.errors.CalibrationFileError`, naming why), or a cascade's grader
            other than the one its LLM level was calibrated with.
        """
        super().__init__(options)
        self.judge = AnswerJudge(
            not_found_label=self.options.not_found_label,
            extra_not_found_phrases=self.options.extra_not_found_phrases,
        )
        self.user_calibration = load_user_calibration(self.options)
        if self.user_calibration is not None:
            self.options.remember_calibration(self.user_calibration.to_dict())
        if generator is not None and self.options.escalate_model is not None:
            raise ValueError("give a chat generator or escalate_model, not both")
        panel = check_panel("escalate_to", generator, check_generator) if isinstance(generator, list | tuple) else None
        generator = generator if panel is None else panel[0]  # a jury's first: its options and trust, with an LLM
        self.generator = generator
        if generator is not None and self.options.cache_path is not None:
            check_cacheable(generator)  # now, as a panel's callers are checked: its caller is made at warm-up
        self.escalating = generator is not None or self.options.escalate_model is not None
        for name in ("cache_path", "max_calls", "structured"):
            given = getattr(self.options, name)
            if given is not None and given != "auto" and not self.escalating:
                # A budget, a cache or a format without an LLM is a mistake (it would do nothing): said, not ignored.
                raise OptionError(name, "is the escalation's: it needs --escalate-model (the component: escalate_to)")
        grader = self.grader(panel or ([] if generator is None else [generator])) if self.escalating else None
        self.trust: Trust = choose_trust(self.options, self.user_calibration, self.escalating, grader)
        self.caller: ChatCaller | None = None
        self.structured: StructuredOutput | None = None  # what the server refused, kept for the whole run
        self.budget: Budget | None = None  # the whole file's: max_calls bounds the run, not a batch
        self._spent_before = 0  # requests of the rows a --resume keeps
        self.sent = Usage()  # this process's requests, of every batch: did any reach the server?
        # A jury of generators is made now; of servers, at warm-up (their keys are read then).
        self.jury = None if panel is None else EscalationJury(self.options, panel)
        self.panel_size = len(panel or self.options.judges()) or 1
        if self.escalating:
            self.local_only = "its escalation's cost is the LLM's, not the CPU's; raise --concurrency instead"
            self.batch_rows = self.options.batch_rows()

    def grader(self, generators: Sequence[Any]) -> dict[str, Any]:
        """The escalation's grader signature: ``escalate_model``'s server, or the generators given.

        Each generator's generation options are in it (headers and secrets by name only): a changed
        temperature changes the grader, as a changed model does.
        """
        from answer_eval.evaluators.judge.escalation import grader_signature
        from answer_eval.llm.generators import shown_generator, without_credentials

        judges = self.options.judges()
        if not generators and judges:
            servers = [without_credentials(url) for _, url, _ in judges]
            return grader_signature([model for model, _, _ in judges], servers, self.options.structured)
        if not generators:
            url = self.options.api_base_url
            server = without_credentials(url[0] if isinstance(url, tuple) else url)  # a tuple: judges() took it
            return grader_signature([self.options.escalate_model], [server], self.options.structured)
        shown = [shown_generator(generator) for generator in generators]
        models, servers = [one["model"] for one in shown], [one["api_base_url"] for one in shown]
        return grader_signature(models, servers, self.options.structured, [_generation(one) for one in shown])

    def dask_refusal(self) -> str | None:
        """An escalating judge runs on Dask as locally (each worker its own requests); a budget or cache is refused.

        So is one given chat generators: a plan carries options, and generators are objects (name the servers).
        """
        if self.generator is not None:
            return "its chat generators are objects a Dask plan cannot carry: name the servers (escalate_model)"
        return self.options.dask_refusal() if self.escalating else None

    def files_written(self) -> dict[str, str]:
        """The escalation's reply cache (``--cache``): the file driver keeps it apart from the input and the output."""
        cache = self.options.cache_path
        return {cache: "the reply cache, --cache"} if cache is not None and self.escalating else {}

    def files_read(self) -> dict[str, str]:
        """The calibration file (``--calibration``): the file driver keeps the output from replacing it."""
        calibration = self.options.calibration
        return {calibration: "the calibration, --calibration"} if isinstance(calibration, str) else {}

    def plan_options(self) -> dict[str, Any]:
        """The options as a Dask plan carries them: the calibration as the content read here, not a path."""
        options = self.options.to_dict()
        if self.user_calibration is not None:
            options["calibration"] = self.user_calibration.to_dict()
        return options

    def warm_up(self) -> None:
        """Make the escalation's caller and open its cache: a cache that cannot serve stops here, before any request.

        A jury's judges are warmed up too (its first caller, a server jury's, provides the event loop).
        """
        if self.escalating and self.caller is None:
            self.caller = self._make_caller()
            self.structured = StructuredOutput(self.options.structured, self.caller.generator)
            self.budget = self.caller.new_budget()
            self.budget.resume(self._spent_before)
        if self.jury is not None:
            self.jury.warm_up()

    def _server_jury(self) -> EscalationJury:
        """The jury of the servers ``escalate_model`` names, each judge's key read now; the first one's cache shared."""
        from answer_eval.llm.caller_setup import openai_caller

        callers = []
        for at, (model, url, key) in enumerate(self.options.judges()):
            limits = self.options if at == 0 else replace(self.options, cache_path=None)
            callers.append(openai_caller(model=model, api_base_url=url, api_key_env=key, limits=limits))
        for caller in callers[1:]:
            caller.cache = callers[0].cache  # one file, one object: its lock orders every judge's writes
        return EscalationJury(self.options, [caller.generator for caller in callers], callers)

    def _make_caller(self) -> ChatCaller:
        options = self.options
        if options.judges():
            self.jury = self._server_jury()
            return self.jury.callers[0]
        if self.generator is None:
            from answer_eval.llm.caller_setup import openai_caller

            url, key = options.api_base_url, options.api_key_env
            assert not isinstance(url, tuple)  # a jury's: _server_jury
            assert not isinstance(key, tuple)
            return openai_caller(
                model=str(options.escalate_model),
                api_base_url=url,
                api_key_env=key,
                limits=options,
            )
        # One reply per answer: how several samples would be drawn does not matter here.
        caller = options.caller(self.generator)
        if caller.cache is not None:
            caller.cache.open()
        if callable(getattr(self.generator, "warm_up", None)):
            self.generator.warm_up()
        return caller

    def resumed(self, summary: Any) -> None:
        """A ``--resume`` kept rows whose requests ``summary`` counts: they are spent from ``max_calls``."""
        self._spent_before = max(self._spent_before, int(getattr(summary, "calls", 0) or 0))
        if self.budget is not None:
            self.budget.resume(self._spent_before)

    def outputs(self) -> dict[str, str]:
        """The verdict, its confidence and acceptance (4 decimals), the deciding stage, evidence, kind, outcome.

        With a threshold and no LLM, ``abstained``; with an LLM, ``escalated`` and what the LLM said.
        """
        if self.escalating:
            jury = {"llm_judge_verdicts": "object"} if self.panel_size > 1 else {}
            return {**_PLAIN, **_ESCALATED, **(_CASCADE if self.trust.cascade else {}), **jury}
        if self.trust.threshold is not None:
            return {**_PLAIN, "abstained": "bool"}
        return dict(_PLAIN)

    def output_sockets(self) -> dict[str, Socket]:
        """The component's sockets this judge fills: ``llm_*`` need an LLM, ``abstained`` a threshold (a cascade's too).

        ``failure_counts`` last, as it always was (docs/answer-judge.md).
        """
        trust = self.trust
        more = _ESCALATING_SOCKETS if self.escalating else _ABSTAINING_SOCKETS if trust.threshold is not None else {}
        cascade = _CASCADING_SOCKETS if trust.cascade else {}
        return {**_PLAIN_SOCKETS, **more, **cascade, "failure_counts": Socket(dict[str, int])}

    def verdicts(self, answers: Sequence[Any], predictions: Sequence[Any], questions: Any) -> list[JudgeVerdict]:
        """The judge's verdicts, as the user's calibration makes them (``TypeError``/``ValueError`` for bad inputs)."""
        verdicts = self.judge.judge_batch(answers, predictions, questions)
        if self.user_calibration is not None:
            verdicts = self.user_calibration.apply(verdicts)
        return verdicts

    def escalation(
        self, verdicts: Sequence[JudgeVerdict], answers: Sequence[Any], predictions: Sequence[Any], questions: Any
    ) -> tuple[list[bool], Chosen | None]:
        """Which verdicts are not trusted, and the answers to ask the LLM about (``None`` when nothing is sent)."""
        unsure = self.trust.unsure([verdict.confidence for verdict in verdicts])
        if not self.escalating or not any(unsure):
            return unsure, None
        self.warm_up()
        chosen = [index for index, flag in enumerate(unsure) if flag]
        asked = [None if questions is None else questions[index] for index in chosen]
        return unsure, (asked, [answers[index] for index in chosen], [predictions[index] for index in chosen])

    def run(self, inputs: Mapping[str, Sequence[Any]], bar: Bar | None = None) -> Judged:
        """One run's verdicts and escalation within a budget of its own (a component's: ``max_calls`` bounds a run).

        :param bar: Given the requests the escalation sends when nothing fails (an answer per judge), a
            context that gives what to call as each is done (a progress bar), or ``None``.
        """
        verdicts, unsure, chosen = self._plan(inputs)
        if chosen is None or self.caller is None:
            return verdicts, unsure, [], Usage(), []
        with _progress(bar, sum(unsure) * self.panel_size) as progress:
            if self.jury is not None:
                return verdicts, unsure, *self.jury.run_sync(*_text_questions(chosen), progress)
            asked, usage = self.caller.run_sync(self._work(chosen), progress=progress)
        return verdicts, unsure, asked, usage, [[verdict.correct] for verdict in asked]

    async def run_async(self, inputs: Mapping[str, Sequence[Any]], bar: Bar | None = None) -> Judged:
        """As :meth:`run`, the escalation awaited in the running event loop."""
        verdicts, unsure, chosen = self._plan(inputs)
        if chosen is None or self.caller is None:
            return verdicts, unsure, [], Usage(), []
        with _progress(bar, sum(unsure) * self.panel_size) as progress:
            if self.jury is not None:
                return verdicts, unsure, *await self.jury.check(*_text_questions(chosen), progress)
            asked, usage = await self.caller.run_async(self._work(chosen), progress=progress)
        return verdicts, unsure, asked, usage, [[verdict.correct] for verdict in asked]

    def _plan(self, inputs: Mapping[str, Sequence[Any]]) -> tuple[list[JudgeVerdict], list[bool], Chosen | None]:
        answers, predictions, questions = inputs["answers"], inputs["prediction"], inputs.get("question")
        verdicts = self.verdicts(answers, predictions, questions)
        return verdicts, *self.escalation(verdicts, answers, predictions, questions)

    def _work(self, chosen: Chosen) -> Work:
        caller, structured = self.caller, self.structured
        assert caller is not None
        return lambda: check_answers(caller, *chosen, structured)

    def agreement(self, per_judge: Sequence[Sequence[bool | None]]) -> dict[str, Any] | None:
        """A jury's Fleiss' kappa over the escalated answers every judge gave a verdict on (``None``: one LLM)."""
        return None if self.panel_size == 1 else verdicts_agreement(per_judge)

    def decided(
        self,
        verdicts: Sequence[JudgeVerdict],
        unsure: Sequence[bool],
        asked: Sequence[LLMVerdict],
        per_judge: Sequence[Sequence[bool | None]] = (),
    ) -> Columns:
        """The columns after trust: the plain judge's, with ``abstained``, or with the LLM's verdicts put in.

        A jury's hold ``llm_judge_verdicts`` too (:func:`per_answer` of ``per_judge``, each judge's verdicts).
        """
        columns: Columns = {
            "correct": [verdict.correct for verdict in verdicts],
            "confidence": [round(verdict.confidence, 4) for verdict in verdicts],
            "acceptance": [round(verdict.acceptance, 4) for verdict in verdicts],
            "stage": [verdict.stage for verdict in verdicts],
            "evidence": [verdict.evidence for verdict in verdicts],
            "failure_kind": [verdict.failure_kind for verdict in verdicts],
            "outcome": [verdict.outcome for verdict in verdicts],
        }
        if not self.escalating:
            if self.trust.threshold is not None:
                columns["abstained"] = list(unsure)
            return columns
        merged = merge_verdicts(verdicts, unsure, asked)
        calls = iter([answer.cost.calls for answer in asked])
        columns.update(
            correct=[bool(score) for score in merged.scores],
            stage=list(merged.stages),
            evidence=list(merged.evidence),
            failure_kind=list(merged.failure_kinds),
            escalated=list(merged.escalated),
            llm_verdict=list(merged.llm_verdicts),
            llm_explanation=list(merged.llm_explanations),
            llm_failure=list(merged.llm_failures),
            calls=[next(calls) if flag else 0 for flag in unsure],
        )
        if self.trust.cascade:
            self._cascade(columns, verdicts, unsure, asked)
        if self.panel_size > 1:
            columns["llm_judge_verdicts"] = per_answer(unsure, per_judge)
        return columns

    def _cascade(
        self, columns: Columns, verdicts: Sequence[JudgeVerdict], unsure: Sequence[bool], asked: Sequence[LLMVerdict]
    ) -> None:
        """The LLM level: an LLM verdict under its threshold, or none, is abstained and the judge's verdict stays."""
        answers = iter(asked)
        abstained: list[bool] = []
        confidences: list[float | None] = []
        tokens: list[int] = []
        for index, (verdict, flag) in enumerate(zip(verdicts, unsure, strict=True)):
            answer = next(answers) if flag else None
            kept = answer is None or (answer.correct is not None and self.trust.llm_keeps(answer.confidence))
            abstained.append(not kept)
            confidences.append(None if answer is None or answer.correct is None else round(answer.confidence, 4))
            tokens.append(0 if answer is None else answer.cost.prompt_tokens + answer.cost.completion_tokens)
            if not kept:  # not trusted: a person decides; the LLM's verdict stays in llm_verdict for them
                columns["correct"][index], columns["stage"][index] = verdict.correct, verdict.stage
                columns["evidence"][index], columns["failure_kind"][index] = verdict.evidence, verdict.failure_kind
        columns.update(abstained=abstained, llm_confidence=confidences, tokens=tokens)

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Judge a batch (and escalate its untrusted verdicts); a question that is not a string counts as none."""
        answers, predictions = inputs["answers"], inputs["prediction"]
        given = inputs.get("question")
        questions = None if given is None else [value if isinstance(value, str) else None for value in given]
        try:
            verdicts = self.verdicts(answers, predictions, questions)
        except (TypeError, ValueError) as exc:
            raise locate_bad_answers(answers, exc) from None
        unsure, chosen = self.escalation(verdicts, answers, predictions, questions)
        if chosen is None:
            return self.decided(verdicts, unsure, [])
        if self.options.escalate_model is None:  # a component's: its run keeps what was answered (_base)
            return self.decided(verdicts, unsure, *self._escalate(chosen))
        from answer_eval.llm.caller_setup import unavailable_advice

        keys = self.options.api_key_env
        key = keys[0] if isinstance(keys, tuple) else keys  # a jury's: the first judge's variable named
        try:
            with keeping_answered() as kept:
                asked, per_judge = self._escalate(chosen)
        except GraderUnavailable as exc:
            # The file driver says which rows were kept and how to resume (only when some were).
            raise RowsKept(f"{exc}{unavailable_advice(exc, key, '--escalate-model')}") from None
        columns = self.decided(verdicts, unsure, asked, per_judge)
        if kept.stop is not None:
            # Stopped once some were answered: the rows before the first escalation that failed are written and
            # kept (their paid verdicts with them); the rest are asked again by --resume.
            failures = columns["llm_failure"]
            done = next((at for at, failure in enumerate(failures) if failure == FailureKind.ERROR), len(failures))
            advice = unavailable_advice(kept.stop, key, "--escalate-model")
            raise StoppedAfter(f"{kept.stop}{advice}", done, columns)
        return columns

    def _escalate(self, chosen: Chosen) -> tuple[list[LLMVerdict], list[list[bool | None]]]:
        """The LLM's verdicts on the chosen answers, within the file's budget (a jury: whole panels of what is left)."""
        assert self.caller is not None
        assert self.budget is not None
        budget = self.budget
        if self.jury is None:
            asked, usage = self.caller.run_sync(self._work(chosen), budget)
            per_judge: list[list[bool | None]] = []
        else:
            panel = self.jury.new_budget(None if budget.max_calls is None else max(0, budget.max_calls - budget.sent))
            try:
                asked, usage, per_judge = self.jury.run_sync(*_text_questions(chosen), None, panel)
            finally:
                budget.resume(budget.sent + panel.sent)
        self.sent.calls += usage.calls
        self.sent.unreachable += usage.unreachable
        return list(asked), per_judge

    def new_summary(self) -> FileSummary:
        """Right answers, failure kinds, deciding stages; with a threshold, what it kept, abstained, escalated."""
        if self.trust.threshold is None:
            return FileSummary(stages={})
        judges = self.panel_size if self.panel_size > 1 else 0
        return JudgeSummary(stages={}, trust=self.trust.as_dict(), escalating=self.escalating, judges=judges)

    def run_failure(self, summary: Any) -> str | None:
        """With escalation: every request got no answer (a dead server), or the LLM gave no verdict on any row sent.

        The judge's own verdicts stand in the output either way; the command line exits 3 all the
        same, because the run is not the one asked for.
        """
        if not self.escalating:
            return None
        from answer_eval.llm.generators import without_credentials

        url = self.options.api_base_url
        url = url[0] if isinstance(url, tuple) else url  # a jury's: the first judge's server named
        unheard = unanswered(self.sent, str(without_credentials(url)) if url else "OpenAI's API")
        escalated, heard = getattr(summary, "escalated", 0), getattr(summary, "llm_verdicts", 0)
        if unheard is not None or not escalated or heard:
            return unheard
        failures = getattr(summary, "llm_failures", {})
        kinds = ", ".join(f"{kind} {number}" for kind, number in sorted(failures.items()) if number)
        rows = "the 1 row" if escalated == 1 else f"any of the {escalated:,} rows"
        return f"the LLM gave no verdict on {rows} escalated ({kinds}); the judge's own verdicts stand in the output"
