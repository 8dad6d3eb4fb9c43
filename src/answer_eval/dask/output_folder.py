"""The output folder of the Dask engine: checked before any work as the local engine checks an output file.

``--output`` of ``--engine dask`` is a folder of ``part-NNNNN.parquet`` shards, each written
atomically by a worker (:func:`answer_eval.dask.io.write_shard`). A run replaces the shards of its
partitions and removes those beyond them (left by an earlier, longer run) and the temporary
shards of workers lost mid-run; :func:`check_output_folder` refuses what the local engine refuses
for an output file (:func:`answer_eval.engine.output_files.check_output_path`: a read-only file, a
folder or special file at a shard's name, an unwritable folder, an input among the shards),
before a cluster starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from answer_eval.engine.output_files import check_output_path
from answer_eval.engine.owned_files import refuse_inputs_among
from answer_eval.errors import InputError

__all__ = ["check_output_folder", "remove_shards_from", "remove_temporary"]

_SHARD = re.compile(r"part-(\d+)\.parquet")
_TEMPORARY = re.compile(r"\.part-\d+\.parquet\..*\.tmp")


def remove_temporary(folder: Path) -> None:
    """Remove the temporary shards left in ``folder`` (by workers lost mid-run)."""
    for stray in folder.iterdir():
        if _TEMPORARY.fullmatch(stray.name):
            stray.unlink(missing_ok=True)


def check_output_folder(output: str | os.PathLike[str], shards: Sequence[str]) -> None:
    """Check (and make) the output folder as the local engine checks an output file, before any work.

    Refused (:class:`InputError`, exit 2 on the command line): a file name (the output is a
    folder), a parent folder that does not exist, a folder the process may not write to, an
    input that is a shard the run replaces or removes (``part-NNNNN.parquet`` and the temporary
    shards of the folder, under any name: compared by device and inode), and an existing
    ``part-NNNNN.parquet`` that is read-only (naming its mode and ``chmod u+w``), a folder or not
    a regular file: the run would replace or remove it (see
    :func:`answer_eval.engine.output_files.check_output_path`). A writable shard replaced keeps its mode.
    """
    folder = Path(output)
    if folder.suffix.lower() in (".jsonl", ".ndjson", ".csv", ".parquet") or (folder.exists() and not folder.is_dir()):
        raise InputError(f"output {folder} must be a folder with --engine dask: one Parquet file per partition")
    parent = folder.parent if str(folder.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output folder {parent} does not exist")
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot make the output folder {folder}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"output folder {folder} is not writable")
    for shard in shards:
        if Path(shard).resolve().parent == folder.resolve() and _SHARD.fullmatch(Path(shard).name):
            raise InputError(f"output folder {folder} holds the input {shard}; write the results to another folder")
    # The files a run replaces or removes, compared with the inputs by device and inode (a link counts).
    written = {
        path: "an output shard" if _SHARD.fullmatch(path.name) else "a temporary shard"
        for path in sorted(folder.iterdir())
        if _SHARD.fullmatch(path.name) or _TEMPORARY.fullmatch(path.name)
    }
    inputs = [Path(shard) for shard in shards]
    refuse_inputs_among(inputs, written)
    for path, role in written.items():
        if role == "an output shard":  # replaced or removed as the local engine replaces its output
            check_output_path(path, inputs)


def remove_shards_from(folder: Path, count: int) -> None:
    """Remove the ``part-NNNNN.parquet`` of ``folder`` numbered ``count`` and above (a longer, earlier run's)."""
    for old in folder.iterdir():
        match = _SHARD.fullmatch(old.name)
        if match and int(match.group(1)) >= count:
            old.unlink(missing_ok=True)
