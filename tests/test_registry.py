"""The one registry: every table keyed by evaluator name derives from its entries."""

from __future__ import annotations

from answer_eval.evaluators.registry import EVALUATORS, presets
from answer_eval.reports import scorers
from tests.conftest import EXAMPLES


def test_every_evaluator_names_a_bundled_example_file():
    for entry in EVALUATORS.values():
        assert (EXAMPLES / "data" / entry.example).is_file(), entry.name


def test_the_reports_scorers_are_the_registry_presets_and_haystacks_two():
    derived = {name for name, spec in scorers.EVALUATORS.items() if spec.evaluator is not None}
    assert derived == set(presets())
    assert set(scorers.EVALUATORS) - derived == {"exact", "sas"}
    for name, (entry, preset) in presets().items():
        spec = scorers.get_spec(name)
        assert (spec.evaluator, spec.options, spec.graded, spec.threshold) == (
            entry.name,
            preset.options,
            preset.graded,
            preset.threshold,
        )
        assert spec.title.startswith(entry.component)
        # A graded score needs its default threshold; a 0/1 score has none.
        assert (preset.threshold is not None) == preset.graded


def test_a_reports_signature_is_its_presets_evaluator_signature():
    # The reports' table is built from the registry when the module loads: no second list to edit.
    rouge = scorers.get_spec("rouge")
    assert rouge.options == (("metrics", ["rouge"]),)
    assert scorers.signature("rouge") == EVALUATORS["metrics"].load().options_type.from_dict(
        {"metrics": ["rouge"]}
    ).signature("metrics")
