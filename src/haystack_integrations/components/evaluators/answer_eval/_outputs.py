"""The output contract shared by the metric components: one `metrics` mapping plus the first metric's flat scores."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["METRICS_OUTPUTS", "metrics_outputs"]

METRICS_OUTPUTS: dict[str, Any] = {
    "metrics": dict[str, dict[str, Any]],
    "score": float,
    "individual_scores": list[float],
    "failure_kinds": list[str | None],
    "failure_counts": dict[str, int],
}
"""The output sockets of `ReferenceMetricsEvaluator` and `ToolCallEvaluator` (the latter adds `problems`)."""


class _Scores(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


class _BatchResult(Protocol):
    @property
    def metrics(self) -> dict[str, Any]: ...

    @property
    def failure_kinds(self) -> list[str | None]: ...

    @property
    def failure_counts(self) -> dict[str, int]: ...


def metrics_outputs(result: _BatchResult, first_metric: str) -> dict[str, Any]:
    """The component outputs of a batch result.

    `metrics`, the flat `score` and `individual_scores` of ``first_metric`` (so
    `EvaluationRunResult` takes them unchanged), `failure_kinds` and `failure_counts`.
    """
    metrics = {name: scores.to_dict() for name, scores in result.metrics.items()}
    first = metrics[first_metric]
    return {
        "metrics": metrics,
        "score": first["score"],
        "individual_scores": first["individual_scores"],
        "failure_kinds": result.failure_kinds,
        "failure_counts": result.failure_counts,
    }
