"""An older commit of this package, importable beside the current one in the same process.

Speed comparisons between commits are fair only in one process with the versions taking turns
(a shared machine's slow spells then hit them all alike). Two copies of ``answer_eval`` cannot
share one name, so :func:`load` extracts the commit's ``src/`` (``git archive``) into a scratch
folder and renames its packages: ``answer_eval`` becomes ``answer_eval_<tag>`` and
``haystack_integrations`` becomes ``haystack_integrations_<tag>``, in folder names and in every
``import`` and dotted name of its Python files. The renamed copy runs the commit's code as it was;
only the names it is reached by differ.
"""

from __future__ import annotations

import functools
import importlib
import io
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
_PACKAGES = ("answer_eval", "haystack_integrations")


class Unavailable(RuntimeError):
    """The commit cannot be read here (no git, or not in this clone's history)."""


def _archive(commit: str) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "src"], capture_output=True, check=False
        )
    except OSError as exc:
        raise Unavailable(f"git is not available ({exc})") from None
    if done.returncode != 0:
        raise Unavailable(f"commit {commit} is not in this clone: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _renamed(path: str, tag: str) -> str:
    # Folder names: every path component named like a package gets the tag.
    return "/".join(f"{part}_{tag}" if part in _PACKAGES else part for part in path.split("/"))


@functools.cache
def load(commit: str, tag: str) -> Path:
    """Extract ``commit``'s ``src/`` with its packages renamed, put it on ``sys.path``, and return the folder.

    :raises Unavailable: When git or the commit is missing.
    """
    target = Path(tempfile.mkdtemp(prefix=f"answer-eval-{tag}-"))
    names = re.compile(r"\b(" + "|".join(_PACKAGES) + r")\b")
    with tarfile.open(fileobj=io.BytesIO(_archive(commit))) as archive:
        for member in archive.getmembers():
            if not member.isfile():
                continue
            data = archive.extractfile(member)
            assert data is not None
            content = data.read()
            if member.name.endswith(".py"):
                content = names.sub(rf"\1_{tag}", content.decode("utf-8")).encode("utf-8")
            destination = target / _renamed(member.name, tag)
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(content)
    sys.path.insert(0, str(target / "src"))
    importlib.invalidate_caches()
    return target


def module(commit: str, tag: str, name: str) -> ModuleType:
    """The module ``name`` (written with the current package names) of ``commit``, imported under its tagged name."""
    load(commit, tag)
    return importlib.import_module(re.sub(r"\b(" + "|".join(_PACKAGES) + r")\b", rf"\1_{tag}", name))


def clear_caches(prefix: str) -> int:
    """Empty every per-text cache (an ``lru_cache`` holding more than one entry) of the modules under ``prefix``.

    Caches of one entry hold compiled patterns, built once per process by any version; the others
    remember golds, questions and words, which a new batch has not seen yet. Returns how many were emptied.
    """
    emptied = 0
    for name, loaded in list(sys.modules.items()):
        if not (name == prefix or name.startswith(prefix + ".")) or loaded is None:
            continue
        for value in list(vars(loaded).values()):
            info = getattr(value, "cache_info", None)
            if callable(info) and getattr(value, "__module__", None) == name:
                maxsize = info().maxsize
                if maxsize is None or maxsize > 1:
                    value.cache_clear()
                    emptied += 1
    return emptied
