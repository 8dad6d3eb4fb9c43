"""The typed evaluator (``answer-eval typed``): each answer scored by its question type's rule, a reward in [0, 1]."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from answer_eval.errors import InputError, ItemError, OptionError
from answer_eval.evaluators.base import Columns, Evaluator, Role
from answer_eval.evaluators.checks import check_instance
from answer_eval.evaluators.item_errors import item_error
from answer_eval.evaluators.typed.options import TypedOptions
from answer_eval.evaluators.value_summaries import TypedSummary

if TYPE_CHECKING:
    from answer_eval.evaluators.typed.scorer import TypedBatch

__all__ = ["TypedAnswerCore", "TypedOptions"]


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
    options: TypedOptions

    def __init__(
        self, options: TypedOptions | None = None, custom_types: Mapping[str, Callable[[str, str], float]] | None = None
    ) -> None:
        """Make the scorer; ``ImportError`` without the typed extra, ``ValueError`` for a bad option."""
        from answer_eval.evaluators.typed.scorer import TypedAnswerScorer

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
