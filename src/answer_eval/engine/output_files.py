"""Writing results atomically, never over an input, and the files a run owns: made new, never followed.

The output path is checked against the inputs, the rows go to a temporary file fsynced and renamed into place, and CSV
cells are written so that a spreadsheet does not run them as formulas.

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
import csv
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from answer_eval.errors import InputError

__all__ = [
    "AtomicWriter",
    "FileId",
    "check_output_path",
    "file_id",
    "fsync_folder",
    "open_owned",
    "read_csv_text_cell",
    "refuse_foreign",
    "refuse_inputs_among",
    "refuse_side_files",
    "remove_if_ours",
    "replacement_mode",
    "write_csv_from_jsonl",
]


def check_output_path(output: Path, inputs: list[Path], *, stdin: bool = False) -> None:
    """Refuse an output path that would overwrite an input or cannot be written as a file.

    Refused, each with an :class:`InputError` naming the path: a directory, an input file (the
    same file under any name: a hard or symbolic link counts; with ``stdin``, the file standard
    input reads, compared by device and inode), an existing output that is read-only (its mode
    grants no write permission, or this process may not write it: replacing it would silently
    drop that protection) or not a regular file nor a link (a FIFO, a device: it would be replaced
    by a file), a folder that does not exist, and a folder this process may not write
    to, as :func:`os.access` tells: permission bits (which do not bind root), an immutable folder
    (``chattr +i``, which does) or a read-only file system. Anything it cannot foresee fails when
    the temporary file is made (see :func:`temporary_file`).
    """
    if output.exists() and output.is_dir():
        raise InputError(f"output {output} is a directory; give a file name")
    for source in inputs:
        if output.exists() and source.exists() and output.samefile(source):
            raise InputError(f"output {output} is the input file; write the results to another file")
    if stdin and output.exists() and _same_as_stdin(output):
        raise InputError(
            f"output {output} is the input file (standard input reads it); write the results to another file"
        )
    _refuse_unwritable(output)
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"output folder {parent} is not writable")


def stdin_id() -> tuple[int, int] | None:
    """The device and inode of the file standard input reads (``None`` when it has none)."""
    try:
        status = os.fstat(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError):  # closed, or not a file descriptor
        return None
    return status.st_dev, status.st_ino


def _same_as_stdin(path: Path) -> bool:
    try:
        status = os.stat(path)
    except OSError:
        return False
    return stdin_id() == (status.st_dev, status.st_ino)


def _refuse_unwritable(output: Path) -> None:
    # A link at the output path is replaced, never followed: only a regular file's own mode counts.
    try:
        status = os.lstat(output)
    except OSError:
        return
    if not stat.S_ISREG(status.st_mode) and not stat.S_ISLNK(status.st_mode):
        raise InputError(
            f"output {output} is not a regular file (a FIFO, socket or device): the run would replace it with one; "
            "write the results to a file"
        )
    if stat.S_ISREG(status.st_mode) and (not status.st_mode & 0o222 or not os.access(output, os.W_OK)):
        raise InputError(
            f"output {output} is read-only (mode {stat.S_IMODE(status.st_mode):04o}): the run would replace it; "
            f"make it writable (chmod u+w {output}) to have it replaced, or write the results to another file"
        )


def replacement_mode(target: Path) -> int:
    """The permission bits of a file written over ``target``: those of the regular file there, kept.

    A file a run replaces keeps its permissions (not its owner or group, which a rename cannot
    keep); a new file, or one replacing a link, gets what ``open`` gives: ``0o666`` less the umask.
    """
    try:
        status = os.lstat(target)
    except OSError:
        status = None
    if status is not None and stat.S_ISREG(status.st_mode):
        return stat.S_IMODE(status.st_mode) & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def temporary_file(target: Path, suffix: str = ".tmp") -> tuple[int, Path]:
    """Make an empty temporary file beside ``target`` (``.<name>.<random><suffix>``): ``(descriptor, path)``.

    :raises InputError: When the folder cannot take a new file (read-only, no permission, full),
        naming the folder.
    """
    try:
        descriptor, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=suffix)
    except OSError as exc:
        folder = target.parent if str(target.parent) else Path(".")
        raise InputError(f"cannot write to the output folder {folder}: {exc.strerror or exc}") from None
    return descriptor, Path(name)


class AtomicWriter:
    r"""Write a file through a temporary file in the same folder, then rename it into place.

    The target is untouched until :meth:`commit`; on an exception, or if the writer is closed
    without committing, the temporary file is removed, so a failed or interrupted run never
    leaves a partial file.

    Text is written as UTF-8; a character UTF-8 cannot hold (a lone surrogate such as the JSON
    escape ``"\ud800"`` decodes to) is written as its backslash escape (``errors``), which inside a
    JSON string is the same escape again, so a JSON line reads back to the same value.
    """

    def __init__(
        self, target: str | os.PathLike[str], newline: str | None = None, errors: str = "backslashreplace"
    ) -> None:
        self.target = Path(target)
        descriptor, self.temp_path = temporary_file(self.target)
        self.handle: IO[str] = open(descriptor, "w", encoding="utf-8", newline=newline, errors=errors)  # noqa: SIM115 - closed by commit or discard
        self._done = False

    def write(self, text: str) -> None:
        """Write text to the temporary file."""
        self.handle.write(text)

    def commit(self) -> None:
        """Flush, fsync and rename the temporary file over the target."""
        self.handle.flush()
        os.fsync(self.handle.fileno())
        # Set on the descriptor, so a name swapped for a link since is never followed.
        os.fchmod(self.handle.fileno(), replacement_mode(self.target))
        self.handle.close()
        os.replace(self.temp_path, self.target)
        self._done = True
        fsync_folder(self.target.parent)

    def discard(self) -> None:
        """Remove the temporary file; the target is left as it was."""
        if not self.handle.closed:
            self.handle.close()
        if not self._done:
            self.temp_path.unlink(missing_ok=True)
            self._done = True

    def __enter__(self) -> AtomicWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None or not self._done:
            self.discard()


def fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename into it) to disk, where the system allows it."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# A text cell a spreadsheet would run as a formula starts with one of these (OWASP, "CSV
# Injection"): it is written with a leading apostrophe, which spreadsheets show as text. A cell
# that already starts with an apostrophe gets one more, so the rule can be undone without loss.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""First characters that make a spreadsheet read a CSV text cell as a formula: OWASP's list, and
their fullwidth forms (which some spreadsheets read as the ASCII ones)."""
_QUOTED = (*FORMULA_STARTS, "'", "[", "{")


def csv_text_cell(text: str) -> str:
    r"""A text value as a CSV cell a spreadsheet cannot run and the CSV reader reads back as text.

    Text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (a spreadsheet would
    run it as a formula), text a CSV input reads as another value (starting with ``[`` or ``{``:
    JSON; ``true`` or ``false`` in any case: a boolean) and, so the rule can be undone, text
    starting with ``'`` gets a leading ``'``; :func:`read_csv_text_cell` removes it again.

    >>> csv_text_cell('=HYPERLINK("http://x","y")'), csv_text_cell('["not", "a list"]'), csv_text_cell("TRUE")
    ('\'=HYPERLINK("http://x","y")', '\'["not", "a list"]', "'TRUE")
    """
    return "'" + text if _marked(text) else text


def _marked(text: str) -> bool:
    return text.startswith(_QUOTED) or (len(text) in (4, 5) and text.casefold() in ("true", "false"))


def read_csv_text_cell(cell: str) -> str:
    """The text :func:`csv_text_cell` wrote: one leading apostrophe removed, where it added one."""
    return cell[1:] if cell.startswith("'") and _marked(cell[1:]) else cell


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return csv_text_cell(value)
    return json.dumps(value, ensure_ascii=False)


def write_csv_from_jsonl(spool: Iterable[bytes], fields: list[str], writer: AtomicWriter) -> None:
    """Copy JSONL rows (the lines of ``spool``, an open binary file) into ``writer`` as CSV with the given columns.

    Values that are not strings are written as JSON (``true``, ``12``, ``["a", "b"]``); ``None``
    as an empty cell; text that a spreadsheet would run as a formula is neutralised
    (:func:`csv_text_cell`).
    """
    table = csv.writer(writer.handle)
    table.writerow([csv_text_cell(name) for name in fields])  # column names come from the input too
    for line in spool:
        row = json.loads(line)
        table.writerow([_csv_cell(row.get(name)) for name in fields])


def write_bytes_atomically(target: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same folder, then rename it into place.

    The binary counterpart of :class:`AtomicWriter` (for Parquet shards): the temporary file is
    named ``.<target name>.<random>.tmp``, flushed and fsynced before the rename, and removed if
    writing fails, so ``target`` is either the whole new file or untouched.
    """
    path = Path(target)
    descriptor, temp = temporary_file(path)
    try:
        with open(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), replacement_mode(path))
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


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
    :func:`answer_eval.engine.checkpoint.work_files`). A file is compared with the inputs
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
