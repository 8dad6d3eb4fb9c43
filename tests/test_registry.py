"""The one registry: every table keyed by evaluator name derives from its entries."""

from __future__ import annotations

from answer_eval.evaluators.registry import EVALUATORS, build, presets
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


def test_names_agree_across_layers():
    # DEVELOPERS.md's naming table: the core class is the stem plus Core, its component the stem plus
    # Evaluator, so no two classes share a name (the core and component rubric graders once did).
    from haystack_integrations.components.evaluators import answer_eval as components

    for entry in EVALUATORS.values():
        core = entry.target.rpartition(":")[2]
        assert core.endswith("Core"), core
        assert entry.component == core.removesuffix("Core") + "Evaluator"
        assert entry.load().__name__ == core
        assert entry.load().component == entry.component
        assert entry.component in components.__all__


def test_the_columns_a_report_reuses_are_columns_the_command_writes():
    for _, (entry, preset) in presets().items():
        assert set(preset.reused) <= set(build(entry.name).outputs()), preset.name
    assert {name for name, (_, preset) in presets().items() if preset.reused} == {"contains", "judge"}
