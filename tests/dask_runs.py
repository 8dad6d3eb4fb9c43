"""What the Dask tests share: the output shards read as written, and one command through both engines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from answer_eval.cli.main import main
from answer_eval.dask.io import JSON_COLUMNS_KEY


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def read_written(shard: Path) -> list[dict[str, Any]]:
    """The rows of one output shard as written: Parquet's values, the columns named as JSON text decoded."""
    table = pq.read_table(shard)
    encoded = set(json.loads((table.schema.metadata or {}).get(JSON_COLUMNS_KEY, b"[]")))
    return [
        {key: json.loads(value) if key in encoded and value is not None else value for key, value in row.items()}
        for row in table.to_pylist()
    ]


def read_output(folder: Path) -> list[dict[str, Any]]:
    """Every row of an output folder's shards, in partition order."""
    return [row for shard in sorted(folder.glob("part-*.parquet")) for row in read_written(shard)]


def without(summary: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A summary without ``keys``."""
    return {key: value for key, value in summary.items() if key not in keys}


def _same_rows(written: list[dict[str, Any]], local: list[dict[str, Any]]) -> bool:
    # A Parquet shard has every column on every row: null where a JSON row lacked the key.
    return len(written) == len(local) and all(
        {key: value for key, value in shard_row.items() if key in row} == row
        and all(shard_row[key] is None for key in set(shard_row) - set(row))
        for shard_row, row in zip(written, local, strict=True)
    )


def run_both(capsys: Any, address: str, folder: Path, *args: Any) -> dict[str, Any]:
    """``answer-eval ARGS --format json --output ...`` run locally and with ``--engine dask`` on ``address``.

    Both run in this process (``main``). Returns, per engine (``"local"``, ``"dask"``), the exit
    code, the JSON summary without its ``path`` and ``output`` (or the error line; the local run's
    note on the rows it kept for ``--resume`` is not compared),
    and the rows written (``None`` after a failure), with ``"same"``: whether the two agree in
    all three (rows compared as :func:`_same_rows` does).
    """
    results: dict[str, Any] = {}
    for engine in ("local", "dask"):
        output = folder / ("local-out.jsonl" if engine == "local" else "dask-out")
        if output.is_dir():
            shutil.rmtree(output)
        output.unlink(missing_ok=True)
        extra = ["--engine", "dask", "--scheduler", address] if engine == "dask" else []
        capsys.readouterr()
        code = main([*map(str, args), "--format", "json", "--no-progress", "--output", str(output), *extra])
        captured = capsys.readouterr()
        if code == 0:
            summary: Any = without(json.loads(captured.out), "path", "output")
            rows = read_jsonl(output) if engine == "local" else read_output(output)
        else:
            errors = [line for line in captured.err.splitlines() if line.startswith("answer-eval: error: ")]
            summary, rows = errors[-1] if errors else captured.err, None
        results[engine] = {"code": code, "summary": summary, "rows": rows}
    local, dask = results["local"], results["dask"]
    same_rows = dask["rows"] == local["rows"] or (
        dask["rows"] is not None and local["rows"] is not None and _same_rows(dask["rows"], local["rows"])
    )
    results["same"] = local["code"] == dask["code"] and local["summary"] == dask["summary"] and same_rows
    return results
