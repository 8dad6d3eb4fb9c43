"""PairwiseEvaluator: a candidate against a baseline under any pointwise evaluator of this package."""

from __future__ import annotations

import inspect
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.core.errors import DeserializationError
from haystack.core.serialization import generate_qualified_class_name

from answer_eval.evaluators.base import check_number, check_str
from answer_eval.stats.pairwise import PairwiseResult, compare, resolve_test

__all__ = ["PairwiseEvaluator"]

NAMESPACE = "haystack_integrations.components.evaluators.answer_eval"
_OUTPUTS = {
    "pairwise_choices": list[str],
    "wins": int,
    "losses": int,
    "ties": int,
    "win_rate": float,
    "p_value": float,
    "test": str,
    "candidate_score": float,
    "baseline_score": float,
    "mean_difference": float,
    "difference_interval": list[float] | None,
    "candidate_individual_scores": list[float],
    "baseline_individual_scores": list[float],
    "score": float,
    "individual_scores": list[float],
}


def _is_pointwise(evaluator: Any) -> bool:
    run = getattr(evaluator, "run", None)
    if run is None:
        return False
    try:
        parameters = inspect.signature(run).parameters
    except (TypeError, ValueError):
        return False
    required = {name for name, parameter in parameters.items() if parameter.default is inspect.Parameter.empty}
    return required == {"predicted_answers", "ground_truth_answers"}


def _load_evaluator(data: Any) -> Any:
    """Build the inner evaluator from its dictionary, accepting only this package's evaluators.

    The class is looked up by name among the components of the evaluator registry
    (:mod:`answer_eval.evaluators.registry`), in this package; no module is imported by name.
    """
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise DeserializationError("PairwiseEvaluator needs 'evaluator' as a serialized component with a 'type'")
    type_name = data["type"]
    module, _, class_name = type_name.rpartition(".")
    if not module.startswith(NAMESPACE + "."):
        raise DeserializationError(
            f"PairwiseEvaluator only wraps evaluators of {NAMESPACE}; refusing to load {type_name!r}"
        )
    from answer_eval.evaluators.registry import entry_for_component
    from haystack_integrations.components.evaluators import answer_eval as package

    found = getattr(package, class_name, None) if entry_for_component(class_name) is not None else None
    if found is None or generate_qualified_class_name(found) != type_name or found is PairwiseEvaluator:
        raise DeserializationError(f"{type_name!r} is not a pointwise evaluator of {NAMESPACE}")
    return found.from_dict(data)


@component
class PairwiseEvaluator:
    """Compares a candidate system against a baseline on the same items, with a paired significance test.

    Both systems' answers are scored by the wrapped pointwise evaluator (any evaluator of this
    package: `AnswerContainsEvaluator`, `ReferenceMetricsEvaluator`, `ToolCallEvaluator`, ...),
    on its first metric or on `metric`. Per item the choice is `CANDIDATE`, `BASELINE` or `TIE`
    (scores within `tie_tolerance`). The candidate's `win_rate` counts a tie as half a win,
    `(wins + ties / 2) / items`, and is also the flat `score`; `individual_scores` are 1, 0.5 and 0
    for a win, a tie and a loss, so `EvaluationRunResult` takes the output unchanged.

    The test (`test="auto"`): exact McNemar when every score is 0 or 1, else a seeded paired
    bootstrap of the mean difference; `sign_test` runs the sign test on wins against losses.

    Usage example:
    ```python
    from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator, PairwiseEvaluator

    evaluator = PairwiseEvaluator(evaluator=AnswerContainsEvaluator())
    result = evaluator.run(
        ground_truth_answers=["12400", "Paris", "Berlin", "1912"],
        predicted_answers=["It is 12,400 units.", "Paris", "Lyon", "1912"],
        baseline_answers=["About 12,000 units.", "Paris", "Marseille", "1915"],
    )
    print(result["pairwise_choices"])  # ['CANDIDATE', 'TIE', 'TIE', 'CANDIDATE']
    print(result["win_rate"])  # 0.75
    print(result["test"])  # 'mcnemar_exact'
    print(result["p_value"])  # 0.5
    ```
    """

    def __init__(
        self,
        evaluator: Any,
        metric: str | None = None,
        tie_tolerance: float = 0.0,
        test: str = "auto",
        n_resamples: int = 10_000,
        seed: int | None = 0,
    ) -> None:
        """Create a PairwiseEvaluator.

        :param evaluator:
            A pointwise evaluator of this package, whose `run` takes `ground_truth_answers` and
            `predicted_answers`. It is serialized with its own `to_dict`.
        :param metric:
            The metric to compare, a key of the evaluator's `metrics` output (for
            `ReferenceMetricsEvaluator` and `ToolCallEvaluator`); `None` (default) uses its flat
            `individual_scores`, i.e. its first metric.
        :param tie_tolerance:
            Scores closer than this (inclusive) are a tie. Default 0: only equal scores tie.
        :param test:
            `auto` (default), `mcnemar_exact` (0/1 scores only), `sign_test` or `paired_bootstrap`;
            the old names `mcnemar`, `sign`, `bootstrap` are deprecated.
        :param n_resamples:
            Bootstrap resamples (default 10,000).
        :param seed:
            Bootstrap seed, so a run is reproducible; `None` draws a fresh one.
        :raises TypeError: If `evaluator` is not a pointwise evaluator of this package or a
            parameter has the wrong type.
        :raises ValueError: If a value is out of range or `metric` is not one the evaluator computes.
        """
        if not type(evaluator).__module__.startswith(NAMESPACE + ".") or not _is_pointwise(evaluator):
            raise TypeError(
                f"evaluator must be a pointwise evaluator of {NAMESPACE} (its run takes ground_truth_answers "
                f"and predicted_answers), got {type(evaluator).__name__}"
            )
        if metric is not None:
            check_str("metric", metric)
            known = evaluator.to_dict()["init_parameters"].get("metrics")
            if not isinstance(known, (list, tuple)) or metric not in known:
                raise ValueError(f"{type(evaluator).__name__} does not compute a metric named {metric!r}")
        check_number("tie_tolerance", tie_tolerance)
        check_str("test", test)
        check_number("n_resamples", n_resamples, integer=True)
        check_number("seed", seed, integer=True, optional=True)
        if tie_tolerance < 0:
            raise ValueError("tie_tolerance must not be negative")
        # Old names still work, with a DeprecationWarning at the caller's line (haystack's
        # ComponentMeta.__call__ sits between it and __init__); the new name is kept and serialized.
        test = resolve_test(test, stacklevel=3)
        if n_resamples < 1:
            raise ValueError("n_resamples must be at least 1")
        self.evaluator = evaluator
        self.metric = metric
        self.tie_tolerance = tie_tolerance
        self.test = test
        self.n_resamples = n_resamples
        self.seed = seed

    def warm_up(self) -> None:
        """Warm up the wrapped evaluator, if it has anything to warm up."""
        warm_up = getattr(self.evaluator, "warm_up", None)
        if callable(warm_up):
            warm_up()

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component, the wrapped evaluator included (through its own `to_dict`).

        :returns: The serialized component.
        """
        return default_to_dict(
            self,
            evaluator=self.evaluator,
            metric=self.metric,
            tie_tolerance=self.tie_tolerance,
            test=self.test,
            n_resamples=self.n_resamples,
            seed=self.seed,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairwiseEvaluator:
        """Deserialize this component; the wrapped evaluator must be one of this package's.

        :param data: The dictionary from `to_dict`.
        :returns: The deserialized component.
        :raises DeserializationError: If the wrapped evaluator's type is not an evaluator exported
            by this package.
        """
        parameters = dict(data.get("init_parameters", {}))
        parameters["evaluator"] = _load_evaluator(parameters.get("evaluator"))
        return default_from_dict(cls, {**data, "init_parameters": parameters})

    def _scores(self, output: dict[str, Any], side: str) -> list[float]:
        if self.metric is None:
            return list(output["individual_scores"])
        metrics = output.get("metrics")
        if not isinstance(metrics, dict) or self.metric not in metrics:
            raise ValueError(f"the {side} output has no metric named {self.metric!r}")
        return list(metrics[self.metric]["individual_scores"])

    def _check(self, predicted_answers: Any, baseline_answers: Any, ground_truth_answers: Any) -> None:
        for name, value in (
            ("predicted_answers", predicted_answers),
            ("baseline_answers", baseline_answers),
            ("ground_truth_answers", ground_truth_answers),
        ):
            if not isinstance(value, (list, tuple)):
                raise TypeError(f"{name} must be a list, got {type(value).__name__}")
        lengths = {len(predicted_answers), len(baseline_answers), len(ground_truth_answers)}
        if len(lengths) > 1:
            raise ValueError(
                f"predicted_answers has {len(predicted_answers)} items, baseline_answers "
                f"{len(baseline_answers)} and ground_truth_answers {len(ground_truth_answers)}; "
                "they must be the same length"
            )

    def _result(self, candidate: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
        result: PairwiseResult = compare(
            self._scores(candidate, "candidate"),
            self._scores(baseline, "baseline"),
            tie_tolerance=self.tie_tolerance,
            test=self.test,
            n_resamples=self.n_resamples,
            seed=self.seed,
        )
        interval = None if result.bootstrap is None else [result.bootstrap.low, result.bootstrap.high]
        return {
            "pairwise_choices": result.choices,
            "wins": result.wins,
            "losses": result.losses,
            "ties": result.ties,
            "win_rate": result.win_rate,
            "p_value": result.p_value,
            "test": result.test,
            "candidate_score": result.candidate_score,
            "baseline_score": result.baseline_score,
            "mean_difference": result.candidate_score - result.baseline_score,
            "difference_interval": interval,
            "candidate_individual_scores": result.candidate_scores,
            "baseline_individual_scores": result.baseline_scores,
            "score": result.win_rate,
            "individual_scores": result.points,
        }

    @component.output_types(**_OUTPUTS)
    def run(
        self, *, ground_truth_answers: list[Any], predicted_answers: list[Any], baseline_answers: list[Any]
    ) -> dict[str, Any]:
        """Score the candidate's and the baseline's answers and compare them item by item.

        Pass the inputs by keyword.

        :param ground_truth_answers:
            The references, as the wrapped evaluator takes them.
        :param predicted_answers:
            The candidate's answers, in any form the wrapped evaluator reads.
        :param baseline_answers:
            The baseline's answers to the same items, in the same order.
        :returns:
            A dictionary with:
            - `pairwise_choices`: `CANDIDATE`, `BASELINE` or `TIE` per item.
            - `wins`, `losses`, `ties`: the candidate's counts.
            - `win_rate`: `(wins + ties / 2) / items`; also the flat `score`.
            - `p_value`, `test`: the two-sided paired test run (`mcnemar_exact`, `sign_test` or `paired_bootstrap`).
            - `candidate_score`, `baseline_score`, `mean_difference`: the mean scores and their difference.
            - `difference_interval`: the bootstrap's 95% interval of the difference (`None` for other tests).
            - `candidate_individual_scores`, `baseline_individual_scores`: the pointwise scores.
            - `individual_scores`: 1 for a win, 0.5 for a tie, 0 for a loss.
        :raises TypeError: If an input is not a list.
        :raises ValueError: If the three lists differ in length, or the wrapped evaluator refuses an input.
        """
        self._check(predicted_answers, baseline_answers, ground_truth_answers)
        candidate = self.evaluator.run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)
        baseline = self.evaluator.run(ground_truth_answers=ground_truth_answers, predicted_answers=baseline_answers)
        return self._result(candidate, baseline)

    @component.output_types(**_OUTPUTS)
    async def run_async(
        self, *, ground_truth_answers: list[Any], predicted_answers: list[Any], baseline_answers: list[Any]
    ) -> dict[str, Any]:
        """Asynchronously compare; same inputs (by keyword), outputs and errors as `run`.

        Uses the wrapped evaluator's `run_async` when it has one.
        """
        self._check(predicted_answers, baseline_answers, ground_truth_answers)
        run_async = getattr(self.evaluator, "run_async", None)
        if run_async is None:
            return self.run(
                ground_truth_answers=ground_truth_answers,
                predicted_answers=predicted_answers,
                baseline_answers=baseline_answers,
            )
        candidate = await run_async(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)
        baseline = await run_async(ground_truth_answers=ground_truth_answers, predicted_answers=baseline_answers)
        return self._result(candidate, baseline)
