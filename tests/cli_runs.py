"""Running the command line: in this process by default, as a real process where the process is the behaviour.

:func:`cli` runs ``answer-eval ARGS`` through :func:`answer_eval.cli.main.main` in the test process, with its
own standard input, output and error, environment, working directory and warning filters, and returns what a
subprocess would (a :class:`subprocess.CompletedProcess` with the exit code and the text it printed). The
import of Haystack and of every evaluator is paid once per pytest worker, not once per call.

:func:`cli_process` and :func:`start_cli` start a real ``python -m answer_eval``: for signals and
``--resume`` after a kill, a broken pipe, resource limits set in the child (``preexec_fn``), a quiet standard
error at start-up, the installed entry point. A test that calls them must be marked ``@pytest.mark.subprocess``
(an audit hook in ``tests/conftest.py`` fails it otherwise), so that ``pytest -m subprocess --collect-only``
counts every test that pays for a process.
"""

from __future__ import annotations

import contextlib
import faulthandler
import hashlib
import io
import itertools
import json
import logging
import os
import runpy
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from tests.conftest import EXAMPLES

CLI = [sys.executable, "-m", "answer_eval"]

# What a fresh interpreter's warning filters are (no -W, no PYTHONWARNINGS): a run in this process prints the
# warnings a user's run would print, not pytest's. One filter more, first, as pyproject.toml has it for the
# whole suite: a deprecated call of the package's own is an error.
_FRESH_WARNING_FILTERS: tuple[tuple[str, type[Warning], str | None], ...] = (
    ("error", DeprecationWarning, r"answer_eval\."),
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, None),
    ("ignore", PendingDeprecationWarning, None),
    ("ignore", ImportWarning, None),
    ("ignore", ResourceWarning, None),
)


def _default_signals() -> None:
    # A process started in the background of a non-interactive shell (or by some test runners)
    # inherits SIGINT ignored, and a Python program keeps it ignored: give the run the usual
    # dispositions, as a terminal would.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def cli(
    *args: Any,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    stdin: bytes | str | int | IO[bytes] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``answer-eval ARGS`` in this process to the end; what it printed and its exit code, as a subprocess gives.

    :param cwd: The working directory during the run (restored after).
    :param env: The whole environment during the run, as ``subprocess.run(env=...)`` takes it (restored after).
    :param timeout: Seconds after which a run that hangs ends the pytest worker with every thread's traceback.
    :param stdin: What standard input reads: bytes, or text written as UTF-8 (default: nothing); or a file
        descriptor or a binary file, read as the process would read it (a pipe, ``/dev/zero``), left open.
    """
    from answer_eval.cli.main import main

    argv = [str(arg) for arg in args]
    return _in_process(lambda: main(argv), [*CLI, *argv], cwd, env, timeout, stdin)


def python(
    script: Path | str, *args: Any, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a Python program in this process as ``python SCRIPT ARGS`` (a path) or ``python -c SCRIPT`` (code) runs it.

    It runs as ``__main__`` with ``sys.argv`` and ``sys.path[0]`` set as the interpreter sets them, its output and
    exit code captured as :func:`cli` captures them; an exception it lets out is printed with its traceback and
    gives exit code 1, as Python does.
    """
    argv = [str(arg) for arg in args]
    command = [sys.executable, *([str(script)] if isinstance(script, Path) else ["-c", script]), *argv]

    def run() -> int:
        saved = sys.argv[:], sys.path[:]
        sys.argv = [str(script) if isinstance(script, Path) else "-c", *argv]
        sys.path.insert(0, str(script.parent) if isinstance(script, Path) else "")  # as the interpreter puts it
        try:
            if isinstance(script, Path):
                runpy.run_path(str(script), run_name="__main__")
            else:
                exec(compile(script, "<string>", "exec"), {"__name__": "__main__"})
        except Exception:  # noqa: BLE001 - what the interpreter does with an exception nobody caught
            traceback.print_exc()
            return 1
        finally:
            sys.argv, sys.path[:] = saved
        return 0

    return _in_process(run, command, cwd, env, timeout, None)


def _in_process(
    run: Callable[[], int],
    command: list[str],
    cwd: Path | None,
    env: dict[str, str] | None,
    timeout: float,
    stdin: bytes | str | int | IO[bytes] | None,
) -> subprocess.CompletedProcess[str]:
    """``run()`` with the process's surroundings its own (:func:`_isolated`); its result as a subprocess gives it."""
    stdout, stderr = _captured(), _captured()
    faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__)
    try:
        with _isolated(cwd, env, _standard_input(stdin), stdout, stderr):
            code = _exit_code(run)
    finally:
        faulthandler.cancel_dump_traceback_later()
    return subprocess.CompletedProcess(command, code, _text(stdout), _text(stderr))


def _standard_input(given: bytes | str | int | IO[bytes] | None) -> io.TextIOWrapper:
    """Standard input as the process would have it: text over a binary buffer (``sys.stdin.buffer``)."""
    if given is None or isinstance(given, bytes | str):
        data = given.encode("utf-8") if isinstance(given, str) else (given or b"")
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    descriptor = given if isinstance(given, int) else given.fileno()
    return io.TextIOWrapper(open(descriptor, "rb", closefd=False), encoding="utf-8")


def _exit_code(run: Callable[[], int]) -> int:
    """``run()``'s exit code: what it returns, or what ``sys.exit`` (argparse's among them) asked for."""
    try:
        return run()
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        print(exit_.code, file=sys.stderr)
        return 1


def _captured() -> io.TextIOWrapper:
    """A text stream as a pipe is: UTF-8, not a terminal, line buffering off."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    """What was written, read back as ``subprocess.run(text=True)`` reads a pipe (universal newlines)."""
    stream.flush()
    data = stream.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    return data.replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _isolated(
    cwd: Path | None, env: dict[str, str] | None, stdin: io.TextIOWrapper, stdout: io.TextIOWrapper, stderr: Any
) -> Iterator[None]:
    """Within the block: the run's working directory, environment, standard streams, warnings and log output.

    Everything is put back after, whatever the run changed (the command line sets environment defaults).
    """
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        with _fresh_warnings(), _fresh_logging():
            yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


@contextlib.contextmanager
def _fresh_warnings() -> Iterator[None]:
    """A fresh interpreter's warning filters, warnings printed on the (current) standard error; put back after."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in reversed(_FRESH_WARNING_FILTERS):
            warnings.filterwarnings(action, category=category, module=module or "")  # type: ignore[arg-type]
        warnings.showwarning = _show_warning
        yield


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """The root logger as a fresh process has it: pytest's capture handlers off, level WARNING; put back after.

    With no handler on the root, a record reaches Python's last-resort handler, which prints it on the
    current standard error: the run's, as in a process of its own.
    """
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers = [handler for handler in handlers if not type(handler).__module__.startswith("_pytest")]
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers = handlers
        root.setLevel(level)


def _show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    """Print a warning on the run's standard error, as a fresh interpreter does."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def cli_process(
    *args: Any,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    preexec_fn: Callable[[], None] | None = None,
    stdin: Any = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``answer-eval ARGS`` as a real subprocess to the end, capturing its output as text.

    For a test marked ``subprocess`` only: where the process itself is what is tested.
    """
    return subprocess.run(
        [*CLI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        preexec_fn=preexec_fn,
        stdin=stdin,
        check=False,
    )


def cli_unless_limited(
    *args: Any, preexec_fn: Callable[[], None] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``answer-eval ARGS`` in process, or as a subprocess that first runs ``preexec_fn`` when one is given.

    ``preexec_fn`` sets a limit the run must have as its own (a file size, dropped file capabilities); a test
    that passes one is marked ``subprocess``.
    """
    if preexec_fn is None:
        return cli(*args, timeout=timeout)
    return cli_process(*args, preexec_fn=preexec_fn, timeout=timeout)


def write_jsonl(path: Path, rows: Any) -> Path:
    """Write ``rows`` (JSON-ready objects) to ``path``, one a line; return ``path``."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def start_cli(*args: Any, stdin: Any = None) -> subprocess.Popen[str]:
    """Start ``answer-eval ARGS`` in the background (``stdin``: as :class:`subprocess.Popen` takes it).

    For a test marked ``subprocess`` only: it is stopped by a signal, or fed while it runs.
    """
    return subprocess.Popen(
        [*CLI, *map(str, args)],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )


def record_path(output: Path) -> Path:
    """The checkpoint record of an output path."""
    return output.with_name(f".{output.name}.partial.json")


def partial_path(output: Path) -> Path:
    """The partial output of an output path."""
    return output.with_name(f".{output.name}.partial")


def wait_for_record(process: subprocess.Popen[str], output: Path, timeout: float = 120.0) -> dict[str, Any]:
    """Wait until the run has recorded its position at least once; return the record."""
    record = record_path(output)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the run ended before recording a position: {process.communicate()}"
        try:
            return dict(json.loads(record.read_text(encoding="utf-8")))
        except (FileNotFoundError, ValueError):
            time.sleep(0.002)
    raise AssertionError("no checkpoint record appeared")


def stop(process: subprocess.Popen[str], signum: int) -> tuple[int, str, str]:
    """Send ``signum`` and wait for the run to end: ``(exit code, stdout, stderr)``."""
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stdout, stderr


def interrupted(*args: Any, output: Path) -> int:
    """Start ``answer-eval ARGS`` and stop it with SIGINT once it has recorded a position in ``output``'s record.

    Asserts it ended as an interrupted run does (exit 130); returns the rows its partial output kept.
    """
    process = start_cli(*args)
    wait_for_record(process, output)
    code, _, stderr = stop(process, signal.SIGINT)
    assert code == 130, stderr
    return len(partial_path(output).read_text().splitlines())


def stopped_at(
    line: int, command: Sequence[Any], source: Path, output: Path, *more: Any, bad: bytes = b"not json\n"
) -> dict[str, Any]:
    """Leave the checkpoint of ``answer-eval COMMAND SOURCE --output OUTPUT MORE`` stopped before line ``line``.

    In process, with no signal: for the run, line ``line`` of ``source`` is ``bad`` (a line the format refuses),
    so the run stops there (exit 2) and keeps the rows before it as a stopped run keeps them (JSONL: every one;
    a converted format: up to the last batch), then the line is put back. The rows kept are the file's own, so
    the checkpoint is the file's: ``--resume`` continues it. Returns the checkpoint record.
    """
    original = source.read_bytes()
    lines = original.splitlines(keepends=True)
    source.write_bytes(b"".join([*lines[: line - 1], bad, *lines[line:]]))
    try:
        done = cli(*command, source, "--output", output, *more)
    finally:
        source.write_bytes(original)
    assert done.returncode == 2, done.stderr
    assert f"{source}:{line}: " in done.stderr
    record = dict(json.loads(record_path(output).read_text(encoding="utf-8")))
    assert 0 < record["position"]["rows"] <= line - 1, record
    return record


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cycled(name: str, rows: int) -> Iterator[str]:
    """The lines of an example file (``examples/data/NAME``), repeated to ``rows`` lines."""
    lines = (EXAMPLES / "data" / name).read_text(encoding="utf-8").splitlines()
    return itertools.islice(itertools.cycle(lines), rows)


def write_lines(path: Path, lines: Iterator[str]) -> Path:
    """Write JSON lines to ``path``."""
    with open(path, "w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
    return path


def typed_rows(rows: int) -> Iterator[str]:
    """Rows for the ``typed`` command: multiple choice and numerical answers, right and wrong, some types by alias."""
    for number in range(rows):
        row: dict[str, Any]
        if number % 2:
            choice = "ABCD"[number % 4]
            row = {"model_output": f"<answer>{choice}</answer>", "solution": "<answer>B</answer>"}
            row["problem_type"] = "multiple choice" if number % 11 else "MCQ"  # an alias
        else:
            row = {"model_output": f"It is <answer>{number % 13}.5</answer>", "solution": "<answer>4.50</answer>"}
            row["problem_type"] = "numerical"
        yield json.dumps(row)
