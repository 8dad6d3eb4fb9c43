"""What the HTML report shows, computed from the systems' items and evaluator runs (no rendering here).

Each system is one file: predictions scored now, or a results file of ``answer-eval score
--output`` (its ``correct``/``failure_kind`` columns reused as the ``contains`` run) or of
``answer-eval judge --output`` (its ``correct``/``failure_kind``/``evidence`` reused as the
``judge`` run), recognised by the mark those commands write on every row, never by column names
alone. :func:`build_report` adds the intervals, verdicts, agreement matrices, failure
counts, each system's agreement-coverage curve (:mod:`answer_eval.reports.agreement_coverage`: the judge's
confidence against the human labels) and, when the files hold the same questions, each system's
paired comparison with the first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from answer_eval.engine.row_transforms import find_marked
from answer_eval.errors import InputError, count_failures
from answer_eval.evaluators.registry import presets
from answer_eval.inputs.item_files import Items
from answer_eval.reports.agreement_coverage import SystemCoverage, system_coverage
from answer_eval.reports.scorers import EvaluatorRun, EvaluatorSpec, Verdicts, get_spec, verdicts
from answer_eval.stats.compare import EvaluatorComparison, ScoreEstimate, align, compare_scores, estimate
from answer_eval.stats.rater_agreement import HUMAN, AgreementMatrix, agreement_matrix, disagreements

__all__ = ["Report", "SystemReport", "build_report", "results_run", "system_names"]

# The command whose output holds each evaluator's run, and the columns read from it (the registry's
# presets say which).
_REUSABLE = {name: (entry.command, preset.reused) for name, (entry, preset) in presets().items() if preset.reused}


def results_run(name: str, items: Items) -> EvaluatorRun | None:
    """The run a results file already holds for evaluator ``name``, or ``None`` to score it now.

    Only rows that ``answer-eval judge --output`` (for ``judge``) or ``answer-eval score --output``
    (for ``contains``) wrote are reused: every row must carry that command's mark (the
    :data:`answer_eval.engine.row_transforms.MARKER` column, under any ``--column-prefix``) and its verdict
    columns. A file whose ``correct`` column a person wrote has no mark and is scored afresh.
    """
    if name not in _REUSABLE:
        return None
    command, needed = _REUSABLE[name]
    prefix = find_marked(items.rows, command)
    if prefix is None:
        return None
    correct, kind, *rest = (prefix + column for column in needed)
    for row in items.rows:
        if not isinstance(row.get(correct), bool) or any(column not in row for column in (kind, *rest)):
            return None
    return EvaluatorRun(
        name,
        tuple(1.0 if row[correct] else 0.0 for row in items.rows),
        0.0,
        tuple(row[kind] for row in items.rows),
        tuple(str(row[rest[0]]) for row in items.rows) if rest else None,
    )


@dataclass(frozen=True)
class SystemReport:
    """One system (one file) in the report.

    :param name: A short name (the file name without its suffix, made unique).
    :param items: Its items.
    :param runs: Evaluator name to its run on these items.
    :param estimates: Evaluator name to the mean score with its 95% interval.
    :param verdicts: Evaluator name to right/wrong verdicts.
    :param failure_kinds: Per item, the answer-contains failure kind (``None`` when right).
    :param failure_counts: Answer-contains failure kind to count, ``correct`` first.
    :param matrix: Agreement between the evaluators' verdicts (and the human label), if more than one.
    :param disagreeing: Positions of the items on which those verdicts do not all agree.
    :param reused: Evaluator names whose verdicts came from the results file.
    :param coverage: The judge's agreement-coverage curve on this system, or why it is not drawn.
    """

    name: str
    items: Items
    runs: dict[str, EvaluatorRun]
    estimates: dict[str, ScoreEstimate]
    verdicts: dict[str, Verdicts]
    failure_kinds: tuple[str | None, ...]
    failure_counts: dict[str, int]
    matrix: AgreementMatrix | None
    disagreeing: frozenset[int]
    reused: tuple[str, ...]
    coverage: SystemCoverage

    @property
    def evidence(self) -> tuple[str, ...] | None:
        """The judge's evidence per item, when the judge ran."""
        run = self.runs.get("judge")
        return None if run is None else run.evidence


@dataclass(frozen=True)
class Report:
    """Everything the HTML report shows.

    :param evaluators: The evaluators, in column order.
    :param systems: The systems, in the order given.
    :param comparisons: ``(system name, comparison with the first system)`` per later system and
        evaluator, when every file holds the first file's questions.
    :param comparison_note: Why there are no comparisons, when there are none with several systems.
    :param seed: Seed of the bootstrap.
    :param resamples: Bootstrap resamples.
    """

    evaluators: tuple[EvaluatorSpec, ...]
    systems: tuple[SystemReport, ...]
    comparisons: tuple[tuple[str, EvaluatorComparison], ...]
    comparison_note: str | None
    seed: int | None
    resamples: int

    @property
    def coverage_shown(self) -> bool:
        """Whether the page has an agreement-coverage section: some system has a human label or judge confidences."""
        return any(system.coverage.applies for system in self.systems)


def system_names(paths: Sequence[str]) -> list[str]:
    """Short unique names for the systems: file names without suffix, numbered when they repeat."""
    stems = [Path(path).stem or path for path in paths]
    names: list[str] = []
    for position, stem in enumerate(stems):
        name = stem if stems.count(stem) == 1 else f"{stem} ({position + 1})"
        names.append(name)
    return names


def _system(
    name: str,
    items: Items,
    runs: dict[str, EvaluatorRun],
    specs: Sequence[EvaluatorSpec],
    failure_kinds: Sequence[str | None],
    reused: Sequence[str],
    seed: int | None,
    resamples: int,
    coverage: SystemCoverage,
) -> SystemReport:
    found = {spec.name: verdicts(spec, runs[spec.name].scores, items.labels) for spec in specs}
    columns: dict[str, Sequence[bool]] = {key: value.values for key, value in found.items()}
    if items.labels is not None:
        columns[HUMAN] = items.labels
    counts = {"correct": sum(1 for kind in failure_kinds if kind is None)}
    counts.update((kind, count) for kind, count in count_failures(failure_kinds).items() if count)
    return SystemReport(
        name=name,
        items=items,
        runs=runs,
        estimates={
            spec.name: estimate(runs[spec.name].scores, spec.graded, seed=seed, n_resamples=resamples) for spec in specs
        },
        verdicts=found,
        failure_kinds=tuple(failure_kinds),
        failure_counts=counts,
        matrix=agreement_matrix(columns) if len(columns) > 1 else None,
        disagreeing=frozenset(disagreements(columns)) if len(columns) > 1 else frozenset(),
        reused=tuple(reused),
        coverage=coverage,
    )


def build_report(
    systems: Sequence[Items],
    runs: Mapping[str, Sequence[EvaluatorRun]],
    evaluators: Sequence[str],
    failure_runs: Sequence[EvaluatorRun],
    *,
    reused: Sequence[Sequence[str]] = (),
    seed: int | None = 0,
    resamples: int = 10_000,
    target_agreement: float | None = None,
    delta: float = 0.1,
) -> Report:
    """Compute the report from each system's items and its evaluator runs.

    :param systems: The systems' items, in order.
    :param runs: Evaluator name to one run per system.
    :param evaluators: The evaluator names, in column order.
    :param failure_runs: Per system, the ``contains`` run whose failure kinds the report charts.
    :param reused: Per system, the evaluators read from its results file.
    :param target_agreement: Mark on each agreement-coverage curve the threshold chosen on that
        file's labels for this agreement (in-sample;
        see :func:`answer_eval.reports.agreement_coverage.system_coverage`).
    :param delta: The level of the curve's lower bound and of that choice.
    :raises InputError: When a judged file holds a value the agreement-coverage curve cannot read.
    """
    if not systems:
        raise ValueError("no systems to report on")
    specs = tuple(get_spec(name) for name in evaluators)
    names = system_names([items.path for items in systems])
    built = tuple(
        _system(
            names[position],
            items,
            {spec.name: runs[spec.name][position] for spec in specs},
            specs,
            failure_runs[position].failure_kinds or (),
            reused[position] if position < len(reused) else (),
            seed,
            resamples,
            system_coverage(
                items,
                runs["judge"][position] if "judge" in runs else None,
                target_agreement=target_agreement,
                delta=delta,
            ),
        )
        for position, items in enumerate(systems)
    )
    comparisons, note = _comparisons(built, specs, seed, resamples)
    return Report(specs, built, tuple(comparisons), note, seed, resamples)


def _comparisons(
    built: Sequence[SystemReport], specs: Sequence[EvaluatorSpec], seed: int | None, resamples: int
) -> tuple[list[tuple[str, EvaluatorComparison]], str | None]:
    """Each later system against the first, per evaluator; or none, and why, when the files differ."""
    if len(built) < 2:
        return [], None
    try:
        for system in built[1:]:
            align(built[0].items, system.items)
    except InputError as exc:
        return [], f"no paired comparison: the files do not hold the same questions ({exc})"
    base = built[0]
    return [
        (
            system.name,
            compare_scores(
                spec,
                base.items,
                system.items,
                base.runs[spec.name].scores,
                system.runs[spec.name].scores,
                seed=seed,
                n_resamples=resamples,
            ),
        )
        for system in built[1:]
        for spec in specs
    ], None
