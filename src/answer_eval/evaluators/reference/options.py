"""The options of the reference evaluator: declared once, read by its evaluator, its scorer and its component."""

from __future__ import annotations

from dataclasses import dataclass

from answer_eval.evaluators.base import Options, list_option, option
from answer_eval.evaluators.checks import check_bool, check_names, check_number, check_str

__all__ = ["BLEU_SMOOTH_METHODS", "BLEU_TOKENIZERS", "REFERENCE_METRICS", "ROUGE_TYPES", "ReferenceOptions"]

REFERENCE_METRICS = ("exact_match", "bleu", "rouge")
"""The metric names :class:`ReferenceMetrics` knows, in a stable order."""
ROUGE_TYPES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL", "rougeLsum")
"""ROUGE variants: n-gram overlap for n = 1..9, longest common subsequence, and its summary-level form."""
BLEU_TOKENIZERS = ("13a", "intl", "char", "none", "zh", "ja-mecab", "ko-mecab")
"""sacrebleu tokenizers accepted (``ja-mecab``/``ko-mecab`` need sacrebleu's own extras). The
SentencePiece ones (``spm``, ``flores101``, ``flores200``) are left out: they download a model."""
BLEU_SMOOTH_METHODS = ("none", "floor", "add-k", "exp")
"""Smoothing methods of sacrebleu's BLEU."""

_FLAGS = ("strip", "ignore_case", "fold", "bleu_lowercase", "use_effective_order", "use_stemmer", "split_summaries")
_NAMES = ("bleu_tokenize", "bleu_smooth_method", "rouge_type")


@dataclass(frozen=True)
class ReferenceOptions(Options):
    """The options of :class:`ReferenceMetricsCore` (see :mod:`~answer_eval.evaluators.reference.metrics`)."""

    metrics: tuple[str, ...] = list_option(
        REFERENCE_METRICS,
        flag="--metric",
        choices=REFERENCE_METRICS,
        help="a metric to compute (repeatable; default: all three, in this order: %(choices)s)",
    )
    strip: bool = option(True, flag="--no-strip", negate=True, help="white space at the ends counts")
    ignore_case: bool = option(False, help="compare case-folded text")
    fold: bool = option(False, help="compare in the package's normal form (answer_eval.fold)")
    bleu_tokenize: str = option("13a", choices=BLEU_TOKENIZERS, help="default: %(default)s")
    bleu_smooth_method: str = option("exp", choices=BLEU_SMOOTH_METHODS, help="default: %(default)s")
    bleu_smooth_value: float | None = option(None, help="the value for floor and add-k smoothing")
    bleu_lowercase: bool = option(False, help="lower-case both sides first")
    use_effective_order: bool = option(
        True,
        flag="--no-effective-order",
        negate=True,
        help="sentence BLEU keeps n-gram orders a short answer lacks",
    )
    rouge_type: str = option("rougeLsum", choices=ROUGE_TYPES, help="default: %(default)s")
    use_stemmer: bool = option(False, help="Porter-stem words first")
    split_summaries: bool = option(False, help="rougeLsum: split sentences with NLTK (needs punkt_tab)")

    def check(self) -> None:
        """The types; the values are checked by the metrics that use them (a metric not asked for is not built)."""
        check_names("metrics", self.metrics)
        for name in _FLAGS:
            check_bool(name, getattr(self, name))
        for name in _NAMES:
            check_str(name, getattr(self, name))
        check_number("bleu_smooth_value", self.bleu_smooth_value, optional=True)
