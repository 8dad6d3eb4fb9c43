# mypy: allow-untyped-calls
"""One partition of the Dask engine: the plan every task carries, and the functions the workers run.

A :class:`Plan` is plain JSON data: the evaluator's registry name and options, the column
mapping, the renamed output columns and ``skip_invalid``. Each worker process builds the
evaluator from it once (a cache keyed by the plan's canonical evaluator JSON) and calls its
``warm_up`` once, so a model loads once per worker, whatever the number of partitions.
:func:`score_partition` adds the output columns to a partition (what ``map_partitions`` runs) with
the evaluator's column-wise ``score``, :func:`summarize_partition` counts a scored partition into
the evaluator's summary and returns its JSON snapshot (never a pickle), :func:`write_partition`
writes it as one Parquet shard, atomically. Errors name the shard, the line or row and the column.
Imported only by :mod:`answer_eval.dask.engine`.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_eval.dask.io import ARROW_TYPES, COLUMN_KINDS, INVALID_LINES, SOURCE, shard_name, write_shard
from answer_eval.engine.row_transforms import ColumnClash, clash_message
from answer_eval.errors import InputError, ItemError
from answer_eval.evaluators.base import Evaluator, Role
from answer_eval.evaluators.registry import build, evaluator_of

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]

__all__ = ["Plan", "make_plan", "score_partition", "summarize_partition", "write_partition"]


@dataclass(frozen=True)
class Plan:
    """What every partition task needs, as plain JSON-able data.

    :param evaluator: ``{"name": registry name, "options": the options' to_dict()}``.
    :param columns: Input role to column name, where not the local command's default.
    :param outputs: Output column to the name it is written under, where renamed.
    :param skip_invalid: Skip (and count) rows in error instead of stopping.
    :param mark: ``(column, value)`` of the provenance mark added to every row (see
        :mod:`answer_eval.engine.row_transforms`), or ``None``.
    :param replace: Overwrite columns the rows already have under the names written, instead of refusing.
    """

    evaluator: dict[str, Any]
    columns: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    skip_invalid: bool = False
    mark: tuple[str, str] | None = None
    replace: bool = False

    def to_json(self) -> str:
        """The plan as canonical JSON text."""
        data = {"evaluator": self.evaluator, "columns": self.columns, "outputs": self.outputs, "replace": self.replace}
        return json.dumps({**data, "skip_invalid": self.skip_invalid, "mark": self.mark}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        """The plan written by :meth:`to_json`."""
        data = json.loads(text)
        mark = None if data["mark"] is None else (str(data["mark"][0]), str(data["mark"][1]))
        return cls(data["evaluator"], data["columns"], data["outputs"], data["skip_invalid"], mark, data["replace"])

    def written(self, evaluator: Evaluator) -> list[str]:
        """Every column a partition gains, under the names written (the mark last)."""
        names = [self.outputs.get(name, name) for name in evaluator.outputs()]
        return names if self.mark is None else [*names, self.mark[0]]


def make_plan(
    evaluator: Any,
    columns: dict[str, str] | None = None,
    outputs: dict[str, str] | None = None,
    skip_invalid: bool = False,
    *,
    mark: tuple[str, str] | None = None,
    replace: bool = False,
) -> Plan:
    """Check the evaluator, the column mapping and the renamed outputs, and make the plan.

    ``evaluator``: a core evaluator, a component of this package or its ``to_dict()``.
    ``mark`` and ``replace``: see :class:`Plan`.

    :raises TypeError: For an evaluator that is not one of this package's.
    :raises ValueError: For an unknown input role or output column, and for a column written that is
        also a column an input is read from (it would overwrite what is graded; refused as locally,
        :meth:`answer_eval.engine.row_transforms.AddedColumns.refuse_reads`).
    """
    from answer_eval.engine.row_transforms import AddedColumns, default_fields

    instance = evaluator_of(evaluator)
    refused = instance.dask_refusal()
    if refused is not None:
        raise TypeError(f"{instance.component} with these options does not run on Dask: {refused}")
    for role in columns or {}:
        instance.role(role)
    known = instance.outputs()
    for name in outputs or {}:
        if name not in known:
            raise ValueError(f"{instance.component} writes no column {name!r}; it writes: {', '.join(known)}")
    data = {"name": instance.name, "options": instance.plan_options()}
    plan = Plan(data, dict(columns or {}), dict(outputs or {}), skip_invalid, mark, replace)
    reads = {role.role: role.fields for role in default_fields(instance, columns)}
    AddedColumns(tuple(plan.written(instance))).refuse_reads(reads)
    return plan


_BUILT: dict[str, Evaluator] = {}
_BUILDING = threading.Lock()


def _built(data: dict[str, Any]) -> Evaluator:
    """The evaluator of ``data``, built once per process and warmed up (worker-global cache)."""
    key = json.dumps(data, sort_keys=True)
    found = _BUILT.get(key)
    if found is not None:
        return found
    with _BUILDING:
        found = _BUILT.get(key)
        if found is None:
            found = build(data["name"], data["options"])
            found.warm_up()
            _BUILT[key] = found
    return found


_KINDS = {"string": "a string", "int": "an integer", "float": "a number", "list": "a list of them", "null": "null"}


def _check_type(part: pd.DataFrame, name: str, allowed: frozenset[str], owner: str, source: str | None) -> None:
    """Refuse a column whose type gives only values the evaluator refuses, naming the type (one message, not one a row).

    For a Parquet shard the kinds are those the local reader makes of the Arrow type
    (:data:`~answer_eval.dask.io.COLUMN_KINDS`): a string column passes, whatever its cells hold
    once read (a JSON list, a mapping), and each value is checked by the evaluator, as locally; a
    column of booleans, of mappings or of lists of booleans holds nothing the evaluator reads
    (``role.kinds``), and so would fail on its first row. A pandas frame given to
    :func:`~answer_eval.dask.engine.score_dataframe` is checked by its dtypes (object columns value by value).
    """
    kinds = part.attrs.get(COLUMN_KINDS, {}).get(name)
    if kinds is not None:
        found = part.attrs.get(ARROW_TYPES, {}).get(name, "?")
    else:
        dtype = part[name].dtype
        kind = {"b": "bool", "i": "int", "u": "int", "f": "float", "M": "datetime", "m": "timedelta"}.get(dtype.kind)
        if kind is None:  # object or string columns: each value is checked by the evaluator
            return
        found, kinds = str(dtype), [kind]
    if any(kind not in allowed | {"null"} for kind in kinds) or (kinds == ["null"] and "null" not in allowed):
        kinds = [_KINDS[kind] for kind in _KINDS if kind in allowed and kind != "null"]
        wanted = ", ".join(kinds[:-1]) + f" or {kinds[-1]}" if len(kinds) > 1 else kinds[0]
        raise InputError(f"column {name!r} has type {found}; {owner} reads {wanted} there", source)


def _values(column: pd.Series) -> list[Any]:
    """A column's values as the evaluators read them: Python values, lists for arrays.

    ``float32`` and ``float16`` values (a frame from ``dd.read_parquet``) stay numpy scalars, which
    the evaluators read at their own precision (``tolist`` would widen ``3.14`` to
    ``3.140000104904175``, and "pi is 3.14" would be wrong), in a column or in an array.
    """
    import numpy as np

    if _narrow_float(column.dtype):
        return list(column.to_numpy())
    values: list[Any] = column.tolist()
    if column.dtype == object and any(isinstance(value, np.ndarray) for value in values):
        values = [_array_values(value) if isinstance(value, np.ndarray) else value for value in values]
    return values


def _narrow_float(dtype: Any) -> bool:
    return getattr(dtype, "kind", None) == "f" and getattr(dtype, "itemsize", 8) < 8


def _array_values(array: Any) -> list[Any]:
    values: list[Any] = list(array) if _narrow_float(array.dtype) and array.ndim == 1 else array.tolist()
    return values


def _column(role: Role, columns: dict[str, str], available: list[str]) -> str:
    """The column of ``role``: the one given, else its field, else the first fallback present (as locally)."""
    if role.name in columns:
        return columns[role.name]
    if role.field not in available:
        return next((name for name in role.fallbacks if name in available), role.field)
    return role.field


def _inputs(
    part: pd.DataFrame, plan: Plan, evaluator: Evaluator, *, check: bool = True
) -> tuple[dict[str, list[Any]], dict[str, str], dict[int, str]]:
    """The input columns by role, the column of each role, and rows lacking a required value.

    ``check``: refuse a column of a type the evaluator cannot read (:func:`_check_type`), unless
    the plan skips invalid rows (each is then refused, and counted, by the evaluator, as locally).
    """
    import pandas as pd

    source = part.attrs.get(SOURCE)
    available = [str(name) for name in part.columns]
    required = set(evaluator.required())
    inputs: dict[str, list[Any]] = {}
    names: dict[str, str] = {}
    lacking: dict[int, str] = {}
    for role in evaluator.roles:
        name = _column(role, plan.columns, available)
        names[role.name] = name
        if name not in part.columns:
            if role.name in required:
                raise InputError(
                    f"missing column {name!r} ({role.name}); columns: {', '.join(available) or 'none'}", source
                )
            continue
        if check and role.kinds and not plan.skip_invalid:
            _check_type(part, name, role.kinds, evaluator.component, source)
        inputs[role.name] = _values(part[name])
        if role.name in required:
            for position, value in enumerate(inputs[role.name]):
                if value is pd.NA:
                    lacking.setdefault(position, name)
    return inputs, names, lacking


def _located(part: pd.DataFrame, position: int, message: str) -> InputError:
    source = part.attrs.get(SOURCE)
    where = int(part.index[position]) if part.index.name in ("line", "row") else position + 1
    if part.index.name == "line":
        return InputError(message, source, where)
    return InputError(f"row {where}{'' if source else ' of the partition'}: {message}", source)


def _row_by_row(
    part: pd.DataFrame,
    plan: Plan,
    evaluator: Evaluator,
    inputs: dict[str, list[Any]],
    names: dict[str, str],
    lacking: dict[int, str],
) -> tuple[dict[str, list[Any]], list[int]]:
    """Score one row at a time, to name the rows in error (and skip them with ``skip_invalid``)."""
    outputs: dict[str, list[Any]] = {name: [] for name in evaluator.outputs()}
    kept = []
    for position in range(len(part)):
        try:
            if position in lacking:
                raise ItemError(f"missing field {lacking[position]!r}")
            row = evaluator.score({role: [values[position]] for role, values in inputs.items()})
        except ItemError as exc:
            if plan.skip_invalid:
                continue
            message = exc.message if exc.role is None else f"column {names[exc.role]!r}: {exc.message}"
            raise _located(part, position, message) from None
        kept.append(position)
        for name, values in row.items():
            outputs[name].extend(values)
    return outputs, kept


def score_partition(part: pd.DataFrame, plan_text: str) -> pd.DataFrame:
    """Score one partition: its rows with the output columns added (the function ``map_partitions`` runs)."""
    import pandas as pd

    plan = Plan.from_json(plan_text)
    evaluator = _built(plan.evaluator)
    if not plan.replace:
        refuse_clash(part, plan.written(evaluator))
    inputs, names, lacking = _inputs(part, plan, evaluator)
    dtypes = evaluator.outputs()
    kept = None
    if len(part) == 0:
        outputs: dict[str, list[Any]] = {name: [] for name in dtypes}
    elif lacking:
        outputs, kept = _row_by_row(part, plan, evaluator, inputs, names, lacking)
    else:
        try:
            outputs = evaluator.score(inputs)
        except ItemError:
            outputs, kept = _row_by_row(part, plan, evaluator, inputs, names, lacking)
    attrs = dict(part.attrs)
    if kept is not None and len(kept) < len(part):
        attrs[INVALID_LINES] = attrs.get(INVALID_LINES, 0) + len(part) - len(kept)
        part = part.iloc[kept]
    scored = part.copy()
    for name, values in outputs.items():
        scored[plan.outputs.get(name, name)] = pd.Series(values, index=part.index, dtype=dtypes[name])
    if plan.mark is not None:
        scored[plan.mark[0]] = pd.Series([plan.mark[1]] * len(part), index=part.index, dtype=object)
    scored.attrs = attrs
    return scored


def refuse_clash(part: pd.DataFrame, written: list[str]) -> None:
    """Refuse a partition whose rows already hold a column the evaluator would write (named with its row)."""
    import pandas as pd

    for name in written:
        if name in part.columns:
            present = [position for position, value in enumerate(part[name].tolist()) if value is not pd.NA]
            if not present:  # a column every row lacks: a JSONL key of another shard
                continue
            error = _located(part, present[0], clash_message(name, written))
            raise ColumnClash(error.message, error.path, error.line)


def summarize_partition(scored: pd.DataFrame, plan_text: str) -> dict[str, Any]:
    """Count one scored partition into the evaluator's summary; its JSON snapshot."""
    plan = Plan.from_json(plan_text)
    evaluator = _built(plan.evaluator)
    inputs, _, _ = _inputs(scored, plan, evaluator, check=False)  # checked when it was scored
    outputs = {name: _values(scored[plan.outputs.get(name, name)]) for name in evaluator.outputs()}
    summary = evaluator.new_summary()
    summary.add_rows(inputs, outputs)
    summary.invalid_lines += scored.attrs.get(INVALID_LINES, 0)
    return summary.snapshot()


def write_partition(scored: pd.DataFrame, plan_text: str, folder: str, index: int) -> dict[str, Any]:
    """Write one scored partition as ``part-<index>.parquet`` (atomically) and return its summary's snapshot."""
    summary = summarize_partition(scored, plan_text)
    write_shard(scored, Path(folder) / shard_name(index))
    return summary
