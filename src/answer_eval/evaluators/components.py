"""From a Haystack component of this package (or its ``to_dict()``) to the core evaluator it wraps.

The component's init parameters are its evaluator's options, by name (besides a chat generator the
component may hand its evaluator, as the judge's ``escalate_to``: unset, it is left out; set, it
stays where the component runs; and ``progress_bar``, how the component shows its run), so its
``to_dict()`` is all that is needed: nothing is imported
from the component package, and nothing in the data is run.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from answer_eval.evaluators.base import Evaluator
from answer_eval.evaluators.registry import EVALUATORS, entry_for_component

__all__ = ["COMPONENTS", "evaluator_of"]

COMPONENTS = "haystack_integrations.components.evaluators.answer_eval"
"""The package of the Haystack components."""


def evaluator_of(value: Any) -> Evaluator:
    """The core evaluator of ``value``: an evaluator, a component of this package, or a component's ``to_dict()``.

    :raises TypeError: For anything else (another package's component, PairwiseEvaluator, a typed
        evaluator with custom question types, which are code and not options).
    """
    if isinstance(value, Evaluator):
        if getattr(value, "custom_types", None):
            raise TypeError("custom question types are code, not options: they do not travel to a Dask cluster")
        return value
    data = value if isinstance(value, dict) else getattr(value, "to_dict", lambda: None)()
    kind = data.get("type") if isinstance(data, dict) else None
    module, _, name = str(kind).rpartition(".")
    if name == "PairwiseEvaluator" and module.startswith(COMPONENTS):
        raise TypeError(
            "PairwiseEvaluator compares two systems with a paired test that needs every score at once; it does "
            "not run on Dask. Score each system with its evaluator on Dask and compare the per-row columns."
        )
    found = entry_for_component(name) if module.startswith(COMPONENTS) else None
    if found is None or not isinstance(data, dict):
        supported = ", ".join(entry.component for entry in EVALUATORS.values() if entry.parameters_are_options)
        raise TypeError(f"the Dask engine runs this package's evaluators ({supported}); got {kind!r}")
    if not found.parameters_are_options:
        raise TypeError(f"{name} grades with an LLM through its chat generator: it runs where its component runs")
    options = dict(data.get("init_parameters") or {})
    options.pop("progress_bar", None)  # how the component shows its run where it runs: not an option
    if options.pop("custom_types", None):
        raise TypeError("custom question types are code, not options: they do not travel to a Dask cluster")
    cls = found.load()
    return cls(cls.options_type.from_dict(_options_alone(name, options, cls)))


def _options_alone(name: str, parameters: dict[str, Any], cls: type[Evaluator]) -> dict[str, Any]:
    """The component's parameters that are options, for an evaluator that may be given a chat generator.

    Such a component (the judge's) saves its generator beside its options (``escalate_to``): unset
    (``None``), it is left out; saved (a component's dict), it is refused, as a chat generator runs
    where the component runs. Any other key is left for the options to refuse by name.
    """
    if "generator" not in inspect.signature(cls.__init__).parameters:
        return parameters
    fields = {item.name for item in dataclasses.fields(cls.options_type)}
    for key in [key for key in parameters if key not in fields]:
        value = parameters[key]
        if (isinstance(value, dict) and "type" in value) or isinstance(value, list):  # a list: a jury
            raise TypeError(
                f"{name}({key}=...) hands work to a chat generator, which runs where the component runs: it "
                f"does not run on Dask (without {key}, the component does: the judge's abstention, "
                "target_agreement or escalate_below, for example)"
            )
        if value is None:
            del parameters[key]
    return parameters
