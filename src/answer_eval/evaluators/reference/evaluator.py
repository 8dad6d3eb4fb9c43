"""The reference metrics (``answer-eval metrics``): exact match, sentence BLEU and ROUGE against the references."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from answer_eval.evaluators.base import Columns, Evaluator, Role
from answer_eval.evaluators.contains.evaluator import PREDICTION
from answer_eval.evaluators.item_errors import item_error
from answer_eval.evaluators.reference.metrics import (
    BleuStats,
    prediction_text,
)
from answer_eval.evaluators.reference.options import ReferenceOptions
from answer_eval.evaluators.value_summaries import MetricsSummary
from answer_eval.inputs.labels import acceptable_answers

__all__ = ["ReferenceMetricsCore", "ReferenceOptions"]


REFERENCE = Role(
    "reference",
    "answers",
    "the reference(s), a string or a list (default: 'answers', else 'reference')",
    fallbacks=("reference",),
    kinds=frozenset({"string", "int", "list"}),
)


class ReferenceMetricsCore(Evaluator):
    """Exact match, sentence BLEU (sacrebleu, in [0, 1]) and ROUGE F-measure (rouge-score), best over references."""

    name = "metrics"
    component = "ReferenceMetricsEvaluator"
    options_type = ReferenceOptions
    roles = (REFERENCE, PREDICTION)
    options: ReferenceOptions

    def __init__(self, options: ReferenceOptions | None = None) -> None:
        """Make the metrics; ``ImportError`` without the metrics extra, ``ValueError`` for a bad option."""
        from answer_eval.evaluators.reference.metrics import ReferenceMetrics

        super().__init__(options)
        self.scorer = ReferenceMetrics(self.options)

    def outputs(self) -> dict[str, str]:
        """One column per metric, then ``failure_kind``."""
        return {**dict.fromkeys(self.scorer.metrics, "object"), "failure_kind": "object"}

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Every metric of every item against its references (the best over them)."""
        return self._columns(inputs, None)

    def score_with_corpus(self, inputs: Mapping[str, Sequence[Any]]) -> tuple[Columns, dict[str, float]]:
        """:meth:`score`, and the corpus BLEU of the batch (``{"bleu": value}``, empty without BLEU), in one pass."""
        if self.scorer.bleu is None:
            return self._columns(inputs, None), {}
        stats = BleuStats()
        columns = self._columns(inputs, stats)
        return columns, {"bleu": self.scorer.bleu.corpus(stats)}

    def _columns(self, inputs: Mapping[str, Sequence[Any]], stats: BleuStats | None) -> Columns:
        columns: Columns = {name: [] for name in self.outputs()}
        for position, (prediction, references) in enumerate(
            zip(inputs["prediction"], inputs["reference"], strict=True)
        ):
            golds = _references(references, position)
            text, kind = prediction_text(prediction)
            for name, value in self.scorer.score_item(text, golds).items():
                columns[name].append(value)
            columns["failure_kind"].append(kind)
            if stats is not None and self.scorer.bleu is not None:
                self.scorer.bleu.add(stats, text or "", golds)
        return columns

    def new_summary(self) -> MetricsSummary:
        """Each metric's mean, and the corpus BLEU from statistics that add up over rows."""
        summary = MetricsSummary(metrics=self.scorer.metrics)
        if self.scorer.rouge is not None:
            summary.notes["rouge"] = self.scorer.rouge.rouge_type
        if self.scorer.bleu is not None:
            summary.reads = ("prediction", "reference")
            summary.stats = _stats_list(BleuStats())
            summary.corpus_stats = self._add_bleu
            summary.corpus_value = self._corpus
        return summary

    def _add_bleu(self, stats: list[int], inputs: Mapping[str, Sequence[Any]]) -> None:
        assert self.scorer.bleu is not None
        totals = _stats(stats)
        for prediction, references in zip(inputs["prediction"], inputs["reference"], strict=True):
            text, _ = prediction_text(prediction)
            self.scorer.bleu.add(totals, text or "", acceptable_answers(references))
        stats[:] = _stats_list(totals)

    def _corpus(self, stats: list[int]) -> dict[str, float]:
        assert self.scorer.bleu is not None
        return {"bleu": self.scorer.bleu.corpus(_stats(stats))}


def _references(value: Any, position: int) -> tuple[str, ...]:
    try:
        return acceptable_answers(value)
    except (TypeError, ValueError) as exc:
        raise item_error(functools.partial(acceptable_answers, value), "reference", position, exc) from None


def _stats_list(stats: BleuStats) -> list[int]:
    return [*stats.matches, *stats.totals, stats.hypothesis_length, stats.reference_length]


def _stats(values: list[int]) -> BleuStats:
    return BleuStats(list(values[0:4]), list(values[4:8]), values[8], values[9])
