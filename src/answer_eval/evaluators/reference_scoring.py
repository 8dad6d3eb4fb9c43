"""The reference metrics (``answer-eval metrics``): exact match, sentence BLEU and ROUGE against the references.

Its options (:class:`ReferenceOptions`) are declared once, read by the evaluator, the scorer
(:class:`ReferenceMetrics`) and the component. Each item has one prediction and one or more references;
a metric takes the **best** value over the references. BLEU is computed with ``sacrebleu`` and ROUGE
with Google's ``rouge-score``, so the values are theirs (BLEU scaled from 0-100 to [0, 1]); both are
imported only when a scorer is built, and a missing package raises an ``ImportError`` that names the
extra to install.

>>> exact_match(" Paris ", ["paris", "Paris"])
1
>>> exact_match("PARIS", ["Paris"]), exact_match("PARIS", ["Paris"], ignore_case=True)
(0, 1)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from answer_eval.errors import FailureKind
from answer_eval.evaluators.base import (
    METRIC_SOCKETS,
    Columns,
    Evaluator,
    Options,
    Role,
    Socket,
    check_bool,
    check_names,
    check_number,
    check_str,
    item_error,
    list_option,
    option,
)
from answer_eval.evaluators.contains import PREDICTION
from answer_eval.evaluators.summaries import MetricsSummary
from answer_eval.inputs.reading import acceptable_answers, read_output
from answer_eval.text.folding import fold as fold_text

__all__ = [
    "ROUGE_TYPES",
    "BleuScorer",
    "BleuStats",
    "ReferenceMetrics",
    "ReferenceMetricsCore",
    "ReferenceOptions",
    "RougeScorer",
    "exact_match",
]


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
    """The options of :class:`ReferenceMetricsCore` (see :mod:`~answer_eval.evaluators.reference_scoring`)."""

    metrics: tuple[str, ...] = list_option(
        REFERENCE_METRICS,
        flag="--metric",
        choices=REFERENCE_METRICS,
        help="the metrics to compute, each at most once; the first gives the flat score "
        "(repeatable; default: all three, in this order: %(choices)s)",
    )
    strip: bool = option(
        True, flag="--no-strip", negate=True, help="exact_match: white space at the ends counts (not stripped)"
    )
    ignore_case: bool = option(False, help="exact_match: compare case-folded text")
    fold: bool = option(
        False,
        help="exact_match: compare in the package's normal form (answer_eval.fold: case, white space, Unicode "
        "digits and minus signs, thousands separators)",
    )
    bleu_tokenize: str = option(
        "13a", choices=BLEU_TOKENIZERS, help="sacrebleu tokenizer: %(choices)s (default: %(default)s)"
    )
    bleu_smooth_method: str = option(
        "exp", choices=BLEU_SMOOTH_METHODS, help="sacrebleu smoothing: %(choices)s (default: %(default)s)"
    )
    bleu_smooth_value: float | None = option(
        None, help="the value for floor and add-k smoothing; None keeps sacrebleu's default"
    )
    bleu_lowercase: bool = option(False, help="lower-case both sides before BLEU")
    use_effective_order: bool = option(
        True,
        flag="--no-effective-order",
        negate=True,
        help="sentence BLEU keeps n-gram orders a short answer lacks",
    )
    rouge_type: str = option(
        "rougeLsum",
        choices=ROUGE_TYPES,
        help="ROUGE variant: %(choices)s (default: %(default)s)",
    )
    use_stemmer: bool = option(False, help="ROUGE: Porter-stem words first")
    split_summaries: bool = option(
        False, help="ROUGE rougeLsum: split sentences with NLTK (needs its punkt_tab data) rather than at newlines"
    )

    def check(self) -> None:
        """The types; the values are checked by the metrics that use them (a metric not asked for is not built)."""
        check_names("metrics", self.metrics)
        for name in _FLAGS:
            check_bool(name, getattr(self, name))
        for name in _NAMES:
            check_str(name, getattr(self, name))
        check_number("bleu_smooth_value", self.bleu_smooth_value, optional=True)


METRICS_EXTRA_HINT = 'pip install "answer-eval-haystack[metrics]"'
"""How to install the packages BLEU and ROUGE need."""


def exact_match(
    prediction: str,
    references: str | Sequence[str],
    *,
    strip: bool = True,
    ignore_case: bool = False,
    fold: bool = False,
) -> int:
    """1 when ``prediction`` equals one of ``references``, else 0.

    :param strip: Ignore white space at both ends (default on: a trailing newline is not an error).
    :param ignore_case: Compare ``casefold``-ed text.
    :param fold: Compare in the package's normal form (:func:`answer_eval.fold`: case, every white
        space run, Unicode digits and minus signs, thousands separators), so "12,400" equals
        "12400". Implies ``strip`` and ``ignore_case``.
    """
    candidates = (references,) if isinstance(references, str) else references

    def normal(text: str) -> str:
        if fold:
            return fold_text(text)
        if strip:
            text = text.strip()
        return text.casefold() if ignore_case else text

    target = normal(prediction)
    return int(any(normal(reference) == target for reference in candidates))


def _missing(package: str) -> ImportError:
    return ImportError(f"{package} is needed for this metric and is not installed; run: {METRICS_EXTRA_HINT}")


@dataclass
class BleuStats:
    """Sufficient statistics of corpus BLEU, summed item by item (memory does not grow with the corpus).

    :param matches: Clipped n-gram matches per order.
    :param totals: Hypothesis n-grams per order.
    :param hypothesis_length: Hypothesis tokens.
    :param reference_length: Closest reference length, summed.
    """

    matches: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    hypothesis_length: int = 0
    reference_length: int = 0

    def snapshot(self) -> dict[str, Any]:
        """The statistics as JSON-ready values (kept in a checkpoint to resume a run)."""
        return {
            "matches": list(self.matches),
            "totals": list(self.totals),
            "hypothesis_length": self.hypothesis_length,
            "reference_length": self.reference_length,
        }

    def restore(self, snapshot: Any) -> None:
        """Take the statistics of a :meth:`snapshot`; ``ValueError`` if it is not one."""
        try:
            matches, totals = [int(n) for n in snapshot["matches"]], [int(n) for n in snapshot["totals"]]
            lengths = int(snapshot["hypothesis_length"]), int(snapshot["reference_length"])
        except (KeyError, TypeError, ValueError):
            raise ValueError("not a snapshot of BLEU statistics") from None
        if len(matches) != 4 or len(totals) != 4:
            raise ValueError("not a snapshot of BLEU statistics")
        self.matches, self.totals = matches, totals
        self.hypothesis_length, self.reference_length = lengths


class BleuScorer:
    """Sentence and corpus BLEU with sacrebleu, scaled to [0, 1].

    Sentence BLEU of a prediction is the best, over its references, of
    ``sacrebleu.sentence_bleu(prediction, [reference], ...).score / 100`` (capped at 1.0: sacrebleu's
    floating-point sum can give 100.00000000000004 for a perfect match). Corpus BLEU is
    ``sacrebleu.corpus_bleu(predictions, reference_streams, ...).score / 100`` with **all** of each
    item's references (sacrebleu's standard multi-reference BLEU: n-gram counts clipped by the most
    generous reference, closest reference length), computed from statistics summed item by item so
    a file is streamed. The sacrebleu objects are built once.

    :param options: The ``bleu_*`` options and ``use_effective_order`` of :class:`ReferenceOptions`
        (default: its defaults): ``bleu_tokenize`` (``"13a"``, mteval's; ``"intl"`` for non-Latin
        punctuation, ``"char"`` or ``"zh"`` for scripts without spaces), ``bleu_smooth_method``
        (``"exp"``, sacrebleu's, ``"floor"``, ``"add-k"`` or ``"none"``), ``bleu_smooth_value`` (for
        ``floor``/``add-k``; sacrebleu's defaults 0.1 and 1 when ``None``), ``bleu_lowercase``, and
        ``use_effective_order`` (sentence BLEU leaves out n-gram orders the sentence is too short
        for: otherwise a three-word answer scores 0 whatever it says; corpus BLEU always uses
        sacrebleu's corpus default, off).
    :raises ImportError: When sacrebleu is not installed.
    """

    def __init__(self, options: ReferenceOptions | None = None) -> None:
        options = _options(options)
        tokenize, smooth_method = options.bleu_tokenize, options.bleu_smooth_method
        smooth_value, lowercase = options.bleu_smooth_value, options.bleu_lowercase
        if tokenize not in BLEU_TOKENIZERS:
            raise ValueError(f"tokenize must be one of {', '.join(BLEU_TOKENIZERS)}; got {tokenize!r}")
        if smooth_method not in BLEU_SMOOTH_METHODS:
            raise ValueError(f"smooth_method must be one of {', '.join(BLEU_SMOOTH_METHODS)}; got {smooth_method!r}")
        try:
            from sacrebleu.metrics.bleu import BLEU
        except ImportError:
            raise _missing("sacrebleu") from None
        settings: dict[str, Any] = {
            "tokenize": tokenize,
            "smooth_method": smooth_method,
            "smooth_value": smooth_value,
            "lowercase": lowercase,
        }
        self._sentence = BLEU(effective_order=options.use_effective_order, **settings)
        # Corpus statistics come from an unsmoothed scorer: sacrebleu's add-k smoothing adds to the
        # counts it returns, and a scorer without effective order logs a warning on every sentence.
        self._stats = BLEU(tokenize=tokenize, lowercase=lowercase, smooth_method="none", effective_order=True)
        self._compute = BLEU.compute_bleu
        self.smooth_method = smooth_method
        self.smooth_value = smooth_value

    def sentence(self, prediction: str, references: Sequence[str]) -> float:
        """Best sentence BLEU over ``references``, in [0, 1]."""
        best = max(self._sentence.sentence_score(prediction, [reference]).score for reference in references)
        return min(1.0, best / 100)

    def add(self, stats: BleuStats, prediction: str, references: Sequence[str]) -> None:
        """Add one item's corpus statistics (all references together) to ``stats``."""
        joint = self._stats.sentence_score(prediction, list(references))
        for order in range(4):
            stats.matches[order] += joint.counts[order]
            stats.totals[order] += joint.totals[order]
        stats.hypothesis_length += joint.sys_len
        stats.reference_length += joint.ref_len

    def corpus(self, stats: BleuStats) -> float:
        """Corpus BLEU from summed statistics, in [0, 1]; equals ``sacrebleu.corpus_bleu(...).score / 100``."""
        score = self._compute(
            list(stats.matches),
            list(stats.totals),
            stats.hypothesis_length,
            stats.reference_length,
            smooth_method=self.smooth_method,
            smooth_value=self.smooth_value,
            effective_order=False,
        )
        return min(1.0, float(score.score) / 100)


class RougeScorer:
    """ROUGE F-measure with Google's ``rouge-score`` (``rouge_scorer.RougeScorer``), built once.

    The value of a prediction is the best F-measure over its references (what
    ``RougeScorer.score_multi`` picks). Note ``rouge-score``'s default tokenizer: it lower-cases
    and keeps only ASCII letters and digits, so accented letters split words and text in other
    scripts has no tokens (ROUGE 0); use BLEU with ``tokenize="intl"`` or ``"char"`` there.

    :param options: :class:`ReferenceOptions` (default: its defaults), of which ``rouge_type`` (one of
        :data:`ROUGE_TYPES`; ``"rougeLsum"``: summary-level LCS over sentences, which ``rouge-score``
        takes to be the lines of the text), ``use_stemmer`` (Porter-stem words first) and
        ``split_summaries`` (for ``rougeLsum``, split sentences with NLTK's ``sent_tokenize`` instead
        of at newlines, as ``rouge-score`` does; needs NLTK's ``punkt_tab`` data,
        ``python -m nltk.downloader punkt_tab``, checked here rather than on the first item).
    :raises ImportError: When rouge-score is not installed.
    :raises LookupError: When ``split_summaries`` needs NLTK data that is not installed.
    """

    def __init__(self, options: ReferenceOptions | None = None) -> None:
        options = _options(options)
        rouge_type, use_stemmer, split_summaries = options.rouge_type, options.use_stemmer, options.split_summaries
        if rouge_type not in ROUGE_TYPES:
            raise ValueError(f"rouge_type must be one of {', '.join(ROUGE_TYPES)}; got {rouge_type!r}")
        try:
            from rouge_score import rouge_scorer  # type: ignore[import-untyped]
        except ImportError:
            raise _missing("rouge-score") from None
        if split_summaries and rouge_type == "rougeLsum":
            _check_sentence_splitter()
        self.rouge_type = rouge_type
        self._scorer = rouge_scorer.RougeScorer([rouge_type], use_stemmer=use_stemmer, split_summaries=split_summaries)

    def score(self, prediction: str, references: Sequence[str]) -> float:
        """Best ROUGE F-measure over ``references``, in [0, 1]."""
        return max(
            float(self._scorer.score(reference, prediction)[self.rouge_type].fmeasure) for reference in references
        )


def _check_sentence_splitter() -> None:
    import nltk  # type: ignore[import-untyped]

    try:
        nltk.sent_tokenize("One. Two.")
    except LookupError:
        raise LookupError(
            "split_summaries splits sentences with NLTK's punkt_tab data, which is not installed; "
            "run: python -m nltk.downloader punkt_tab (or leave split_summaries off and put each "
            "sentence on its own line)"
        ) from None


def prediction_text(prediction: Any) -> tuple[str | None, str | None]:
    """Read a prediction's text (any form :func:`answer_eval.read_output` reads) and its failure kind.

    Returns ``(text, None)`` when there is text, ``(None, "error")`` for a failed result and
    ``(None, "parse_failure")`` when there is no text or it is blank.
    """
    output = read_output(prediction)
    if output.text is not None and output.text.strip():
        return output.text, None
    return None, FailureKind.ERROR if output.error is not None else FailureKind.PARSE_FAILURE


class ReferenceMetrics:
    """Exact match, BLEU and ROUGE of one item: the framework-free core of ``ReferenceMetricsCore``.

    A prediction with no text scores 0 on every metric; it is scored as an empty string in corpus
    BLEU. The options are :class:`ReferenceOptions` (default: its defaults); see
    :func:`exact_match`, :class:`BleuScorer` and :class:`RougeScorer` for what they do.
    """

    def __init__(self, options: ReferenceOptions | None = None) -> None:
        options = _options(options)
        metrics = options.metrics
        if isinstance(metrics, str) or not metrics:
            raise ValueError(f"metrics must be a non-empty list of {', '.join(REFERENCE_METRICS)}")
        unknown = [name for name in metrics if name not in REFERENCE_METRICS]
        if unknown or len(set(metrics)) != len(metrics):
            raise ValueError(
                f"metrics must name each of {', '.join(REFERENCE_METRICS)} at most once; got {list(metrics)!r}"
            )
        self.metrics = tuple(metrics)
        self._exact = {"strip": options.strip, "ignore_case": options.ignore_case, "fold": options.fold}
        self.bleu = BleuScorer(options) if "bleu" in self.metrics else None
        self.rouge = RougeScorer(options) if "rouge" in self.metrics else None

    def score_item(self, text: str | None, references: Sequence[str]) -> dict[str, float]:
        """Every requested metric for one prediction text (``None``: no text, all 0) and its references."""
        scores: dict[str, float] = {}
        for name in self.metrics:
            if text is None:
                scores[name] = 0 if name == "exact_match" else 0.0
            elif name == "exact_match":
                scores[name] = exact_match(text, references, **self._exact)
            elif name == "bleu" and self.bleu is not None:
                scores[name] = self.bleu.sentence(text, references)
            elif self.rouge is not None:
                scores[name] = self.rouge.score(text, references)
        return scores


def _options(options: ReferenceOptions | None) -> ReferenceOptions:
    # The options live beside the evaluator, which imports this module: imported when first needed.

    return ReferenceOptions() if options is None else options


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
    sockets: ClassVar[dict[str, Socket]] = METRIC_SOCKETS
    options: ReferenceOptions

    def __init__(self, options: ReferenceOptions | None = None) -> None:
        """Make the metrics; ``ImportError`` without the metrics extra, ``ValueError`` for a bad option."""
        super().__init__(options)
        self.scorer = ReferenceMetrics(self.options)

    def outputs(self) -> dict[str, str]:
        """One column per metric, then ``failure_kind``."""
        return {**dict.fromkeys(self.scorer.metrics, "object"), "failure_kind": "object"}

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Every metric of every item against its references (the best over them)."""
        return self._columns(inputs, None)

    def socket_columns(self, inputs: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
        """:meth:`score`'s columns and, under ``corpus``, the corpus scores (BLEU's) by metric."""
        columns, corpus = self.score_with_corpus(inputs)
        return {**columns, "corpus": corpus}

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
