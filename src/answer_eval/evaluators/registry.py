"""The package's one list of evaluators: name to class, read by the command line, the Dask engine and the reports.

Each entry names the module of its evaluator (imported only when the evaluator is used, so the
command line starts fast), its file command, its Haystack component, the words the command's help
shows, its bundled example file and its :class:`Preset` scores (what ``compare``, ``agreement`` and
``report`` run: graded or not, the default threshold, the extra it needs). Every table keyed by
evaluator name derives from this one (:mod:`answer_eval.reports.scorers` adds only Haystack's own
evaluators). Adding an evaluator is its module and one line here (see DEVELOPERS.md, "How to add an
evaluator", and its naming table: registry name, command, core class, component).

:func:`evaluator_of` goes back from a Haystack component of this package (or its ``to_dict()``) to the
core evaluator it wraps: the component's init parameters are its evaluator's options, by name (besides a
chat generator the component may hand its evaluator, as the judge's ``escalate_to``: unset, it is left
out; set, it stays where the component runs; and ``progress_bar``, how the component shows its run), so
its ``to_dict()`` is all that is needed: nothing is imported from the component package, and nothing in
the data is run.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from dataclasses import dataclass
from typing import Any, cast

from answer_eval.evaluators.base import Evaluator

__all__ = [
    "COMPONENTS",
    "EVALUATORS",
    "Entry",
    "Preset",
    "build",
    "entry",
    "entry_for_command",
    "entry_for_component",
    "evaluator_of",
    "presets",
]


@dataclass(frozen=True)
class Preset:
    """One score that ``compare``, ``agreement`` and ``report`` take from a registered evaluator.

    :param name: Its name on those commands' command line (``--evaluator NAME``).
    :param description: What it measures, in a few words.
    :param options: The evaluator's options for it (the rest default); its score is the evaluator's
        first output column.
    :param label: What the reports add to the component's name in its title (``"rouge (rougeLsum)"``).
    :param graded: Whether its score is graded in [0, 1] rather than 0/1.
    :param threshold: For a graded score, the verdict ``score >= threshold`` used when no human
        label is there to choose one (see :func:`answer_eval.reports.scorers.verdicts`).
    :param extra: The package extra it needs, if any.
    :param modules: The modules of that extra it imports (missing ones mean the extra is missing).
    :param needs_answers: Whether it reads the acceptable answers (``--answers-field``).
    :param reused: The output columns of its evaluator's file command that ``report`` reads from a
        results file that command wrote, instead of scoring again (none: always scored again).
    """

    name: str
    description: str
    options: tuple[tuple[str, Any], ...] = ()
    label: str = ""
    graded: bool = False
    threshold: float | None = None
    extra: str | None = None
    modules: tuple[str, ...] = ()
    needs_answers: bool = True
    reused: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    """One registered evaluator.

    :param name: Its registry name (the evaluator class's ``name``).
    :param target: ``module:Class`` of the evaluator.
    :param command: Its file command (``answer-eval <command> FILE``).
    :param component: The Haystack component that wraps it (its class name; found without importing it).
    :param help: The command's one-line help.
    :param description: The command's description.
    :param parameters_are_options: ``False`` for an evaluator whose component takes a chat generator
        (an LLM grader): its init parameters are not the evaluator's options, and it does not go to Dask.
    :param options_only: Options the component does not take (the judge's escalation server, which
        the command line names and the component replaces by its chat generator): at their defaults
        when a component becomes its evaluator.
    :param example: Its bundled example file, in ``examples/data`` (what the shared tests run it on).
    :param example_options: The options its example file is scored with, where the defaults do not fit it
        (the rubric grader's default metric needs a context the example rows do not have).
    :param presets: The scores ``compare``, ``agreement`` and ``report`` take from it.
    """

    name: str
    target: str
    command: str
    component: str
    help: str
    description: str
    parameters_are_options: bool = True
    options_only: tuple[str, ...] = ()
    example: str = ""
    example_options: tuple[tuple[str, Any], ...] = ()
    presets: tuple[Preset, ...] = ()

    def load(self) -> type[Evaluator]:
        """The evaluator class (its module imported now)."""
        module, _, name = self.target.partition(":")
        return cast("type[Evaluator]", getattr(importlib.import_module(module), name))


EVALUATORS: dict[str, Entry] = {
    item.name: item
    for item in (
        Entry(
            "contains",
            "answer_eval.evaluators.contains:AnswerContainsCore",
            "score",
            "AnswerContainsEvaluator",
            "score a file of answers with the answer-contains rules",
            "Score one answer a line: right when the folded answer contains an acceptable answer, numbers matched "
            "whole. Prints a summary with a 95% Wilson interval and the failure kinds.",
            example="rag_answers.jsonl",
            presets=(
                Preset(
                    "contains",
                    "the answer contains an acceptable answer (numbers whole)",
                    reused=("correct", "failure_kind"),
                ),
            ),
        ),
        Entry(
            "judge",
            "answer_eval.evaluators.judge.judge_core:AnswerJudgeCore",
            "judge",
            "AnswerJudgeEvaluator",
            "judge a file of answers like a human grader (contains and lenient lexical stages, calibrated acceptance)",
            "Judge one answer a line with the AnswerJudge cascade, offline. Writes correct, confidence, acceptance "
            "(the probability that a person accepts the answer), stage, evidence and failure_kind per row; prints a "
            "summary with a 95% Wilson interval. With --target-agreement A (on your --calibration FILE, which "
            "answer-eval calibrate writes) or --escalate-below C, the verdicts below the threshold are flagged "
            "abstained; with --escalate-model MODEL they go to an LLM on an OpenAI-compatible server (--api-base-url, "
            "--api-key-env, --cache, --max-calls), whose yes or no replaces the verdict.",
            options_only=("escalate_model", "api_base_url", "api_key_env"),
            example="nq301_davinci_zeroshot.jsonl",
            presets=(
                Preset(
                    "judge",
                    "the verdict a person would give (contains and lenient lexical stages, calibrated acceptance)",
                    reused=("correct", "failure_kind", "evidence"),
                ),
            ),
        ),
        Entry(
            "typed",
            "answer_eval.evaluators.typed_scoring:TypedAnswerCore",
            "typed",
            "TypedAnswerEvaluator",
            "score answers by question type (multiple choice, numerical, OCR, free-form, regression)",
            "Score one answer a line by the rule of its question type and write every row back with a reward in "
            "[0, 1] and a failure_kind. Answers are read from <answer>...</answer> spans when present. Needs: pip "
            'install "answer-eval-haystack[typed]".',
            example="typed_example.jsonl",
            # Without human labels a reward of 0.5 or more is right (most question types give 0 or 1;
            # not tuned).
            presets=(
                Preset(
                    "typed",
                    "the reward of each answer by the rule of its question type (fields solution, problem_type)",
                    label="(reward)",
                    graded=True,
                    threshold=0.5,
                    extra="typed",
                    modules=("jiwer", "rouge_score"),
                    needs_answers=False,
                ),
            ),
        ),
        Entry(
            "metrics",
            "answer_eval.evaluators.reference_scoring:ReferenceMetricsCore",
            "metrics",
            "ReferenceMetricsEvaluator",
            "exact match, BLEU and ROUGE of each answer against its reference(s)",
            "Score one answer a line against its reference answer(s) with exact match, sentence BLEU (sacrebleu, in "
            "[0, 1]) and ROUGE F-measure (rouge-score); the best value over several references. Prints each metric's "
            'mean and the corpus BLEU. BLEU and ROUGE need pip install "answer-eval-haystack[metrics]".',
            example="nq301_davinci_zeroshot.jsonl",
            # The thresholds: a round value near the one that agrees best with people on
            # data/judge/nq301-dev.jsonl (ROUGE 0.10: 0.776; BLEU 0.01: 0.731).
            presets=(
                Preset(
                    "rouge",
                    "ROUGE-Lsum F-measure against the best acceptable answer (graded)",
                    (("metrics", ["rouge"]),),
                    "rouge (rougeLsum)",
                    graded=True,
                    threshold=0.10,
                    extra="metrics",
                    modules=("rouge_score",),
                ),
                Preset(
                    "bleu",
                    "sentence BLEU against the acceptable answers (graded)",
                    (("metrics", ["bleu"]),),
                    "bleu (sentence)",
                    graded=True,
                    threshold=0.01,
                    extra="metrics",
                    modules=("sacrebleu",),
                ),
            ),
        ),
        Entry(
            "tools",
            "answer_eval.evaluators.tool_call_scoring:ToolCallCore",
            "tools",
            "ToolCallEvaluator",
            "tool-call metrics of each predicted call against the reference call",
            "Score one predicted tool call a line against the reference call: tool_call_valid, tool_name_match, "
            "tool_parameter_key_match, tool_parameter_kv_match. A call is a JSON string or object "
            '{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]} or a list of calls. An invalid '
            "prediction scores 0 (parse_failure); an invalid reference is bad input.",
            example="tool_calls.jsonl",
            # Right without human labels: a call whose every parameter value is right.
            presets=(
                Preset(
                    "tools",
                    "the share of the reference call's parameters given with the right value (field reference)",
                    (("metrics", ["tool_parameter_kv_match"]),),
                    "(tool_parameter_kv_match)",
                    graded=True,
                    threshold=1.0,
                    needs_answers=False,
                ),
            ),
        ),
        Entry(
            "rubric",
            "answer_eval.evaluators.rubric_grading:RubricCore",
            "rubric",
            "RubricEvaluator",
            "an LLM grades each answer on a rubric (or compares it with a baseline), from an OpenAI-compatible server",
            "Grade one answer a line with an LLM on a rubric of the catalogue (--metric) or your own (--rubric FILE): "
            "a score on the metric's scale, the grader's explanation, a self-consistency confidence (--samples N) and "
            "a failure kind. --pairwise compares the prediction with the baseline field (CANDIDATE, BASELINE or TIE; "
            "asked in both orders unless --no-swap). The API key is read from the variable --api-key-env names "
            "(default OPENAI_API_KEY) and never written anywhere. --cache FILE makes a rerun cost nothing. Exit 3 when "
            "no item was graded or no request got an answer from the server (the summary is printed and the output "
            "written all the same).",
            parameters_are_options=False,
            example="nq301_davinci_zeroshot.jsonl",
            example_options=(("metric", "question_answering_correctness"),),
        ),
    )
}
"""Every evaluator by name."""


def entry(name: str) -> Entry:
    """The evaluator called ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return EVALUATORS[name]
    except KeyError:
        raise ValueError(f"unknown evaluator {name!r}; choose from {', '.join(EVALUATORS)}") from None


def entry_for_command(command: str) -> Entry:
    """The evaluator of file command ``command``."""
    for item in EVALUATORS.values():
        if item.command == command:
            return item
    raise ValueError(f"no evaluator runs as {command!r}")


def entry_for_component(class_name: str) -> Entry | None:
    """The evaluator a Haystack component of this package wraps (by the component's class name), if any."""
    for item in EVALUATORS.values():
        if item.component == class_name:
            return item
    return None


def build(name: str, options: dict[str, Any] | None = None) -> Evaluator:
    """The evaluator called ``name`` with ``options`` (its options' ``to_dict()``; missing ones default)."""
    cls = entry(name).load()
    return cls(cls.options_type.from_dict(options or {}))


def presets() -> dict[str, tuple[Entry, Preset]]:
    """Every :class:`Preset` by name, with the entry of its evaluator, in the registry's order."""
    return {preset.name: (item, preset) for item in EVALUATORS.values() for preset in item.presets}


COMPONENTS = "haystack_integrations.components.evaluators.answer_eval"
"""The package of the Haystack components."""


def evaluator_of(value: Any) -> Evaluator:
    """The core evaluator of ``value``: an evaluator, a component of this package, or a component's ``to_dict()``.

    :raises TypeError: For anything else (another package's component, PairwiseEvaluator, a typed
        evaluator with custom question types, which are code and not options).
    """
    if isinstance(value, Evaluator):
        if getattr(value, "custom_types", None):
            raise TypeError("custom question types are code, not options: they do not travel to a Dask cluster")
        return value
    data = value if isinstance(value, dict) else getattr(value, "to_dict", lambda: None)()
    kind = data.get("type") if isinstance(data, dict) else None
    module, _, name = str(kind).rpartition(".")
    if name == "PairwiseEvaluator" and module.startswith(COMPONENTS):
        raise TypeError(
            "PairwiseEvaluator compares two systems with a paired test that needs every score at once; it does "
            "not run on Dask. Score each system with its evaluator on Dask and compare the per-row columns."
        )
    found = entry_for_component(name) if module.startswith(COMPONENTS) else None
    if found is None or not isinstance(data, dict):
        supported = ", ".join(entry.component for entry in EVALUATORS.values() if entry.parameters_are_options)
        raise TypeError(f"the Dask engine runs this package's evaluators ({supported}); got {kind!r}")
    if not found.parameters_are_options:
        raise TypeError(f"{name} grades with an LLM through its chat generator: it runs where its component runs")
    options = dict(data.get("init_parameters") or {})
    options.pop("progress_bar", None)  # how the component shows its run where it runs: not an option
    if options.pop("custom_types", None):
        raise TypeError("custom question types are code, not options: they do not travel to a Dask cluster")
    cls = found.load()
    return cls(cls.options_type.from_dict(_options_alone(name, options, cls)))


def _options_alone(name: str, parameters: dict[str, Any], cls: type[Evaluator]) -> dict[str, Any]:
    """The component's parameters that are options, for an evaluator that may be given a chat generator.

    Such a component (the judge's) saves its generator beside its options (``escalate_to``): unset
    (``None``), it is left out; saved (a component's dict), it is refused, as a chat generator runs
    where the component runs. Any other key is left for the options to refuse by name.
    """
    if "generator" not in inspect.signature(cls.__init__).parameters:
        return parameters
    fields = {item.name for item in dataclasses.fields(cls.options_type)}
    for key in [key for key in parameters if key not in fields]:
        value = parameters[key]
        if (isinstance(value, dict) and "type" in value) or isinstance(value, list):  # a list: a jury
            raise TypeError(
                f"{name}({key}=...) hands work to a chat generator, which runs where the component runs: it "
                f"does not run on Dask (without {key}, the component does: the judge's abstention, "
                "target_agreement or escalate_below, for example)"
            )
        if value is None:
            del parameters[key]
    return parameters
