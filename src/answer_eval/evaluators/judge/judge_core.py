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

An escalating judge runs in one process (``local_only``: no ``--jobs``, no Dask), scores 16 rows
a call (an interrupt holds few paid replies unwritten), and ``max_calls`` bounds the whole file,
across ``--resume`` (:meth:`AnswerJudgeCore.resumed`).

The summary of ``answer-eval judge`` with trust: the threshold, what it kept, abstained or escalated,
and the cost. A plain judge's summary is :class:`~answer_eval.evaluators.summaries.FileSummary` with its stages;
with a threshold (``--target-agreement``, ``--escalate-below``, ``--escalate-model``) it is a
:class:`JudgeSummary`: the same figures, then the threshold and where it was chosen, the agreement
promised, the rows kept (trusted) and abstained, and with an LLM the rows escalated, the LLM's
verdicts and failures and the requests spent. A cascade (an LLM level in the calibration) says
the share decided by the judge, by the LLM and left for a person, the requests and tokens, and the
agreement promised over every kept verdict with its delta. Counts only, so Dask's partitions add up exactly and
``--resume`` restores them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_eval.errors import OptionError, RowsKept, StoppedAfter
from answer_eval.evaluators.base import Columns, Evaluator, Role, Socket
from answer_eval.evaluators.contains import ANSWERS, PREDICTION, locate_bad_answers
from answer_eval.evaluators.judge.cascade import AnswerJudge, JudgeVerdict
from answer_eval.evaluators.judge.escalation import LLMVerdict, check_answers, merge_verdicts
from answer_eval.evaluators.judge.judge_options import JudgeOptions
from answer_eval.evaluators.judge.trust import Trust, choose_trust
from answer_eval.evaluators.judge.user_calibration import load_user_calibration
from answer_eval.evaluators.summaries import FileSummary, add_kinds, count_of
from answer_eval.failure_kinds import FailureKind
from answer_eval.llm.calls import Budget, ChatCaller, GraderUnavailable, Usage
from answer_eval.llm.draws import unanswered
from answer_eval.llm.generators import check_cacheable
from answer_eval.llm.pacing import keeping_answered
from answer_eval.llm.structured import StructuredOutput

__all__ = ["AnswerJudgeCore", "JudgeOptions", "JudgeSummary"]


_COUNTED = ("abstained", "escalated", "llm_verdict", "llm_failure", "calls", "tokens")
_WHERE = {
    "yours": "chosen on your calibration",
    "shipped": "chosen on the shipped calibration",
    "given": "given",
    "default": "the default with an LLM",
}


@dataclass
class JudgeSummary(FileSummary):
    """A judge's figures with its threshold (see the module docstring).

    :param trust: The threshold's figures (:meth:`~answer_eval.evaluators.judge.trust.Trust.as_dict`).
    :param escalating: Whether the untrusted verdicts go to an LLM (else they are abstained).
    :param abstained: Rows whose verdict was not trusted and not escalated.
    :param escalated: Rows sent to the LLM.
    :param llm_verdicts: Escalated rows the LLM gave a verdict on.
    :param llm_failures: Why the LLM gave none, kind to count.
    :param calls: Requests sent to the LLM.
    :param tokens: Tokens (prompt and completion) the LLM reported, counted in a cascade.
    """

    trust: Mapping[str, Any] = field(default_factory=dict)
    escalating: bool = False
    abstained: int = 0
    escalated: int = 0
    llm_verdicts: int = 0
    llm_failures: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    tokens: int = 0

    @property
    def cascade(self) -> bool:
        """Whether the LLM's verdicts pass a threshold of their own (abstained rows are escalated ones)."""
        return bool(self.trust.get("cascade"))

    def output_columns(self, names: Sequence[str]) -> list[str]:
        """The plain judge's columns and the trust columns (not the LLM's long explanation)."""
        plain = super().output_columns(names)
        return [name for name in names if name in plain or name in _COUNTED]

    def add_rows(self, inputs: Mapping[str, Sequence[Any]], outputs: Mapping[str, Sequence[Any]]) -> None:
        """Count the plain judge's columns, then those of trust."""
        super().add_rows(inputs, outputs)
        self.abstained += sum(map(bool, outputs.get("abstained", ())))
        if not self.escalating:
            return
        self.escalated += sum(map(bool, outputs["escalated"]))
        self.llm_verdicts += sum(1 for verdict in outputs["llm_verdict"] if verdict is not None)
        for kind in outputs["llm_failure"]:
            if kind is not None:
                self.llm_failures[kind] = self.llm_failures.get(kind, 0) + 1
        self.calls += sum(value or 0 for value in outputs["calls"])
        self.tokens += sum(value or 0 for value in outputs.get("tokens", ()))

    def merge(self, other: Any) -> None:
        """Add another summary's rows."""
        super().merge(other)
        self.abstained += other.abstained
        self.escalated += other.escalated
        self.llm_verdicts += other.llm_verdicts
        add_kinds(self.llm_failures, other.llm_failures)
        self.calls += other.calls
        self.tokens += other.tokens

    @property
    def kept(self) -> int:
        """Rows the judge decided, trusted (neither abstained nor escalated; a cascade abstains escalated ones)."""
        return self.items - self.escalated - (0 if self.cascade else self.abstained)

    def counts(self) -> dict[str, Any]:
        """The plain judge's figures, the threshold's, and the rows kept, abstained and escalated."""
        data = super().counts()
        data.update(
            selection=dict(self.trust),
            promised_agreement=self.promised,
            kept=self.kept,
            kept_share=self.kept / self.items if self.items else 0.0,
            abstained=self.abstained,
        )
        if self.escalating:
            data.update(
                escalated=self.escalated,
                llm_verdicts=self.llm_verdicts,
                llm_failures=dict(self.llm_failures),
                calls=self.calls,
            )
        if self.cascade:
            data["cascade"] = self._decided()
        return data

    def _decided(self) -> dict[str, Any]:
        """A cascade's rows decided by the judge, by the LLM, left for a person (counts and shares); its cost."""
        counts = {"judge": self.kept, "llm": self.escalated - self.abstained, "person": self.abstained}
        shares = {f"{name}_share": number / self.items if self.items else 0.0 for name, number in counts.items()}
        promise = {"promised_agreement": self.promised, "delta": self.trust.get("delta")}
        return {**counts, **shares, "calls": self.calls, "tokens": self.tokens, **promise}

    @property
    def promised(self) -> float | None:
        """The agreement promised for the kept verdicts (``None``: none promised; a cascade's when a level keeps)."""
        met = self.trust.get("guarantee_met") or (self.cascade and self.trust.get("llm_guarantee_met"))
        return self.trust.get("target_agreement") if met else None

    def lines(self, command: str) -> list[str]:
        """The plain judge's lines, then the threshold, the promise and the rows kept, abstained, escalated."""
        lines = super().lines(command)
        trust = self.trust
        threshold = trust.get("threshold")
        # In a cascade the LLM's level may still keep verdicts when the judge's keeps none.
        none = "none passes: the judge keeps none" if self.cascade else "none passes: no verdict is kept"
        shown = none if threshold is None else f"{threshold:.4f}"
        lines.append(f"  threshold        {shown} ({_WHERE.get(trust.get('source') or '', 'given')})")
        if self.cascade:
            return [*lines, *self._cascade_lines()]
        if "target_agreement" in trust:
            lines.append(self._promise_line())
        share = self.kept / self.items if self.items else 0.0
        lines.append(f"  kept             {self.kept} of {self.items} ({share:.4f})")
        lines.append(f"  abstained        {self.abstained}")
        if self.escalating:
            lines.append(f"  escalated        {self.escalated} (LLM verdicts {self.llm_verdicts})")
            lines.extend(self._failures_lines())
            lines.append(f"  calls            {self.calls}")
        return lines

    def _cascade_lines(self) -> list[str]:
        trust, decided = self.trust, self._decided()
        llm = trust.get("llm_threshold")
        lines = [
            f"  llm threshold    {'none passes: no LLM verdict is kept' if llm is None else f'{llm:.4f}'} "
            f"(the cascade: each level chosen at delta {trust['level_delta']:g} on your calibration)",
        ]
        target, delta = trust["target_agreement"], trust["delta"]
        if self.promised is None:
            lines.append(f"  promised         nothing: neither level reaches {target:g} at delta {delta:g}")
        else:
            lines.append(
                f"  promised         agreement >= {target:g} over every kept verdict (judge and LLM) with "
                f"probability >= {1 - delta:g}"
            )
        for name, words in (("judge", "by the judge"), ("llm", "by the LLM"), ("person", "for a person")):
            lines.append(f"  {words:<17}{decided[name]} of {self.items} ({decided[name + '_share']:.4f})")
        lines.extend(self._failures_lines())
        lines.append(f"  calls            {self.calls} ({self.tokens} tokens)")
        return lines

    def _failures_lines(self) -> list[str]:
        if not self.llm_failures:
            return []
        failures = ", ".join(f"{kind} {number}" for kind, number in sorted(self.llm_failures.items()))
        return [f"  llm failures     {failures}"]

    def _promise_line(self) -> str:
        trust = self.trust
        target, delta = trust["target_agreement"], trust["delta"]
        if not trust.get("guarantee_met"):
            return f"  promised         nothing: no threshold reaches {target:g} at delta {delta:g}"
        kept = trust.get("calibration_kept_share", 0.0)
        return (
            f"  promised         agreement >= {target:g} with probability >= {1 - delta:g} "
            f"(kept {kept:.4f} of {trust.get('calibration_answers')} calibration answers)"
        )

    def state(self) -> dict[str, Any]:
        """The plain judge's counts and trust's."""
        return {
            **super().state(),
            "abstained": self.abstained,
            "escalated": self.escalated,
            "llm_verdicts": self.llm_verdicts,
            "llm_failures": self.llm_failures,
            "calls": self.calls,
            "tokens": self.tokens,
        }

    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""
        super().load(state)
        self.abstained, self.escalated = count_of(state["abstained"]), count_of(state["escalated"])
        self.llm_verdicts, self.calls = count_of(state["llm_verdicts"]), count_of(state["calls"])
        self.tokens = count_of(state.get("tokens", 0))  # a checkpoint written before tokens were counted
        self.llm_failures = {str(kind): count_of(number) for kind, number in dict(state["llm_failures"]).items()}


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

    def __init__(
        self, options: JudgeOptions | None = None, generator: Any = None, panel: Sequence[Any] | None = None
    ) -> None:
        """Make the judge: its model and the user's calibration are read now, the threshold chosen.

        :param options: The options (default: the defaults).
        :param generator: A Haystack chat generator to escalate to (the component's ``escalate_to``),
            instead of the server ``escalate_model`` names.
        :param panel: A jury's generators (``generator`` its first): the grader a cascade's LLM level must match.
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
        if self.escalating:
            self.local_only = "its escalation's cost is the LLM's, not the CPU's; raise --concurrency instead"
            self.batch_rows = self.options.batch_rows()

    def grader(self, generators: Sequence[Any]) -> dict[str, Any]:
        """The escalation's grader signature: ``escalate_model``'s server, or the generators given.

        Each generator's generation options are in it (headers and secrets by name only): a changed
        temperature changes the grader, as a changed model does.
        """
        from answer_eval.evaluators.judge.escalation import grader_signature
        from answer_eval.llm.generators import shown_generator
        from answer_eval.llm.secrets import without_credentials

        if not generators:
            server = without_credentials(self.options.api_base_url)
            return grader_signature([self.options.escalate_model], [server], self.options.structured)
        shown = [shown_generator(generator) for generator in generators]
        models, servers = [one["model"] for one in shown], [one["api_base_url"] for one in shown]
        return grader_signature(models, servers, self.options.structured, [_generation(one) for one in shown])

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
        """Make the escalation's caller and open its cache: a cache that cannot serve stops here, before any request."""
        if self.escalating and self.caller is None:
            self.caller = self._make_caller()
            self.structured = StructuredOutput(self.options.structured, self.caller.generator)
            self.budget = self.caller.new_budget()
            self.budget.resume(self._spent_before)

    def _make_caller(self) -> ChatCaller:
        options = self.options
        if self.generator is None:
            from answer_eval.llm.servers import openai_caller

            return openai_caller(
                model=str(options.escalate_model),
                api_base_url=options.api_base_url,
                api_key_env=options.api_key_env,
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
            return {**_PLAIN, **_ESCALATED, **(_CASCADE if self.trust.cascade else {})}
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
    ) -> tuple[list[bool], Work | None]:
        """Which verdicts are not trusted, and the LLM's work on them (``None`` when nothing is sent)."""
        unsure = self.trust.unsure([verdict.confidence for verdict in verdicts])
        if not self.escalating or not any(unsure):
            return unsure, None
        self.warm_up()
        caller = self.caller
        assert caller is not None
        chosen = [index for index, flag in enumerate(unsure) if flag]
        asked = [None if questions is None else questions[index] for index in chosen]
        golds, candidates = [answers[index] for index in chosen], [predictions[index] for index in chosen]
        structured = self.structured
        return unsure, lambda: check_answers(caller, asked, golds, candidates, structured)

    def decided(self, verdicts: Sequence[JudgeVerdict], unsure: Sequence[bool], asked: Sequence[LLMVerdict]) -> Columns:
        """The columns after trust: the plain judge's, with ``abstained``, or with the LLM's verdicts put in."""
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
        unsure, work = self.escalation(verdicts, answers, predictions, questions)
        if work is None:
            return self.decided(verdicts, unsure, [])
        if self.options.escalate_model is None:  # a component's: its run keeps what was answered (_base)
            return self.decided(verdicts, unsure, self._escalate(work))
        from answer_eval.llm.servers import unavailable_advice

        try:
            with keeping_answered() as kept:
                asked = self._escalate(work)
        except GraderUnavailable as exc:
            advice = unavailable_advice(exc, self.options.api_key_env, "--escalate-model")
            # The file driver says which rows were kept and how to resume (only when some were).
            raise RowsKept(f"{exc}{advice}") from None
        columns = self.decided(verdicts, unsure, asked)
        if kept.stop is not None:
            # Stopped once some were answered: the rows before the first escalation that failed are written and
            # kept (their paid verdicts with them); the rest are asked again by --resume.
            failures = columns["llm_failure"]
            done = next((at for at, failure in enumerate(failures) if failure == FailureKind.ERROR), len(failures))
            advice = unavailable_advice(kept.stop, self.options.api_key_env, "--escalate-model")
            raise StoppedAfter(f"{kept.stop}{advice}", done, columns)
        return columns

    def _escalate(self, work: Any) -> list[LLMVerdict]:
        assert self.caller is not None
        asked, usage = self.caller.run_sync(work, self.budget)
        self.sent.calls += usage.calls
        self.sent.unreachable += usage.unreachable
        return list(asked)

    def new_summary(self) -> FileSummary:
        """Right answers, failure kinds, deciding stages; with a threshold, what it kept, abstained, escalated."""
        if self.trust.threshold is None:
            return FileSummary(stages={})
        return JudgeSummary(stages={}, trust=self.trust.as_dict(), escalating=self.escalating)

    def run_failure(self, summary: Any) -> str | None:
        """With escalation: every request got no answer (a dead server), or the LLM gave no verdict on any row sent.

        The judge's own verdicts stand in the output either way; the command line exits 3 all the
        same, because the run is not the one asked for.
        """
        if not self.escalating:
            return None
        from answer_eval.llm.secrets import without_credentials

        url = self.options.api_base_url
        unheard = unanswered(self.sent, str(without_credentials(url)) if url else "OpenAI's API")
        escalated, heard = getattr(summary, "escalated", 0), getattr(summary, "llm_verdicts", 0)
        if unheard is not None or not escalated or heard:
            return unheard
        failures = getattr(summary, "llm_failures", {})
        kinds = ", ".join(f"{kind} {number}" for kind, number in sorted(failures.items()) if number)
        rows = "the 1 row" if escalated == 1 else f"any of the {escalated:,} rows"
        return f"the LLM gave no verdict on {rows} escalated ({kinds}); the judge's own verdicts stand in the output"
