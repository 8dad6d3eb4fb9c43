"""The rubric grader's output columns (:func:`grade_columns`) and the summary of ``answer-eval rubric``.

The summary holds the grades (or the pairwise wins), the failure kinds and what the run cost, and a
jury's agreement between its judges (from the ``judge_grades`` column, over the rows every judge graded).

It lists the failure kinds an LLM grader gives (:data:`RUBRIC_FAILURE_KINDS`), not the answer
checkers' ``not_in_document`` and ``wrong``; it counts the items graded on fewer samples than
``--samples`` asked (a ``--max-calls`` budget, a server giving fewer replies, unreadable ones) and
the replies cut by the token limit or the content filter, which Haystack's generator would have
printed a warning for, each. Scored by log-probabilities (``scoring="logprobs"``), it lists
``no_logprobs`` too, the mean score is the mean of the weighted scores, and ``scores`` counts each
at its nearest value of the scale (a half rounds up). :func:`nothing_to_use` says when a run is no
result at all (exit 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from answer_eval.errors import FailureKind
from answer_eval.evaluators.base import Socket
from answer_eval.evaluators.summaries import Summary, add_kinds, count_of
from answer_eval.llm.grading import BASELINE, CANDIDATE, TIE, Grade, PairGrade, win_figures
from answer_eval.llm.jury import panel_agreement
from answer_eval.llm.spending import Usage, unanswered
from answer_eval.stats.written_numbers import rounded

__all__ = ["PAIRWISE_SOCKETS", "POINTWISE_SOCKETS", "RubricSummary", "grade_columns", "nothing_to_use"]

_COSTS = ("calls", "prompt_tokens", "completion_tokens")

RUBRIC_FAILURE_KINDS = (
    FailureKind.PARSE_FAILURE,
    FailureKind.BUDGET_STOP,
    FailureKind.REFUSAL,
    FailureKind.ERROR,
)
"""The failure kinds an LLM grader gives an item (see :mod:`answer_eval.llm.grading`)."""


def _no_failures() -> dict[str, int]:
    return dict.fromkeys(RUBRIC_FAILURE_KINDS, 0)


@dataclass
class RubricSummary(Summary):
    """Scores by value and their mean (or wins, losses, ties and flips), failure kinds, calls and tokens.

    :param pairwise: Whether the rows hold pairwise choices rather than scores.
    :param swap: Whether each pair was asked in both orders (so flips can be seen).
    :param samples: The samples asked per item (per order of a pair).
    :param grades: Score (or choice) to count, as text (JSON keys).
    :param flips: Pairs whose choice changed with the order.
    :param failure_counts: Failure kind to count (the grader's kinds, then any other met).
    :param costs: Requests and tokens spent, over the rows.
    :param fewer_samples: Graded items whose grade rests on fewer samples than asked.
    :param cut_replies: Replies cut by the token limit or the content filter.
    :param scoring: ``samples``, or ``logprobs``: the scores are weighted means (floats).
    :param score_total: With ``logprobs``, the sum of the weighted scores (their mean is the mean score).
    :param sent: This process's requests (the grader's), for ``structured_fallbacks``: the formats
        of structured output the server refused this run (not kept across ``--resume``).
    :param judges: A jury's judges (0: one grader).
    :param judge_rows: A jury's grades (one per judge) of each row every judge graded, in order: its agreement.
    """

    pairwise: bool = False
    swap: bool = True
    samples: int = 1
    grades: dict[str, int] = field(default_factory=dict)
    flips: int = 0
    failure_counts: dict[str, int] = field(default_factory=_no_failures)
    costs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COSTS, 0))
    fewer_samples: int = 0
    cut_replies: int = 0
    sent: Usage | None = field(default=None, compare=False, repr=False)
    scoring: str = "samples"
    score_total: float = 0.0
    judges: int = 0
    judge_rows: list[list[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        """List ``no_logprobs`` among the failure kinds when the grader can give it (scoring by log-probabilities)."""
        self.failure_counts = self._kinds() | self.failure_counts

    def _kinds(self) -> dict[str, int]:
        kinds = _no_failures()
        return kinds | {FailureKind.NO_LOGPROBS: 0} if self.scoring == "logprobs" else kinds

    @property
    def asked(self) -> int:
        """The samples asked per item: ``samples``, twice for a pair asked in both orders."""
        return self.samples * (2 if self.pairwise and self.swap else 1)

    def output_columns(self, names: Sequence[str]) -> list[str]:
        """The grade, the flip, the failure kind, the costs and the samples (not the explanation)."""
        wanted = {"score", "choice", "flipped", "failure_kind", *_COSTS, "samples_used", "cut_replies", "judge_grades"}
        return [name for name in names if name in wanted]

    def add_rows(self, inputs: Mapping[str, Sequence[Any]], outputs: Mapping[str, Sequence[Any]]) -> None:
        """Count each row's grade, failure kind, costs, samples used and cut replies."""
        grades = outputs["choice" if self.pairwise else "score"]
        self.items += len(grades)
        used = outputs.get("samples_used") or [None] * len(grades)  # a row written before the column: unknown
        for grade, samples in zip(grades, used, strict=True):
            if grade is not None:
                key = str(math.floor(grade + 0.5)) if self.scoring == "logprobs" else str(grade)
                self.score_total += grade if self.scoring == "logprobs" else 0
                self.grades[key] = self.grades.get(key, 0) + 1
                # None: decided without a grader (a response with no text), so no sample was asked
                self.fewer_samples += isinstance(samples, int) and samples < self.asked
        self.cut_replies += sum(value or 0 for value in outputs.get("cut_replies", ()))
        for kind in outputs["failure_kind"]:
            if kind is not None:
                self.failure_counts[kind] = self.failure_counts.get(kind, 0) + 1
        if self.pairwise:
            self.flips += sum(1 for flipped in outputs["flipped"] if flipped)
        for name in _COSTS:
            self.costs[name] += sum(value or 0 for value in outputs[name])
        if self.judges:
            rows = outputs["judge_grades"]
            self.judge_rows += [list(row) for row in rows if row and all(one is not None for one in row)]

    def merge(self, other: Any) -> None:
        """Add another summary's rows."""
        self.items += other.items
        self.invalid_lines += other.invalid_lines
        self.flips += other.flips
        self.fewer_samples += other.fewer_samples
        self.cut_replies += other.cut_replies
        self.score_total += other.score_total
        add_kinds(self.grades, other.grades)
        add_kinds(self.failure_counts, other.failure_counts)
        add_kinds(self.costs, other.costs)
        self.judge_rows += other.judge_rows

    @property
    def agreement(self) -> dict[str, Any]:
        """A jury's agreement over the rows every judge graded (:func:`~answer_eval.llm.jury.panel_agreement`)."""
        return {**panel_agreement(self.judge_rows, self.pairwise), "judges": self.judges}

    @property
    def graded(self) -> int:
        """Rows that got a grade."""
        return sum(self.grades.values())

    def _figures(self) -> dict[str, Any]:
        if self.pairwise:
            wins, losses, ties = (self.grades.get(name, 0) for name in (CANDIDATE, BASELINE, TIE))
            graded = wins + losses + ties
            rate = self.flips / graded if graded and self.swap else None
            flips = {"position_flips": self.flips if self.swap else None, "flip_rate": rate}
            return {**win_figures(wins, losses, ties), **flips}
        total: float = sum(int(value) * count for value, count in self.grades.items())
        total = self.score_total if self.scoring == "logprobs" else total
        return {
            "mean_score": total / self.graded if self.graded else None,
            "scores": dict(sorted(self.grades.items(), key=lambda pair: int(pair[0]))),
        }

    def counts(self) -> dict[str, Any]:
        """Items, graded rows, the figures, failure kinds and costs."""
        return {
            "path": self.path,
            "items": self.items,
            "graded": self.graded,
            **self._figures(),
            "failure_counts": self.failure_counts,
            "samples_asked": self.asked,
            "graded_on_fewer_samples": self.fewer_samples,
            "cut_replies": self.cut_replies,
            "structured_fallbacks": self._fallbacks,
            **self.costs,
            **({"judge_agreement": self.agreement} if self.judges else {}),
            "invalid_lines": self.invalid_lines,
            "output": self.output,
        }

    def lines(self, command: str) -> list[str]:
        """The counts as aligned text."""
        lines = [f"answer-eval {command}: {self.path}", f"  items            {self.items}"]
        lines.append(f"  graded           {self.graded}")
        for name, value in self._figures().items():
            shown = f"{value:.4f}" if isinstance(value, float) else "n/a" if value is None else str(value)
            if isinstance(value, dict):
                shown = "  ".join(f"{grade}: {count}" for grade, count in value.items()) or "none"
            lines.append(f"  {name:<16} {shown}")
        if self.invalid_lines:
            lines.append(f"  invalid lines    {self.invalid_lines} (skipped)")
        lines.append("  failure kinds")
        lines.extend(f"    {kind:<16} {number}" for kind, number in self.failure_counts.items())
        if self.fewer_samples:
            lines.append(f"  fewer samples    {self.fewer_samples} graded on fewer than the {self.asked} asked")
        if self.cut_replies:
            lines.append(f"  cut replies      {self.cut_replies} (token limit or content filter: see --max-tokens)")
        if self._fallbacks:
            lines.append(f"  structured out   {self._fallbacks} format(s) refused by the server: see --structured")
        lines.append("  " + "  ".join(f"{name} {self.costs[name]}" for name in _COSTS))
        lines.extend(self._jury_lines())
        if self.output:
            lines.append(f"  output           {self.output}")
        return lines

    def _jury_lines(self) -> list[str]:
        if not self.judges:
            return []
        agreement = self.agreement
        name = "fleiss kappa" if self.pairwise else "krippendorff alpha (ordinal)"
        value = agreement["fleiss_kappa" if self.pairwise else "krippendorff_alpha"]
        shown = "n/a" if value is None else f"{value:.4f}"
        rows = f"{agreement['items']} rows every judge graded"
        return [f"  judge agreement  {name} {shown} over {rows} ({self.judges} judges)"]

    @property
    def _fallbacks(self) -> int:
        return 0 if self.sent is None else self.sent.structured_fallbacks

    def state(self) -> dict[str, Any]:
        """Items, grades, flips, failure kinds and costs."""
        return {
            "items": self.items,
            "grades": self.grades,
            "flips": self.flips,
            "failures": self.failure_counts,
            "costs": self.costs,
            "fewer_samples": self.fewer_samples,
            "cut_replies": self.cut_replies,
            **({"score_total": self.score_total} if self.scoring == "logprobs" else {}),
            **({"judge_rows": self.judge_rows} if self.judges else {}),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        """Take the counts :meth:`state` gave."""
        self.items, self.flips = count_of(state["items"]), count_of(state["flips"])
        self.grades = {str(k): count_of(v) for k, v in state["grades"].items()}
        # A record written before the grader's own kinds listed every kind: those it never gives are left out.
        failures = {str(kind): count_of(number) for kind, number in state["failures"].items()}
        self.failure_counts = self._kinds() | {k: n for k, n in failures.items() if n or k in RUBRIC_FAILURE_KINDS}
        self.costs = {name: count_of(state["costs"][name]) for name in _COSTS}
        self.fewer_samples = count_of(state.get("fewer_samples", 0))
        self.cut_replies = count_of(state.get("cut_replies", 0))
        self.score_total = float(state.get("score_total", 0.0))
        if not math.isfinite(self.score_total):  # NaN, Infinity or 1e999 in an edited record: no total
            raise ValueError("the score total is not a finite number")
        if self.judges:
            self.judge_rows = [self._judge_row(row) for row in state.get("judge_rows", [])]

    def _judge_row(self, row: Any) -> list[Any]:
        """A jury's row of a saved state: one grade per judge (``ValueError`` for an edited record)."""
        if not isinstance(row, list) or len(row) != self.judges or any(isinstance(one, bool) for one in row):
            raise ValueError(f"a jury's row holds one grade per judge ({self.judges}), got {str(row)[:80]}")
        return row


def nothing_to_use(summary: RubricSummary, sent: Usage, server: str) -> str | None:
    """Why a run is no result (the command line exits 3), or ``None``.

    No item graded (of at least one: an empty input is refused before), or every request this
    process sent got no answer from ``server`` (refused, reset, timed out: a dead server, a wrong
    port), though some rows were graded from the cache or without a call.
    """
    unheard = unanswered(sent, server)
    if unheard is not None:
        return unheard
    if summary.items and not summary.graded:
        kinds = ", ".join(f"{kind} {number}" for kind, number in summary.failure_counts.items() if number)
        every = "the 1 item" if summary.items == 1 else f"all {summary.items:,} items"
        return f"no item was graded: {every} failed ({kinds})"
    return None


def grade_columns(grades: Sequence[Grade] | Sequence[PairGrade], pairwise: bool) -> dict[str, list[Any]]:
    """The output columns of graded items: the grade (``score``, or ``choice`` and ``flipped``), then the rest."""
    if pairwise:
        return _pairwise_columns(cast("Sequence[PairGrade]", grades))
    return _pointwise_columns(cast("Sequence[Grade]", grades))


def _pointwise_columns(grades: Sequence[Grade]) -> dict[str, list[Any]]:
    # A logprob-weighted score is a float: to 4 decimals, as the confidence.
    scores = [rounded(grade.score, 4) if isinstance(grade.score, float) else grade.score for grade in grades]
    return {"score": scores, **_shared_columns(grades)}


def _pairwise_columns(grades: Sequence[PairGrade]) -> dict[str, list[Any]]:
    head: dict[str, list[Any]] = {
        "choice": [grade.choice for grade in grades],
        "flipped": [grade.flipped for grade in grades],
    }
    return {**head, **_shared_columns(grades)}


def _shared_columns(grades: Sequence[Grade | PairGrade]) -> dict[str, list[Any]]:
    """Explanation (a failure's detail instead), confidence to 4 decimals, failure kind, and what the item cost."""
    return {
        "explanation": [grade.explanation if grade.failure_kind is None else grade.detail for grade in grades],
        "confidence": [None if grade.confidence is None else round(grade.confidence, 4) for grade in grades],
        "failure_kind": [grade.failure_kind for grade in grades],
        "calls": [grade.cost.calls for grade in grades],
        "prompt_tokens": [grade.cost.prompt_tokens for grade in grades],
        "completion_tokens": [grade.cost.completion_tokens for grade in grades],
        # The samples a grade rests on (fewer than --samples: a budget cut them), and the replies cut short.
        "samples_used": [grade.samples_used for grade in grades],
        "cut_replies": [grade.cut_replies for grade in grades],
    }


_GRADED_SOCKETS: dict[str, Socket] = {
    "explanations": Socket(list[str | None], "explanation"),
    "confidences": Socket(list[float | None], "confidence"),
    "failure_kinds": Socket(list[str | None], "failure_kind"),
    "failure_counts": Socket(dict[str, int]),
    "samples_used": Socket(list[int | None], "samples_used"),
    "graded": Socket(int, "graded"),
    "graded_share": Socket(float, "graded_share"),
    "usage": Socket(dict[str, int], "usage"),
    "signature": Socket(str, "signature"),
}
"""The sockets every rubric component has, after its grades: the items' columns, then the run's figures."""

POINTWISE_SOCKETS: dict[str, Socket] = {
    "score": Socket(float | None, "mean"),
    "individual_scores": Socket(list[int | float | None], "score"),
    **_GRADED_SOCKETS,
    "judge_scores": Socket(list[list[int | None]], "per_judge"),
    "judge_agreement": Socket(dict[str, Any] | None, "judge_agreement"),
}
"""``RubricEvaluator``'s sockets (``mean``: the mean score, ``None`` below the component's graded share)."""

PAIRWISE_SOCKETS: dict[str, Socket] = {
    "pairwise_choices": Socket(list[str | None], "choice"),
    **_GRADED_SOCKETS,
    "wins": Socket(int, "wins"),
    "losses": Socket(int, "losses"),
    "ties": Socket(int, "ties"),
    "win_rate": Socket(float | None, "win_rate"),
    "p_value": Socket(float | None, "p_value"),
    "position_flips": Socket(int, "position_flips"),
    "flip_rate": Socket(float | None, "flip_rate"),
    "judge_choices": Socket(list[list[str | None]], "per_judge"),
    "judge_agreement": Socket(dict[str, Any] | None, "judge_agreement"),
}
"""``PairwiseRubricEvaluator``'s sockets."""
