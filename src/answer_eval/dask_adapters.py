"""What the Dask engine knows about each evaluator: its input columns, its verdict columns, its summary.

One adapter per evaluator of the package. It names the columns the evaluator reads (the local
command's field names by default), calls the evaluator's ``run`` on a partition's columns and
returns the verdict columns the local command writes, with the same names and values, and
counts a partition into the summary class the local command uses, so that the partitions'
summaries, added up in partition order, equal the local run's summary. Framework objects are
imported lazily: this module is loaded only by the Dask engine.

``PairwiseEvaluator`` is not supported: it compares two systems with a paired significance test
that needs every paired score at once (a bootstrap, an exact test), not sums per partition.
Score each system with its evaluator on Dask and compare the per-row columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from answer_eval.commands.metrics import MetricsSummary
from answer_eval.commands.typed import TypedSummary
from answer_eval.dask_adapter_base import COMPONENTS, Adapter, Columns, Summary

__all__ = ["ADAPTERS", "Adapter", "Summary", "adapter_for"]


class ContainsAdapter(Adapter):
    """AnswerContainsEvaluator, as ``answer-eval score``: ``correct``, ``failure_kind``, ``outcome``."""

    command = "score"
    class_name = "AnswerContainsEvaluator"
    roles: ClassVar[dict[str, str]] = {"prediction": "prediction", "answers": "answers"}
    blame = (("ground truth", "answers"),)
    types: ClassVar[dict[str, frozenset[str]]] = {"answers": frozenset({"string", "int", "list"})}

    def outputs(self, evaluator: Any) -> dict[str, str]:
        """``correct`` (bool), ``failure_kind`` and ``outcome`` (str or None)."""
        return {"correct": "bool", "failure_kind": "object", "outcome": "object"}

    def score(self, evaluator: Any, extras: Any, inputs: Columns) -> Columns:
        """Run the evaluator on the batch."""
        result = evaluator.run(ground_truth_answers=inputs["answers"], predicted_answers=inputs["prediction"])
        return {
            "correct": [score == 1 for score in result["individual_scores"]],
            "failure_kind": result["failure_kinds"],
            "outcome": result["outcomes"],
        }


class JudgeAdapter(Adapter):
    """AnswerJudgeEvaluator, as ``answer-eval judge``; the outcome is the strict rules' reading."""

    command = "judge"
    class_name = "AnswerJudgeEvaluator"
    roles: ClassVar[dict[str, str]] = {"prediction": "prediction", "answers": "answers", "question": "question"}
    optional = frozenset({"question"})
    blame = (("ground truth", "answers"), ("question", "question"))
    types: ClassVar[dict[str, frozenset[str]]] = {"answers": frozenset({"string", "int", "list"})}

    def prepare(self, evaluator: Any) -> Any:
        """The answer-contains evaluator with the judge's settings: its outcome is the judge's."""
        from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

        return AnswerContainsEvaluator(evaluator.not_found_label, evaluator.extra_not_found_phrases)

    def outputs(self, evaluator: Any) -> dict[str, str]:
        """The judge's columns, as locally.

        ``correct``, ``confidence`` and ``acceptance`` (4 decimals), ``stage``, ``evidence``,
        ``failure_kind``, ``outcome``.
        """
        return {
            "correct": "bool",
            "confidence": "float64",
            "acceptance": "float64",
            "stage": "object",
            "evidence": "object",
            "failure_kind": "object",
            "outcome": "object",
        }

    def score(self, evaluator: Any, extras: Any, inputs: Columns) -> Columns:
        """Run the judge on the batch (a question that is not a string counts as none, as locally)."""
        answers, predictions = inputs["answers"], inputs["prediction"]
        questions = [value if isinstance(value, str) else None for value in inputs.get("question", [])]
        result = evaluator.run(answers, predictions, questions or None)
        return {
            "correct": [score == 1 for score in result["individual_scores"]],
            "confidence": [round(value, 4) for value in result["confidence"]],
            "acceptance": [round(value, 4) for value in result["acceptance"]],
            "stage": result["stages"],
            "evidence": result["evidence"],
            "failure_kind": result["failure_kinds"],
            "outcome": extras.run(ground_truth_answers=answers, predicted_answers=predictions)["outcomes"],
        }


class TypedAdapter(Adapter):
    """TypedAnswerEvaluator, as ``answer-eval typed``: ``reward`` and ``failure_kind``."""

    command = "typed"
    class_name = "TypedAnswerEvaluator"
    roles: ClassVar[dict[str, str]] = {"prediction": "model_output", "solution": "solution", "type": "problem_type"}
    optional = frozenset({"type"})
    blame = (("question type", "type"), ("ground truth", "solution"))
    types: ClassVar[dict[str, frozenset[str]]] = {
        "solution": frozenset({"string", "int", "float", "list"}),
        "type": frozenset({"string", "null"}),
    }

    def required(self, evaluator: Any) -> set[str]:
        """The type column may be left out when the evaluator has a ``default_type``."""
        return {"prediction", "solution"} | (set() if evaluator.default_type is not None else {"type"})

    def prepare(self, evaluator: Any) -> Any:
        """The type registry, to name each row's canonical question type in the summary."""
        from answer_eval.typed import TypeRegistry

        return TypeRegistry(evaluator.custom_types)

    def outputs(self, evaluator: Any) -> dict[str, str]:
        """``reward`` (float) and ``failure_kind``."""
        return {"reward": "float64", "failure_kind": "object"}

    @staticmethod
    def _types(evaluator: Any, inputs: Columns) -> list[Any]:
        default = evaluator.default_type
        if "type" not in inputs:
            return [default] * len(inputs["prediction"])
        if default is None:
            return inputs["type"]
        return [default if value is None or _is_missing(value) else value for value in inputs["type"]]

    def score(self, evaluator: Any, extras: Any, inputs: Columns) -> Columns:
        """Run the evaluator; a row without a type takes the ``default_type``, as locally."""
        result = evaluator.run(inputs["prediction"], inputs["solution"], self._types(evaluator, inputs))
        return {"reward": result["individual_scores"], "failure_kind": result["failure_kinds"]}

    def new_summary(self, evaluator: Any) -> Any:
        """An empty :class:`TypedSummary`."""
        return TypedSummary(path="")

    def count(self, summary: Any, evaluator: Any, extras: Any, inputs: Columns, verdicts: Columns) -> None:
        """Count each row under its canonical type (an unknown one as given, trimmed), as locally."""
        rows = zip(self._types(evaluator, inputs), verdicts["reward"], verdicts["failure_kind"], strict=True)
        for given, reward, kind in rows:
            summary.add(extras.resolve(given) or given.strip() or given, reward, kind)

    def finish(self, parts: Sequence[Any], evaluator: Any, path: str, output: str | None) -> Summary:
        """Merge the partitions' :class:`TypedSummary` objects in order."""
        total = TypedSummary(path=path, output=output)
        for part in parts:
            total.merge(part)
        return Summary(self.command, total)


@dataclass
class _MetricsPart:
    summary: MetricsSummary
    bleu: Any = None  # reference_metrics.BleuStats


class MetricsAdapter(Adapter):
    """ReferenceMetricsEvaluator, as ``answer-eval metrics``: one column per metric and ``failure_kind``."""

    command = "metrics"
    class_name = "ReferenceMetricsEvaluator"
    roles: ClassVar[dict[str, str]] = {"prediction": "prediction", "reference": "answers"}
    blame = (("ground truth", "reference"),)
    types: ClassVar[dict[str, frozenset[str]]] = {"reference": frozenset({"string", "int", "list"})}

    def column(self, role: str, columns: dict[str, str], available: Sequence[str]) -> str:
        """References: the column given, else ``answers``, else ``reference`` (as the local command)."""
        if role == "reference" and role not in columns and "answers" not in available and "reference" in available:
            return "reference"
        return super().column(role, columns, available)

    def prepare(self, evaluator: Any) -> Any:
        """The BLEU scorer whose statistics add up to the corpus BLEU, when BLEU is asked for."""
        from answer_eval.reference_metrics import BleuScorer

        if "bleu" not in evaluator.metrics:
            return None
        options = evaluator.options
        return BleuScorer(
            options["bleu_tokenize"],
            options["bleu_smooth_method"],
            options["bleu_smooth_value"],
            options["bleu_lowercase"],
            options["use_effective_order"],
        )

    def outputs(self, evaluator: Any) -> dict[str, str]:
        """One column per metric (values as the evaluator gives them) and ``failure_kind``."""
        return {**dict.fromkeys(evaluator.metrics, "object"), "failure_kind": "object"}

    def score(self, evaluator: Any, extras: Any, inputs: Columns) -> Columns:
        """Run the evaluator on the batch."""
        result = evaluator.run(predicted_answers=inputs["prediction"], ground_truth_answers=inputs["reference"])
        columns = {name: result["metrics"][name]["individual_scores"] for name in evaluator.metrics}
        return {**columns, "failure_kind": result["failure_kinds"]}

    def new_summary(self, evaluator: Any) -> Any:
        """An empty :class:`MetricsSummary` and BLEU statistics."""
        from answer_eval.reference_metrics import BleuStats

        return _MetricsPart(MetricsSummary(path="", metrics=evaluator.metrics), BleuStats())

    def count(self, summary: Any, evaluator: Any, extras: Any, inputs: Columns, verdicts: Columns) -> None:
        """Count every row's metrics, and add its corpus BLEU statistics as the local command does."""
        from answer_eval.labels import acceptable_answers
        from answer_eval.reference_metrics import prediction_text

        names = list(verdicts)
        for values in zip(*verdicts.values(), strict=True):
            summary.summary.add(dict(zip(names, values, strict=True)))
        if extras is not None:
            for prediction, references in zip(inputs["prediction"], inputs["reference"], strict=True):
                text, _ = prediction_text(prediction)
                extras.add(summary.bleu, text or "", acceptable_answers(references))

    def add_invalid(self, summary: Any, count: int) -> None:
        """Count rows (or lines) skipped as invalid."""
        summary.summary.invalid_lines += count

    def finish(self, parts: Sequence[Any], evaluator: Any, path: str, output: str | None) -> Summary:
        """Merge the partitions' summaries in order; the corpus BLEU from the summed statistics."""
        from answer_eval.reference_metrics import BleuStats

        total = MetricsSummary(path=path, metrics=evaluator.metrics, output=output)
        bleu = BleuStats()
        for part in parts:
            total.merge(part.summary)
            for order in range(4):
                bleu.matches[order] += part.bleu.matches[order]
                bleu.totals[order] += part.bleu.totals[order]
            bleu.hypothesis_length += part.bleu.hypothesis_length
            bleu.reference_length += part.bleu.reference_length
        if "rouge" in evaluator.metrics:
            total.notes["rouge"] = evaluator.options["rouge_type"]
        scorer = self.prepare(evaluator)
        if scorer is not None:
            total.corpus["bleu"] = scorer.corpus(bleu)
        return Summary(self.command, total)


class ToolsAdapter(Adapter):
    """ToolCallEvaluator, as ``answer-eval tools``: one column per metric, ``failure_kind`` and ``problem``."""

    command = "tools"
    class_name = "ToolCallEvaluator"
    roles: ClassVar[dict[str, str]] = {"prediction": "prediction", "reference": "reference"}
    blame = (("reference", "reference"),)

    def outputs(self, evaluator: Any) -> dict[str, str]:
        """One column per metric, ``failure_kind`` and ``problem``."""
        return {**dict.fromkeys(evaluator.metrics, "object"), "failure_kind": "object", "problem": "object"}

    def score(self, evaluator: Any, extras: Any, inputs: Columns) -> Columns:
        """Run the evaluator on the batch."""
        result = evaluator.run(predicted_answers=inputs["prediction"], ground_truth_answers=inputs["reference"])
        columns = {name: result["metrics"][name]["individual_scores"] for name in evaluator.metrics}
        return {**columns, "failure_kind": result["failure_kinds"], "problem": result["problems"]}

    def new_summary(self, evaluator: Any) -> Any:
        """An empty :class:`MetricsSummary`."""
        return MetricsSummary(path="", metrics=evaluator.metrics)

    def count(self, summary: Any, evaluator: Any, extras: Any, inputs: Columns, verdicts: Columns) -> None:
        """Count every row's metrics and failure kind."""
        names = list(verdicts)
        for values in zip(*verdicts.values(), strict=True):
            summary.add(dict(zip(names, values, strict=True)))

    def finish(self, parts: Sequence[Any], evaluator: Any, path: str, output: str | None) -> Summary:
        """Merge the partitions' summaries in order."""
        total = MetricsSummary(path=path, metrics=evaluator.metrics, output=output)
        for part in parts:
            total.merge(part)
        return Summary(self.command, total)


ADAPTERS: dict[str, Adapter] = {
    adapter.class_name: adapter
    for adapter in (ContainsAdapter(), JudgeAdapter(), TypedAdapter(), MetricsAdapter(), ToolsAdapter())
}
"""Evaluator class name to its adapter."""


def _is_missing(value: Any) -> bool:
    import pandas as pd  # type: ignore[import-untyped]

    return value is pd.NA


def adapter_for(data: dict[str, Any]) -> Adapter:
    """The adapter of a serialised evaluator (its ``to_dict()``).

    :raises TypeError: For an evaluator that is not one of this package's, or PairwiseEvaluator.
    """
    kind = data.get("type") if isinstance(data, dict) else None
    module, _, name = str(kind).rpartition(".")
    if name == "PairwiseEvaluator" and module.startswith(COMPONENTS):
        raise TypeError(
            "PairwiseEvaluator compares two systems with a paired test that needs every score at once; it does "
            "not run on Dask. Score each system with its evaluator on Dask and compare the per-row columns."
        )
    if not module.startswith(COMPONENTS) or name not in ADAPTERS:
        supported = ", ".join(ADAPTERS)
        raise TypeError(f"the Dask engine runs this package's evaluators ({supported}); got {kind!r}")
    return ADAPTERS[name]
