"""OpenAI's Files and Batch APIs for the loopback test server (:mod:`tests.openai_server`).

A batch answers its requests through the server's own :data:`~tests.openai_server.Script` and completion builder,
so a batch run and a live run on the same script get the same replies. How a batch runs (the statuses it shows,
how it ends, what its result files hold) is a :class:`BatchPlan`. Nothing happens in the background: each
``GET /v1/batches/{id}`` advances the batch by one status, so a test decides every step and never sleeps.

This module holds the state and the wire objects; the HTTP handler lives in :mod:`tests.openai_server`, which
hands each request here and sends back what it gets (or the :class:`ApiError` raised).
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email import policy
from email.feedparser import BytesFeedParser
from email.message import EmailMessage
from typing import Any, Literal

__all__ = ["BATCH_ENDPOINT", "ApiError", "BatchEnd", "BatchPlan", "BatchStore", "StoredFile", "read_upload"]

BATCH_ENDPOINT = "/v1/chat/completions"
"""The one endpoint a batch may target here (the server answers nothing else)."""

BatchEnd = Literal["completed", "expired", "cancelled", "failed"]

_RUNNING = frozenset({"validating", "in_progress", "finalizing"})
_ENDS = frozenset({"completed", "expired", "cancelled", "failed"})
_PURPOSES = frozenset({"assistants", "batch", "fine-tune", "vision", "user_data", "evals"})
_DAY = 24 * 60 * 60

# What OpenAI writes in the error file for a request the batch never ran, by how the batch ended.
_NOT_RUN = {
    "expired": ("batch_expired", "This request could not be executed before the completion window expired."),
    "cancelled": ("batch_cancelled", "This request was not executed because the batch was cancelled."),
}

# The validation error of a plan that ends "failed" on valid input: the failure OpenAI users meet most.
_PLAN_FAILURE = {
    "code": "token_limit_exceeded",
    "message": "Enqueued token limit reached for this model in this organization. Try again once some batches end.",
    "param": None,
    "line": None,
}


@dataclass(frozen=True)
class BatchPlan:
    """How the server runs a batch: the statuses it shows, how it ends, and the misbehaviours a test asks for.

    The server reads its current plan (``server.batch``, replaceable at any time) at each step, so a test may
    change how a batch already created ends.

    Statuses. The creation answer shows ``statuses[0]``, each ``GET /v1/batches/{id}`` the next one, and the GET
    after the last reaches the end (with no statuses, the creation answer already shows the end). Allowed:
    ``validating``, ``in_progress``, ``finalizing``. ``request_counts`` grow with the position (``total`` is 0
    while validating, as OpenAI's). A batch whose input fails validation shows only the leading ``validating``
    statuses, then ``failed``.

    End. ``end`` is how the batch ends: ``completed`` answers every request; ``expired`` and ``cancelled`` answer
    the first ``answered`` requests of the input (``None``: half of them, rounded down) and put the others in the
    error file with error code ``batch_expired`` / ``batch_cancelled``; ``failed`` is a failed validation
    (``errors`` holds a ``token_limit_exceeded`` error, and there are no result files). A client's cancel shows
    ``cancelling`` and ends ``cancelled`` at the next GET, by the same ``answered`` rule.

    Result files. ``lines`` rewrites the output file's line objects (in input order) before they are written: a
    test shuffles them, adds unknown ``custom_id``s, drops some. ``output`` then rewrites the output file's bytes:
    a test truncates them mid-line, nests JSON deep, makes them huge (the server keeps that one copy and sends it
    in place). A result file exists only when it has bytes, as OpenAI's ``output_file_id`` / ``error_file_id``.

    ``lose_creation``: ``POST /v1/batches`` makes the batch but answers 502, as a creation whose answer a
    timeout or a dropped connection lost (the client cannot tell whether it was made).

    Interruptions, for stopping a client mid-transfer. ``on_upload`` is called and ``upload_delay`` seconds are
    slept when a ``POST /v1/files`` arrives, before its body is read (the client is still sending, or waiting for
    the answer). ``on_content`` is called and ``content_delay`` seconds are slept midway through sending any
    file's content (the headers and the first half sent). The sleeps end early when the server stops, as a
    :class:`~tests.openai_server.Reply`'s ``delay`` does.
    """

    statuses: tuple[str, ...] = ("validating", "in_progress")
    end: BatchEnd = "completed"
    answered: int | None = None
    lines: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    output: Callable[[bytes], bytes] | None = None
    upload_delay: float = 0.0
    content_delay: float = 0.0
    on_upload: Callable[[], object] | None = None  # what it returns is ignored: a lambda may return anything
    on_content: Callable[[], object] | None = None
    lose_creation: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "statuses", tuple(self.statuses))  # a list given is kept as the tuple it means
        unknown = [status for status in self.statuses if status not in _RUNNING]
        if unknown:
            raise ValueError(f"statuses before the end must be among {sorted(_RUNNING)}, got {unknown}")
        if self.end not in _ENDS:
            raise ValueError(f"end must be one of {sorted(_ENDS)}, got {self.end!r}")
        if self.answered is not None and self.answered < 0:
            raise ValueError(f"answered must be None or >= 0, got {self.answered}")
        if self.upload_delay < 0 or self.content_delay < 0:
            raise ValueError("delays must be >= 0")


class ApiError(Exception):
    """A request the API refuses: the handler answers ``status`` with OpenAI's error body carrying ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class StoredFile:
    """One file the server holds: uploaded, or a batch's output or error file."""

    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def info(self) -> dict[str, Any]:
        """The wire ``file`` object."""
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


def read_upload(content_type: str, body: bytes) -> tuple[str, str, bytes]:
    """The ``purpose``, file name and file bytes of a ``POST /v1/files`` multipart/form-data body."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise ApiError(400, f"Expected a multipart/form-data body, got Content-Type {content_type!r}.")
    # The stdlib's MIME parser reads form data once given the Content-Type line it lacks; fed in two pieces,
    # the body is not copied to prepend that line.
    parser = BytesFeedParser(policy=policy.HTTP)
    parser.feed(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n")
    parser.feed(body)
    message = parser.close()
    if not isinstance(message, EmailMessage) or not message.is_multipart():
        raise ApiError(400, "The multipart/form-data body could not be parsed.")
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = (part.get_filename(), payload)
    if "file" not in fields:
        raise ApiError(400, "Missing required parameter: 'file'.")
    if "purpose" not in fields:
        raise ApiError(400, "Missing required parameter: 'purpose'.")
    purpose = fields["purpose"][1].decode("utf-8", "replace")
    if purpose not in _PURPOSES:
        raise ApiError(400, f"Invalid value for 'purpose': {purpose!r}.")
    filename, data = fields["file"]
    return purpose, filename or "upload", data


Answer = Callable[[dict[str, Any]], tuple[int, Any]]
"""Answers one request body as the live endpoint would: the HTTP status and the response body (a JSON value)."""


@dataclass
class _Batch:
    """A batch: its wire object, and what the server needs to end it."""

    fields: dict[str, Any]
    requests: list[tuple[str, dict[str, Any]]]  # (custom_id, body) of each valid line, in input order
    errors: list[dict[str, Any]]  # validation errors; any makes the batch fail
    position: int = 0  # index of the status shown in the plan's statuses
    cancelling: bool = False

    @property
    def ended(self) -> bool:
        return self.fields["status"] in _ENDS


class BatchStore:
    """The files and batches of one server, thread-safe; every method answers a wire object or raises
    :class:`ApiError`.

    ``plan`` gives the current :class:`BatchPlan`; ``answer`` answers one request body as the live endpoint does.
    """

    def __init__(self, plan: Callable[[], BatchPlan], answer: Answer) -> None:
        self._plan = plan
        self._answer = answer
        # Reentrant: a script (run while a batch ends, under the lock) may call back into the server.
        self._lock = threading.RLock()
        self._files: dict[str, StoredFile] = {}
        self._batches: dict[str, _Batch] = {}
        self._file_ids = itertools.count(1)
        self._batch_ids = itertools.count(1)
        self._line_ids = itertools.count(1)
        self._bodies: list[dict[str, Any]] = []
        self._polls = 0

    # -- what tests read --------------------------------------------------------------------------------------

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """A copy of the request bodies of every batch created, in creation and file order."""
        with self._lock:
            return list(self._bodies)

    @property
    def polls(self) -> int:
        """How many ``GET /v1/batches/{id}`` arrived."""
        with self._lock:
            return self._polls

    def file_data(self, file_id: str) -> bytes:
        """A file's bytes (the stored object itself: no copy)."""
        with self._lock:
            return self._file(file_id).data

    def peek(self, batch_id: str) -> dict[str, Any]:
        """The batch object as it stands, without advancing it as a GET does."""
        with self._lock:
            return copy.deepcopy(self._batch(batch_id).fields)

    # -- files ------------------------------------------------------------------------------------------------

    def create_file(self, filename: str, purpose: str, data: bytes) -> dict[str, Any]:
        """Store a file; its wire object."""
        with self._lock:
            return self._store_file(filename, purpose, data).info()

    def file_info(self, file_id: str) -> dict[str, Any]:
        """``GET /v1/files/{id}``."""
        with self._lock:
            return self._file(file_id).info()

    def delete_file(self, file_id: str) -> dict[str, Any]:
        """``DELETE /v1/files/{id}``."""
        with self._lock:
            self._file(file_id)
            del self._files[file_id]
            return {"id": file_id, "object": "file", "deleted": True}

    def list_files(self, query: Mapping[str, str]) -> dict[str, Any]:
        """``GET /v1/files``: newest first, ``purpose`` filters, ``after`` and ``limit`` page."""
        with self._lock:
            objects = [stored.info() for stored in reversed(self._files.values())]
        if "purpose" in query:
            objects = [info for info in objects if info["purpose"] == query["purpose"]]
        return _page(objects, query, default_limit=10_000)

    # -- batches ----------------------------------------------------------------------------------------------

    def create_batch(self, request: Any) -> dict[str, Any]:
        """``POST /v1/batches``: validate the input file's lines and show the plan's first status."""
        if not isinstance(request, dict):
            raise ApiError(400, "The request body must be a JSON object.")
        input_file_id = request.get("input_file_id")
        if not isinstance(input_file_id, str) or not input_file_id:
            raise ApiError(400, "Missing required parameter: 'input_file_id'.")
        if request.get("endpoint") != BATCH_ENDPOINT:
            raise ApiError(400, f"Invalid value for 'endpoint': this server batches {BATCH_ENDPOINT} only.")
        if request.get("completion_window") != "24h":
            raise ApiError(400, "Invalid value for 'completion_window': only '24h' is supported.")
        metadata = request.get("metadata")
        if metadata is not None and not (
            isinstance(metadata, dict) and all(isinstance(value, str) for value in metadata.values())
        ):
            raise ApiError(400, "Invalid value for 'metadata': an object of strings is expected.")
        with self._lock:
            source = self._file(input_file_id)
            if source.purpose != "batch":
                raise ApiError(400, f"File {input_file_id} has purpose {source.purpose!r}, not 'batch'.")
            requests, errors = self._read_requests(source.data)
            now = int(time.time())
            batch_id = f"batch_{next(self._batch_ids)}"
            batch = _Batch(fields=_batch_object(batch_id, request, now), requests=requests, errors=errors)
            if requests:
                batch.fields["model"] = requests[0][1].get("model")
            self._batches[batch_id] = batch
            self._step(batch)
            if self._plan().lose_creation:  # made, but the answer lost on its way (a timeout, a dropped link)
                raise ApiError(502, "Bad gateway: the upstream closed the connection.")
            return copy.deepcopy(batch.fields)

    def retrieve(self, batch_id: str) -> dict[str, Any]:
        """``GET /v1/batches/{id}``: the batch, one status further on (its end after the plan's last status)."""
        with self._lock:
            self._polls += 1
            batch = self._batch(batch_id)
            if batch.cancelling:
                self._finish(batch, "cancelled")
            elif not batch.ended:
                batch.position += 1
                self._step(batch)
            return copy.deepcopy(batch.fields)

    def cancel(self, batch_id: str) -> dict[str, Any]:
        """``POST /v1/batches/{id}/cancel``: the batch shows ``cancelling``, and ends ``cancelled`` at the next GET."""
        with self._lock:
            batch = self._batch(batch_id)
            status = batch.fields["status"]
            if status in {"completed", "expired", "failed"}:
                raise ApiError(409, f"Cannot cancel a batch with status '{status}'.")
            if not batch.ended and not batch.cancelling:
                batch.cancelling = True
                batch.fields["status"] = "cancelling"
                batch.fields["cancelling_at"] = int(time.time())
            return copy.deepcopy(batch.fields)

    def cancel_now(self, batch_id: str, answered: int | None = None) -> dict[str, Any]:
        """A cancellation on the server's side: the batch ends ``cancelled`` at once (see
        :meth:`OpenAIServer.cancel_batch <tests.openai_server.OpenAIServer.cancel_batch>`)."""
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                raise KeyError(batch_id)
            if batch.ended:
                raise ValueError(f"{batch_id} has already ended ({batch.fields['status']})")
            self._finish(batch, "cancelled", answered)
            return copy.deepcopy(batch.fields)

    def list_batches(self, query: Mapping[str, str]) -> dict[str, Any]:
        """``GET /v1/batches``: newest first, paged by ``after`` and ``limit`` (20 by default, as OpenAI's)."""
        with self._lock:
            objects = [copy.deepcopy(batch.fields) for batch in reversed(self._batches.values())]
        return _page(objects, query, default_limit=20)

    # -- inside -----------------------------------------------------------------------------------------------

    def _file(self, file_id: str) -> StoredFile:
        stored = self._files.get(file_id)
        if stored is None:
            raise ApiError(404, f"No such File object: {file_id}")
        return stored

    def _batch(self, batch_id: str) -> _Batch:
        batch = self._batches.get(batch_id)
        if batch is None:
            raise ApiError(404, f"No batch found with id '{batch_id}'.")
        return batch

    def _store_file(self, filename: str, purpose: str, data: bytes) -> StoredFile:
        stored = StoredFile(f"file-{next(self._file_ids)}", filename, purpose, data, int(time.time()))
        self._files[stored.id] = stored
        return stored

    def _read_requests(self, data: bytes) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
        """The valid requests of an input file and one validation error per bad line, as OpenAI's validation
        reports them; every line's ``body`` is recorded, valid or not, as the client sent it."""
        requests: list[tuple[str, dict[str, Any]]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        lines = 0
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue  # the final newline, or a blank line: nothing to run
            lines += 1
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            if not isinstance(line, dict):
                errors.append(_line_error("invalid_json_line", "This line is not parseable as valid JSON.", number))
                continue
            body = line.get("body")
            if isinstance(body, dict):
                self._bodies.append(body)
            custom_id = line.get("custom_id")
            if not isinstance(custom_id, str) or not custom_id:
                errors.append(_line_error("missing_required_parameter", "Missing 'custom_id'.", number, "custom_id"))
            elif custom_id in seen:
                message = f"The custom_id {custom_id!r} is used by more than one request."
                errors.append(_line_error("duplicate_custom_id", message, number, "custom_id"))
            elif line.get("method") != "POST":
                errors.append(_line_error("invalid_method", "Only the POST method is supported.", number, "method"))
            elif line.get("url") != BATCH_ENDPOINT:
                message = "The URL provided for this request does not match the batch endpoint."
                errors.append(_line_error("invalid_url", message, number, "url"))
            elif not isinstance(body, dict):
                errors.append(_line_error("missing_required_parameter", "Missing 'body'.", number, "body"))
            else:
                seen.add(custom_id)
                requests.append((custom_id, body))
        if lines == 0:
            errors.append(_line_error("empty_file", "The input file has no requests.", None))
        return requests, errors

    def _statuses(self, batch: _Batch) -> tuple[str, ...]:
        """The statuses the batch shows before its end: a batch failing validation shows the validating ones."""
        statuses = self._plan().statuses
        if not batch.errors:
            return statuses
        leading = 0
        while leading < len(statuses) and statuses[leading] == "validating":
            leading += 1
        return statuses[:leading]

    def _step(self, batch: _Batch) -> None:
        """Show the status at the batch's position, or end it past the last."""
        statuses = self._statuses(batch)
        if batch.position >= len(statuses):
            self._finish(batch, self._plan().end)
            return
        status = statuses[batch.position]
        fields = batch.fields
        fields["status"] = status
        now = int(time.time())
        total = len(batch.requests)
        if status == "validating":
            fields["request_counts"] = {"total": 0, "completed": 0, "failed": 0}
            return
        fields["in_progress_at"] = fields["in_progress_at"] or now
        if status == "finalizing":
            fields["finalizing_at"] = fields["finalizing_at"] or now
        done = min(total, total * batch.position // len(statuses))  # grows with each status shown
        fields["request_counts"] = {"total": total, "completed": done, "failed": 0}

    def _finish(self, batch: _Batch, end: str, answered: int | None = None) -> None:
        """End the batch ``end``: answer its requests through the script and write its result files."""
        plan = self._plan()
        fields = batch.fields
        now = int(time.time())
        batch.cancelling = False
        if end == "failed" or (batch.errors and end != "cancelled"):
            fields.update(status="failed", failed_at=now)
            fields["errors"] = {"object": "list", "data": batch.errors or [dict(_PLAN_FAILURE)]}
            fields["request_counts"] = {"total": 0, "completed": 0, "failed": 0}
            return
        requests = [] if batch.errors else batch.requests  # cancelled while validating a bad file: nothing ran
        if end == "completed":
            runs = len(requests)
        else:
            wanted = answered if answered is not None else plan.answered
            runs = min(len(requests), len(requests) // 2 if wanted is None else wanted)
        output: list[dict[str, Any]] = []
        failures: list[dict[str, Any]] = []
        input_tokens = output_tokens = 0
        for index, (custom_id, body) in enumerate(requests):
            number = next(self._line_ids)
            line_id = f"batch_req_{number}"
            if index >= runs:
                code, message = _NOT_RUN[end]
                error = {"code": code, "message": message}
                failures.append({"id": line_id, "custom_id": custom_id, "response": None, "error": error})
                continue
            status, answer = self._answer(body)
            response = {"status_code": status, "request_id": f"req_{number:032x}", "body": answer}
            (output if status == 200 else failures).append(
                {"id": line_id, "custom_id": custom_id, "response": response, "error": None}
            )
            usage = answer.get("usage") if status == 200 and isinstance(answer, dict) else None
            if isinstance(usage, dict):
                input_tokens += int(usage.get("prompt_tokens") or 0)
                output_tokens += int(usage.get("completion_tokens") or 0)
        completed = len(output)
        if plan.lines is not None:
            output = plan.lines(output)
        data = _jsonl(output)
        del output  # the line objects go before the output hook makes its copy (a huge file is held once)
        if plan.output is not None:
            data = plan.output(data)
        name = fields["id"]
        if data:
            fields["output_file_id"] = self._store_file(f"{name}_output.jsonl", "batch_output", data).id
        if failures:
            fields["error_file_id"] = self._store_file(f"{name}_error.jsonl", "batch_output", _jsonl(failures)).id
        fields["status"] = end
        fields["request_counts"] = {"total": len(requests), "completed": completed, "failed": len(requests) - completed}
        fields["usage"] = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        }
        if end == "completed":
            fields["in_progress_at"] = fields["in_progress_at"] or now
            fields["finalizing_at"] = fields["finalizing_at"] or now
            fields["completed_at"] = now
        elif end == "expired":
            fields["expired_at"] = now
        else:
            fields["cancelling_at"] = fields["cancelling_at"] or now
            fields["cancelled_at"] = now


def _batch_object(batch_id: str, request: Mapping[str, Any], now: int) -> dict[str, Any]:
    """A new batch's wire object, every field of OpenAI's ``Batch`` present."""
    return {
        "id": batch_id,
        "object": "batch",
        "endpoint": request["endpoint"],
        "model": None,
        "errors": None,
        "input_file_id": request["input_file_id"],
        "completion_window": request["completion_window"],
        "status": "validating",
        "output_file_id": None,
        "error_file_id": None,
        "created_at": now,
        "in_progress_at": None,
        "expires_at": now + _DAY,
        "finalizing_at": None,
        "completed_at": None,
        "failed_at": None,
        "expired_at": None,
        "cancelling_at": None,
        "cancelled_at": None,
        "request_counts": {"total": 0, "completed": 0, "failed": 0},
        "usage": None,
        "metadata": request.get("metadata"),
    }


def _line_error(code: str, message: str, line: int | None, param: str | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "param": param, "line": line}


def _jsonl(objects: list[dict[str, Any]]) -> bytes:
    """Objects as JSON lines, each ending in a newline; ``b""`` for none."""
    return "".join(json.dumps(item) + "\n" for item in objects).encode("utf-8")


def _page(objects: list[dict[str, Any]], query: Mapping[str, str], default_limit: int) -> dict[str, Any]:
    """One page of a cursor-paged list, as the SDK's ``SyncCursorPage`` reads it."""
    after = query.get("after")
    if after is not None:
        ids = [item["id"] for item in objects]
        if after not in ids:
            raise ApiError(400, f"Invalid value for 'after': no object {after!r}.")
        objects = objects[ids.index(after) + 1 :]
    try:
        limit = int(query.get("limit", default_limit))
    except ValueError:
        raise ApiError(400, "Invalid value for 'limit': an integer is expected.") from None
    if limit < 1:
        raise ApiError(400, "Invalid value for 'limit': it must be at least 1.")
    page = objects[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(objects) > limit,
    }
