"""TypedAnswerEvaluator: answers scored by question type (multiple choice, numerical, OCR, free-form, regression)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from haystack import component, default_from_dict

from answer_eval.evaluators.typed_scoring import TypedAnswerCore, TypedOptions, check_lists
from haystack_integrations.components.evaluators.answer_eval._base import (
    EvaluatorComponent,
    documented,
    socket_types,
)
from haystack_integrations.components.evaluators.answer_eval._custom_types import load_custom_types, save_custom_types

__all__ = ["TypedAnswerEvaluator"]


@component
class TypedAnswerEvaluator(EvaluatorComponent):
    """Scores each answer by the rule of its question type, as a float in [0, 1].

    - `multiple choice`: 1 when the answer names the reference's option ("B", "(B)", "B. Paris",
      "Option B", "The answer is B"; or the option text), 0 otherwise; naming several options is wrong.
    - `numerical`: 1 when the numbers are equal after rounding to `decimals` (2), or within
      `rel_tol`/`abs_tol`; "1,204" equals "1204" and "42.50" equals "42.5".
    - `OCR`: max(0, 1 - word error rate), computed by jiwer.
    - `free-form`: the mean F-measure of ROUGE-1, ROUGE-2 and ROUGE-L, equal to rouge-score's.
    - `regression`: max(0, 1 - |answer - reference| / |reference|); a reference of 0 needs exactly 0.

    On both sides the answer is the first `<answer>...</answer>` span, or the whole text when there
    is none. Types match case- and separator-insensitively ("Multiple_Choice", "mcq"); register
    more with `custom_types`. Predictions may be any form `AnswerContainsEvaluator` reads (strings,
    `GeneratedAnswer`, `ChatMessage`, generator outputs...). Needs the `typed` extra:
    `pip install "answer-eval-haystack[typed]"`.

    Usage example:
    ```python
    from haystack_integrations.components.evaluators.answer_eval import TypedAnswerEvaluator

    evaluator = TypedAnswerEvaluator()
    result = evaluator.run(
        ground_truth_answers=["<answer>B</answer>", "1204", "10"],
        predicted_answers=["The answer is <answer>B</answer>", "Sales: 1,204 units", "It is 9"],
        question_types=["multiple choice", "numerical", "regression"],
    )
    print(result["individual_scores"])  # [1.0, 1.0, 0.9]
    print(result["per_type"]["regression"])  # {'score': 0.9, 'count': 1}
    ```
    """

    sockets: ClassVar[dict[str, str]] = {
        "ground_truth_answers": "solution",
        "predicted_answers": "prediction",
        "question_types": "type",
    }

    core = TypedAnswerCore
    _evaluator: TypedAnswerCore

    @documented(
        TypedOptions,
        custom_types="More question types: name to a function `(answer, reference) -> float` in [0, 1], given "
        "the answer texts (spans taken). Saved by import path in `to_dict`, so they must be module-level "
        'functions; loading them needs their module allowed (`Pipeline.loads(..., allowed_modules=["my_module"])`).',
    )
    def __init__(
        self,
        use_stemmer: bool = TypedOptions.use_stemmer,
        decimals: int | None = TypedOptions.decimals,
        rel_tol: float = TypedOptions.rel_tol,
        abs_tol: float = TypedOptions.abs_tol,
        number: str = TypedOptions.number,
        percent: str = TypedOptions.percent,
        ocr_ignore_case: bool = TypedOptions.ocr_ignore_case,
        ocr_ignore_punctuation: bool = TypedOptions.ocr_ignore_punctuation,
        rouge_types: list[str] | None = None,
        on_unknown: str = TypedOptions.on_unknown,
        default_type: str | None = TypedOptions.default_type,
        custom_types: dict[str, Callable[[str, str], float]] | None = None,
    ) -> None:
        """Create a TypedAnswerEvaluator.

        :raises ImportError: When the `typed` extra (jiwer, rouge-score) is not installed.
        :raises TypeError: If a parameter has the wrong type.
        :raises ValueError: If a parameter has a wrong value or `default_type` is unknown.
        """
        self._evaluator = self._build(locals(), custom_types)

    def warm_up(self) -> None:
        """Load the stemmer for free-form answers (otherwise loaded on the first free-form answer)."""
        self._evaluator.warm_up()

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary.

        Custom type functions are saved by import path (`module.function`).

        :returns: The serialized component.
        :raises SerializationError: If a custom type function is a lambda, a nested function or a
            method: only module-level functions can be saved.
        """
        data = EvaluatorComponent.to_dict(self)
        data["init_parameters"]["custom_types"] = save_custom_types(self._evaluator.custom_types)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TypedAnswerEvaluator:
        """Deserialize this component from a dictionary.

        Custom type functions are imported by path through Haystack's `deserialize_callable`, which
        only imports modules on Haystack's deserialization allow-list.

        :param data: The dictionary from `to_dict`.
        :returns: The deserialized component.
        :raises DeserializationError: If a custom type's module is not allowed or not found.
        :raises TypeError: If `custom_types` is not a dict of name to import path, or another
            parameter has the wrong type.
        """
        return default_from_dict(cls, load_custom_types(data))

    @component.output_types(**socket_types(TypedAnswerCore.sockets))
    def run(
        self, ground_truth_answers: list[Any], predicted_answers: list[Any], question_types: list[str] | None = None
    ) -> dict[str, Any]:
        """Score each predicted answer by the rule of its question type.

        :param ground_truth_answers: Per item, the reference solution: a str, int or float, or a
            list of acceptable ones (the best score counts).
        :param predicted_answers: Per item, the model output in any form `answer_eval.read_output`
            reads. An output with no text scores 0 (`parse_failure`); it never stops the batch.
        :param question_types: Per item, the question type. May be left out (or an item's be
            `None`) when the evaluator has a `default_type`.
        :returns:
            A dictionary with:
            - `score`: the mean score.
            - `individual_scores`: per item, a float in [0, 1].
            - `failure_kinds`: per item, `None` when right or graded without failure;
              `parse_failure` (no answer, number or option read), `wrong` (a 0/1 type scored 0 or
              a graded type scored exactly 0), `unknown_type`, or a kind the output carries.
            - `outcomes`: per item, what was read: option letter(s), number or answer text.
            - `per_type`: question type to `{"score": mean, "count": items}`.
            - `failure_counts`: failure kind to count.
        :raises TypeError: If an input is not a list, a type is not a str, or a reference has a
            wrong type.
        :raises ValueError: If the lists are empty or differ in length, a type is unknown (unless
            `on_unknown="zero"`) or a reference cannot be graded; the message names the position.
        """
        return self._run(
            ground_truth_answers=ground_truth_answers,
            predicted_answers=predicted_answers,
            question_types=question_types,
        )

    @component.output_types(**socket_types(TypedAnswerCore.sockets))
    async def run_async(
        self, ground_truth_answers: list[Any], predicted_answers: list[Any], question_types: list[str] | None = None
    ) -> dict[str, Any]:
        """Asynchronously score answers; same inputs, outputs and errors as `run`.

        Scoring is pure CPU work with no I/O, so this runs it directly rather than in a thread.
        """
        return self._run(
            ground_truth_answers=ground_truth_answers,
            predicted_answers=predicted_answers,
            question_types=question_types,
        )

    def _check(self, inputs: Mapping[str, Any]) -> None:
        predicted, types = inputs["predicted_answers"], inputs["question_types"]
        if not isinstance(predicted, list):
            raise TypeError(f"predicted_answers must be a list, got {type(predicted).__name__}")
        if types is None:
            if self._evaluator.options.default_type is None:
                raise ValueError("question_types is missing and the evaluator has no default_type: give one of them")
            types = predicted  # the default type, once per item
        check_lists(predicted, inputs["ground_truth_answers"], types)
