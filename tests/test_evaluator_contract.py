"""The evaluator contract: the registry, options and signatures, column-wise scores, summaries that add up."""

from __future__ import annotations

import dataclasses
import inspect
import json
import pickle

import pytest

from answer_eval.errors import ItemError, OptionError
from answer_eval.evaluators.base import signature_differences
from answer_eval.evaluators.contains import ContainsOptions
from answer_eval.evaluators.registry import EVALUATORS, build, evaluator_of
from haystack_integrations.components.evaluators import answer_eval as components
from tests.conftest import EXAMPLES
from tests.openai_server import OpenAIServer, last_user_text


def changed_options(cls) -> dict[str, object]:
    """Options other than the defaults, read from the options' own declaration (no table per evaluator).

    Each signed option the command line offers, changed the way its declaration allows: a bool switched,
    a choice (or a list of choices) the default is not, a text or a list lengthened, a number nudged.
    Kept, one after the other: each change the evaluator accepts with those before it and that changes
    its signature (an option that only matters beside another one, or refuses another, is left out).
    """
    base = BASE.get(cls.name, {})
    changed: dict[str, object] = {}
    signature = cls(cls.options_type.from_dict(base)).signature
    for item in dataclasses.fields(cls.options_type):
        meta = item.metadata
        if not meta.get("cli", True) or not meta.get("signed", True) or item.name in base:
            continue
        value = _other_value(item.default, meta)
        if value is _NONE:
            continue
        try:
            made = cls(cls.options_type.from_dict({**base, **changed, item.name: value}))
        except (TypeError, ValueError):
            continue
        if made.signature != signature:
            changed[item.name] = value
            signature = made.signature
    return changed


_NONE = object()


def _other_value(default, meta):
    choices = meta.get("choices")
    if isinstance(default, bool):
        return not default
    if choices:
        others = [choice for choice in choices if choice != default and (choice,) != default]
        if not others:
            return _NONE
        return [others[-1]] if meta.get("repeat") else others[-1]
    if isinstance(default, tuple):
        return [*default, "no idea"]
    if isinstance(default, str):
        return default + "_X"
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return default + 0.01
    return _NONE


def _grader(request):
    """A deterministic grader: the score follows the response's length, so a batch and its halves agree."""
    response = last_user_text(request).split("<Response>\n", 1)[1].split("\n</Response>", 1)[0]
    return json.dumps({"explanation": "by length", "score": len(response) % 2})


@pytest.fixture(scope="module", autouse=True)
def grader_url():
    """The LLM graders' server, on loopback, for the whole module: every evaluator that names a model is given it."""
    with OpenAIServer(_grader) as server:
        for name, entry in EVALUATORS.items():
            fields = {item.name for item in dataclasses.fields(entry.load().options_type)}
            if {"model", "api_base_url"} <= fields:
                BASE[name] = {"model": "grader", "api_base_url": server.url, **dict(entry.example_options)}
        yield server.url


# Per evaluator: the options every build needs (an LLM grader: its model and server).
BASE: dict[str, dict] = {}


def _build(name, options=None):
    return build(name, {**BASE.get(name, {}), **(options or {})})


def _rows(name):
    path = EXAMPLES / "data" / EVALUATORS[name].example
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _inputs(evaluator, rows):
    """The input columns by role, read from each role's default field (its first fallback when missing)."""
    columns = {}
    for role in evaluator.roles:
        field = next((name for name in (role.field, *role.fallbacks) if name in rows[0]), None)
        if field is not None:
            columns[role.name] = [row.get(field) for row in rows]
    return columns


@pytest.mark.parametrize("name", sorted(EVALUATORS))
def test_every_entry_names_its_class_its_command_and_its_component(name):
    entry = EVALUATORS[name]
    cls = entry.load()
    assert cls.name == name
    assert cls.component == entry.component
    component = getattr(components, entry.component)
    assert entry.component in components.__all__
    if not entry.parameters_are_options:
        # An LLM grader's component takes a chat generator; it never becomes its evaluator.
        assert "chat_generator" in inspect.signature(component.__init__).parameters
        return
    # The component's init parameters are the evaluator's options, by name: its to_dict() is them
    # (besides a chat generator it may hand its evaluator, the judge's escalate_to, and the progress
    # bar of the judge's escalation: how the component shows its run, dropped by evaluator_of).
    only = {component.generator_parameter, "progress_bar"} - {None}
    parameters = set(inspect.signature(component.__init__).parameters) - {"self", "custom_types"}
    options = {item.name for item in dataclasses.fields(cls.options_type)}
    assert parameters - only == options - set(entry.options_only)
    assert set(entry.options_only) <= options
    assert evaluator_of(component()).signature == cls().signature


@pytest.mark.parametrize("name", sorted(EVALUATORS))
def test_options_round_trip_and_every_option_is_in_the_signature(name):
    from answer_eval import __version__

    cls = EVALUATORS[name].load()
    changes = changed_options(cls)
    assert len(changes) >= 2, changes  # every evaluator has options that change its results
    changed = cls.options_type.from_dict({**BASE.get(name, {}), **changes})
    assert cls.options_type.from_dict(changed.to_dict()) == changed
    assert json.loads(json.dumps(changed.to_dict())) == changed.to_dict()  # plain JSON data
    default = cls.options_type.from_dict(BASE.get(name, {}))
    assert changed.signature(name) != default.signature(name)
    assert default.signature(name).startswith(f"{name}|")
    assert default.signature(name).endswith(f"|v:{__version__}")
    keys = {item.name: item.metadata.get("short") or item.name for item in dataclasses.fields(cls.options_type)}
    differences = signature_differences(default.signature(name), changed.signature(name))
    for option in changes:
        assert any(part.startswith(f"{keys[option]}:") for part in differences), option
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        cls.options_type.from_dict({"colour": "blue"})


def test_a_value_that_could_read_as_a_separator_is_quoted_in_the_signature():
    plain = ContainsOptions("NOT_IN_DOCUMENT", ("a", "b")).signature("contains")
    glued = ContainsOptions("NOT_IN_DOCUMENT", ("a,b",)).signature("contains")
    piped = ContainsOptions("NOT|IN", ()).signature("contains")
    assert plain != glued
    assert '"a,b"' in glued
    assert signature_differences(piped, ContainsOptions("NOT", ()).signature("contains")) == [
        'not_found_label: "NOT|IN", now NOT'
    ]


def test_a_bad_option_names_the_option():
    with pytest.raises(OptionError) as raised:
        build("typed", {"default_type": "essay"})
    assert raised.value.option == "default_type"
    with pytest.raises(TypeError, match="not_found_label must be a str"):
        build("contains", {"not_found_label": 3})


@pytest.mark.parametrize("name", sorted(EVALUATORS))
def test_scores_split_in_two_and_merged_give_the_summary_of_one_batch(name):
    evaluator = _build(name)
    rows = _rows(name)
    middle = len(rows) // 2
    whole = evaluator.new_summary()
    parts = []
    for batch in (rows, rows[:middle], rows[middle:]):
        inputs = _inputs(evaluator, batch)
        outputs = evaluator.score(inputs)
        assert list(outputs) == list(evaluator.outputs())
        assert all(len(values) == len(batch) for values in outputs.values())
        summary = evaluator.new_summary() if batch is not rows else whole
        summary.add_rows(inputs, outputs)
        if batch is not rows:
            parts.append(summary)
    merged = evaluator.new_summary()
    for part in parts:
        # Each partial summary travels as JSON data, as from a Dask partition.
        restored = evaluator.new_summary()
        restored.restore(json.loads(json.dumps(part.snapshot())))
        merged.merge(restored)
    for summary in (whole, merged):
        summary.finish()
    assert merged.to_json() == whole.to_json()
    assert merged.text(name) == whole.text(name)


@pytest.mark.parametrize("name", sorted(EVALUATORS))
def test_an_evaluator_pickles_as_its_options(name):
    evaluator = _build(name, changed_options(EVALUATORS[name].load()))
    again = pickle.loads(pickle.dumps(evaluator))
    assert type(again) is type(evaluator)
    assert again.options == evaluator.options
    assert again.signature == evaluator.signature


def test_a_bad_item_is_named_by_its_role_and_position():
    evaluator = build("contains", None)
    with pytest.raises(ItemError) as raised:
        evaluator.score({"answers": [["Paris"], [], ["Rome"]], "prediction": ["Paris", "x", "Rome"]})
    assert (raised.value.role, raised.value.position) == ("answers", 1)
    tools = build("tools", None)
    with pytest.raises(ItemError) as raised:
        tools.score({"reference": [{"name": "f", "arguments": {}}, "not a call"], "prediction": ["x", "y"]})
    assert (raised.value.role, raised.value.position) == ("reference", 1)


def refused_and_partial_rows(evaluator, example, other):
    """A row the evaluator refuses, made from one of its example rows, and another lacking its optional fields.

    Refused: every required input but the prediction (a prediction is never refused: an unreadable one is
    a ``parse_failure``), or every input the row gives when all are optional, holds an empty mapping, which
    no evaluator reads as an answer, a question, a solution or a call; an evaluator that reads the answer
    alone gets a row without it.
    Partial: the example row without the fields of its optional inputs (``None`` when it has none).
    """
    refused, partial = dict(example), dict(other)
    required = [role for role in evaluator.roles if not role.optional and role.name != "prediction"]
    # An evaluator whose inputs are all optional (a rubric's depend on its metric): its given ones spoilt.
    spoilt = required or [role for role in evaluator.roles if role.name != "prediction"]
    for role in evaluator.roles:
        fields = [name for name in (role.field, *role.fallbacks) if name in example] or [role.field]
        if role.optional:
            for name in fields:
                partial.pop(name, None)
        if role in spoilt and fields[0] in example:
            refused[fields[0]] = {}
    if not spoilt:  # nothing but the answer is read: a row without it is refused
        for role in evaluator.roles:
            refused.pop(role.field, None)
    has_optional = any(role.optional for role in evaluator.roles)
    return refused, partial if has_optional else None


@pytest.mark.parametrize("name", sorted(EVALUATORS))
def test_a_batch_of_rows_gives_what_each_row_gives_alone(name):
    from answer_eval.engine.row_transforms import EvaluatorRows, default_fields

    evaluator = _build(name)
    transform = EvaluatorRows(evaluator, default_fields(evaluator), tuple((n, n) for n in evaluator.outputs()))
    every = _rows(name)
    rows = every[:12]
    # The partial row from a row the batch does not hold: a copy's request would be asked once in a batch.
    refused, partial = refused_and_partial_rows(evaluator, rows[0], every[-1])
    rows[3:3] = [refused]
    rows[7:7] = [refused, refused]
    if partial is not None:
        rows[1:1] = [partial]
    batch = [(row, number) for number, row in enumerate(rows, start=1)]
    together = transform.many(batch)
    alone = []
    for row, number in batch:
        try:
            alone.append(transform(row, number))
        except ValueError as exc:  # an InputError naming the field
            alone.append(exc)
    assert len(together) == len(alone)
    for mine, theirs in zip(together, alone, strict=True):
        if isinstance(theirs, dict):
            assert mine == theirs
        else:
            assert str(mine) == str(theirs)
    where = [index for index, row in enumerate(rows) if row is refused]
    assert len(where) == 3
    assert all(not isinstance(together[index], dict) for index in where)
