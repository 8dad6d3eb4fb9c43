"""``answer-eval examples``: write the bundled example files, so the README's commands run after ``pip install``.

The wheel carries the example data (``answer_eval/example_data``, with the licenses of the files
that are not the project's own); in a source checkout the files are read from ``examples/data``.
The command copies them into a folder (``examples/data`` by default, the path every command in
the README and the docs uses), creating it. A file already there with the same bytes is left as
it is; one with other bytes is never overwritten: the command stops before writing anything.
"""

from __future__ import annotations

import argparse
import os
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


def write_examples(target: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Copy the bundled example files into ``target``: ``(name, "written" | "already there")`` for each.

    Nothing is written unless every file can be: a file at a target name holding other bytes (or
    a folder, or a link) stops the command first, so a file of the user's is never replaced.

    :raises InputError: For such a file, or a target that is not a folder.
    """
    folder = Path(target)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} is not a folder: give another one")
    plan: list[tuple[str, bytes, bool]] = []
    for name, source in bundled_examples().items():
        data = source.read_bytes()
        path = folder / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise InputError(f"{path} is there and is not a regular file: nothing was written")
        there = path.exists()
        if there and path.read_bytes() != data:
            raise InputError(
                f"{path} is there with other contents: nothing was written; move it or give another folder"
            )
        plan.append((name, data, there))
    done = []
    for name, data, there in plan:
        path = folder / name
        if not there:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as handle:  # made new: never through a link planted since the check
                handle.write(data)
        done.append((name, "already there" if there else "written"))
    return done


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
