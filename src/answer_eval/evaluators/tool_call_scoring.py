"""The tool-call metrics (``answer-eval tools``): each predicted call against the reference call.

Its options (:class:`ToolCallsOptions`) are declared once, read by the evaluator, the scorer
(:class:`ToolCallScorer`) and the component. Predictions and references are read by
:func:`answer_eval.inputs.tool_call_reading.read_tool_calls` (re-exported here): JSON strings or objects
``{"content": ..., "tool_calls": [...]}``, lists of calls, Haystack ``ChatMessage``/``ToolCall``,
generator outputs and Agent results. Argument values are compared by :func:`values_match`, strictly or
normalised.

>>> reference = '{"content": "", "tool_calls": [{"name": "book", "arguments": {"city": "Rome", "seats": "2"}}]}'
>>> from answer_eval.evaluators.tool_call_scoring import ToolCallsOptions
>>> verdict = ToolCallScorer().score('[{"name": "book", "arguments": {"city": "rome", "seats": 2}}]', reference)
>>> verdict.scores["tool_parameter_kv_match"], ToolCallScorer(ToolCallsOptions(strict=True)).score(
...     '[{"name": "book", "arguments": {"city": "rome", "seats": 2}}]', reference).scores["tool_parameter_kv_match"]
(1.0, 0.0)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
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
    check_str,
    item_error,
    list_option,
    option,
)
from answer_eval.evaluators.summaries import MetricsSummary
from answer_eval.inputs.tool_call_reading import ToolCallRecord, ToolCallsRead, read_tool_calls
from answer_eval.text.folding import fold
from answer_eval.text.matching import find_numbers

__all__ = [
    "ToolCallCore",
    "ToolCallRecord",
    "ToolCallScorer",
    "ToolCallsOptions",
    "ToolCallsRead",
    "read_tool_calls",
    "values_match",
]


TOOL_CALL_METRICS = ("tool_call_valid", "tool_name_match", "tool_parameter_key_match", "tool_parameter_kv_match")
"""The tool-call metric names, in a stable order."""


@dataclass(frozen=True)
class ToolCallsOptions(Options):
    """The options of :class:`ToolCallCore` (see :class:`~.scorer.ToolCallScorer`)."""

    metrics: tuple[str, ...] = list_option(
        TOOL_CALL_METRICS,
        flag="--metric",
        choices=TOOL_CALL_METRICS,
        help="the metrics to compute, each at most once; the first gives the flat score "
        "(repeatable; default: all four, in this order: %(choices)s)",
    )
    strict: bool = option(
        False, help='compare argument values exactly (equal JSON values: "2" is not 2, case counts), not normalised'
    )
    calls: str = option(
        "first",
        choices=("first", "all"),
        help="the calls inspected: first (as the reference service), only the first call on each side; all, every "
        "call, aligned, each metric the mean over max(#predicted, #reference) slots, so a missing or extra call "
        "counts 0 (default: %(default)s)",
    )
    alignment: str = option(
        "order",
        choices=("order", "name"),
        help="with calls all, how calls are paired: order pairs the i-th calls, name pairs calls of the same name "
        "first, then the rest in order (default: %(default)s)",
    )
    extra_keys: str = option(
        "ignore",
        choices=("ignore", "penalize"),
        help="ignore: a parameter the reference does not have does not count; penalize: the key and value shares "
        "are taken over both calls' parameter names (default: %(default)s)",
    )

    def check(self) -> None:
        """The types; the values are checked by the scorer."""
        check_names("metrics", self.metrics)
        check_bool("strict", self.strict)
        for name in ("calls", "alignment", "extra_keys"):
            check_str(name, getattr(self, name))


def _as_number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = Decimal(str(value))
        except InvalidOperation:  # pragma: no cover - str() of an int or float is a valid literal
            return None
        return number if number.is_finite() else None
    if isinstance(value, str):
        folded = fold(value)
        mentions = find_numbers(folded, folded=True)
        if len(mentions) == 1 and mentions[0].start == 0 and mentions[0].end == len(folded):
            return mentions[0].value
    return None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {"true": True, "false": False}.get(fold(value))
    return None


def values_match(predicted: Any, reference: Any, *, strict: bool = False) -> bool:
    """Whether a predicted argument value equals the reference value.

    ``strict``: equal JSON values: strings character for character, numbers by value (``2 == 2.0``)
    but never a string against a number (``"2" != 2``), booleans only against booleans, objects and
    arrays element by element.

    Normalised (the default): numbers are compared by value whatever their form, so ``"2"``,
    ``2``, ``"2.0"`` and ``"1,000"``/``1000`` match (a string counts as a number only when it is
    one number and nothing else, read by :func:`answer_eval.text.matching.find_numbers`; a percent sign
    is ignored); ``"true"``/``"false"`` match booleans; other strings are compared folded
    (:func:`answer_eval.fold`: case, white space, Unicode digits and dashes), so "Mountain View CA"
    matches "mountain  view ca" but not "Mountain View, CA"; objects and arrays element by element.

    >>> values_match("2", 2), values_match("2", 2, strict=True), values_match(" Regal ", "regal")
    (True, False, True)
    """
    if strict:
        return _strict_equal(predicted, reference)
    return _normal_equal(predicted, reference)


def _strict_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_strict_equal(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _normal_equal(a: Any, b: Any) -> bool:
    first, second = _as_number(a), _as_number(b)
    if first is not None and second is not None:
        return first == second
    if isinstance(a, bool) or isinstance(b, bool):
        return _as_bool(a) is not None and _as_bool(a) == _as_bool(b)
    if isinstance(a, str) and isinstance(b, str):
        return fold(a) == fold(b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_normal_equal(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_normal_equal(x, y) for x, y in zip(a, b, strict=True))
    return a is None and b is None


@dataclass(frozen=True)
class ToolCallVerdict:
    """The tool-call metrics of one prediction.

    :param scores: Metric name to value in [0, 1].
    :param failure_kind: ``None`` when every requested metric is 1; ``parse_failure`` when there is
        no well-formed call to inspect; ``error`` for a failed result; ``wrong`` otherwise.
    :param problem: Why the prediction is not a valid tool call, ``None`` when it is.
    """

    scores: dict[str, float]
    failure_kind: str | None
    problem: str | None = None


class ToolCallScorer:
    """Scores predicted tool calls against reference calls: the core of ``ToolCallEvaluator``.

    Per pair of predicted and reference call: ``tool_name_match`` is 1 when the names are equal
    (exactly); ``tool_parameter_key_match`` is the share of the reference's parameter names the
    prediction has; ``tool_parameter_kv_match`` the share it has with an equal value
    (:func:`values_match`). With ``extra_keys="penalize"`` the share is taken over the union of
    both calls' parameter names, so a parameter the reference does not have counts against the
    prediction; by default (``"ignore"``) it does not. A call with no parameters on either side
    matches fully. The key and value metrics do not depend on the name matching, as in the
    reference service.

    ``calls="first"`` (default) inspects only the first call on each side. ``calls="all"``
    aligns the calls and averages every metric over ``max(#predicted, #reference)`` slots, so
    a missing or an extra call counts 0: ``alignment="order"`` pairs the i-th calls;
    ``alignment="name"`` first pairs each reference call with the first unused predicted call of
    the same name, then pairs what is left in order.

    ``tool_call_valid`` is 1 when the prediction reads (see :func:`read_tool_calls`) and every
    inspected call has a non-empty string name and an object of arguments. An invalid prediction
    (not JSON, no call, a malformed call) scores 0 on every metric with failure kind
    ``parse_failure`` (``error`` for an exception); it never raises. A reference that is not a valid
    tool call, or holds none, raises ``ValueError``.

    :param options: :class:`~answer_eval.evaluators.tool_call_scoring.ToolCallsOptions` (default: its defaults).
    """

    def __init__(self, options: ToolCallsOptions | None = None) -> None:
        if options is None:
            # The options live beside the evaluator, which imports this module: imported when first needed.

            options = ToolCallsOptions()
        metrics, calls, alignment, extra_keys = options.metrics, options.calls, options.alignment, options.extra_keys
        if isinstance(metrics, str) or not metrics:
            raise ValueError(f"metrics must be a non-empty list of {', '.join(TOOL_CALL_METRICS)}")
        if any(name not in TOOL_CALL_METRICS for name in metrics) or len(set(metrics)) != len(metrics):
            raise ValueError(
                f"metrics must name each of {', '.join(TOOL_CALL_METRICS)} at most once; got {list(metrics)!r}"
            )
        for option_name, value, allowed in (
            ("calls", calls, ("first", "all")),
            ("alignment", alignment, ("order", "name")),
            ("extra_keys", extra_keys, ("ignore", "penalize")),
        ):
            if value not in allowed:
                raise ValueError(f"{option_name} must be {' or '.join(map(repr, allowed))}, got {value!r}")
        self.metrics = tuple(metrics)
        self.strict = options.strict
        self.calls = calls
        self.alignment = alignment
        self.extra_keys = extra_keys

    def reference_calls(self, reference: Any, position: int | None = None) -> tuple[ToolCallRecord, ...]:
        """Read and check a reference: ``ValueError`` (naming ``position``) unless it holds valid calls."""
        where = "" if position is None else f" at position {position}"
        read = read_tool_calls(reference)
        if read.problem is not None:
            raise ValueError(f"reference tool call{where} cannot be read: {read.problem}")
        if not read.calls:
            raise ValueError(f"reference{where} holds no tool call")
        for call in read.calls:
            if call.problem is not None:
                raise ValueError(f"reference tool call{where} is malformed: {call.problem}")
        return read.calls if self.calls == "all" else read.calls[:1]

    def score(self, prediction: Any, reference: Any) -> ToolCallVerdict:
        """Score one prediction against one reference (any form :func:`read_tool_calls` reads)."""
        return self.score_calls(read_tool_calls(prediction), self.reference_calls(reference))

    def score_calls(self, read: ToolCallsRead, reference: Sequence[ToolCallRecord]) -> ToolCallVerdict:
        """Score an already read prediction against already checked reference calls."""
        predicted = read.calls if self.calls == "all" else read.calls[:1]
        problem = read.problem
        if problem is None and not predicted:
            problem = "the output holds no tool call"
        if problem is None:
            problem = next((call.problem for call in predicted if call.problem is not None), None)
        if problem is not None:
            kind = FailureKind.ERROR if read.error is not None else FailureKind.PARSE_FAILURE
            return ToolCallVerdict({name: self._zero(name) for name in self.metrics}, kind, problem)

        slots = max(len(predicted), len(reference))
        totals = {"tool_name_match": 0.0, "tool_parameter_key_match": 0.0, "tool_parameter_kv_match": 0.0}
        for guess, truth in self._align(predicted, reference):
            for name, value in self._pair(guess, truth).items():
                totals[name] += value
        scores: dict[str, float] = {}
        for name in self.metrics:
            if name == "tool_call_valid":
                scores[name] = 1
            elif name == "tool_name_match" and self.calls == "first":
                scores[name] = int(totals[name])
            else:
                scores[name] = totals[name] / slots
        perfect = all(value == 1 for value in scores.values())
        return ToolCallVerdict(scores, None if perfect else FailureKind.WRONG)

    def _zero(self, name: str) -> float:
        # The same type as a valid item's value: 0/1 metrics are ints, shares are floats.
        binary = name == "tool_call_valid" or (name == "tool_name_match" and self.calls == "first")
        return 0 if binary else 0.0

    def _align(
        self, predicted: Sequence[ToolCallRecord], reference: Sequence[ToolCallRecord]
    ) -> list[tuple[ToolCallRecord, ToolCallRecord]]:
        if self.alignment == "order":
            return list(zip(predicted, reference, strict=False))
        unused = list(range(len(predicted)))
        pairs: dict[int, int] = {}
        for index, truth in enumerate(reference):
            match = next((i for i in unused if predicted[i].name == truth.name), None)
            if match is not None:
                pairs[index] = match
                unused.remove(match)
        leftover = iter(unused)
        for index in range(len(reference)):
            if index not in pairs:
                match = next(leftover, None)
                if match is None:
                    break
                pairs[index] = match
        return [(predicted[pairs[index]], reference[index]) for index in sorted(pairs)]

    def _pair(self, guess: ToolCallRecord, truth: ToolCallRecord) -> dict[str, float]:
        given = guess.arguments or {}
        expected = truth.arguments or {}
        shared = expected.keys() & given.keys()
        base = len(expected) if self.extra_keys == "ignore" else len(expected.keys() | given.keys())
        equal = sum(1 for key in shared if values_match(given[key], expected[key], strict=self.strict))
        return {
            "tool_name_match": float(guess.name == truth.name),
            "tool_parameter_key_match": len(shared) / base if base else 1.0,
            "tool_parameter_kv_match": equal / base if base else 1.0,
        }


class ToolCallCore(Evaluator):
    """Whether the call is valid, names the right tool, and has the right parameter keys and values."""

    name = "tools"
    component = "ToolCallEvaluator"
    options_type = ToolCallsOptions
    roles = (
        Role("reference", "reference", "the reference call"),
        Role("prediction", "prediction", "the predicted call"),
    )
    sockets: ClassVar[dict[str, Socket]] = {**METRIC_SOCKETS, "problems": Socket(list[str | None], "problem")}
    options: ToolCallsOptions

    def __init__(self, options: ToolCallsOptions | None = None) -> None:
        """Make the scorer; ``ValueError`` for a bad option."""
        super().__init__(options)
        self.scorer = ToolCallScorer(self.options)

    def outputs(self) -> dict[str, str]:
        """One column per metric, ``failure_kind`` and ``problem`` (why a call could not be read)."""
        return {**dict.fromkeys(self.scorer.metrics, "object"), "failure_kind": "object", "problem": "object"}

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Every metric of every predicted call; an unreadable reference is bad input."""
        columns: Columns = {name: [] for name in self.outputs()}
        for position, (prediction, reference) in enumerate(zip(inputs["prediction"], inputs["reference"], strict=True)):
            try:
                calls = self.scorer.reference_calls(reference)
            except ValueError as exc:
                located = functools.partial(self.scorer.reference_calls, reference)
                raise item_error(located, "reference", position, exc) from None
            verdict = self.scorer.score_calls(read_tool_calls(prediction), calls)
            for name, value in verdict.scores.items():
                columns[name].append(value)
            columns["failure_kind"].append(verdict.failure_kind)
            columns["problem"].append(verdict.problem)
        return columns

    def new_summary(self) -> MetricsSummary:
        """Each metric's mean and the failure kinds."""
        return MetricsSummary(metrics=self.scorer.metrics)
