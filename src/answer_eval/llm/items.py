"""The items an LLM grader reads: each input of a rubric as text, checked, with errors naming the caller's words.

A component names its inputs ``predicted_answers``, ``questions``, ``contexts`` and
``ground_truth_answers``; the command line names fields; the rubric names ``prediction``,
``instruction``, ``context`` and ``reference``. The checks here speak the caller's names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from answer_eval.inputs.reading import read_output
from answer_eval.llm.rubrics import Rubric

__all__ = ["MissingInput", "as_text", "build_items"]


class MissingInput(ValueError):
    """An input the rubric needs is not given, or is empty for one item.

    :param input_name: The rubric's name of the input.
    :param position: The item (``None``: the whole input is missing).
    """

    def __init__(self, message: str, input_name: str, position: int | None) -> None:
        super().__init__(message)
        self.input_name = input_name
        self.position = position


def _part(value: Any) -> str | None:
    content = getattr(value, "content", None)  # a Haystack Document
    if isinstance(content, str):
        return content
    return read_output(value).text


def as_text(value: Any, input_name: str) -> str | None:
    """One input as text: a prediction in any form the package reads; several contexts or references joined."""
    if value is None:
        return None
    if input_name == "prediction":
        return read_output(value).text
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        parts = [text for part in value if (text := _part(part)) is not None]
        if not parts:
            return None
        if input_name == "reference" and len(parts) > 1:
            return "Any of these is a correct response:\n" + "\n".join(f"- {part}" for part in parts)
        return "\n\n".join(parts)
    return _part(value)


def _column(rubric: Rubric, name: str, values: Sequence[Any] | None, size: int, called: str) -> list[str | None]:
    required = name in rubric.inputs
    if values is None:
        if required:
            raise MissingInput(f"metric {rubric.name!r} needs {called} ({name}), one per predicted answer", name, None)
        return [None] * size
    if len(values) != size:
        raise ValueError(f"{called} has {len(values)} items where there are {size} predicted answers")
    texts = [as_text(value, name) for value in values]
    if required:
        for position, text in enumerate(texts):
            if name != "prediction" and (text is None or not text.strip()):
                message = f"metric {rubric.name!r} needs {called} ({name}); item {position} has none"
                raise MissingInput(message, name, position)
    return texts


def build_items(
    rubric: Rubric, columns: Mapping[str, Sequence[Any] | None], called: Mapping[str, str]
) -> list[dict[str, str | None]]:
    """One mapping per item, by rubric input name, from ``columns`` (input name to values, ``None``: not given).

    :param called: How the caller names each input, for the errors.
    :raises ValueError: For a required input not given, or empty at a position; columns of other lengths.
    """
    size = len(columns["prediction"] or ())
    texts = {
        name: _column(rubric, name, columns.get(name), size, called.get(name, name))
        for name in rubric.shown_inputs()
        if name != "prediction"
    }
    predictions = _column(rubric, "prediction", columns["prediction"], size, called.get("prediction", "prediction"))
    return [
        {"prediction": predictions[index], **{name: values[index] for name, values in texts.items()}}
        for index in range(size)
    ]
