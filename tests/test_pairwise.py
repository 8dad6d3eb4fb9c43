"""Pairwise comparison: choices, win rate, the significance tests against scipy, and PairwiseEvaluator."""

import asyncio
import json
import sys

import pytest
from haystack import Pipeline
from haystack.components.evaluators import AnswerExactMatchEvaluator
from haystack.core.errors import DeserializationError
from haystack.evaluation import EvaluationRunResult
from scipy import stats as scipy_stats

from answer_eval.stats.pairwise import DEPRECATED_TESTS, PAIRWISE_TESTS, choose, compare, resolve_test
from answer_eval.stats.significance import paired_bootstrap
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    PairwiseEvaluator,
    ReferenceMetricsEvaluator,
    ToolCallEvaluator,
)
from tests.conftest import EXAMPLES

ROWS = [json.loads(line) for line in (EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl").read_text().splitlines()]
TRUTHS = [row["answers"] for row in ROWS[:80]]
CANDIDATE = [row["prediction"] for row in ROWS[:80]]
# A weaker baseline: the candidate's answer cut to its first four words.
BASELINE = [" ".join(answer.split()[:4]) for answer in CANDIDATE]
TOOLS = [json.loads(line) for line in (EXAMPLES / "data" / "tool_calls.jsonl").read_text().splitlines()]


def test_choose_with_and_without_tolerance():
    assert [choose(1, 0), choose(0, 1), choose(0.5, 0.5)] == ["CANDIDATE", "BASELINE", "TIE"]
    assert choose(0.62, 0.60, tie_tolerance=0.02) == "TIE"
    assert choose(0.63, 0.60, tie_tolerance=0.02) == "CANDIDATE"


def test_counts_and_win_rate_count_a_tie_as_half():
    result = compare([1, 0.8, 0.5, 0.0, 0.3], [0, 0.9, 0.5, 0.2, 0.3])
    assert result.choices == ["CANDIDATE", "BASELINE", "TIE", "BASELINE", "TIE"]
    assert (result.wins, result.losses, result.ties) == (1, 2, 2)
    assert result.win_rate == pytest.approx((1 + 2 / 2) / 5)
    assert result.points == [1.0, 0.0, 0.5, 0.0, 0.5]
    assert result.win_rate == pytest.approx(sum(result.points) / 5)
    assert result.candidate_score == pytest.approx(0.52)
    assert result.baseline_score == pytest.approx(0.38)


def test_auto_picks_mcnemar_for_binary_scores_and_matches_scipy():
    candidate = [1] * 12 + [0] * 3 + [1] * 20 + [0] * 5
    baseline = [0] * 12 + [1] * 3 + [1] * 20 + [0] * 5
    result = compare(candidate, baseline)
    assert result.test == "mcnemar_exact"
    assert result.p_value == pytest.approx(scipy_stats.binomtest(12, 15, 0.5).pvalue, rel=1e-12)


def test_auto_picks_the_bootstrap_for_graded_scores():
    candidate = [0.9, 0.7, 0.65, 0.8, 0.4, 0.75]
    baseline = [0.5, 0.6, 0.7, 0.3, 0.4, 0.5]
    result = compare(candidate, baseline, n_resamples=3000, seed=5)
    assert result.test == "paired_bootstrap"
    expected = paired_bootstrap(candidate, baseline, n_resamples=3000, seed=5)
    assert result.bootstrap == expected
    assert result.p_value == expected.p_value


def test_sign_test_uses_the_choices_and_matches_scipy():
    candidate = [0.9, 0.7, 0.65, 0.8, 0.41, 0.75, 0.6, 0.7]
    baseline = [0.5, 0.6, 0.7, 0.3, 0.40, 0.5, 0.2, 0.1]
    result = compare(candidate, baseline, test="sign_test", tie_tolerance=0.02)
    assert (result.wins, result.losses, result.ties) == (6, 1, 1)
    assert result.p_value == pytest.approx(scipy_stats.binomtest(6, 7, 0.5).pvalue, rel=1e-12)


def test_mcnemar_on_graded_scores_is_refused():
    with pytest.raises(ValueError, match="0/1"):
        compare([0.5, 1], [0, 1], test="mcnemar_exact")


@pytest.mark.parametrize(("old", "new"), sorted(DEPRECATED_TESTS.items()))
def test_old_test_names_still_work_with_a_deprecation_warning(old, new):
    candidate, baseline = [1, 1, 0, 1, 1, 0.0], [0, 1, 0, 0, 0, 1.0]
    with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated, use '{new}'"):
        result = compare(candidate, baseline, test=old, n_resamples=500)
    assert result == compare(candidate, baseline, test=new, n_resamples=500)
    assert result.test == new


def test_test_names_are_the_new_ones_and_unknown_names_are_refused():
    assert PAIRWISE_TESTS == ("auto", "mcnemar_exact", "sign_test", "paired_bootstrap")
    assert set(DEPRECATED_TESTS.values()) == set(PAIRWISE_TESTS) - {"auto"}
    assert [resolve_test(name) for name in PAIRWISE_TESTS] == list(PAIRWISE_TESTS)
    with pytest.raises(ValueError, match="test must be one of auto, mcnemar_exact, sign_test, paired_bootstrap"):
        resolve_test("t-test")


@pytest.mark.parametrize(
    ("candidate", "baseline", "options", "text"),
    [
        ([1, 0], [1], {}, "candidate has 2 scores but baseline has 1"),
        ([], [], {}, "no scores"),
        ([1], [0], {"test": "t-test"}, "test must be one of"),
        ([1], [0], {"tie_tolerance": -1}, "tie_tolerance"),
    ],
)
def test_compare_refuses_bad_input(candidate, baseline, options, text):
    with pytest.raises(ValueError, match=text):
        compare(candidate, baseline, **options)


def test_wraps_answer_contains_with_an_exact_mcnemar_test():
    evaluator = PairwiseEvaluator(evaluator=AnswerContainsEvaluator())
    result = evaluator.run(predicted_answers=CANDIDATE, baseline_answers=BASELINE, ground_truth_answers=TRUTHS)
    candidate = AnswerContainsEvaluator().run(ground_truth_answers=TRUTHS, predicted_answers=CANDIDATE)
    baseline = AnswerContainsEvaluator().run(ground_truth_answers=TRUTHS, predicted_answers=BASELINE)
    assert result["candidate_individual_scores"] == candidate["individual_scores"]
    assert result["baseline_individual_scores"] == baseline["individual_scores"]
    wins = sum(a > b for a, b in zip(candidate["individual_scores"], baseline["individual_scores"], strict=True))
    losses = sum(a < b for a, b in zip(candidate["individual_scores"], baseline["individual_scores"], strict=True))
    assert (result["wins"], result["losses"], result["ties"]) == (wins, losses, 80 - wins - losses)
    assert wins > losses
    assert result["test"] == "mcnemar_exact"
    assert result["p_value"] == pytest.approx(scipy_stats.binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-12)
    assert result["candidate_score"] == candidate["score"]
    assert result["baseline_score"] == baseline["score"]
    assert result["mean_difference"] == pytest.approx(candidate["score"] - baseline["score"])
    assert result["difference_interval"] is None
    assert result["score"] == result["win_rate"] == pytest.approx((wins + result["ties"] / 2) / 80)
    points = {"CANDIDATE": 1.0, "TIE": 0.5, "BASELINE": 0.0}
    assert result["individual_scores"] == [points[choice] for choice in result["pairwise_choices"]]
    assert type(result["score"]) is float


def test_wraps_reference_metrics_on_a_chosen_metric_with_the_bootstrap():
    inner = ReferenceMetricsEvaluator(metrics=["exact_match", "rouge"], rouge_type="rouge1")
    evaluator = PairwiseEvaluator(evaluator=inner, metric="rouge", n_resamples=2000, seed=1)
    result = evaluator.run(predicted_answers=CANDIDATE, baseline_answers=BASELINE, ground_truth_answers=TRUTHS)
    rouge_candidate = inner.run(predicted_answers=CANDIDATE, ground_truth_answers=TRUTHS)["metrics"]["rouge"]
    rouge_baseline = inner.run(predicted_answers=BASELINE, ground_truth_answers=TRUTHS)["metrics"]["rouge"]
    assert result["candidate_individual_scores"] == rouge_candidate["individual_scores"]
    assert result["baseline_individual_scores"] == rouge_baseline["individual_scores"]
    assert result["test"] == "paired_bootstrap"
    expected = paired_bootstrap(
        rouge_candidate["individual_scores"], rouge_baseline["individual_scores"], n_resamples=2000, seed=1
    )
    assert result["p_value"] == expected.p_value
    assert result["difference_interval"] == [expected.low, expected.high]
    assert expected.low <= result["mean_difference"] <= expected.high


def test_wraps_the_tool_call_evaluator_with_the_sign_test():
    inner = ToolCallEvaluator()
    evaluator = PairwiseEvaluator(evaluator=inner, metric="tool_parameter_kv_match", test="sign_test")
    data = {
        "predicted_answers": [row["prediction"] for row in TOOLS],
        "baseline_answers": [row["baseline"] for row in TOOLS],
        "ground_truth_answers": [row["reference"] for row in TOOLS],
    }
    result = evaluator.run(**data)
    assert len(result["pairwise_choices"]) == len(TOOLS)
    assert result["test"] == "sign_test"
    wins, losses = result["wins"], result["losses"]
    assert result["p_value"] == pytest.approx(scipy_stats.binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-12)


def test_the_three_lists_must_have_one_length():
    evaluator = PairwiseEvaluator(evaluator=AnswerContainsEvaluator())
    with pytest.raises(
        ValueError, match="predicted_answers has 2 items, baseline_answers 1 and ground_truth_answers 2"
    ):
        evaluator.run(predicted_answers=["a", "b"], baseline_answers=["a"], ground_truth_answers=["a", "b"])
    with pytest.raises(TypeError, match="baseline_answers must be a list"):
        evaluator.run(predicted_answers=["a"], baseline_answers="a", ground_truth_answers=["a"])
    with pytest.raises(ValueError, match="empty"):
        evaluator.run(predicted_answers=[], baseline_answers=[], ground_truth_answers=[])


@pytest.mark.parametrize(
    ("evaluator", "options", "error", "text"),
    [
        (AnswerExactMatchEvaluator(), {}, TypeError, "pointwise evaluator of"),
        (PairwiseEvaluator(evaluator=AnswerContainsEvaluator()), {}, TypeError, "pointwise evaluator of"),
        ("AnswerContainsEvaluator", {}, TypeError, "pointwise evaluator of"),
        (AnswerContainsEvaluator(), {"metric": "rouge"}, ValueError, "does not compute a metric named 'rouge'"),
        (ReferenceMetricsEvaluator(metrics=["bleu"]), {"metric": "rouge"}, ValueError, "'rouge'"),
        (AnswerContainsEvaluator(), {"test": "z"}, ValueError, "test must be one of"),
        (AnswerContainsEvaluator(), {"tie_tolerance": -0.1}, ValueError, "tie_tolerance"),
        (AnswerContainsEvaluator(), {"tie_tolerance": "0.1"}, TypeError, "tie_tolerance"),
        (AnswerContainsEvaluator(), {"n_resamples": 0}, ValueError, "n_resamples"),
        (AnswerContainsEvaluator(), {"n_resamples": 10.5}, TypeError, "n_resamples"),
        (AnswerContainsEvaluator(), {"seed": "1"}, TypeError, "seed"),
    ],
)
def test_bad_parameters_are_refused(evaluator, options, error, text):
    with pytest.raises(error, match=text):
        PairwiseEvaluator(evaluator=evaluator, **options)


def test_to_dict_serializes_the_inner_evaluator_and_from_dict_rebuilds_it():
    inner = ReferenceMetricsEvaluator(metrics=["rouge"], rouge_type="rougeL", use_stemmer=True)
    evaluator = PairwiseEvaluator(evaluator=inner, metric="rouge", tie_tolerance=0.01, test="sign_test", seed=None)
    data = evaluator.to_dict()
    assert data["type"] == "haystack_integrations.components.evaluators.answer_eval.pairwise.PairwiseEvaluator"
    assert data["init_parameters"]["evaluator"] == inner.to_dict()
    assert data["init_parameters"]["seed"] is None
    loaded = PairwiseEvaluator.from_dict(data)
    assert isinstance(loaded.evaluator, ReferenceMetricsEvaluator)
    assert loaded.to_dict() == data
    inputs = {
        "predicted_answers": CANDIDATE[:20],
        "baseline_answers": BASELINE[:20],
        "ground_truth_answers": TRUTHS[:20],
    }
    assert loaded.run(**inputs) == evaluator.run(**inputs)
    assert data["init_parameters"]["evaluator"] == inner.to_dict()  # from_dict did not change the input


@pytest.mark.parametrize(
    "type_name",
    [
        "os.system",
        "haystack.components.evaluators.answer_exact_match.AnswerExactMatchEvaluator",
        "haystack_integrations.components.evaluators.answer_eval.pairwise.PairwiseEvaluator",
        "haystack_integrations.components.evaluators.answer_eval.not_a_module.Evil",
        "haystack_integrations.components.evaluators.answer_eval.answer_contains.NOT_IN_DOCUMENT",
        "haystack_integrations.components.evaluators.answer_eval_evil.module.AnswerContainsEvaluator",
        "haystack_integrations.components.evaluators.answer_eval.reference_metrics.AnswerContainsEvaluator",
    ],
)
def test_from_dict_accepts_only_this_packages_evaluators_and_imports_nothing(type_name):
    data = PairwiseEvaluator(evaluator=AnswerContainsEvaluator()).to_dict()
    data["init_parameters"]["evaluator"] = {"type": type_name, "init_parameters": {}}
    before = set(sys.modules)
    with pytest.raises(DeserializationError):
        PairwiseEvaluator.from_dict(data)
    assert set(sys.modules) == before


@pytest.mark.parametrize("inner", [None, "AnswerContainsEvaluator", {"init_parameters": {}}])
def test_from_dict_needs_a_serialized_evaluator(inner):
    data = PairwiseEvaluator(evaluator=AnswerContainsEvaluator()).to_dict()
    data["init_parameters"]["evaluator"] = inner
    with pytest.raises(DeserializationError, match="serialized component"):
        PairwiseEvaluator.from_dict(data)


def test_run_async_matches_run():
    evaluator = PairwiseEvaluator(evaluator=ReferenceMetricsEvaluator(metrics=["bleu"]), n_resamples=500)
    inputs = {
        "predicted_answers": CANDIDATE[:25],
        "baseline_answers": BASELINE[:25],
        "ground_truth_answers": TRUTHS[:25],
    }
    assert asyncio.run(evaluator.run_async(**inputs)) == evaluator.run(**inputs)


def test_warm_up_is_safe_without_an_inner_warm_up():
    evaluator = PairwiseEvaluator(evaluator=AnswerContainsEvaluator())
    evaluator.warm_up()
    assert evaluator.run(predicted_answers=["Paris"], baseline_answers=["Lyon"], ground_truth_answers=["Paris"])[
        "pairwise_choices"
    ] == ["CANDIDATE"]


def test_pipeline_dumps_and_loads_without_an_allow_list_and_feeds_evaluation_run_result():
    pipeline = Pipeline()
    pipeline.add_component("contains", AnswerContainsEvaluator())
    pipeline.add_component("versus_baseline", PairwiseEvaluator(evaluator=AnswerContainsEvaluator()))
    text = pipeline.dumps()
    assert "answer_contains.AnswerContainsEvaluator" in text
    loaded = Pipeline.loads(text)
    data = {
        "contains": {"predicted_answers": CANDIDATE, "ground_truth_answers": TRUTHS},
        "versus_baseline": {
            "predicted_answers": CANDIDATE,
            "baseline_answers": BASELINE,
            "ground_truth_answers": TRUTHS,
        },
    }
    result = loaded.run(data)
    assert result == pipeline.run(data)
    report = EvaluationRunResult(
        run_name="candidate",
        inputs={"ground_truth_answers": TRUTHS, "predicted_answers": CANDIDATE},
        results={"answer_contains": result["contains"], "win_rate": result["versus_baseline"]},
    )
    aggregated = report.aggregated_report(output_format="json")
    assert aggregated["metrics"] == ["answer_contains", "win_rate"]
    assert aggregated["score"][1] == result["versus_baseline"]["win_rate"]
    assert report.detailed_report(output_format="json")["win_rate"] == result["versus_baseline"]["individual_scores"]
