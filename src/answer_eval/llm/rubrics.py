"""Rubrics: what an LLM grader grades (criteria), on which scale, and from which inputs.

The catalogue (``rubrics.json``) holds the twelve model-based metrics of the metric reference,
in the package's own words. A user-defined rubric is the same data (:meth:`Rubric.from_dict`), so
it is saved with a pipeline as plain JSON, never as code.

The inputs are named as in the metric reference: ``instruction`` (the question and its
instructions), ``context`` (the text to refer to), ``prediction`` (the response graded),
``reference`` (the gold response); a pairwise comparison adds the baseline response.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "CATALOGUE_PATH",
    "INPUTS",
    "MAX_SCALE_VALUE",
    "Criterion",
    "Example",
    "Rating",
    "Rubric",
    "catalogue",
    "rubric",
]

CATALOGUE_PATH = Path(__file__).with_name("rubrics.json")
"""The catalogue shipped with the package."""

INPUTS = ("instruction", "context", "prediction", "reference")
"""The inputs a rubric may read, in the order a prompt shows them."""

MAX_SCALE_VALUE = 999_999_999
"""The largest value (in size) a scale may hold: a reply's score is read in at most 9 digits."""


@dataclass(frozen=True)
class Criterion:
    """One thing the grader weighs.

    :param name: A few words (``Grounded``).
    :param description: What meeting it means.
    """

    name: str
    description: str


@dataclass(frozen=True)
class Rating:
    """One point of a rating scale.

    :param value: The score (an integer).
    :param label: What it means (``Very good``).
    """

    value: int
    label: str


@dataclass(frozen=True)
class Example:
    """A graded example shown to the grader before the response it grades (few-shot).

    :param inputs: The example's inputs as (input name, text) pairs, in :data:`INPUTS` order
        (``prediction`` always among them).
    :param score: Its grade, a value of the rubric's scale.
    :param explanation: Why it gets that grade.
    """

    inputs: tuple[tuple[str, str], ...]
    score: int
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        """The example as JSON data (``Example.from_dict`` reads it back)."""
        return {"inputs": dict(self.inputs), "score": self.score, "explanation": self.explanation}

    @classmethod
    def from_dict(cls, data: Any) -> Example:
        """An example from JSON data: ``inputs`` (a mapping of input name to text), ``score``, ``explanation``."""
        if not isinstance(data, Mapping):
            raise ValueError(f"an example is a mapping, got {type(data).__name__}")
        extra = sorted(set(data) - {"inputs", "score", "explanation"})
        if extra:
            raise ValueError(f"unknown example key {extra[0]!r}; keys are explanation, inputs, score")
        inputs, score, explanation = data.get("inputs"), data.get("score"), data.get("explanation")
        if not isinstance(inputs, Mapping) or not all(isinstance(text, str) for text in inputs.values()):
            raise ValueError(f"an example's 'inputs' maps input names to texts, got {inputs!r}")
        if isinstance(score, bool) or not isinstance(score, int):
            raise ValueError(f"an example's 'score' is an integer of the scale, got {score!r}")
        if not isinstance(explanation, str) or not explanation.strip():
            raise ValueError("an example needs an 'explanation' (a non-empty text)")
        ordered = tuple((name, inputs[name]) for name in INPUTS if name in inputs)
        unknown = sorted(set(inputs) - set(INPUTS))
        if unknown:
            raise ValueError(f"an example's input {unknown[0]!r} is unknown; inputs are {', '.join(INPUTS)}")
        return cls(ordered, score, explanation)


@dataclass(frozen=True)
class Rubric:
    """A model-based metric: what is graded, the scale, and the inputs it needs.

    :param name: The metric's name (``question_answering_quality``).
    :param description: What the metric measures, in one sentence.
    :param criteria: What the grader weighs.
    :param scale: The ratings, lowest first.
    :param inputs: The inputs every item must have (``prediction`` always among them).
    :param optional_inputs: Inputs shown to the grader when an item has them.
    :param pairwise: Whether the metric may compare two responses.
    :param examples: Graded examples shown in the pointwise prompt (few-shot); none by default.
    """

    name: str
    description: str
    criteria: tuple[Criterion, ...]
    scale: tuple[Rating, ...]
    inputs: tuple[str, ...]
    optional_inputs: tuple[str, ...] = ()
    pairwise: bool = False
    examples: tuple[Example, ...] = ()
    _values: frozenset[int] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check()
        object.__setattr__(self, "_values", frozenset(rating.value for rating in self.scale))

    def _check(self) -> None:
        where = f"rubric {self.name!r}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("a rubric needs a name")
        if not self.criteria:
            raise ValueError(f"{where} needs at least one criterion")
        if len(self.scale) < 2:
            raise ValueError(f"{where} needs a scale of at least two ratings")
        values = [rating.value for rating in self.scale]
        if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise ValueError(f"{where}: scale values must be integers, got {values}")
        if any(abs(v) > MAX_SCALE_VALUE for v in values):
            # A reply states a score in at most 9 digits (a longer number is never read as one), and a value
            # of 400 digits made the mean of the grades an OverflowError: no scale needs more.
            raise ValueError(f"{where}: scale values must be between -{MAX_SCALE_VALUE:,} and {MAX_SCALE_VALUE:,}")
        if values != sorted(set(values)):
            raise ValueError(f"{where}: scale values must be distinct and lowest first, got {values}")
        unknown = [name for name in (*self.inputs, *self.optional_inputs) if name not in INPUTS]
        if unknown:
            raise ValueError(f"{where}: unknown input {unknown[0]!r}; inputs are {', '.join(INPUTS)}")
        if "prediction" not in self.inputs:
            raise ValueError(f"{where}: 'prediction' must be among its inputs")
        if set(self.inputs) & set(self.optional_inputs):
            raise ValueError(f"{where}: an input is both required and optional")
        for number, example in enumerate(self.examples, 1):
            self._check_example(example, f"{where}, example {number}", values)

    def _check_example(self, example: Example, where: str, values: list[int]) -> None:
        if example.score not in values:
            raise ValueError(f"{where}: score {example.score} is not on the scale {values}")
        names = [name for name, _ in example.inputs]
        shown = set(self.inputs) | set(self.optional_inputs)
        missing = [name for name in self.inputs if name not in names]
        if missing:
            raise ValueError(f"{where}: the rubric needs the input {missing[0]!r}")
        unread = [name for name in names if name not in shown]
        if unread:
            raise ValueError(f"{where}: the rubric does not read the input {unread[0]!r}")

    @property
    def values(self) -> tuple[int, ...]:
        """The scale's values, lowest first."""
        return tuple(rating.value for rating in self.scale)

    def allows(self, value: int) -> bool:
        """Whether ``value`` is a point of the scale."""
        return value in self._values

    def shown_inputs(self) -> tuple[str, ...]:
        """Every input the prompt may show, in :data:`INPUTS` order."""
        wanted = set(self.inputs) | set(self.optional_inputs)
        return tuple(name for name in INPUTS if name in wanted)

    def to_dict(self) -> dict[str, Any]:
        """The rubric as JSON data (:meth:`from_dict` reads it back)."""
        return {
            "name": self.name,
            "description": self.description,
            "criteria": [[c.name, c.description] for c in self.criteria],
            "scale": [[r.value, r.label] for r in self.scale],
            "inputs": list(self.inputs),
            "optional_inputs": list(self.optional_inputs),
            "pairwise": self.pairwise,
            # Only when there are some: a rubric without examples keeps the fingerprint it always had.
            **({"examples": [example.to_dict() for example in self.examples]} if self.examples else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rubric:
        """A rubric from JSON data; ``ValueError`` naming what is missing or wrong."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a rubric is a mapping, got {type(data).__name__}")
        known = {"name", "description", "criteria", "scale", "inputs", "optional_inputs", "pairwise", "examples"}
        extra = sorted(set(data) - known)
        if extra:
            raise ValueError(f"unknown rubric key {extra[0]!r}; keys are {', '.join(sorted(known))}")
        missing = [key for key in ("name", "description", "criteria", "scale", "inputs") if key not in data]
        if missing:
            raise ValueError(f"a rubric needs {missing[0]!r}")
        return cls(
            name=str(data["name"]),
            description=str(data["description"]),
            criteria=tuple(Criterion(*_pair(item, "criteria")) for item in data["criteria"]),
            scale=tuple(Rating(*_pair(item, "scale")) for item in data["scale"]),
            inputs=tuple(_names(data["inputs"], "inputs")),
            optional_inputs=tuple(_names(data.get("optional_inputs", ()), "optional_inputs")),
            pairwise=bool(data.get("pairwise", False)),
            examples=tuple(Example.from_dict(item) for item in _listed(data.get("examples", ()), "examples")),
        )

    @property
    def fingerprint(self) -> str:
        """12 hex digits of the SHA-256 of the rubric's JSON: two rubrics share it only when they are the same."""
        text = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _pair(item: Any, key: str) -> tuple[Any, str]:
    if isinstance(item, Mapping):
        item = [item.get("value", item.get("name")), item.get("label", item.get("description"))]
    if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 2:
        raise ValueError(f"each entry of {key!r} is a pair [value or name, words], got {item!r}")
    first, words = item
    if key == "criteria":
        return str(first), str(words)
    if isinstance(first, bool) or not isinstance(first, int):
        raise ValueError(f"scale values must be integers, got {first!r}")
    return first, str(words)


def _listed(value: Any, key: str) -> Sequence[Any]:
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
        raise ValueError(f"{key!r} is a list, got {value!r}")
    return value


def _names(value: Any, key: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"{key!r} is a list of input names, got {value!r}")
    return [str(name) for name in value]


@cache
def catalogue() -> dict[str, Rubric]:
    """The shipped metrics by name."""
    data = json.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))
    return {item["name"]: Rubric.from_dict(item) for item in data["metrics"]}


def rubric(metric: str | Mapping[str, Any] | Rubric) -> Rubric:
    """The rubric ``metric`` names (a catalogue name), describes (a mapping) or is.

    :raises ValueError: For an unknown name, listing the catalogue, or a bad rubric.
    """
    if isinstance(metric, Rubric):
        return metric
    if isinstance(metric, Mapping):
        return Rubric.from_dict(metric)
    if not isinstance(metric, str):
        raise TypeError(f"metric is a catalogue name or a rubric mapping, got {type(metric).__name__}")
    try:
        return catalogue()[metric]
    except KeyError:
        raise ValueError(f"unknown metric {metric!r}; the catalogue has {', '.join(catalogue())}") from None
