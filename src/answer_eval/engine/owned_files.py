"""The files a run owns (its partial output, checkpoint record and temporary files): made new, never followed.

A file command writes, truncates, renames and removes files beside ``--output`` that the user never
named (``.NAME.partial``, ``.NAME.partial.json`` and its ``.tmp``). A symbolic link planted at one
of those names, a hard link to another file, or the input itself under such a name would turn
those writes into writes to a file outside ``--output``. So every file the package creates is made
with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (or ``mkstemp`` in the output folder, then renamed); an
existing one is used only when it is a regular file with a single link, checked on the open
descriptor; a file is removed only when the name still holds the file the run made; and the
inputs are compared with every file the run may write, by device and inode. The files an
evaluator writes besides the output (a reply cache) are kept apart from the inputs and the run's
own files the same way (:func:`refuse_side_files`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from answer_eval.engine.output_files import stdin_id
from answer_eval.errors import InputError

__all__ = [
    "FileId",
    "file_id",
    "open_owned",
    "refuse_foreign",
    "refuse_inputs_among",
    "refuse_side_files",
    "remove_if_ours",
]

FileId = tuple[int, int]
"""A file's identity: ``(st_dev, st_ino)``."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # never wait on a FIFO planted at a work file's name


def file_id(status: os.stat_result) -> FileId:
    """The identity of the file ``status`` describes."""
    return status.st_dev, status.st_ino


def _refusal(path: Path, role: str, status: os.stat_result) -> InputError | None:
    if stat.S_ISLNK(status.st_mode):
        why = "is a symbolic link"
    elif not stat.S_ISREG(status.st_mode):
        why = "is not a regular file"
    elif status.st_nlink != 1:
        why = f"has {status.st_nlink} hard links (another name shares its contents)"
    else:
        return None
    return InputError(
        f"{path} ({role}) {why}; a run writes and removes that file, so it never follows or shares one: "
        "remove it, or write the results to another --output"
    )


def refuse_foreign(path: Path, role: str) -> os.stat_result | None:
    """Check a work file's name: ``None`` when nothing is there, else its status (a regular file, one link).

    :raises InputError: When the name holds a symbolic link, anything but a regular file, or a
        file with more than one hard link (exit 2 on the command line); nothing is followed.
    """
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    refusal = _refusal(path, role, status)
    if refusal is not None:
        raise refusal
    return status


def open_owned(path: Path, role: str, flags: int, *, create: bool = True) -> int:
    """Open a work file without following a link: an existing regular file with one link, or (``create``) a new one.

    ``flags`` are the access flags (``os.O_RDWR | os.O_APPEND``, ``os.O_WRONLY``...), never
    ``O_TRUNC``: a file is truncated only after the check, on the descriptor. A new file
    is made with ``O_CREAT | O_EXCL`` (mode 0o666 less the umask, as ``open`` makes files); an
    existing one is checked on the open descriptor, so a file swapped in after the check is seen.

    :raises InputError: For a name that holds a link or a special file (see :func:`refuse_foreign`).
    :raises FileNotFoundError: When the file does not exist and ``create`` is false.
    """
    if flags & os.O_TRUNC:
        raise ValueError("open_owned never truncates on open: truncate the checked descriptor")
    base = flags | _NOFOLLOW | _CLOEXEC | _NONBLOCK
    for _ in range(3):  # a file made or removed by another process between two tries
        if refuse_foreign(path, role) is None:
            if not create:
                raise FileNotFoundError(path)
            try:
                descriptor = os.open(path, base | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
        else:
            try:
                descriptor = os.open(path, base)
            except FileNotFoundError:
                continue
            except OSError as exc:  # ELOOP: a symbolic link swapped in after the check
                raise InputError(f"cannot open {path} ({role}) without following a link: {exc.strerror}") from None
        refusal = _refusal(path, role, os.fstat(descriptor))
        if refusal is not None:
            os.close(descriptor)
            raise refusal
        return descriptor
    raise InputError(f"{path} ({role}) keeps changing while this run opens it; is another program writing there?")


def remove_if_ours(path: Path, owned: FileId | None) -> None:
    """Remove ``path`` when it still names the file ``owned`` (a run removes only what it made or read)."""
    if owned is None:
        return
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(status.st_mode) and file_id(status) == owned:
        path.unlink(missing_ok=True)


def _input_ids(inputs: Iterable[Path], *, stdin: bool = False) -> dict[FileId, str]:
    """The identities of the inputs that exist, with their names (``stdin``: also the file standard input reads)."""
    ids: dict[FileId, str] = {}
    for source in inputs:
        try:
            ids[file_id(os.stat(source))] = str(source)
        except OSError:
            continue  # a missing input is reported where it is read
    if stdin:
        found = stdin_id()
        if found is not None:
            ids[found] = "<stdin>"
    return ids


def refuse_inputs_among(inputs: Iterable[Path], written: Mapping[Path, str], *, stdin: bool = False) -> None:
    """Refuse an input that is one of the files a run writes, truncates, renames over or removes.

    ``written`` maps each such path to what it is ("the output", "the partial output" ...).
    Compared by device and inode, so the same file under another name, through a symbolic link
    or a hard link, is seen; with ``stdin``, the file standard input reads is an input too.

    :raises InputError: Naming the input and the file it would be.
    """
    ids = _input_ids(inputs, stdin=stdin)
    for path, role in written.items():
        for status in _statuses(path):
            hit = ids.get(file_id(status))
            if hit is not None:
                raise InputError(
                    f"input {hit} is {role} of this run ({path}): the run would overwrite or remove it; "
                    "read from another file, or write the results to another --output"
                )


def refuse_side_files(
    files: Mapping[Path, str],
    inputs: Mapping[Path, str],
    written: Mapping[Path, str],
    *,
    stdin: bool = False,
    folders: bool = True,
) -> None:
    """Refuse a file written besides the output (a reply cache) that is a file the run reads, or one of its own.

    ``files`` maps each such file to what it is (``"the reply cache, --cache"``), ``inputs`` each
    file the run reads to how to name it (``"the input file in.jsonl"``), ``written`` the run's
    own files (the output and its work files, see
    :func:`answer_eval.engine.checkpoint_record.work_files`). A file is compared with the inputs
    by device and inode (a hard or symbolic link counts; with ``stdin``, the file standard input
    reads), and with the run's files by device and inode and by resolved path, since the output
    may not exist yet. With ``folders``, a folder at its path is refused too.

    :raises InputError: Naming the file, what it is and what it would be.
    """
    ids = {found: inputs[path] for found, path in _ids_of(inputs).items()}
    if stdin:
        found = stdin_id()
        if found is not None:
            ids[found] = "the input file (standard input reads it)"
    for path, role in files.items():
        if folders and path.is_dir():
            raise InputError(f"{path} ({role}) is a folder; give a file name")
        mine = {file_id(status) for status in _statuses(path)}
        for found in mine:
            if found in ids:
                raise InputError(
                    f"{path} ({role}) is {ids[found]}: the run would write into a file it reads; give another path"
                )
        real = os.path.realpath(path)
        for other, what in written.items():
            if os.path.realpath(other) == real or mine & {file_id(status) for status in _statuses(other)}:
                raise InputError(
                    f"{path} ({role}) is {what} of this run ({other}): the run would write both to one file; "
                    "give another path"
                )


def _ids_of(paths: Iterable[Path]) -> dict[FileId, Path]:
    found: dict[FileId, Path] = {}
    for path in paths:
        with contextlib.suppress(OSError):  # a missing file is reported where it is read
            found[file_id(os.stat(path))] = path
    return found


def _statuses(path: Path) -> list[os.stat_result]:
    # The name itself and, for a link, what it points to: either way the input would be hit.
    found = []
    for follow in (False, True):
        with contextlib.suppress(OSError):
            found.append(os.stat(path, follow_symlinks=follow))
    return found
