"""Shared test set-up: no test may reach a model hub; one Dask cluster for the Dask tests; the test tiers.

Two markers sort the tests (``make check`` runs every test not marked ``slow``; ``make test`` runs all):

- ``subprocess``: the test starts the command line, or another Python program, as a real process, because
  the process is the behaviour (a signal, a kill and ``--resume``, a broken pipe, a resource limit, a fresh
  interpreter's import time or standard error). Every other test runs the command line in process
  (:func:`tests.cli_runs.cli`). An audit hook below fails a test that starts one unmarked.
- ``slow``: a full-size case of a limit, or a long matrix, whose cheaper twin runs in ``make check``.
"""

import logging
import os
import re
import sys
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def dask_client():
    """A client of a ``distributed.LocalCluster`` of 2 single-threaded worker processes, shared by every Dask test.

    Started by the first test that asks for it (the modules that do are in xdist group
    ``dask_cluster``, so that ``--dist loadgroup`` keeps them on one pytest worker) and closed at the end.
    """
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": ":0"},  # no fixed port 8787: runs in parallel
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as connected,
    ):
        yield connected


_running: list[pytest.Item] = []  # the test whose set-up, call or teardown runs now (none between tests)
_PYTHON_PROGRAM = re.compile(r"(python[0-9.]*|answer-eval)")
_SHELLS = frozenset({"sh", "bash", "dash"})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Keep the running test at hand for :func:`_refuse_unmarked_processes`, through its set-up, call and teardown."""
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


def _refuse_unmarked_processes(event: str, args: tuple) -> None:
    """An audit hook: a test that starts a Python program (the command line among them) must be marked ``subprocess``.

    So must one that starts a shell whose script runs one. A fixture's process counts for the test that set it
    up; other programs (``chattr``, ``git``, a browser) are free. The ``subprocess.Popen`` audit event carries
    the executable and the arguments.
    """
    if event != "subprocess.Popen" or not _running or _running[-1].get_closest_marker("subprocess"):
        return
    executable, argv = args[0], args[1]
    words = [os.fsdecode(word) for word in argv] if isinstance(argv, list | tuple) else [os.fsdecode(argv)]
    name = Path(os.fsdecode(executable) if executable is not None else words[0]).name
    python = _PYTHON_PROGRAM.fullmatch(name) or name == Path(sys.executable).name
    if python or (name in _SHELLS and any(_PYTHON_PROGRAM.search(word) for word in words[1:])):
        pytest.fail(
            f"{_running[-1].nodeid} starts {name}: mark it @pytest.mark.subprocess, or run the command line "
            "in process with tests.cli_runs.cli (see tests/conftest.py)"
        )


sys.addaudithook(_refuse_unmarked_processes)
