"""The ``answer-eval`` command line.

Exit codes: 0 when the input was scored, 2 for bad input or usage (the message names the file and
line; also a refused output path, a refused ``--resume``, a failed write such as a full disk and
a file that cannot be read), 3 when a run went to its end with nothing to use (``rubric``: no item
graded, or no request reached the server; the summary is printed and the output written first,
see :class:`answer_eval.errors.NothingGraded`), 75 for ``--batch --resume`` while the batch runs
(:mod:`answer_eval.cli.batch_runs`), 1 for an unexpected failure (a bug: the traceback is printed), 130
when stopped by SIGINT (Ctrl-C) and 143 by SIGTERM, 141 (quietly) when the reader of standard
output went away (``| head``). A stopped file command finishes the batch of rows it is on, writes
nothing at the output path and keeps a checkpoint beside it for ``--resume`` (see
:mod:`answer_eval.engine.row_loop`, :mod:`answer_eval.engine.checkpoint` and docs/reliability.md); a
file command that fails keeps the rows it did the same way, and says so after its error.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import select
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

from answer_eval.cli import agreement, calibrate, compare_report, examples, file_commands
from answer_eval.engine.checkpoint import kept_by
from answer_eval.engine.row_loop import Interrupted, raise_interrupted
from answer_eval.errors import InputError, NothingGraded

__all__ = ["main", "run"]

EXIT_BAD_INPUT = 2
EXIT_NOTHING_GRADED = 3
EXIT_BUG = 1
EXIT_BROKEN_PIPE = 128 + 13  # as a process ended by SIGPIPE: what a shell reports for `cmd | head`
# The file commands come from the evaluator registry; these are the commands over several evaluators.
COMMANDS = [
    agreement.register,
    calibrate.register,
    compare_report.register_compare,
    compare_report.register_report,
    examples.register,
]


def _version() -> str:
    """The package's version and the haystack-ai installed (read from its metadata: Haystack is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    from answer_eval import __version__

    try:
        haystack = version("haystack-ai")
    except PackageNotFoundError:
        haystack = "not installed"
    return f"{__version__} (haystack-ai {haystack}, Python {sys.version.split()[0]})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="answer-eval", description="Grade question-answering and RAG answers against acceptable answers."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    file_commands.register_all(commands)
    for register in COMMANDS:
        register(commands)
    return parser


def _quiet_libraries() -> None:
    """Leave standard error to the command line's own messages and progress bar.

    The model loader's progress bar ("Loading weights", drawn by transformers through
    huggingface_hub's switch, read when transformers is imported: it is not imported yet) is off
    unless ``HF_HUB_DISABLE_PROGRESS_BARS`` is set otherwise; urllib3's retry warnings for
    Haystack's telemetry host, which an offline machine would print, are dropped. Telemetry itself
    is the user's choice: ``HAYSTACK_TELEMETRY_ENABLED=False`` turns it off (see the README).
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    connections = logging.getLogger("urllib3.connectionpool")
    if _not_telemetry not in connections.filters:
        connections.addFilter(_not_telemetry)


def _not_telemetry(record: logging.LogRecord) -> bool:
    return "posthog.com" not in record.getMessage()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    args = _parser().parse_args(argv)
    _quiet_libraries()
    for stream in (sys.stdout, sys.stderr):
        # Text from the input may hold characters the terminal's encoding cannot show (a lone
        # surrogate from a JSON escape): print them escaped rather than fail.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    previous = _on_sigterm(raise_interrupted)
    try:
        code: int = args.handler(args)
        return code
    except Interrupted as stop:
        with _signals_ignored():  # a second Ctrl-C while the message prints must not end the process by the signal
            if stop.checkpoint is not None:
                print(
                    f"answer-eval: stopped by {signal.Signals(stop.signum).name} after {stop.rows:,} rows; nothing "
                    f"was written at the output path. The rows done are kept in {stop.checkpoint}: run the same "
                    "command with --resume to continue.",
                    file=sys.stderr,
                )
        return stop.exit_code
    except InputError as exc:
        print(f"answer-eval: error: {exc}", file=sys.stderr)
        _say_kept(exc)
        return EXIT_BAD_INPUT
    except NothingGraded as exc:
        print(f"answer-eval: error: {exc}", file=sys.stderr)
        return EXIT_NOTHING_GRADED
    except BrokenPipeError as exc:
        if not _stdout_gone():
            print(f"answer-eval: error: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        # The reader of standard output left (`| head`): stop quietly, as Unix tools do, and keep
        # Python from printing the same error again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"answer-eval: error: {exc.strerror or exc}{where}", file=sys.stderr)
        _say_kept(exc)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except Exception as exc:  # noqa: BLE001 - a bug: the traceback to report it with, then what the run kept
        traceback.print_exc()
        print(
            f"answer-eval: error: an unexpected {type(exc).__name__}: this is a bug in answer-eval; please report it "
            "with the traceback above",
            file=sys.stderr,
        )
        _say_kept(exc)
        return EXIT_BUG
    finally:
        if previous is not signal.SIG_IGN:
            _on_sigterm(previous)


def _say_kept(error: BaseException) -> None:
    """After a file command's error: the rows it kept for ``--resume``, if any."""
    kept = kept_by(error)
    if kept is not None:
        rows = "the 1 row done before this is" if kept.rows == 1 else f"the {kept.rows:,} rows done before this are"
        print(
            f"answer-eval: {rows} kept in {kept.partial}; once the cause is fixed, run the same command with "
            "--resume to continue from there (without --resume the run starts over)",
            file=sys.stderr,
        )


def _stdout_gone() -> bool:
    """Whether the broken pipe is standard output's (its reader left), not some other connection's.

    A pipe whose reader closed polls as an error; where that cannot be asked, it is taken to be
    standard output's, the usual case.
    """
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll here, or stdout has no descriptor
        return True


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """SIGINT and SIGTERM ignored within the block (main thread only): the run is already stopping."""
    previous: dict[signal.Signals, Any] = {}
    with contextlib.suppress(ValueError):  # not the main thread: signals go elsewhere
        for stopping in (signal.SIGINT, signal.SIGTERM):
            previous[stopping] = signal.signal(stopping, signal.SIG_IGN)
    try:
        yield
    finally:
        for stopping, handler in previous.items():
            signal.signal(stopping, handler)


def _on_sigterm(handler: Any) -> Any:
    # SIGTERM stops a run as Ctrl-C does (cleaning up, exit code 143): in the main thread only,
    # and not when the caller chose to ignore it. Returns the handler it replaced.
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
            return signal.SIG_IGN
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        return signal.SIG_DFL


def run() -> None:
    """Console-script entry point."""
    code: int
    try:
        code = main()
    except KeyboardInterrupt:  # a signal outside a run, between two steps of the program
        code = 128 + int(signal.SIGINT)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
