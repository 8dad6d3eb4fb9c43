"""``answer-eval examples``: write the bundled example files, so the README's commands run after ``pip install``.

The wheel carries the example data (``answer_eval/example_data``, with the licenses of the files
that are not the project's own); in a source checkout the files are read from ``examples/data``.
The command copies them into a folder (``examples/data`` by default, the path every command in
the README and the docs uses), creating it. A file already there with the same bytes is left as
it is; one with other bytes is never overwritten: the command stops before writing anything.
Nothing is written through a symbolic link inside the folder (``LICENSES`` linked to another
folder, a link at a file's name): the command stops naming it. The folder itself may be a link
(the user named it); an empty path names no folder and is refused.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_eval.errors import InputError

if TYPE_CHECKING:  # importlib.abc.Traversable is deprecated from Python 3.12 (a warning at import)
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["DEFAULT_FOLDER", "bundled_examples", "register", "write_examples"]

DEFAULT_FOLDER = os.path.join("examples", "data")
"""Where the files go by default: the path the README's commands name."""

# What the wheel copies into example_data/LICENSES (pyproject.toml, force-include): keep the two in step.
_LICENSES = ("DATA_LICENSES.md", "licenses/openqa-eval.LICENSE")


def bundled_examples() -> dict[str, Traversable]:
    """The bundled example files by name, with their licenses under ``LICENSES/``.

    From the wheel's ``answer_eval/example_data``; in a source checkout (an editable install),
    from ``examples/data``, ``DATA_LICENSES.md`` and ``licenses/`` of the repository.

    :raises InputError: When neither is there (an installation that lost its data files).
    """
    folder: Traversable = resources.files("answer_eval") / "example_data"
    if folder.is_dir():
        licenses = [item for item in (folder / "LICENSES").iterdir() if item.is_file()]
    else:
        root = Path(__file__).resolve().parents[3]
        folder = root / "examples" / "data"
        licenses = [root / name for name in _LICENSES]
    if not folder.is_dir():
        raise InputError("this installation has no example files: reinstall answer-eval-haystack")
    files: dict[str, Traversable] = {e.name: e for e in folder.iterdir() if e.is_file() and e.name.endswith(".jsonl")}
    files.update({f"LICENSES/{Path(item.name).name}": item for item in licenses})
    return dict(sorted(files.items()))


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _refuse_link(path: Path, folder: Path) -> None:
    """Refuse ``path`` inside ``folder`` when it is a symbolic link, or there and not a folder (for a parent)."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(status.st_mode):
        raise InputError(f"{path} is a symbolic link: nothing is written through a link inside {folder}")
    if not stat.S_ISDIR(status.st_mode):
        raise InputError(f"{path} is there and is not a folder: nothing was written")


def _check(folder: Path, name: str, data: bytes) -> bool:
    """Whether ``name`` is already there with ``data``; raises when it cannot be written as it should."""
    path = folder / name
    for parent in reversed(path.relative_to(folder).parents[:-1]):  # LICENSES, inside the folder
        _refuse_link(folder / parent, folder)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise InputError(f"{path} is there and is not a regular file: nothing was written")
    if path.exists() and path.read_bytes() != data:
        raise InputError(f"{path} is there with other contents: nothing was written; move it or give another folder")
    return path.exists()


def _write(folder: Path, name: str, data: bytes) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent != folder:
        _refuse_link(path.parent, folder)  # checked again just before the write: a link made since is refused
    # Made new, never through a link planted at its name since the check.
    with open(os.open(path, _NEW_FILE, 0o666), "wb") as handle:
        handle.write(data)


def write_examples(target: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Copy the bundled example files into ``target``: ``(name, "written" | "already there")`` for each.

    Nothing is written unless every file can be: a file at a target name holding other bytes (or
    a folder, or a link), or a symbolic link for a folder inside ``target`` (``LICENSES``), stops
    the command first, so a file of the user's is never replaced and nothing lands outside ``target``.

    :raises InputError: For such a file or link, an empty path, or a target that is not a folder.
    """
    if not os.fspath(target):
        raise InputError("the folder is an empty path: give a folder, or none for examples/data")
    folder = Path(target)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} is not a folder: give another one")
    plan = [(name, data, _check(folder, name, data)) for name, data in _bundled_bytes()]
    for name, data, there in plan:
        if not there:
            _write(folder, name, data)
    return [(name, "already there" if there else "written") for name, _, there in plan]


def _bundled_bytes() -> list[tuple[str, bytes]]:
    return [(name, source.read_bytes()) for name, source in bundled_examples().items()]


def register(commands: Any) -> None:
    """Add the ``examples`` sub-command."""
    parser = commands.add_parser(
        "examples",
        help="write the bundled example files (to examples/data), which the README's commands use",
        description=(
            "Write the example answer files bundled with the package (20 RAG answers with every failure kind, "
            "InstructGPT's zero-shot and few-shot answers to 301 Natural Questions, GPT-4's recorded grader replies, "
            "tool calls, typed answers) and the licenses of those not written for the project into FOLDER. "
            "A file already there with other contents is never overwritten."
        ),
    )
    parser.add_argument(
        "folder", nargs="?", default=DEFAULT_FOLDER, help="where to write them (default: %(default)s, made if missing)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the files and say which were written."""
    done = write_examples(args.folder)
    for name, what in done:
        print(f"{os.path.join(args.folder, name)}  {what}")
    written = sum(what == "written" for _, what in done)
    print(f"{written} written, {len(done) - written} already there", file=sys.stderr)
    return 0
