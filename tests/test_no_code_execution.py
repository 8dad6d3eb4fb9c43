"""No code runs from data: saved pipelines, component dicts and the package's own sources.

Loading a pipeline YAML that names a hostile type (``os.system``, ``subprocess.Popen``, a module
outside Haystack's trusted namespaces, a YAML ``!!python`` tag) is refused by Haystack's
deserialization allow-list and imports nothing: each attack would create a marker file, and the
marker never appears. Every component's ``from_dict`` refuses wrong-typed parameters with a clear
error, and ``src/`` holds no ``eval``, ``exec``, ``pickle.load`` or unsafe YAML load of user data.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Pipeline
from haystack.core.errors import DeserializationError, PipelineError
from haystack.marshal.yaml import YamlLoader

import haystack_integrations.components.evaluators.answer_eval as components
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    PairwiseEvaluator,
    TypedAnswerEvaluator,
)
from tests.conftest import ROOT

SAFE = Pipeline()
SAFE.add_component("contains", AnswerContainsEvaluator())
SAFE_YAML = SAFE.dumps()


def hostile_pipeline(component_type: str, init_parameters: dict[str, Any]) -> str:
    """A saved pipeline whose one component is of ``component_type``."""
    data = yaml.safe_load(SAFE_YAML)
    data["components"]["contains"] = {"type": component_type, "init_parameters": init_parameters}
    return str(yaml.safe_dump(data))


@pytest.fixture
def evil_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """An importable module outside the trusted namespaces that writes a marker file when imported."""
    marker = tmp_path / "imported.marker"
    name = f"evil_module_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n"
        "class Evil:\n    def __init__(self, **kwargs):\n        pass\n"
        "def score(answer, reference):\n    return 1.0\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, marker
    sys.modules.pop(name, None)


def test_the_safe_pipeline_loads() -> None:
    loaded = Pipeline.loads(SAFE_YAML)
    assert isinstance(loaded.get_component("contains"), AnswerContainsEvaluator)


@pytest.mark.parametrize(
    ("component_type", "arguments"),
    [
        ("os.system", {"command": "touch {marker}"}),
        ("subprocess.Popen", {"args": ["touch", "{marker}"]}),
        ("builtins.eval", {"source": "open({marker!r}, 'w')"}),
        ("posix.system", {"command": "touch {marker}"}),
    ],
)
def test_pipeline_naming_a_hostile_type_is_refused_and_runs_nothing(
    tmp_path: Path, component_type: str, arguments: dict[str, Any]
) -> None:
    marker = tmp_path / "ran.marker"
    filled = {
        key: [part.format(marker=str(marker)) for part in value]
        if isinstance(value, list)
        else value.format(marker=str(marker))
        for key, value in arguments.items()
    }
    # Refused: a module outside the allow-list, or a callable that is not a registered component.
    with pytest.raises((DeserializationError, PipelineError), match=r"allowlist|component registry|not imported"):
        Pipeline.loads(hostile_pipeline(component_type, filled))
    assert not marker.exists()


def test_pipeline_naming_an_untrusted_module_never_imports_it(evil_module: tuple[str, Path]) -> None:
    name, marker = evil_module
    with pytest.raises(DeserializationError, match="allowlist"):
        Pipeline.loads(hostile_pipeline(f"{name}.Evil", {}))
    assert not marker.exists()
    assert name not in sys.modules


def test_yaml_python_tags_are_not_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "ran.marker"
    assert issubclass(YamlLoader, yaml.SafeLoader)  # Haystack reads pipelines with a safe loader
    for tag in ("!!python/object/apply:os.system", "!!python/object/new:subprocess.Popen"):
        text = SAFE_YAML + f"evil: {tag} [[touch, {marker}]]\n"
        with pytest.raises(DeserializationError, match="unmarshalling"):
            Pipeline.loads(text)
        with pytest.raises(yaml.constructor.ConstructorError, match="python/object"):
            yaml.load(text, Loader=YamlLoader)
    assert not marker.exists()


def test_typed_custom_types_from_an_untrusted_module_are_refused(evil_module: tuple[str, Path]) -> None:
    name, marker = evil_module
    for path in (f"{name}.score", "os.system", "builtins.eval", "builtins.exec"):
        data = TypedAnswerEvaluator().to_dict()
        data["init_parameters"]["custom_types"] = {"mine": path}
        with pytest.raises(DeserializationError):
            TypedAnswerEvaluator.from_dict(data)
    pipeline = yaml.safe_load(SAFE_YAML)
    typed = TypedAnswerEvaluator().to_dict()
    typed["init_parameters"]["custom_types"] = {"mine": f"{name}.score"}
    pipeline["components"]["contains"] = typed
    with pytest.raises(DeserializationError):
        Pipeline.loads(yaml.safe_dump(pipeline))
    assert not marker.exists()


def test_pairwise_only_wraps_the_packages_evaluators(tmp_path: Path, evil_module: tuple[str, Path]) -> None:
    name, marker = evil_module
    ran = tmp_path / "ran.marker"
    for wrapped in (
        {"type": "subprocess.Popen", "init_parameters": {"args": ["touch", str(ran)]}},
        {"type": f"{name}.Evil", "init_parameters": {}},
        {"type": "haystack.components.evaluators.AnswerExactMatchEvaluator", "init_parameters": {}},
    ):
        data = PairwiseEvaluator(AnswerContainsEvaluator()).to_dict()
        data["init_parameters"]["evaluator"] = wrapped
        with pytest.raises((DeserializationError, TypeError)):
            PairwiseEvaluator.from_dict(data)
    assert not ran.exists()
    assert not marker.exists()


# -- from_dict validates every parameter's type ---------------------------------------------------

WRONG: dict[type, list[Any]] = {
    bool: ["yes", 1, None],
    str: [1, ["x"], None],
    int: ["1", 1.5, True],
    float: ["1.0", True, [1]],
    list: ["x", [1], {"a": 1}],
    dict: ["x", [1], 5],
    Any: [5, "a generator"],  # a chat generator: a serialised component or nothing
}


def _kind(hint: Any) -> tuple[type | None, bool]:
    """The base type of an annotation and whether ``None`` is allowed."""
    arguments = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        optional = type(None) in arguments
        hint = next(argument for argument in arguments if argument is not type(None))
        return typing.get_origin(hint) or hint, optional
    return typing.get_origin(hint) or hint, False


# The package's components (BatchGrading, exported beside them, is a helper: no from_dict, nothing saved).
COMPONENT_NAMES = [
    name for name in components.__all__ if callable(getattr(getattr(components, name), "from_dict", None))
]


def _cases() -> list[tuple[str, str, Any]]:
    cases = []
    for class_name in COMPONENT_NAMES:
        cls = getattr(components, class_name)
        hints = typing.get_type_hints(cls.__init__)
        for parameter in inspect.signature(cls.__init__).parameters.values():
            if parameter.name in ("self", "evaluator"):
                continue
            kind, optional = _kind(hints[parameter.name])
            for bad in WRONG.get(kind, []):  # type: ignore[arg-type]
                if bad is None and optional:
                    continue
                cases.append((class_name, parameter.name, bad))
    return cases


CASES = _cases()


def test_every_component_parameter_is_covered() -> None:
    covered = {(class_name, parameter) for class_name, parameter, _ in CASES}
    assert len(COMPONENT_NAMES) == len(components.__all__) - 2  # all but BatchGrading and BatchRunning
    for class_name in COMPONENT_NAMES:
        cls = getattr(components, class_name)
        for parameter in inspect.signature(cls.__init__).parameters:
            if parameter not in ("self", "evaluator"):
                assert (class_name, parameter) in covered, (class_name, parameter)


@pytest.mark.parametrize(("class_name", "parameter", "bad"), CASES, ids=[f"{c}.{p}={b!r}" for c, p, b in CASES])
def test_from_dict_refuses_a_wrong_typed_parameter_naming_it(class_name: str, parameter: str, bad: Any) -> None:
    cls = getattr(components, class_name)
    made = cls(AnswerContainsEvaluator()) if class_name == "PairwiseEvaluator" else cls()
    data = made.to_dict()
    data["init_parameters"][parameter] = bad
    with pytest.raises((TypeError, ValueError), match=parameter):
        cls.from_dict(data)


def test_regression_typed_custom_types_not_a_dict_is_a_type_error() -> None:
    # Found by the test above: from_dict called .items() on it and raised AttributeError.
    data = TypedAnswerEvaluator().to_dict()
    for bad in ("x", [1], 5, {"mine": 5}):
        data["init_parameters"]["custom_types"] = bad
        with pytest.raises(TypeError, match="custom_types must be a dict"):
            TypedAnswerEvaluator.from_dict(data)


# -- the package's sources -----------------------------------------------------------------------

UNSAFE = re.compile(
    r"(?<![\w.])(?:eval|exec)\s*\(|\bpickle\.loads?\s*\(|\bmarshal\.loads?\s*\(|\bshelve\.open\s*\("
    r"|\byaml\.(?:load|load_all|unsafe_load|full_load)\s*\(|\bUnsafeLoader\b|\bFullLoader\b|\bos\.system\s*\("
    r"|\bsubprocess\.\w+\([^)]*shell\s*=\s*True|\b__import__\s*\("
)
ALLOWED = {
    # The job a --jobs worker process runs: pickled by its own parent process (runner/parallel.py)
    # and sent down the pipe it created; never read from user data or a file.
    ("src/answer_eval/engine/parallel.py", "_JOB[:] = [pickle.loads(payload)]"),
}


def test_no_eval_exec_pickle_or_unsafe_yaml_in_the_sources() -> None:
    found = set()
    for path in sorted((ROOT / "src").rglob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.split("#", 1)[0]
            if UNSAFE.search(code):
                found.add((path.relative_to(ROOT).as_posix(), line.strip()))
    assert found <= ALLOWED, f"unsafe calls: {sorted(found - ALLOWED)}"


def test_the_source_scan_catches_what_it_looks_for() -> None:
    for line in (
        "eval(text)",
        "x = exec(code)",
        "pickle.load(handle)",
        "yaml.load(text)",
        "yaml.unsafe_load(t)",
        "__import__(name)",
        "marshal.loads(b)",
    ):
        assert UNSAFE.search(line), line
    for line in ("literal_eval(text)", "model.eval()", "self.evaluate(x)", "yaml.safe_load(text)", "executor(x)"):
        assert not UNSAFE.search(line), line
