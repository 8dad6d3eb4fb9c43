# mypy: allow-untyped-calls
"""Scoring on Dask: any evaluator of the package over a Dask DataFrame, with the local run's results.

>>> from answer_eval.dask.engine import connect, read_shards, score_dataframe, score_shards, summarize
>>> from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator
>>> evaluator = AnswerContainsEvaluator()
>>> with connect() as client:  # doctest: +SKIP
...     scored = score_dataframe(read_shards("shards/*.parquet"), evaluator).persist()  # map_partitions
...     print(summarize(scored, evaluator, client=client).to_json()["score"])  # as `answer-eval score`
...     summary = score_shards("shards/*.jsonl", evaluator, output="out/", client=client)  # the CLI's run

How it works. The evaluator (a core evaluator, or a component of this package, whose init
parameters are its evaluator's options) travels to the workers as plain data, its registry name and
options (never a pickled object); each worker process builds it once from the registry (a cache
keyed by the canonical JSON of that data) and calls its ``warm_up`` once, so the judge's MiniLM
model loads once per worker (:mod:`answer_eval.dask.partition`). Each partition's columns go
through the evaluator's column-wise ``score`` (``map_partitions`` with a declared ``meta``); the
output columns are the local command's, with its names and values. The summary is counted per
partition with the evaluator's own summary, sent back as its JSON snapshot and added up on the
client in partition order: counts are integers and sums of floats are exact
(:class:`answer_eval.stats.written_numbers.ExactSum`, which the local commands use too), so score,
interval, failure counts and means are identical to the local run's, not just close.

Errors name the shard, the line (JSONL) or row (Parquet) and the column: a missing column, a
column of a type the evaluator cannot read, a malformed JSONL line, a value the evaluator
refuses. With ``skip_invalid`` the rows (and lines) in error are skipped and counted instead.

The output folder and the shards must be on a file system every worker (and the client) sees.
Needs the ``dask`` extra: ``pip install "answer-eval-haystack[dask]"``. See docs/dask.md.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_eval.dask.io import (
    check_output_folder,
    expand_shards,
    read_shard,
    remove_shards_from,
    remove_temporary,
    shard_columns,
    shard_format,
)
from answer_eval.dask.partition import make_plan, score_partition, summarize_partition, write_partition
from answer_eval.errors import InputError
from answer_eval.evaluators.registry import entry, evaluator_of
from answer_eval.evaluators.summaries import Summary
from answer_eval.inputs.jsonl import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    import dask.dataframe as dd
    from distributed import Client

__all__ = [
    "check_output_folder",
    "connect",
    "make_plan",
    "read_shards",
    "score_dataframe",
    "score_shards",
    "summarize",
    "write_shards",
]


@contextmanager
def _object_columns() -> Iterator[None]:
    # Dask turns object columns into Arrow strings by default: lists and mappings would be lost.
    import dask

    with dask.config.set({"dataframe.convert-string": False}):
        yield


def read_shards(
    patterns: str | Sequence[str],
    *,
    skip_invalid: bool = False,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    evaluator: Any = None,
    columns: dict[str, str] | None = None,
    input_format: str | None = None,
) -> dd.DataFrame:
    """JSONL and Parquet shards as a Dask DataFrame, one partition per shard, columns of Python values.

    ``patterns`` are paths or glob patterns (see :func:`answer_eval.dask.io.expand_shards`); the
    declared columns are the first shard's. Each shard is read as the local engine reads the file
    (see :mod:`answer_eval.dask.io`): give the ``evaluator`` (and the ``columns`` its roles are
    read from, as for :func:`score_dataframe`) so that a Parquet string cell is read as its
    command reads it, text or values (without one, every string column is read as a label is:
    ``TRUE`` is a boolean, ``["a"]`` a list); ``input_format`` (``jsonl`` or ``parquet``) overrides
    the extensions, as ``--input-format`` does.
    """
    import dask.dataframe as dd

    from answer_eval.dask.io import _frame

    found = expand_shards([patterns] if isinstance(patterns, str) else patterns, input_format)
    paths = [os.path.abspath(path) for path in found]
    index = "row" if shard_format(paths[0], input_format) == "parquet" else "line"
    meta = _frame({name: [] for name in shard_columns(paths[0], input_format, max_line_bytes)}, [], index)
    fields = {} if evaluator is None else _cell_fields(evaluator, columns)
    with _object_columns():
        frame: dd.DataFrame = dd.from_map(
            read_shard,
            paths,
            skip_invalid=skip_invalid,
            max_line_bytes=max_line_bytes,
            input_format=input_format,
            **fields,
            meta=meta,
            enforce_metadata=False,
            label="read-shard",
        )
    return frame


def _cell_fields(evaluator: Any, columns: dict[str, str] | None) -> dict[str, frozenset[str]]:
    """The fields the evaluator reads as text and as values, as its local command reads them."""
    from answer_eval.engine.row_transforms import cell_fields, default_fields

    instance = evaluator_of(evaluator)
    return cell_fields(instance, default_fields(instance, columns))


def score_dataframe(
    frame: dd.DataFrame,
    evaluator: Any,
    *,
    columns: dict[str, str] | None = None,
    outputs: dict[str, str] | None = None,
    skip_invalid: bool = False,
    mark: tuple[str, str] | None = None,
    replace_columns: bool = False,
) -> dd.DataFrame:
    """The rows of ``frame`` with the evaluator's verdict columns added, lazily (``map_partitions``).

    A partition whose rows already hold a column the evaluator writes (under its name in
    ``outputs``) is refused, naming the shard and the first such row, unless ``replace_columns``;
    ``mark`` is a ``(column, value)`` written on every row, as the command line marks its rows
    (see :mod:`answer_eval.engine.row_transforms`).

    :param frame: Any Dask DataFrame with the evaluator's input columns (:func:`read_shards` keeps
        values as the local commands read them; with ``dd.read_parquet``, lists arrive as arrays
        and are read as lists).
    :param evaluator: One of the package's evaluator components (or its ``to_dict()``).
    :param columns: Input role to column name (the evaluator's roles, e.g. ``prediction``,
        ``answers``, ``question``); the local command's field names by default.
    :param outputs: Verdict column to another name (e.g. ``{"reward": "score"}``).
    :param skip_invalid: Drop rows in error and count them (``attrs`` of each partition) instead of stopping.
    """
    import pandas as pd  # type: ignore[import-untyped]

    plan = make_plan(evaluator, columns, outputs, skip_invalid, mark=mark, replace=replace_columns)
    meta = frame._meta.copy()
    for name, dtype in evaluator_of(evaluator).outputs().items():
        meta[plan.outputs.get(name, name)] = pd.Series([], dtype=dtype)
    if mark is not None:
        meta[mark[0]] = pd.Series([], dtype=object)
    with _object_columns():
        scored: dd.DataFrame = frame.map_partitions(score_partition, plan.to_json(), meta=meta, enforce_metadata=False)
    return scored


def _compute(tasks: list[Any], client: Client | None, progress: bool) -> list[Any]:
    from dask.base import compute

    if client is None:
        return list(compute(*tasks))
    futures = client.compute(tasks)
    try:
        if progress:
            from distributed import as_completed
            from tqdm import tqdm

            with tqdm(total=len(futures), unit=" partitions", leave=False) as bar:
                for _ in as_completed(futures):
                    bar.update()
        results: list[Any] = client.gather(futures)
    except BaseException as error:
        client.cancel(futures)  # the partitions not started yet are not scored
        if isinstance(error, Exception):
            # Cancelling cannot stop a partition a worker is running: wait for those, so that no
            # shard of this run is written (renamed into place) after the error is raised.
            _wait_until_not_running(client, [future.key for future in futures])
        raise
    return results


_RUNNING_WAIT_SECONDS = 600.0


def _wait_until_not_running(client: Client, keys: list[Any]) -> None:
    """Wait until no worker runs a task of ``keys`` (cancelled tasks finish their call), best effort."""
    wanted = set(keys)

    def running(dask_worker: Any) -> int:  # runs in the worker's event loop: a quick read
        return sum(1 for task in dask_worker.state.all_running_tasks if task.key in wanted)

    deadline = time.monotonic() + _RUNNING_WAIT_SECONDS
    with suppress(Exception):  # a worker gone or an older distributed: the error itself matters more
        while any(client.run(running).values()) and time.monotonic() < deadline:
            time.sleep(0.05)


def _finish(parts: list[dict[str, Any]], evaluator: Any, path: str, output: str | None) -> Summary:
    """The run's summary: the partitions' snapshots added up in partition order (exactly)."""
    instance = evaluator_of(evaluator)
    summary = instance.new_summary()
    for snapshot in parts:
        part = instance.new_summary()
        part.restore(snapshot)
        summary.merge(part)
    summary.path, summary.output, summary.signature = path, output, instance.signature
    if summary.items == 0:
        from answer_eval.engine.runner import no_rows_message

        raise InputError(no_rows_message(summary.invalid_lines), path or None)
    summary.finish()
    return summary


def summarize(
    scored: dd.DataFrame,
    evaluator: Any,
    *,
    columns: dict[str, str] | None = None,
    outputs: dict[str, str] | None = None,
    path: str = "",
    client: Client | None = None,
) -> Summary:
    """The summary of a frame from :func:`score_dataframe` (same ``columns`` and ``outputs``), as the local run's.

    Computes the frame (``persist()`` it first to score it only once when it is used again).
    """
    from dask.delayed import delayed

    plan = make_plan(evaluator, columns, outputs)
    with _object_columns():
        tasks = [delayed(summarize_partition)(part, plan.to_json()) for part in scored.to_delayed()]
        return _finish(_compute(tasks, client, False), evaluator, path, None)


def write_shards(
    scored: dd.DataFrame,
    evaluator: Any,
    output: str | os.PathLike[str],
    *,
    columns: dict[str, str] | None = None,
    outputs: dict[str, str] | None = None,
    path: str = "",
    client: Client | None = None,
    progress: bool = False,
) -> Summary:
    """Write each partition of a scored frame as ``output/part-NNNNN.parquet`` and return the summary.

    Every shard is written to a temporary file in ``output`` and renamed into place when whole,
    so no partial shard ever has a final name; a worker lost mid-run has its partitions computed
    again (the same bytes). Once all are written, temporary files left by lost workers and
    ``part-*.parquet`` files of an earlier, longer run are removed (a failed run stops the
    partitions not started yet and raises once those running have ended; the shards already
    written stay, whole, until the next run replaces them). One pass: each partition is scored
    once for its shard and its summary.
    """
    from dask.delayed import delayed

    folder = Path(output)
    plan = make_plan(evaluator, columns, outputs)
    parts = scored.to_delayed()
    remove_temporary(folder)  # left by a worker lost in an earlier run
    with _object_columns():
        tasks = [
            delayed(write_partition)(part, plan.to_json(), str(folder.resolve()), index)
            for index, part in enumerate(parts)
        ]
        results = _compute(tasks, client, progress)
    remove_temporary(folder)  # every task has ended: these are from workers lost in this run
    remove_shards_from(folder, len(parts))
    return _finish(results, evaluator, path, str(output))


def score_shards(
    patterns: str | Sequence[str],
    evaluator: Any,
    *,
    output: str | os.PathLike[str] | None = None,
    client: Client | None = None,
    columns: dict[str, str] | None = None,
    outputs: dict[str, str] | None = None,
    skip_invalid: bool = False,
    progress: bool = False,
    path: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    mark: tuple[str, str] | str | None = "command",
    replace_columns: bool = False,
    input_format: str | None = None,
) -> Summary:
    """Score JSONL or Parquet shards: write ``output/part-*.parquet`` when asked, return the summary.

    What ``answer-eval <command> --engine dask`` runs; ``path`` is the input as named in the
    summary (default: the patterns joined with spaces); every shard is read as the local command
    reads the file (:func:`read_shards` with the evaluator: ``max_line_bytes``, ``input_format``);
    ``mark`` and ``replace_columns``: see :func:`score_dataframe` (by default, the
    mark the local command writes: ``scored_by`` = ``"answer-eval score <version>"`` for
    AnswerContainsEvaluator, and so on). An output column that is also a column the evaluator
    reads is refused (``ValueError``), as locally.
    """
    if mark == "command":
        from answer_eval.engine.row_transforms import MARKER, marker_value

        mark = (MARKER, marker_value(entry(evaluator_of(evaluator).name).command))
    if isinstance(mark, str):
        raise ValueError(f"mark must be a (column, value) pair, None or 'command', got {mark!r}")
    named = path if path is not None else (patterns if isinstance(patterns, str) else " ".join(patterns))
    # Bad options fail before any file is touched.
    make_plan(evaluator, columns, outputs, skip_invalid, mark=mark, replace=replace_columns)
    if output is not None:
        shards = expand_shards([patterns] if isinstance(patterns, str) else patterns, input_format)
        check_output_folder(output, shards)
    frame = read_shards(
        patterns,
        skip_invalid=skip_invalid,
        max_line_bytes=max_line_bytes,
        evaluator=evaluator,
        columns=columns,
        input_format=input_format,
    )
    scored = score_dataframe(
        frame,
        evaluator,
        columns=columns,
        outputs=outputs,
        skip_invalid=skip_invalid,
        mark=mark,
        replace_columns=replace_columns,
    )
    if output is None:
        return summarize(scored, evaluator, columns=columns, outputs=outputs, path=named, client=client)
    return write_shards(
        scored, evaluator, output, columns=columns, outputs=outputs, path=named, client=client, progress=progress
    )


@contextmanager
def connect(scheduler: str | None = None, workers: int | None = None) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler``, or of a new local cluster closed on exit.

    The local cluster has ``workers`` worker processes (default: one per core) of one thread each.

    :raises InputError: When the scheduler cannot be reached.
    """
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
        with client:
            yield client
        return
    count = workers or os.cpu_count() or 1
    with (
        LocalCluster(
            n_workers=count,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # The scheduler serves HTTP (health, metrics) even without a dashboard, on port 8787
            # unless told otherwise: a free port, so two runs at once do not collide (and warn).
            scheduler_kwargs={"dashboard_address": ":0"},
            silence_logs=logging.CRITICAL,  # a task's InputError is reported once, by the command
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client
