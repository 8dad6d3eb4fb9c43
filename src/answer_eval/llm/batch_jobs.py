"""A file's batches at the provider: submitted, polled and collected through the OpenAI SDK, recorded across days.

**The record** (:class:`BatchRun`) lives beside the output, hidden: ``.NAME.batch.json`` (each
batch: its id, server, model, the requests it holds, whether its results were collected, and
how many batches each request was sent in) and ``.NAME.batch-replies.jsonl`` (every answer
collected, one request a line, appended). Both are written through a temporary file and a
rename, or appended whole lines, so a crash leaves the last good record. Neither holds the API
key: the SDK's client is the chat generator's own (``generator.client``), made from the key in
the environment.

**Submitting** writes the requests as a batch input file (``.NAME.batch-K.jsonl``: one
``{"custom_id", "method", "url", "body"}`` a line), uploads it (``files.create``, purpose
``batch``) and creates the batch (``batches.create``, a 24-hour window). A Ctrl-C during the
upload leaves nothing recorded (an orphan file at the provider costs nothing); from the moment
the batch is created until it is recorded, SIGINT and SIGTERM wait (:func:`held_signals`), so a
paid batch is never lost.

**Collecting** downloads the output and error files a line at a time into a temporary file
(at most :func:`download_limit` bytes; what is past it is not read, its requests asked again),
reads them (:func:`answer_eval.llm.batches.read_results`), appends the answers and marks the batch
collected. A Ctrl-C during a download leaves the batch uncollected: the next ``--resume`` downloads again.

From Python, :class:`~answer_eval.llm.batch_grading.BatchGrading` does the same for an LLM component.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from answer_eval.engine.output_files import temporary_file, write_bytes_atomically
from answer_eval.inputs.jsonl import iter_raw_lines
from answer_eval.llm.batches import (
    ENDPOINT,
    FATAL_STATUS,
    MAX_LINE_BYTES,
    Answer,
    Book,
    Pending,
    Results,
    read_results,
    server_of,
)
from answer_eval.llm.generators import Redactor, cut_words, generator_secrets

__all__ = [
    "ENDED",
    "EXIT_RUNNING",
    "BatchApiError",
    "BatchRun",
    "Job",
    "advance",
    "collect",
    "download_limit",
    "held_signals",
    "poll",
    "submit",
]

EXIT_RUNNING = 75
"""The command line's exit code while a batch is still running (``EX_TEMPFAIL``: try again later)."""

ENDED = frozenset({"completed", "expired", "cancelled", "failed"})
"""The statuses of a batch that has ended (any other: validating, in_progress, finalizing, cancelling)."""

logger = logging.getLogger(__name__)

_FORMAT = "answer-eval batch run"
_VERSION = 1
_STATE_LIMIT = 256 * 1024 * 1024  # the record lists every request's id: 10,000 requests take 0.7 MB
_API_TIMEOUT = 600.0  # seconds: an upload of 50,000 requests is tens of megabytes


class BatchApiError(RuntimeError):
    """The batch API refused or failed a call (its words redacted: no key in them)."""


@dataclass
class Job:
    """One batch: where it was sent, what it holds, what it said last.

    :param id: The provider's batch id.
    :param server: The server's URL (no credentials) and ``model``: the generator whose client polls it.
    :param ids: The custom ids of its requests, in the order of its input file.
    :param status: Its status when last asked; ``counts``: its request counts then.
    :param collected: Whether its results are in the replies file.
    :param input_file_id: The uploaded input file: how a batch created but not recorded is found again.
    """

    id: str
    server: str
    model: str
    ids: list[str]
    status: str = "validating"
    counts: dict[str, int] = field(default_factory=dict)
    collected: bool = False
    input_file_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """As the record keeps it."""
        return dict(vars(self))


def _counts(data: Any) -> dict[str, int]:
    """A record's counts by request: ``TypeError`` unless each is an integer of 0 or more (not a bool)."""
    if not isinstance(data, dict):
        raise TypeError("not an object of counts")
    for count in data.values():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise TypeError("a count is not an integer of 0 or more")
    return {str(name): count for name, count in data.items()}


def _job(data: Any) -> Job:
    """A job as the record holds it; ``TypeError`` for one of another shape (a record edited by hand)."""
    job = Job(**data)
    texts = (job.id, job.server, job.model, job.status, job.input_file_id)
    if not all(isinstance(text, str) for text in texts) or not isinstance(job.collected, bool):
        raise TypeError("a job's fields have other types")
    if not isinstance(job.ids, list) or not all(isinstance(name, str) for name in job.ids):
        raise TypeError("a job's ids are not a list of strings")
    if not isinstance(job.counts, dict) or not all(isinstance(count, int) for count in job.counts.values()):
        raise TypeError("a job's counts are not integers")
    return job


@dataclass
class BatchRun:
    """The record of a file's batch run, beside its output (see the module docstring)."""

    output: Path
    jobs: list[Job] = field(default_factory=list)
    rounds: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    cached: set[str] = field(default_factory=set)

    @staticmethod
    def state_path(output: str | os.PathLike[str]) -> Path:
        """Where the record of ``output``'s batch run is kept."""
        path = Path(output)
        return path.with_name(f".{path.name}.batch.json")

    @property
    def path(self) -> Path:
        """The record's file."""
        return self.state_path(self.output)

    @property
    def replies_path(self) -> Path:
        """The answers collected, one request a line."""
        return self.output.with_name(f".{self.output.name}.batch-replies.jsonl")

    def input_path(self, number: int) -> Path:
        """The input file of the run's batch ``number`` (from 1)."""
        return self.output.with_name(f".{self.output.name}.batch-{number}.jsonl")

    @classmethod
    def load(cls, output: str | os.PathLike[str]) -> BatchRun | None:
        """The record of ``output``'s batch run (``None``: none); ``ValueError`` for a file that is not one."""
        from answer_eval.inputs.jsonl import read_json_file

        path = cls.state_path(output)
        if not path.exists():
            return None
        data = read_json_file(path, _STATE_LIMIT, "batch run record")
        if not isinstance(data, dict) or data.get("format") != _FORMAT or data.get("version") != _VERSION:
            raise ValueError(f"{path} is not the record of a batch run of this version of answer-eval")
        try:
            jobs = [_job(job) for job in data["jobs"]]
            rounds, failures = _counts(data["rounds"]), _counts(data["failures"])
            cached = data["cached"]
            if not isinstance(cached, list) or not all(isinstance(key, str) for key in cached):
                raise TypeError("the cached keys are not a list of strings")
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ValueError(f"{path} is a damaged batch run record: delete it to start over") from None
        return cls(Path(output), jobs, rounds, failures, set(cached))

    def save(self) -> None:
        """Write the record (through a temporary file and a rename)."""
        data = {
            "format": _FORMAT,
            "version": _VERSION,
            "jobs": [job.to_json() for job in self.jobs],
            "rounds": self.rounds,
            "failures": self.failures,
            "cached": sorted(self.cached),
        }
        write_bytes_atomically(self.path, json.dumps(data, separators=(",", ":")).encode("utf-8"))

    def answers(self) -> dict[str, Answer]:
        """Every answer collected (a later line for a request replaces an earlier one)."""
        found: dict[str, Answer] = {}
        try:
            handle = open(self.replies_path, "rb")  # noqa: SIM115 - closed below; missing: no answers yet
        except FileNotFoundError:
            return found
        with handle:
            for raw, _size in iter_raw_lines(handle, MAX_LINE_BYTES):
                try:
                    data = json.loads(raw or b"null")
                    found[data["custom_id"]] = Answer(data["status"], data["body"], data["error"])
                except (ValueError, RecursionError, TypeError, KeyError):
                    continue  # a line cut by a crash: its request is asked again
        return found

    def keep(self, answers: Mapping[str, Answer], redact: Callable[[str], str] = str) -> None:
        """Append ``answers`` to the replies file, whole lines, synced to disk (``redact``: the key a body echoes)."""
        lines = [redact(_line(name, answer)).encode("utf-8") for name, answer in answers.items()]
        with open(self.replies_path, "ab+") as handle:
            if handle.tell():  # a line a crash cut short is closed first, or the next would be glued to it
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    lines.insert(0, b"\n")
            handle.write(b"".join(lines))
            handle.flush()
            os.fsync(handle.fileno())

    def book(self, options: Any, live: bool) -> Book:
        """The :class:`~answer_eval.llm.batches.Book` of a pass over every answer so far.

        Each request is sent the options' ``max_retries`` more times at most; with ``live``, what is left is
        sent live.
        """
        retries = int(getattr(options, "max_retries", 2))
        return Book(self.answers(), self.rounds, self.failures, self.cached, max_rounds=retries + 1, live=live)

    def settle(self, book: Book) -> None:
        """After a pass: the cache keys it wrote kept, the answers that stopped it (a refused key) forgotten."""
        self.cached |= book.cached
        if book.fatal:  # every answer of a refused key or model, not only those the stopped pass reached
            self.forget({name for name, answer in self.answers().items() if answer.status in FATAL_STATUS})
        elif self.jobs:
            self.save()

    def running(self) -> list[Job]:
        """The batches whose results are not collected yet."""
        return [job for job in self.jobs if not job.collected]

    def remove(self) -> None:
        """Remove the record, then the replies and the input files: the run is written (or starts anew).

        The record first: a replies file without a record is a leftover a new run removes, never reads.
        """
        self.path.unlink(missing_ok=True)
        for number in range(1, len(self.jobs) + 2):  # one more: an input whose batch was never created
            self.input_path(number).unlink(missing_ok=True)
        self.replies_path.unlink(missing_ok=True)

    def forget(self, names: set[str]) -> None:
        """Drop the answers to ``names`` (a refused key's: once it is mended they are asked again)."""
        kept = {name: answer for name, answer in self.answers().items() if name not in names}
        write_bytes_atomically(self.replies_path, "".join(_line(name, a) for name, a in kept.items()).encode("utf-8"))
        for name in names:
            self.rounds.pop(name, None)
            self.failures.pop(name, None)
        self.save()


def _line(name: str, answer: Answer) -> str:
    """One answer as the replies file keeps it: a JSON line."""
    return json.dumps({"custom_id": name, **answer.to_json()}, separators=(",", ":")) + "\n"


def _client(generator: Any) -> Any:
    """The SDK client of ``generator`` (its key, URL and HTTP client), with room for uploads and a few retries."""
    if getattr(generator, "client", None) is None and callable(getattr(generator, "warm_up", None)):
        generator.warm_up()
    return generator.client.with_options(timeout=_API_TIMEOUT, max_retries=2)


def _api_errors() -> tuple[type[BaseException], ...]:
    """What a call of the batch API may fail with: the SDK's errors (HTTP, connection) and the disk's."""
    import openai

    return (openai.OpenAIError, OSError)


def _api_words(exc: BaseException, generator: Any) -> str:
    redact = Redactor(generator_secrets(generator))
    return cut_words(redact(f"{type(exc).__name__}: {exc}"), 400)


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends, then act as they would have (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    for number, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(number, lambda got, _frame: came.append(got))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if came:
            signal.raise_signal(came[0])


def submit(run: BatchRun, pending: Sequence[Pending]) -> list[Job]:
    """Send ``pending`` as batches, one per server and model, each recorded as soon as it is created."""
    groups: dict[tuple[str, str], list[Pending]] = {}
    for request in pending:
        groups.setdefault((request.server, request.model), []).append(request)
    made = []
    for (server, model), requests in groups.items():
        made.append(_submit_one(run, server, model, requests))
    return made


def _submit_one(run: BatchRun, server: str, model: str, requests: Sequence[Pending]) -> Job:
    generator = requests[0].generator
    path = run.input_path(len(run.jobs) + 1)
    lines = (
        json.dumps({"custom_id": r.custom_id, "method": "POST", "url": ENDPOINT, "body": r.body}, ensure_ascii=False)
        for r in requests
    )
    write_bytes_atomically(path, "".join(line + "\n" for line in lines).encode("utf-8"))
    client = _client(generator)
    try:
        with open(path, "rb") as handle:
            uploaded = client.files.create(file=(path.name.lstrip("."), handle), purpose="batch")
    except _api_errors() as exc:
        raise BatchApiError(
            f"the batch input file could not be uploaded to {server}: {_api_words(exc, generator)}"
        ) from None
    # Recorded before the batch is created: a process killed between the two finds its batch again (adopt).
    job = Job("", server, model, [r.custom_id for r in requests], _CREATING, input_file_id=str(uploaded.id))
    run.jobs.append(job)
    run.save()
    with held_signals():  # from the batch's creation to its record: a paid batch is never lost
        try:
            # Never retried: the API takes no idempotency key, so a retry after a timeout could make a second batch.
            batch = client.with_options(max_retries=0).batches.create(
                input_file_id=uploaded.id,
                endpoint=ENDPOINT,
                completion_window="24h",
                metadata={"created_by": "answer-eval", "input": path.name.lstrip(".")[:500]},
            )
        except _api_errors() as exc:
            words = _api_words(exc, generator)
            if not _refused(exc):  # a timeout, a lost connection, a 5xx: it may exist; the next --resume looks
                raise BatchApiError(
                    f"creating the batch at {server} got no clear answer ({words}); it may have been created: run "
                    "the same command with --resume, which looks for it before sending anything"
                ) from None
            run.jobs.remove(job)
            run.save()
            with contextlib.suppress(*_api_errors()):
                client.files.delete(uploaded.id)
            raise BatchApiError(f"the batch could not be created at {server}: {words}") from None
        _created(run, job, batch)
    return job


def _refused(exc: BaseException) -> bool:
    """Whether the provider answered a call with a refusal (HTTP 4xx): nothing was made."""
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and 400 <= status < 500


def _created(run: BatchRun, job: Job, batch: Any) -> None:
    """``job`` is the provider's ``batch``: recorded, and its requests counted as sent once more."""
    job.id, job.status = str(batch.id), str(batch.status)
    for name in job.ids:
        run.rounds[name] = run.rounds.get(name, 0) + 1
    run.save()


_CREATING = "creating"
"""A job's status from its input file's upload to its batch's record (see :func:`adopt`)."""

_LISTED = 1000
"""The provider's latest batches looked through for one created but not recorded."""


def adopt(run: BatchRun, job: Job, generator: Any) -> None:
    """A job left ``creating`` (the process ended between the batch's creation and its record): found again or dropped.

    The provider's latest batches are looked through for the one made from the job's input file; none
    means it was never created, and its requests are asked again by the next pass.
    """
    try:
        for index, batch in enumerate(_client(generator).batches.list(limit=100)):
            if index >= _LISTED:
                break
            if getattr(batch, "input_file_id", None) == job.input_file_id:
                _created(run, job, batch)
                return
    except _api_errors() as exc:
        if not _refused(exc):
            raise BatchApiError(
                f"the batches at {job.server} could not be listed: {_api_words(exc, generator)}"
            ) from None
        # A server that lists no batches (vLLM's runner): the batch cannot be found; its requests are sent again.
        logger.warning(
            "answer-eval: %s lists no batches (%s): a batch made from the input file %s, if any, is not collected; "
            "cancel it there",
            job.server,
            _api_words(exc, generator),
            job.input_file_id,
        )
    run.jobs.remove(job)
    run.save()


def advance(
    run: BatchRun, generators: Sequence[Any], collected: Callable[[Job, Results], None] | None = None
) -> list[Job]:
    """Ask the provider for every batch not collected yet, and collect those that ended: the ones still running.

    :param collected: Called as ``collected(job, results)`` for each batch collected (the command line says so).
    """
    for job in [job for job in run.running() if job.status == _CREATING]:
        adopt(run, job, generator_for(job, generators))
    running = []
    for job in run.running():
        generator = generator_for(job, generators)
        batch = poll(job, generator)
        if job.status not in ENDED:
            running.append(job)
            continue
        results = collect(run, job, batch, generator)
        if collected is not None:
            collected(job, results)
    if run.jobs:
        run.save()
    return running


def generator_for(job: Job, generators: Iterable[Any]) -> Any:
    """The generator of this run that sends to ``job``'s server and model (its client polls the batch)."""
    for generator in generators:
        if server_of(generator) == (job.server, job.model):
            return generator
    raise BatchApiError(
        f"batch {job.id} was sent to {job.model} at {job.server}, which this command does not name: give the "
        "same --model and --api-base-url as the command that sent it"
    )


def poll(job: Job, generator: Any) -> Any:
    """Ask the provider for ``job``'s batch; its status and counts are noted in ``job``."""
    try:
        batch = _client(generator).batches.retrieve(job.id)
    except _api_errors() as exc:
        raise BatchApiError(f"batch {job.id} could not be asked for: {_api_words(exc, generator)}") from None
    job.status = str(batch.status)
    counts = getattr(batch, "request_counts", None)
    job.counts = {
        name: value
        for name in ("total", "completed", "failed")
        if isinstance(value := getattr(counts, name, None), int) and not isinstance(value, bool)
    }
    return batch


def download_limit(requests: int) -> int:
    """The most bytes of a batch's result files read: 1 MiB a request, and 64 MiB more (a grade's reply is a few kB)."""
    return 64 * 1024 * 1024 + requests * 1024 * 1024


def collect(run: BatchRun, job: Job, batch: Any, generator: Any) -> Results:
    """Download and read an ended batch's results; its answers kept, the batch marked collected.

    A request the batch did not answer at all (expired, cancelled, failed batch, a line not read) gets
    an answer saying so: not run, asked again in the next batch while its rounds last.
    """
    asked = set(job.ids)
    results = Results()
    limit = download_limit(len(job.ids))
    for file_id in (getattr(batch, "output_file_id", None), getattr(batch, "error_file_id", None)):
        if file_id:
            results.add(_download(run, str(file_id), asked, generator, limit))
    code = {"expired": "batch_expired", "cancelled": "batch_cancelled", "failed": "batch_failed"}.get(job.status)
    for name in job.ids:
        if name not in results.answers:
            results.answers[name] = Answer(None, None, code or "no result line")
    for name, answer in results.answers.items():
        if answer.status is not None and not answer.answered:  # a try the server answered: a call, as live
            run.failures[name] = run.failures.get(name, 0) + 1
    redact = Redactor(generator_secrets(generator))
    # A failed batch says why (its input refused, a token limit): said first, before any unreadable line.
    errors = getattr(getattr(batch, "errors", None), "data", None)
    said = [f"{getattr(e, 'code', None) or 'error'}: {getattr(e, 'message', None) or ''}" for e in (errors or [])[:3]]
    results.problems = [cut_words(redact(words), 200) for words in said] + results.problems
    run.keep(results.answers, redact)
    job.collected = True
    run.save()
    return results


def _download(run: BatchRun, file_id: str, asked: set[str], generator: Any, limit: int) -> Results:
    descriptor, temp = temporary_file(run.output, ".batch-download")
    try:
        with open(descriptor, "w+b") as handle:
            try:
                with _client(generator).files.with_streaming_response.content(file_id) as response:
                    _copy_within(response.iter_bytes(), handle, limit)
            except _api_errors() as exc:
                raise BatchApiError(
                    f"the batch file {file_id} could not be downloaded: {_api_words(exc, generator)}"
                ) from None
            handle.seek(0)
            return read_results(handle, asked)
    finally:
        temp.unlink(missing_ok=True)


def _copy_within(chunks: Iterable[bytes], handle: Any, limit: int) -> None:
    """Write ``chunks`` to ``handle`` up to ``limit`` bytes; the rest is not read (a file past any real batch's)."""
    written = 0
    for chunk in chunks:
        room = limit - written
        handle.write(chunk[:room])
        written += min(len(chunk), room)
        if written >= limit:
            return
