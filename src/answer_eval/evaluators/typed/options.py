"""The options of the typed evaluator: declared once, read by its evaluator, its scorer and its component."""

from __future__ import annotations

from dataclasses import dataclass

from answer_eval.evaluators.base import Options, list_option, option
from answer_eval.evaluators.checks import check_bool, check_number, check_str
from answer_eval.evaluators.typed.text_metrics import DEFAULT_ROUGE_TYPES

__all__ = ["TypedOptions"]

_ROUGE_CHOICES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL")
_NUMBERS = ("rel_tol", "abs_tol")
_FLAGS = ("use_stemmer", "ocr_ignore_case", "ocr_ignore_punctuation")


@dataclass(frozen=True)
class TypedOptions(Options):
    """The options of :class:`TypedAnswerCore` (each rule's: see :class:`~.scorer.TypedAnswerScorer`)."""

    use_stemmer: bool = option(
        True, flag="--no-stemmer", negate=True, help="free-form: no Porter stemming before ROUGE"
    )
    decimals: int | None = option(
        2,
        help="numerical: decimal places to round to (default: 2)",
        none_flag="--no-rounding",
        none_help="numerical: compare numbers exactly",
    )
    rel_tol: float = option(0.0, help="numerical: relative tolerance (default: 0)")
    abs_tol: float = option(0.0, help="numerical: absolute tolerance (default: 0)")
    number: str = option("last", choices=("last", "first", "only"), help="which number an answer gives")
    percent: str = option("unit", choices=("unit", "fraction", "either"), help="how 45%% reads (default: unit, 45)")
    ocr_ignore_case: bool = option(False, help="OCR: compare words case-insensitively")
    ocr_ignore_punctuation: bool = option(False, help="OCR: remove punctuation from words")
    rouge_types: tuple[str, ...] = list_option(
        DEFAULT_ROUGE_TYPES,
        flag="--rouge-type",
        choices=_ROUGE_CHOICES,
        help=f"free-form: a ROUGE variant to average (repeatable; default: {', '.join(DEFAULT_ROUGE_TYPES)})",
    )
    on_unknown: str = option("raise", choices=("raise", "zero"), help="an unknown type: stop (exit 2) or score 0")
    default_type: str | None = option(None, help="the question type of rows without a type field (or with null)")

    def check(self) -> None:
        """Flags are bools, tolerances numbers, ``decimals`` an int or ``None``, names str."""
        for name in _FLAGS:
            check_bool(name, getattr(self, name))
        check_number("decimals", self.decimals, integer=True, optional=True)
        for name in _NUMBERS:
            check_number(name, getattr(self, name))
        for name in ("number", "percent", "on_unknown"):
            check_str(name, getattr(self, name))
        check_str("default_type", self.default_type, optional=True)
        if not isinstance(self.rouge_types, tuple) or not all(isinstance(name, str) for name in self.rouge_types):
            raise TypeError("rouge_types must be a list of str or None")
