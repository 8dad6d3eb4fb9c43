"""The typed evaluator (``answer-eval typed``): each answer scored by its question type's rule, a reward in [0, 1].

Question types: multiple choice, numerical, OCR, free-form, regression, and custom types. The
options (:class:`TypedOptions`) are declared once, read by the evaluator, the scorer and the
component. :class:`TypedAnswerScorer` is the framework-free core of ``TypedAnswerEvaluator`` and of
``answer-eval typed``. Per item it reads the prediction (any form :func:`answer_eval.read_output`
reads), takes the answer out of its ``<answer>`` span (:func:`answer_eval.inputs.reading.extract_answer`,
the whole text when there is none) on both sides, and applies the rule of the question type
(:mod:`answer_eval.evaluators.typed_rules`). Question types are matched case- and separator-insensitively.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from answer_eval.errors import FailureKind, InputError, ItemError, OptionError, count_failures
from answer_eval.evaluators.base import (
    Columns,
    Evaluator,
    Options,
    Role,
    Socket,
    check_bool,
    check_instance,
    check_number,
    check_str,
    item_error,
    list_option,
    option,
)
from answer_eval.evaluators.summaries import TypedSummary
from answer_eval.evaluators.text_metrics import DEFAULT_ROUGE_TYPES, RougeMean, require_typed_extra
from answer_eval.evaluators.typed_rules import (
    BadReference,
    ChoiceRule,
    CustomRule,
    CustomScorer,
    FreeFormRule,
    Graded,
    NumberRules,
    NumericalRule,
    OcrRule,
    RegressionRule,
    Rule,
)
from answer_eval.inputs.reading import ReadOutput, acceptable_answers, extract_answer, read_output

__all__ = [
    "BUILTIN_TYPES",
    "UNKNOWN_TYPE",
    "TypedAnswerCore",
    "TypedAnswerScorer",
    "TypedBatch",
    "TypedOptions",
    "check_lists",
    "references",
    "type_key",
]


_ROUGE_CHOICES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL")
_NUMBERS = ("rel_tol", "abs_tol")
_FLAGS = ("use_stemmer", "ocr_ignore_case", "ocr_ignore_punctuation")


@dataclass(frozen=True)
class TypedOptions(Options):
    """The options of :class:`TypedAnswerCore` (each rule's: see :class:`~.scorer.TypedAnswerScorer`)."""

    use_stemmer: bool = option(
        True,
        flag="--no-stemmer",
        negate=True,
        help="free-form: no Porter stemming before ROUGE (rouge-score's use_stemmer)",
    )
    decimals: int | None = option(
        2,
        help="numerical: decimal places both numbers are rounded to (half away from zero) before comparing; "
        "None compares exactly (default: %(default)s)",
        none_flag="--no-rounding",
        none_help="numerical: compare numbers exactly",
    )
    rel_tol: float = option(
        0.0, help="numerical: also equal when |a - b| <= rel_tol * max(|a|, |b|) (default: %(default)s)"
    )
    abs_tol: float = option(0.0, help="numerical: also equal when |a - b| <= abs_tol (default: %(default)s)")
    number: str = option(
        "last",
        choices=("last", "first", "only"),
        help="numerical and regression: the number an answer with several gives: last (worked answers end with "
        "the result), first, or only (several different numbers make the answer wrong) (default: %(default)s)",
    )
    percent: str = option(
        "unit",
        choices=("unit", "fraction", "either"),
        help="numerical and regression: how 45%% reads: unit (45, equal to 45), fraction (0.45) or either (both "
        "readings tried) (default: %(default)s)",
    )
    ocr_ignore_case: bool = option(False, help="OCR: compare words case-insensitively")
    ocr_ignore_punctuation: bool = option(False, help="OCR: remove punctuation from words before comparing")
    rouge_types: tuple[str, ...] = list_option(
        DEFAULT_ROUGE_TYPES,
        flag="--rouge-type",
        choices=_ROUGE_CHOICES,
        help=f"free-form: a ROUGE variant to average (repeatable; default: {', '.join(DEFAULT_ROUGE_TYPES)})",
    )
    on_unknown: str = option(
        "raise",
        choices=("raise", "zero"),
        help="an unknown question type: raise (stop, naming the item and the known types) or zero (score 0, "
        "failure kind unknown_type) (default: %(default)s)",
    )
    default_type: str | None = option(
        None, help="the question type of items given without one (no type field or column, or null)"
    )

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


class TypedAnswerCore(Evaluator):
    """Multiple choice, numerical, OCR, free-form and regression answers, each by its own rule.

    :param options: The rules' options.
    :param custom_types: More question types: name to a function ``(answer, reference) -> float``
        in [0, 1]. Code, not options: they are not in the signature's values (only their names)
        and do not travel to a Dask cluster.
    """

    name = "typed"
    component = "TypedAnswerEvaluator"
    options_type = TypedOptions
    roles = (
        Role("prediction", "model_output", "the model output"),
        Role("solution", "solution", "the reference solution", kinds=frozenset({"string", "int", "float", "list"})),
        Role("type", "problem_type", "the question type", optional=True, kinds=frozenset({"string", "null"})),
    )
    renamable: ClassVar[dict[str, str]] = {"reward": "the score written back"}
    sockets: ClassVar[dict[str, Socket]] = {
        "score": Socket(float),
        "individual_scores": Socket(list[float], "reward"),
        "failure_kinds": Socket(list[str | None], "failure_kind"),
        "outcomes": Socket(list[str | None], "outcome"),
        "per_type": Socket(dict[str, dict[str, float]], "per_type"),
        "failure_counts": Socket(dict[str, int]),
    }
    options: TypedOptions

    def __init__(
        self, options: TypedOptions | None = None, custom_types: Mapping[str, Callable[[str, str], float]] | None = None
    ) -> None:
        """Make the scorer; ``ImportError`` without the typed extra, ``ValueError`` for a bad option."""
        super().__init__(options)
        check_instance("custom_types", custom_types, dict, "a dict of name to function", optional=True)
        self.custom_types = dict(custom_types or {})
        self.scorer = TypedAnswerScorer(self.options, self.custom_types)
        default_type = self.options.default_type
        if default_type is not None and self.scorer.registry.resolve(default_type) is None:
            known = ", ".join(repr(name) for name in self.scorer.registry.known_types)
            raise OptionError("default_type", f"{default_type!r} is not a known question type; known types: {known}")

    def required(self) -> tuple[str, ...]:
        """The model output and the solution; the question type too unless there is a ``default_type``."""
        return (
            ("prediction", "solution") if self.options.default_type is not None else ("prediction", "solution", "type")
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.options, self.custom_types))

    @property
    def signature(self) -> str:
        """The options' signature, with the names of the custom types."""
        base = super().signature
        if not self.custom_types:
            return base
        head, _, version = base.rpartition("|")
        return f"{head}|custom:[{','.join(sorted(self.custom_types))}]|{version}"

    def warm_up(self) -> None:
        """Load the stemmer now rather than on the first free-form answer."""
        self.scorer.warm_up()

    def check_fields(self, fields: Mapping[str, str], written: Sequence[str]) -> None:
        """The reward may not overwrite an input field or ``failure_kind``, nor the type be ``failure_kind``."""
        reward = written[0]
        if reward in (*fields.values(), "failure_kind"):
            raise InputError(f"--reward-field {reward!r} would overwrite an input field or failure_kind")
        if fields.get("type") == "failure_kind":
            raise InputError("--type-field 'failure_kind' would be overwritten by the failure kind written back")

    def outputs(self) -> dict[str, str]:
        """``reward`` (float) and ``failure_kind``."""
        return {"reward": "float64", "failure_kind": "object"}

    def types(self, inputs: Mapping[str, Sequence[Any]], count: int) -> list[Any]:
        """Each row's question type: the ``type`` column, the ``default_type`` where it is missing or null."""
        default = self.options.default_type
        given = inputs.get("type")
        if given is None:
            return [default] * count
        if default is None:
            return list(given)
        return [default if value is None or _is_na(value) else value for value in given]

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Score a batch; an item that cannot be scored is named by its position."""
        batch = self.score_batch(inputs)
        return {"reward": batch.individual_scores, "failure_kind": batch.failure_kinds}

    def socket_columns(self, inputs: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
        """:meth:`score`'s columns, with each answer's ``outcome`` and the batch's ``per_type`` means."""
        batch = self.score_batch(inputs)
        return {
            "reward": batch.individual_scores,
            "failure_kind": batch.failure_kinds,
            "outcome": batch.outcomes,
            "per_type": batch.per_type,
        }

    def score_batch(self, inputs: Mapping[str, Sequence[Any]]) -> TypedBatch:
        """:meth:`score`'s batch, with what each answer gave (outcomes) and the means per type."""
        predictions, solutions = inputs["prediction"], inputs["solution"]
        types = self.types(inputs, len(predictions))
        try:
            return self.scorer.score_batch(predictions, solutions, types)
        except (TypeError, ValueError) as exc:
            raise self._locate(predictions, solutions, types, exc) from None

    def _locate(
        self, predictions: Sequence[Any], solutions: Sequence[Any], types: list[Any], error: Exception
    ) -> ItemError:
        for position, row in enumerate(zip(predictions, solutions, types, strict=True)):
            try:
                self.scorer.score(*row)
            except (TypeError, ValueError) as exc:
                return item_error(functools.partial(self.scorer.score, *row), None, position, exc)
        return ItemError(str(error))

    def new_summary(self) -> TypedSummary:
        """The mean reward, per question type."""
        default = self.options.default_type

        def type_name(given: Any) -> str:
            question_type = default if given is None or _is_na(given) else given
            return self.scorer.type_name(str(question_type))

        return TypedSummary(reads=("type",), type_name=type_name)


def _is_na(value: Any) -> bool:
    # pandas' missing value, without importing pandas where it is not loaded already.
    return type(value).__name__ == "NAType"


BUILTIN_TYPES = ("multiple choice", "numerical", "OCR", "free-form", "regression")
"""The built-in question types, by their canonical names."""
UNKNOWN_TYPE = "unknown_type"
"""The failure kind of an item whose question type is unknown, under ``on_unknown="zero"``."""
_ALIASES = {
    "multiplechoice": "multiple choice",
    "mcq": "multiple choice",
    "numerical": "numerical",
    "numeric": "numerical",
    "ocr": "OCR",
    "freeform": "free-form",
    "regression": "regression",
}
_SEPARATORS = re.compile(r"[\s_\-./]+")


def type_key(name: str) -> str:
    """The key a question type is matched by: case-folded, separators (space, ``_``, ``-``, ``.``, ``/``) removed.

    >>> type_key("Multiple_Choice") == type_key("multiple-choice") == "multiplechoice"
    True
    """
    return _SEPARATORS.sub("", name.casefold())


class TypeRegistry:
    """Question types and their names: the built-in ones, their aliases and registered custom types.

    :param custom: Custom type name to scoring function ``(answer, reference) -> float in [0, 1]``.
    """

    def __init__(self, custom: Mapping[str, CustomScorer] | None = None) -> None:
        self._names: dict[str, str] = dict(_ALIASES)
        self._custom: dict[str, CustomScorer] = {}
        for name, function in (custom or {}).items():
            self.register(name, function)

    def register(self, name: str, function: CustomScorer) -> None:
        """Register a custom type; its name must not match a built-in type, alias or other custom type."""
        if not isinstance(name, str) or not type_key(name):
            raise ValueError(f"a custom type needs a non-blank name, got {name!r}")
        if not callable(function):
            raise TypeError(f"the scorer of custom type {name!r} must be callable, got {type(function).__name__}")
        key = type_key(name)
        if key in self._names:
            raise ValueError(f"custom type {name!r} clashes with the type {self._names[key]!r}; choose another name")
        self._names[key] = name
        self._custom[name] = function

    def resolve(self, question_type: str) -> str | None:
        """The canonical name of ``question_type``, or ``None`` when it is unknown."""
        return self._names.get(type_key(question_type))

    @property
    def custom(self) -> dict[str, CustomScorer]:
        """The registered custom types and their functions."""
        return dict(self._custom)

    @property
    def known_types(self) -> tuple[str, ...]:
        """Every known type: built-in then custom, canonical names."""
        return (*BUILTIN_TYPES, *self._custom)


@dataclass(frozen=True)
class TypedScore:
    """The score of one item.

    :param score: In ``[0, 1]``.
    :param failure_kind: ``None`` when right or graded without failure; otherwise ``parse_failure``
        (no answer, number or option could be read), ``wrong`` (a 0/1 type scored 0, or a graded
        type scored exactly 0), ``unknown_type``, or a kind the prediction carries (``error``,
        ``budget_stop``, ``refusal``...).
    :param outcome: What was read from the answer: the option letter(s), the number, or the text.
    :param question_type: The canonical type name (an unknown type as given, trimmed).
    """

    score: float
    failure_kind: str | None
    outcome: str | None
    question_type: str


@dataclass(frozen=True)
class TypedBatch:
    """Scores of a batch, with means overall and per question type."""

    items: list[TypedScore]
    per_type: dict[str, dict[str, float | int]] = field(default_factory=dict)

    @property
    def individual_scores(self) -> list[float]:
        """The score of every item."""
        return [item.score for item in self.items]

    @property
    def score(self) -> float:
        """The mean score."""
        return sum(self.individual_scores) / len(self.items)

    @property
    def failure_kinds(self) -> list[str | None]:
        """The failure kind of every item."""
        return [item.failure_kind for item in self.items]

    @property
    def outcomes(self) -> list[str | None]:
        """What was read from every answer."""
        return [item.outcome for item in self.items]

    @property
    def failure_counts(self) -> dict[str, int]:
        """Failure kind to count: every standard kind (0 when absent), then others such as ``unknown_type``."""
        return count_failures(self.failure_kinds)


def per_type_means(items: Sequence[TypedScore]) -> dict[str, dict[str, float | int]]:
    """Type name to ``{"score": mean, "count": n}``, in order of first appearance."""
    totals: dict[str, list[float]] = {}
    for item in items:
        totals.setdefault(item.question_type, []).append(item.score)
    return {name: {"score": sum(scores) / len(scores), "count": len(scores)} for name, scores in totals.items()}


def _where(position: int | None) -> str:
    return "" if position is None else f" at position {position}"


def references(ground_truth: Any, position: int | None = None) -> tuple[str, ...]:
    """The acceptable reference texts of one item: a str, int, finite float or a non-empty list of them.

    Floats are written with ``repr`` ("42.5"). Raises ``TypeError``/``ValueError`` naming ``position``.
    """

    def as_label(value: Any) -> Any:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"ground truth{_where(position)} is {value!r}: not a number to compare with")
            return repr(value)
        return value

    if isinstance(ground_truth, (list, tuple)):
        return acceptable_answers([as_label(item) for item in ground_truth], position)
    return acceptable_answers(as_label(ground_truth), position)


class TypedAnswerScorer:
    """Scores answers by question type; the core of ``TypedAnswerEvaluator`` and ``answer-eval typed``.

    :param options: :class:`~answer_eval.evaluators.typed_scoring.TypedOptions` (default: its
        defaults): each rule's options (``use_stemmer`` and ``rouge_types`` for free-form ROUGE;
        ``decimals``, ``rel_tol``, ``abs_tol``, ``number`` and ``percent`` for numerical and
        regression; ``ocr_ignore_case`` and ``ocr_ignore_punctuation`` for OCR) and ``on_unknown``
        (``"raise"``: ``ValueError`` for an unknown type; ``"zero"``: score 0, ``unknown_type``).
        ``default_type`` is the evaluator's business, not the scorer's.
    :param custom_types: Custom type name to function ``(answer, reference) -> float in [0, 1]``.
    :raises ImportError: When the ``typed`` extra (jiwer, rouge-score) is not installed.
    """

    def __init__(
        self, options: TypedOptions | None = None, custom_types: Mapping[str, CustomScorer] | None = None
    ) -> None:
        require_typed_extra()
        if options is None:
            # The options live beside the evaluator, which imports this module: imported when first needed.

            options = TypedOptions()
        on_unknown = options.on_unknown
        if on_unknown not in ("raise", "zero"):
            raise ValueError(f"on_unknown must be 'raise' or 'zero', got {on_unknown!r}")
        self.on_unknown = on_unknown
        self.numbers = NumberRules(options.decimals, options.rel_tol, options.abs_tol, options.number, options.percent)
        self.rouge = RougeMean(options.rouge_types, options.use_stemmer)
        self.registry = TypeRegistry(custom_types)
        self._rules: dict[str, Rule] = {
            "multiple choice": ChoiceRule(),
            "numerical": NumericalRule(self.numbers),
            "OCR": OcrRule(options.ocr_ignore_case, options.ocr_ignore_punctuation),
            "free-form": FreeFormRule(self.rouge),
            "regression": RegressionRule(self.numbers),
        }
        for name, function in self.registry.custom.items():
            self._rules[name] = CustomRule(name, function)

    def warm_up(self) -> None:
        """Load the stemmer now rather than on the first free-form answer."""
        self.rouge.warm_up()

    def resolve(self, question_type: Any, position: int | None = None) -> str | None:
        """The canonical name of a question type, ``None`` if unknown under ``on_unknown="zero"``.

        :raises TypeError: If ``question_type`` is not a str.
        :raises ValueError: If it is unknown and ``on_unknown`` is ``"raise"``.
        """
        if not isinstance(question_type, str):
            raise TypeError(f"question type{_where(position)} must be a str, got {type(question_type).__name__}")
        name = self.registry.resolve(question_type)
        if name is None and self.on_unknown == "raise":
            known = ", ".join(repr(known) for known in self.registry.known_types)
            raise ValueError(
                f"unknown question type {question_type!r}{_where(position)}; known types: {known} "
                f"(aliases: 'mcq', 'numeric'; case, spaces, '_' and '-' are ignored)"
            )
        return name

    def type_name(self, question_type: str) -> str:
        """The name a score of this question type is reported under: its canonical name, or itself, trimmed."""
        return self.registry.resolve(question_type) or question_type.strip() or question_type

    def score(self, prediction: Any, ground_truth: Any, question_type: Any, position: int | None = None) -> TypedScore:
        """Score one item.

        :param prediction: The model output, in any form :func:`answer_eval.read_output` reads.
        :param ground_truth: The reference solution: a str, int or float, or a list of acceptable
            ones (the best score counts).
        :param question_type: The question type's name.
        :param position: The item's position, named in error messages.
        :raises TypeError: For a question type that is not a str, or a ground truth of a wrong type.
        :raises ValueError: For an unknown type (under ``on_unknown="raise"``) or a reference that
            cannot be graded for its type (blank, no number, several options...).
        """
        return self._score_prepared(prediction, self._prepare(ground_truth, question_type, position), question_type)

    def _prepare(self, ground_truth: Any, question_type: Any, position: int | None) -> _Prepared:
        """Check the item's type and reference, and read the reference(s) for the type's rule."""
        name = self.resolve(question_type, position)
        texts = references(ground_truth, position)
        if name is None:
            return _Prepared(None, None, [])
        rule = self._rules[name]
        readings = []
        for text in texts:
            answer_text = extract_answer(text)
            try:
                if not answer_text:
                    raise BadReference("is blank once its <answer> span is taken")
                readings.append(rule.reference(answer_text))
            except BadReference as exc:
                raise ValueError(f"ground truth{_where(position)} ({name}) {exc}") from None
        return _Prepared(name, rule, readings)

    def _score_prepared(self, prediction: Any, prepared: _Prepared, question_type: Any) -> TypedScore:
        if prepared.name is None or prepared.rule is None:
            return TypedScore(0.0, UNKNOWN_TYPE, None, self.type_name(question_type))
        graded = self._grade(read_output(prediction), prepared.rule, prepared.readings)
        return TypedScore(graded.score, graded.failure_kind, graded.outcome, prepared.name)

    @staticmethod
    def _grade(output: ReadOutput, rule: Rule, readings: list[Any]) -> Graded:
        answer = None if output.text is None else extract_answer(output.text)
        outcome = answer or None
        if output.failure_kind is not None:
            return Graded(0.0, output.failure_kind, outcome)
        if output.error is not None:
            return Graded(0.0, FailureKind.ERROR, outcome)
        if not answer:
            return Graded(0.0, FailureKind.PARSE_FAILURE, None)
        best: Graded | None = None
        for reading in readings:
            graded = rule.grade(answer, reading)
            if best is None or graded.score > best.score:
                best = graded
        assert best is not None
        if best.score == 0 and best.failure_kind in (FailureKind.WRONG, FailureKind.PARSE_FAILURE):
            if output.limit_stopped:
                return Graded(0.0, FailureKind.BUDGET_STOP, best.outcome)
            if output.was_refused:
                return Graded(0.0, FailureKind.REFUSAL, best.outcome)
        return best

    def score_batch(
        self, predictions: Sequence[Any], ground_truths: Sequence[Any], question_types: Sequence[Any]
    ) -> TypedBatch:
        """Score a batch; errors name the item's position. An empty batch raises ``ValueError``."""
        check_lists(predictions, ground_truths, question_types)
        rows = zip(predictions, ground_truths, question_types, strict=True)
        # Several answers per reference are common (samples per prompt): read each reference once.
        prepared: dict[Any, _Prepared] = {}
        items = []
        for index, (prediction, truth, kind) in enumerate(rows):
            key = _reference_key(truth, kind)
            reading = None if key is None else prepared.get(key)
            if reading is None:
                reading = self._prepare(truth, kind, index)
                if key is not None:
                    prepared[key] = reading
            items.append(self._score_prepared(prediction, reading, kind))
        return TypedBatch(items, per_type_means(items))


def check_lists(predictions: Any, ground_truths: Any, question_types: Any) -> None:
    """Three lists of one length, not empty: `TypeError` (naming the one that is not a list) or `ValueError`."""
    lists = {"predicted_answers": predictions, "ground_truth_answers": ground_truths, "question_types": question_types}
    for label, values in lists.items():
        if not isinstance(values, Sequence) or isinstance(values, (str, bytes)):
            raise TypeError(f"{label} must be a list, got {type(values).__name__}")
    lengths = {label: len(values) for label, values in lists.items()}
    if len(set(lengths.values())) != 1:
        described = ", ".join(f"{label} has {length}" for label, length in lengths.items())
        raise ValueError(f"the input lists must be the same length: {described}")
    if not predictions:
        raise ValueError("predicted_answers is empty: there is nothing to score")


@dataclass(frozen=True)
class _Prepared:
    name: str | None
    rule: Rule | None
    readings: list[Any]


def _reference_key(truth: Any, question_type: Any) -> tuple[Any, ...] | None:
    """A key under which an item's prepared reference may be reused, ``None`` when it may not.

    Only exact ``str``/``int`` values (and lists of ``str``) qualify: equal keys then mean the
    same reading (a ``bool`` or ``float`` would compare equal to an int yet read differently).
    """
    if type(question_type) is not str:
        return None
    if type(truth) is str or type(truth) is int:
        return (question_type, truth)
    if type(truth) is list and all(type(item) is str for item in truth):
        return (question_type, tuple(truth))
    return None
