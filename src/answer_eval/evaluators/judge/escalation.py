"""The judge's escalation to an LLM: answers below a confidence threshold go to an LLM (or a jury) correctness check.

The judge's ``confidence`` is the probability that a person agrees with its verdict. Answers it
is sure of keep its verdict; the others are sent to an LLM grader (question, acceptable
answers, candidate) whose yes or no replaces the judge's verdict, so most answers cost nothing
and the hard ones get the stronger grader. The threshold is given (``escalate_below``) or chosen
for a target agreement with people (:mod:`answer_eval.evaluators.judge.guarantee`). An LLM that
fails on an answer (error, refusal, budget, unreadable reply) leaves the judge's verdict in place,
with the failure reported. The reply is read knowing the question, the acceptable answers and the
candidate it was shown, so a verdict it only quotes from the candidate is not the LLM's
(:mod:`answer_eval.llm.replies`); an unreadable reply's explanation says why it was not read.

Structured output (``structured``, as the rubric graders': :mod:`answer_eval.llm.caller_setup`): by
default (``auto``) an OpenAI-compatible server is asked for the verdict's JSON schema
(:func:`~answer_eval.llm.caller_setup.verdict_schema`: ``explanation``, then ``correct``, a boolean),
then ``json_object``, then the prompt alone, each after the server refused the one before. The reply
is read as any reply is, structured or not.

The escalation to a jury (:class:`EscalationJury`): several LLMs check each unsure answer, and the
majority of their verdicts decides. Each judge of the panel is asked the correctness check above
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

The cascade's LLM level (:class:`LLMLevel`): judge, then LLM, then a person, under one promise (Jung et
al. 2024, cascaded selection). Why: the judge alone keeps only the verdicts it is sure enough of for the
target agreement; the rest go to a person. An LLM grader decides many of those well, but not every one:
the cascade keeps an LLM verdict only when the LLM is sure enough of it, and that too is chosen on the
user's labels.

How, for a target agreement ``a`` and a risk ``delta`` (:func:`cascade_thresholds`):

1. The judge's threshold ``t_J`` is chosen at ``delta / 2`` on the judge's calibration answers
   (:func:`~answer_eval.evaluators.judge.guarantee.choose_threshold`).
2. The LLM's threshold ``t_L`` is chosen at ``delta / 2`` on the labelled answers the judge does not
   keep (judge confidence ``< t_J``), each with the LLM's verdict confidence
   (:attr:`LLMVerdict.confidence`) and whether the person
   agrees with the LLM's verdict, clustered by question as the judge's are.
3. At run time a verdict with confidence ``>= t_J`` is the judge's; below, the LLM is asked and its
   verdict kept when its confidence is ``>= t_L``; else the answer is ``abstained`` (for a person).

The promise: each kept level agrees ``>= a`` with probability ``>= 1 - delta / 2``, so all kept
verdicts together (a mixture of sets that each agree ``>= a``) agree ``>= a`` with probability
``>= 1 - delta`` (union bound). Caveat: ``t_J`` is chosen on the same labels that define the LLM's
calibration subset, so the LLM level's answers are not a fresh draw given ``t_J``.

One LLM with one reply has confidence 1.0 on every verdict: its level keeps every escalated verdict
or none. A jury's majority share (2 of 3: 0.667) lets the level keep the unanimous ones only.

The calibration file holds the LLM level as its ``escalation`` object (:class:`LLMLevel`): the
grader's signature (:func:`grader_signature`: models, servers without credentials, structured
output, prompt version; never a key), and each labelled answer the LLM graded as ``[llm_conf_edge,
agreed, question, judge_bin]``, with ``asked`` (the answers below ``judge_below`` it was asked on)
and ``not_graded`` (of them, those without a verdict: failures, a budget stop; calibrate sends the
answers in a seeded random order, so a budget stop leaves a uniformly random subset graded), and,
optionally, ``highest_target`` and ``delta`` (what calibrate was asked: a refusal names them).
Standard library only.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from answer_eval.errors import CalibrationFileError, FailureKind
from answer_eval.evaluators.judge.calibration import GRID_STEPS, MAX_ANSWER_ROWS, Calibration, grid_index
from answer_eval.evaluators.judge.guarantee import Selection, choose_threshold
from answer_eval.inputs.reading import read_output
from answer_eval.llm.caller_setup import StructuredOutput, verdict_schema
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.grading import Cost, Draw
from answer_eval.llm.jury import PanelBudget, run_panel, sum_usage, unfinished_panel
from answer_eval.llm.replies import read_yes_no, refused
from answer_eval.llm.rubric_prompts import correctness_messages, correctness_words
from answer_eval.llm.spending import Budget, Usage
from answer_eval.llm.stated_verdicts import Read, Shown
from answer_eval.stats.rater_agreement import fleiss_kappa
from answer_eval.stats.written_numbers import rounded

if TYPE_CHECKING:  # only an annotation: the options import the user calibration, which imports this module
    from answer_eval.evaluators.judge.judge_options import JudgeOptions

__all__ = [
    "Cascade",
    "Escalation",
    "EscalationJury",
    "LLMLevel",
    "LLMVerdict",
    "cascade_thresholds",
    "check_answers",
    "check_grader",
    "grader_signature",
    "judge_bin_of",
    "merge_verdicts",
    "needs_escalation",
    "verdicts_agreement",
    "yes_no_reader",
]


@dataclass(frozen=True)
class LLMVerdict:
    """What the LLM said of one escalated answer.

    :param correct: Its verdict; ``None`` when it gave none.
    :param explanation: Its reply (or reasoning, from a JSON reply); a reply that could not be read
        comes after why (``reply not read (two verdicts, ...): <the reply>``).
    :param failure_kind: ``None``, or why there is no verdict (``error``, ``refusal``, ``budget_stop``...).
    :param cost: The requests and tokens spent.
    :param confidence: How sure the LLM is of ``correct``, the LLM level of the cascade's threshold
        (:mod:`answer_eval.evaluators.judge.escalation`): 1.0 for one LLM's one reply (so that level
        keeps every verdict or none), a jury's majority share (2 of 3 judges: 0.667); 0.0 without a verdict.
    """

    correct: bool | None
    explanation: str | None
    failure_kind: str | None
    cost: Cost
    confidence: float = 1.0

    def __post_init__(self) -> None:
        """No verdict, no confidence: a verdict that is not there is never kept."""
        if self.correct is None and self.confidence:
            object.__setattr__(self, "confidence", 0.0)  # frozen: set once, while being made


def needs_escalation(confidences: Sequence[float], threshold: float) -> list[bool]:
    """Which verdicts are below the threshold (the judge is unsure of them)."""
    return [confidence < threshold for confidence in confidences]


def gold_texts(golds: Any) -> list[str]:
    """A question's acceptable answers as text (one label or a list of them)."""
    labels = golds if isinstance(golds, list | tuple) else [golds]
    return [label if isinstance(label, str) else str(label) for label in labels]


def yes_no_reader(question: str | None, golds: Sequence[str], candidate: str) -> Callable[[str], Read[bool]]:
    """How a reply to the correctness check of ``candidate`` is read (``reader(text).readable``: it said yes or no)."""
    shown = Shown([question, *golds, candidate], correctness_words())
    return lambda text: read_yes_no(text, shown)


async def _check(draw: Draw, question: str | None, golds: list[str], prediction: Any) -> LLMVerdict:
    candidate = read_output(prediction).text
    if candidate is None or not candidate.strip():
        return LLMVerdict(None, None, FailureKind.PARSE_FAILURE, Cost())
    reader = yes_no_reader(question, golds, candidate)
    # Only a reply that says yes or no is cached: a failed one is asked again next time.
    drawn = await draw(correctness_messages(question, golds, candidate), 1, lambda s: reader(s.text).readable)
    cost = Cost().plus(drawn)
    if not drawn.samples:
        return LLMVerdict(None, drawn.detail, drawn.failure or FailureKind.ERROR, cost)
    sample = drawn.samples[0]
    read = reader(sample.text)
    if read.value is not None:
        return LLMVerdict(read.value, read.explanation, None, cost)
    if sample.finish_reason == "length":
        kind = FailureKind.BUDGET_STOP
    elif refused(sample.text) or sample.finish_reason in ("content_filter", "refusal"):
        kind = FailureKind.REFUSAL
    else:
        kind = FailureKind.PARSE_FAILURE
    why = f"reply not read ({read.problem}): " if kind == FailureKind.PARSE_FAILURE and read.problem else ""
    return LLMVerdict(None, why + read.explanation, kind, cost)


async def check_answers(
    caller: ChatCaller,
    questions: Sequence[str | None],
    golds: Sequence[Any],
    predictions: Sequence[Any],
    structured: StructuredOutput | None = None,
) -> list[LLMVerdict]:
    """Ask the LLM whether each answer is correct, at most ``caller.concurrency`` requests in flight.

    :param structured: The formats of structured output to ask in (:func:`verdict_schema`; ``None``: the prompt alone).
    """
    asked = list(zip(questions, golds, predictions, strict=True))
    draw: Draw = caller.draw if structured is None else structured.drawer(caller, "verdict", verdict_schema()).draw
    return await caller.each(lambda one: _check(draw, one[0], gold_texts(one[1]), one[2]), asked)


@dataclass
class Escalation:
    """The judge's verdicts after escalation, column by column, and what the LLM said.

    :param scores: 1 or 0 per answer: the LLM's verdict where it gave one, the judge's elsewhere.
    :param stages: The deciding stage (``llm`` where the LLM decided).
    :param evidence: Why (the LLM's words where it decided).
    :param failure_kinds: ``None`` where right; the judge's kind where wrong (``wrong`` when the LLM overruled a yes).
    :param escalated: Whether each answer was sent to the LLM.
    :param llm_verdicts: The LLM's verdict (``None``: not asked, or no verdict).
    :param llm_explanations: The LLM's reply (an unreadable one after why it was not read).
    :param llm_failures: Why the LLM gave no verdict (the judge's verdict then stands).
    """

    scores: list[int]
    stages: list[str]
    evidence: list[str]
    failure_kinds: list[str | None]
    escalated: list[bool]
    llm_verdicts: list[bool | None]
    llm_explanations: list[str | None]
    llm_failures: list[str | None]


def merge_verdicts(verdicts: Sequence[Any], unsure: Sequence[bool], answers: Sequence[LLMVerdict]) -> Escalation:
    """The judge's ``verdicts`` with the LLM's ``answers`` (one per unsure verdict, in order) put in."""
    merged = Escalation(
        [verdict.score for verdict in verdicts],
        [verdict.stage for verdict in verdicts],
        [verdict.evidence for verdict in verdicts],
        [verdict.failure_kind for verdict in verdicts],
        list(unsure),
        [None] * len(verdicts),
        [None] * len(verdicts),
        [None] * len(verdicts),
    )
    asked = iter(answers)
    for index, escalated in enumerate(unsure):
        if not escalated:
            continue
        answer = next(asked)
        merged.llm_verdicts[index], merged.llm_explanations[index] = answer.correct, answer.explanation
        merged.llm_failures[index] = answer.failure_kind
        if answer.correct is None:
            continue
        merged.scores[index], merged.stages[index] = int(answer.correct), "llm"
        merged.evidence[index] = f"LLM ({'yes' if answer.correct else 'no'}): {answer.explanation or ''}".strip()
        if answer.correct:
            merged.failure_kinds[index] = None
        elif merged.failure_kinds[index] is None:
            merged.failure_kinds[index] = FailureKind.WRONG
    return merged


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
    :param generators: Two or more distinct chat generators (checked by the core).
    :param callers: Each judge's caller, when made already (the servers ``--escalate-model`` names, made at
        warm-up: ``generators`` are theirs); default: one per generator, made now within ``options``.
    """

    def __init__(
        self, options: JudgeOptions, generators: Sequence[Any], callers: Sequence[ChatCaller] | None = None
    ) -> None:
        """A caller per judge; the cache is opened at :meth:`warm_up`."""
        self.generators = list(generators)
        self.options = options
        made = [options.caller(generator) for generator in self.generators] if callers is None else callers
        self.callers: list[ChatCaller] = list(made)
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
        panel: PanelBudget | None = None,
    ) -> tuple[list[LLMVerdict], Usage, list[list[bool | None]]]:
        """Every judge's check of the answers at once: the panel's verdicts, the usage, each judge's per answer.

        ``progress``: called as each judge finishes an answer (:meth:`ChatCaller.run_async`'s).
        ``panel``: the run's budget (default: :meth:`new_budget` of ``max_calls``, a component's run).
        """
        budget = self.new_budget(self.options.max_calls) if panel is None else panel

        def run(judge: int, caller: ChatCaller, structured: StructuredOutput) -> Any:
            seat = budget.seat(judge)
            work = lambda: check_answers(caller, questions, golds, predictions, structured)  # noqa: E731
            return lambda: caller.run_async(work, seat, progress)

        judges = zip(self.callers, self.structured, strict=True)
        results = await run_panel([run(judge, *pair) for judge, pair in enumerate(judges)])
        judged = [verdicts for verdicts, _ in results]
        column = [[one.correct for one in verdicts] for verdicts in zip(*judged, strict=True)]
        return panel_verdicts(judged, budget.stopped), sum_usage([usage for _, usage in results]), column

    def new_budget(self, max_calls: int | None) -> PanelBudget:
        """A budget of ``max_calls`` requests: one a judge an answer, bought as whole panels answer by answer."""
        return PanelBudget(max_calls, [1] * len(self.callers))

    def run_sync(
        self,
        questions: Sequence[str | None],
        golds: Sequence[Any],
        predictions: Sequence[Any],
        progress: Callable[[], None] | None = None,
        panel: PanelBudget | None = None,
    ) -> tuple[list[LLMVerdict], Usage, list[list[bool | None]]]:
        """:meth:`check` from sync code: the first judge's caller only provides the event loop (it sends nothing)."""
        work = lambda: self.check(questions, golds, predictions, progress, panel)  # noqa: E731
        result, _ = self.callers[0].run_sync(work, Budget(0))
        return result


_MAX_GRADER_CHARS = 4096  # a grader's signature is a few names: a longer one was not written by calibrate
_EVERY = GRID_STEPS + 1  # judge_below when every labelled answer was asked (no judge threshold passed)
_CALIBRATED_FOR = ("highest_target", "delta")  # optional: what calibrate was asked, named by a refusal


def judge_bin_of(threshold: float) -> int:
    """The grid index of a judge threshold: answers of a lower bin are escalated (``inf``: every answer)."""
    return _EVERY if not math.isfinite(threshold) else round(threshold * GRID_STEPS)


def grader_signature(
    models: Sequence[Any],
    servers: Sequence[Any],
    structured: str,
    generation: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """What identifies the escalation's grader in a calibration file: never an API key, servers without credentials.

    :param models: Each judge's model (one for one LLM; a jury's in order).
    :param servers: Each judge's server URL, already without credentials (``None``: OpenAI's).
    :param structured: The structured output asked (it changes the replies).
    :param generation: Each judge's generation options (``temperature``, ``max_tokens``, ``seed``...), as
        :func:`~answer_eval.llm.generators.shown_generator` shows them (headers and secrets by name only);
        ``None``: none set (the server's defaults, as ``--escalate-model`` sends). They change the replies, so
        a level graded at one temperature is refused at another, as for another model.
    """
    from answer_eval.llm.rubric_prompts import PROMPT_VERSION

    options = [{} for _ in models] if generation is None else [dict(one) for one in generation]
    plain = json.loads(json.dumps({"models": list(models), "servers": list(servers)}, default=str))
    generation_kwargs = json.loads(json.dumps(options, sort_keys=True, default=str))
    return {**plain, "generation": generation_kwargs, "structured": structured, "prompt": PROMPT_VERSION}


def check_grader(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """Refuse a grader other than the one the LLM level was calibrated with, naming what differs.

    :raises CalibrationFileError: (a ``ValueError``) naming each differing part, the file's value and today's.
    """
    names = sorted(set(recorded) | set(now))
    differing = [
        f"{name}: {recorded.get(name)!r}, now {now.get(name)!r}"
        for name in names
        if recorded.get(name) != now.get(name)
    ]
    if differing:
        raise CalibrationFileError(
            f"the calibration's LLM level was graded by another grader ({'; '.join(differing)}): escalate to the "
            "grader it names, or run answer-eval calibrate --escalate-model again"
        )


@dataclass(frozen=True)
class LLMLevel:
    """The labelled answers the LLM graded for the cascade (see the module docstring).

    :param grader: :func:`grader_signature` of the LLM that graded them.
    :param answers: Each graded answer as ``(llm_bin, agreed, question, judge_bin)``: the grid bin of the
        LLM's verdict confidence, whether the person agrees with the LLM's verdict, the question's number
        (the judge's numbering), the grid bin of the judge's confidence.
    :param asked: The labelled answers with a judge bin below :attr:`judge_below`, every one sent to the LLM.
    :param not_graded: Of them, those with no verdict (failures, budget stop): not in :attr:`answers`.
    :param judge_below: The judge bin the answers below were asked (``GRID_STEPS + 1``: every answer).
    :param highest_target: The highest target ``calibrate`` graded for (``judge_below`` is its ``t_J``), and
    :param delta: the risk it was asked at (each level at ``delta / 2``); ``None``: not recorded (optional in
        the file): a refusal names them when they are.
    """

    grader: Mapping[str, Any]
    answers: tuple[tuple[int, bool, int, int], ...]
    asked: int
    not_graded: int
    judge_below: int
    highest_target: float | None = None
    delta: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The file's ``escalation`` object (``highest_target`` and ``delta`` only when recorded)."""
        recorded = {name: getattr(self, name) for name in _CALIBRATED_FOR if getattr(self, name) is not None}
        return {
            "grader": dict(self.grader),
            **recorded,
            "judge_below": self.judge_below,
            "asked": self.asked,
            "not_graded": self.not_graded,
            "answers": [[k / GRID_STEPS, int(agreed), question, judge] for k, agreed, question, judge in self.answers],
        }

    def calibration(self, judge_threshold: float) -> Calibration:
        """The LLM level's calibration for a judge threshold: the graded answers the judge would not keep."""
        below = judge_bin_of(judge_threshold)
        return Calibration.from_answers([(k, a, q) for k, a, q, judge in self.answers if judge < below], "llm")

    @classmethod
    def from_dict(cls, data: Any, where: str, judge: Calibration) -> LLMLevel:
        """Read and check a file's ``escalation`` object against its judge answers (``CalibrationFileError``)."""
        if not isinstance(data, Mapping):
            raise CalibrationFileError(f"{where}: escalation must be an object or absent")
        grader = data.get("grader")
        if not isinstance(grader, Mapping) or len(json.dumps(grader, default=str)) > _MAX_GRADER_CHARS:
            raise CalibrationFileError(f"{where}: escalation grader must be a short object (the grader's signature)")
        counts = {}
        for name, high in (("asked", judge.total), ("not_graded", judge.total), ("judge_below", _EVERY)):
            value = data.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
                raise CalibrationFileError(
                    f"{where}: escalation {name} must be an int in [0, {high}], got {str(value)[:40]}"
                )
            counts[name] = value
        try:
            answers = _read_rows(data.get("answers"), counts["judge_below"])
        except (ValueError, OverflowError) as exc:
            raise CalibrationFileError(f"{where}: escalation {exc}") from None
        below = counts["judge_below"]
        eligible = Counter(k for k, _, _ in judge.answers() if k < below)
        if counts["asked"] != sum(eligible.values()):
            raise CalibrationFileError(
                f"{where}: escalation asked is {counts['asked']}, but {sum(eligible.values())} labelled answers lie "
                "below its judge_below: hand-edited? run answer-eval calibrate again"
            )
        if len(answers) + counts["not_graded"] != counts["asked"] or Counter(row[3] for row in answers) - eligible:
            raise CalibrationFileError(
                f"{where}: escalation lists {len(answers)} graded and {counts['not_graded']} not graded answers, "
                f"which are not the {counts['asked']} asked: hand-edited? run answer-eval calibrate again"
            )
        calibrated_for = {
            name: _optional_unit(data.get(name), f"{where}: escalation {name}") for name in _CALIBRATED_FOR
        }
        return cls(dict(grader), tuple(answers), counts["asked"], counts["not_graded"], below, **calibrated_for)


def _optional_unit(value: Any, where: str) -> float | None:
    """An optional number strictly between 0 and 1 (``CalibrationFileError`` naming ``where`` otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise CalibrationFileError(f"{where} must be a number in (0, 1) or absent, got {str(value)[:40]}")
    return float(value)


def _read_rows(rows: Any, below: int) -> list[tuple[int, bool, int, int]]:
    """The ``answers`` rows: ``[llm_conf_edge, agreed, question, judge_bin]``, each checked (``ValueError``)."""
    shape = "answers must be a list of [llm_conf_edge, agreed, question, judge_bin]"
    if not isinstance(rows, list) or len(rows) > MAX_ANSWER_ROWS:
        raise ValueError(f"{shape} (at most {MAX_ANSWER_ROWS:,})")
    read = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4 and all(not isinstance(value, bool) for value in row)):
            raise ValueError(f"{shape}, got {str(row)[:80]}")
        edge, agreed, question, judge = row
        if not isinstance(edge, (int, float)) or not all(isinstance(value, int) for value in (agreed, question, judge)):
            raise ValueError(f"{shape}, got {str(row)[:80]}")
        k = grid_index(edge, "answers (an LLM confidence)")
        if agreed not in (0, 1) or not 0 <= question <= MAX_ANSWER_ROWS or not 0 <= judge < below:
            raise ValueError(
                f"answers has a row with agreed not 0/1, a bad question or a judge_bin not below "
                f"judge_below {below}: {str(row)[:80]}"
            )
        read.append((k, bool(agreed), question, judge))
    return read


@dataclass(frozen=True)
class Cascade:
    """The two thresholds of the cascade for a target, and the selections behind them.

    :param judge_threshold: ``t_J``: the judge's verdict is kept at confidence ``>= t_J`` (``inf``: never).
    :param llm_threshold: ``t_L``: the LLM's verdict is kept at confidence ``>= t_L`` (``inf``: never).
    :param judge: The judge level's selection (at ``delta / 2``).
    :param llm: The LLM level's selection (at ``delta / 2``, on the answers the judge does not keep).
    """

    judge_threshold: float
    llm_threshold: float
    judge: Selection
    llm: Selection


def cascade_thresholds(judge: Calibration, level: LLMLevel, target: float, delta: float) -> Cascade:
    """The cascade's ``t_J`` and ``t_L`` for ``target`` at risk ``delta`` (each level at ``delta / 2``).

    :raises CalibrationFileError: When ``t_J`` escalates answers the LLM level did not grade (a target above
        the highest one ``answer-eval calibrate --escalate-model`` was given, or a smaller delta: both raise
        ``t_J``), naming the target and delta asked and, when the file records them, the ones it was made for.
    """
    chosen = choose_threshold(target, delta / 2, judge)
    if judge_bin_of(chosen.threshold) > level.judge_below:
        edge = (
            "every answer" if level.judge_below >= _EVERY else f"judge confidence < {level.judge_below / GRID_STEPS:g}"
        )
        made = (
            f", for target {level.highest_target:g} at delta {level.delta:g}"
            if level.highest_target is not None and level.delta is not None
            else ""
        )
        raise CalibrationFileError(
            f"target_agreement {target:g} at delta {delta:g} escalates answers the calibration's LLM level did not "
            f"grade (it graded {edge}{made}): run answer-eval calibrate --escalate-model with --target {target:g} "
            f"--delta {delta:g}"
        )
    llm = choose_threshold(target, delta / 2, level.calibration(chosen.threshold))
    return Cascade(chosen.threshold, llm.threshold, chosen, llm)
