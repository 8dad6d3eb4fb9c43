"""Input that never ends, or never comes: no run hangs on it, and a signal stops one that is reading.

The command line runs in process where it must end by itself, and as a real subprocess where a signal
stops it. Its standard input is a pipe this test writes to from a thread (zeros without end, a gzip
stream of them, or a few rows and then nothing, the pipe held open); a file input that never ends is
a sparse file of a tebibyte (a few rows, then zeros the file system does not store), which would take
hours to read. Each run must end by itself, or on one signal, within a generous bound (60 s): before,
every one of them ran until it was killed.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runs import cli, partial_path, record_path, start_cli, wait_for_record, write_jsonl

BOUND = 60  # seconds: "ends at all", not a timing
GOOD = {"answers": ["Paris"], "prediction": "Paris"}
GOOD_LINE = json.dumps(GOOD).encode("utf-8") + b"\n"
ZEROS = b"\0" * (1 << 16)
TEBIBYTE = 1 << 40


class _Pipe:
    """A pipe to a run's standard input, written from a thread: ``pieces``, then what :meth:`send` is given.

    It stays open until :meth:`close`; the thread ends when the run stops reading (a broken pipe).
    """

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self.read_end, self._write_end = os.pipe()
        self.written = 0
        self._more: queue.Queue[bytes | None] = queue.Queue()
        self._thread = threading.Thread(target=self._feed, args=(iter(pieces),), daemon=True)

    def start(self) -> _Pipe:
        self._thread.start()
        return self

    def send(self, data: bytes) -> None:
        """Write ``data`` after what was given (the pipe stays open)."""
        self._more.put(data)

    def _feed(self, pieces: Iterator[bytes]) -> None:
        try:
            for piece in itertools.chain(pieces, iter(self._more.get, None)):
                view = memoryview(piece)
                while view:
                    sent = os.write(self._write_end, view)
                    view = view[sent:]
                    self.written += sent
        except OSError:  # the run stopped reading (a broken pipe), or the pipe was closed
            pass

    def wait_for(self, size: int) -> None:
        """Wait until ``size`` bytes went into the pipe: past its buffer, the run is reading them."""
        deadline = time.monotonic() + BOUND
        while self.written < size:
            assert time.monotonic() < deadline, f"the run read only {self.written:,} bytes"
            time.sleep(0.01)

    def close(self) -> None:
        self._more.put(None)
        if self._thread.ident is not None:  # started
            self._thread.join(timeout=BOUND)
        os.close(self._write_end)


def _bytes_read(pid: int) -> int:
    """The bytes a process has read so far, from files and pipes alike (Linux: ``rchar`` of ``/proc/PID/io``)."""
    for line in Path(f"/proc/{pid}/io").read_text(encoding="ascii").splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/PID/io")


def _reads_on(process: subprocess.Popen[str], more: int = 1, send: Callable[[], None] | None = None) -> None:
    """Wait until the run reads at least ``more`` bytes after this call (after ``send`` gives it some).

    Called once a checkpoint record appeared: a read after it proves the run has left the batch
    the record ends (and the look for a signal at its end) and is reading on.
    """
    before = _bytes_read(process.pid)
    if send is not None:
        send()
    deadline = time.monotonic() + BOUND
    while _bytes_read(process.pid) < before + more:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run read nothing more"
        time.sleep(0.01)


def _endless(head: bytes, tail: bytes = ZEROS) -> Iterator[bytes]:
    return itertools.chain([head], itertools.repeat(tail))


def _gzipped(pieces: Iterator[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)  # a gzip member that never ends
    for piece in pieces:
        packed = compressor.compress(piece)
        if packed:
            yield packed


def _run(args: list[Any], pipe: _Pipe | None = None) -> subprocess.Popen[str]:
    process = start_cli(*args, stdin=None if pipe is None else pipe.read_end)
    if pipe is not None:
        os.close(pipe.read_end)  # the run holds its own copy: a broken pipe once it stops reading
        pipe.start()
    return process


def _to_the_end(args: list[Any], pipe: _Pipe | None = None) -> tuple[int, str]:
    """Run ``answer-eval ARGS`` in process to its end: ``(exit code, standard error)``.

    A run that does not end within :data:`BOUND` seconds ends the pytest worker, with every thread's traceback.
    """
    if pipe is None:
        done = cli(*args, timeout=BOUND)
    else:
        pipe.start()
        try:
            done = cli(*args, stdin=pipe.read_end, timeout=BOUND)
        finally:
            os.close(pipe.read_end)  # the feeding thread meets a broken pipe and ends
    return done.returncode, done.stderr


def _ended(process: subprocess.Popen[str]) -> tuple[int, str]:
    """The exit code and standard error of a run that must end within :data:`BOUND` seconds."""
    try:
        _, stderr = process.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"the run was still going {BOUND} s later")
    return process.returncode, stderr


@pytest.fixture
def pipes() -> Iterator[list[_Pipe]]:
    made: list[_Pipe] = []
    yield made
    for pipe in made:
        pipe.close()


# (arguments after "score -", what is fed, the message of the row over the limit)
ENDLESS: dict[str, tuple[list[Any], Callable[[], Iterator[bytes]], str]] = {
    "jsonl": ([], lambda: _endless(GOOD_LINE), "<stdin>:2: the line is longer than 1,000 bytes, the limit"),
    "jsonl-two-jobs": (["--jobs", 2], lambda: _endless(GOOD_LINE), "<stdin>:2: the line is longer than 1,000 bytes"),
    "csv": (
        ["--input-format", "csv"],
        lambda: _endless(b"answers,prediction\nParis,Paris\n"),
        "<stdin>:3: the row is longer than 1,000 bytes, the limit",
    ),
    "csv-quoted": (  # a quoted cell of line feeds that never closes
        ["--input-format", "csv"],
        lambda: _endless(b'answers,prediction\nParis,"', b"\n" * (1 << 16)),
        "<stdin>:2: the row is longer than 1,000 bytes, the limit",
    ),
    "tsv": (
        ["--input-format", "tsv"],
        lambda: _endless(b"answers\tprediction\nParis\tParis\n"),
        "<stdin>:3: the row is longer than 1,000 bytes, the limit",
    ),
    "json-array-string": (  # a string item that never closes
        ["--input-format", "json"],
        lambda: _endless(b'[{"answers": ["Paris"], "prediction": "Paris"}, {"prediction": "', b"a" * (1 << 16)),
        "<stdin>:2: the item is longer than 1,000 bytes, the limit",
    ),
    "gzip": ([], lambda: _gzipped(_endless(GOOD_LINE)), "<stdin>:2: the line is longer than 1,000 bytes, the limit"),
}


@pytest.mark.parametrize("name", list(ENDLESS))
def test_a_row_that_never_ends_stops_a_run_at_once_without_skip_invalid(name, pipes):
    # Before, the reader read on to the end of the row (in 1 MiB pieces, or the whole record for
    # CSV and JSON arrays) before saying it was too long: /dev/zero as input ran until killed.
    args, feed, message = ENDLESS[name]
    pipe = _Pipe(feed())
    pipes.append(pipe)
    code, stderr = _to_the_end(["score", "-", "--max-line-bytes", 1000, *args], pipe)
    assert code == 2, stderr
    assert message in stderr
    assert "Traceback" not in stderr


def test_compare_stops_at_once_on_a_row_that_never_ends(tmp_path, pipes):
    # compare, report and agreement read their files whole (inputs/item_files.py), with the default limit.
    other = write_jsonl(tmp_path / "other.jsonl", [GOOD])
    pipe = _Pipe(_endless(GOOD_LINE, b"\0" * (1 << 20)))
    pipes.append(pipe)
    code, stderr = _to_the_end(["compare", "-", other], pipe)
    assert code == 2, stderr
    assert "<stdin>:2: the line is longer than 67,108,864 bytes, the limit" in stderr


@pytest.mark.subprocess  # stopped by a signal
@pytest.mark.parametrize(
    ("name", "signum"),
    [
        ("jsonl", signal.SIGTERM),
        ("jsonl-two-jobs", signal.SIGINT),
        ("csv", signal.SIGINT),
        ("json-array-string", signal.SIGTERM),
        ("gzip", signal.SIGTERM),
    ],
)
def test_one_signal_stops_a_run_skipping_a_row_that_never_ends(name, signum, pipes):
    # With --skip-invalid a row that never ends is read and dropped until the input ends (memory
    # flat). Before, a signal waited for the batch to be read, which that row never let happen.
    args, feed, _ = ENDLESS[name]
    pipe = _Pipe(feed())
    pipes.append(pipe)
    process = _run(["score", "-", "--max-line-bytes", 1000, "--skip-invalid", *args], pipe)
    pipe.wait_for((1 << 18) if name == "gzip" else (2 << 20))  # past the pipe's buffer: the run is reading the row
    process.send_signal(signum)
    code, stderr = _ended(process)
    assert code == 128 + signum, stderr
    assert "Traceback" not in stderr


@pytest.mark.subprocess  # stopped by a signal
@pytest.mark.parametrize(("jobs", "rows"), [(1, 300), (2, 9_000)])
def test_one_signal_stops_a_run_waiting_on_a_pipe_that_never_closes(tmp_path, pipes, jobs, rows):
    # A slow producer, or a FIFO whose writer never closes it: the run waits on its input between
    # two rows. Before, a signal waited for the batch (256 rows; with --jobs, chunks of 2,000
    # lines) to be read, which did not happen while the pipe stayed open.
    output = tmp_path / "out.jsonl"
    pipe = _Pipe([GOOD_LINE * rows])  # the pipe stays open after them
    pipes.append(pipe)
    process = _run(["score", "-", "--output", output, "--jobs", jobs], pipe)
    wait_for_record(process, output)  # made after the first batch (256 rows; with --jobs 2, the first chunk taken)
    _reads_on(process, len(GOOD_LINE), lambda: pipe.send(GOOD_LINE))  # and the run reads on, then waits
    process.send_signal(signal.SIGINT)
    code, stderr = _ended(process)
    assert code == 130, stderr
    assert list(tmp_path.iterdir()) == []  # standard input cannot be read again: nothing kept to resume


def _endless_file(path: Path, rows: int) -> bytes:
    """``rows`` good rows, then zeros to a tebibyte, not stored (a sparse file): a line that never ends."""
    head = GOOD_LINE * rows
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(TEBIBYTE)
    return head


def _mend(path: Path, head: bytes) -> None:
    path.write_bytes(head + json.dumps({"answers": ["Paris"], "prediction": "Lyon"}).encode("utf-8") + b"\n")


def test_a_file_with_a_row_that_never_ends_stops_at_it_and_keeps_the_rows_before_for_resume(tmp_path):
    source = tmp_path / "rows.jsonl"
    head = _endless_file(source, 300)
    output = tmp_path / "out.jsonl"
    code, stderr = _to_the_end(["score", source, "--output", output, "--max-line-bytes", 1000])
    assert code == 2, stderr
    assert f"{source}:301: the line is longer than 1,000 bytes, the limit" in stderr
    assert "the 300 rows done before this are kept" in stderr
    record = json.loads(record_path(output).read_text(encoding="utf-8"))
    assert (record["position"]["rows"], record["position"]["input_offset"]) == (300, len(head))
    _mend(source, head)
    reference = tmp_path / "reference.jsonl"
    assert _to_the_end(["score", source, "--output", reference, "--max-line-bytes", 1000])[0] == 0
    code, stderr = _to_the_end(["score", source, "--output", output, "--max-line-bytes", 1000, "--resume"])
    assert code == 0, stderr
    assert output.read_bytes() == reference.read_bytes()


@pytest.mark.subprocess  # stopped by a signal
def test_a_signal_stops_a_run_skipping_a_row_that_never_ends_in_a_file_and_keeps_its_checkpoint(tmp_path):
    source = tmp_path / "rows.jsonl"
    head = _endless_file(source, 300)
    output = tmp_path / "out.jsonl"
    run = ["score", source, "--output", output, "--max-line-bytes", 1000, "--skip-invalid"]
    process = _run(run)
    wait_for_record(process, output)  # made after the first batch (256 rows)
    _reads_on(process, 8 << 20)  # then come rows 257-300, and the endless line
    process.send_signal(signal.SIGTERM)
    code, stderr = _ended(process)
    assert code == 143, stderr
    assert "stopped by SIGTERM after 256 rows" in stderr
    record = json.loads(record_path(output).read_text(encoding="utf-8"))
    assert record["position"]["rows"] == 256  # the last row boundary: the rows read after it are read again
    assert len(partial_path(output).read_bytes().splitlines()) == 256
    _mend(source, head)
    reference = tmp_path / "reference.jsonl"
    assert _to_the_end(["score", source, "--output", reference, "--max-line-bytes", 1000])[0] == 0
    code, stderr = _to_the_end([*run, "--resume"])
    assert code == 0, stderr
    assert output.read_bytes() == reference.read_bytes()


LINE_FEEDS = 100_000_000


@pytest.fixture(scope="module")
def line_feed_cell(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CSV whose second record is one quoted cell of 100,000,000 line feeds (100 MB), then two rows."""
    path = tmp_path_factory.mktemp("line-feeds") / "cells.csv"
    with path.open("wb") as handle:
        handle.write(b'answers,prediction,correct\nParis,"')
        block = b"\n" * 10_000_000
        for _ in range(LINE_FEEDS // len(block)):
            handle.write(block)
        # The last row has a 'correct' cell: a column the command writes, refused even with --skip-invalid.
        handle.write(b'"\nParis,Paris\nParis,Lyon,yes\n')
    return path


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_quoted_csv_cell_of_millions_of_line_feeds_is_read_fast_and_keeps_line_numbers(line_feed_cell, jobs):
    # One blank line per file line kept the numbers right but took about 250 s for 100 MB of line
    # feeds in one cell: a marker now stands for all of them.
    args = ["score", line_feed_cell, "--skip-invalid", "--jobs", jobs]
    code, stderr = _to_the_end(args)
    assert code == 2, stderr
    last = LINE_FEEDS + 4  # the header, the record's first line and its line feeds, the row after it
    assert f"{line_feed_cell}:{last}: the row already has a column 'correct'" in stderr
