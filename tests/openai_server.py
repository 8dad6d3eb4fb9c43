"""A real OpenAI-compatible HTTP server on loopback, for tests and benchmarks where no LLM is reachable.

It speaks the Chat Completions wire format over real HTTP, so a client (Haystack's ``OpenAIChatGenerator``, the
``openai`` SDK) runs unchanged against it: nothing inside the client is patched. What it answers comes from a
:data:`Script`, a function from the parsed request body to a :class:`Reply` (or plain text).

It also serves OpenAI's Files and Batch APIs (``/v1/files``, ``/v1/batches``), answering a batch's requests through
the same script; a :class:`~tests.openai_batches.BatchPlan` says how a batch runs (see :mod:`tests.openai_batches`).

Standard library only: ``http.server.ThreadingHTTPServer`` serving from a daemon thread.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl

from tests.openai_batches import ApiError, BatchPlan, BatchStore, read_upload

__all__ = [
    "BatchPlan",
    "OpenAIServer",
    "Reply",
    "Script",
    "echo_n",
    "escalation_candidate",
    "last_user_text",
    "refusing_format",
    "replay_server_script",
    "scripted",
    "texts_for_n",
]

_ERROR_TYPES: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "not_found"),
    409: ("conflict_error", "conflict"),
    422: ("invalid_request_error", "unprocessable_entity"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "service_unavailable"),
    504: ("server_error", "gateway_timeout"),
}


@dataclass
class Reply:
    """What the server answers to one chat completion request.

    ``texts`` holds one choice per text (``None`` in the list: that choice's ``content`` is null); ``None``
    derives them from the request (the last user message, echoed once per requested ``n``). A non-200 ``status``
    answers an OpenAI-style error body carrying ``message``. ``delay`` is slept (interruptibly, so
    :meth:`OpenAIServer.stop` wakes it) before answering.

    Misbehaviours, for the clients' tests: ``trickle`` sends the body one byte every that many seconds (each byte
    well within any read timeout, the whole far past it); ``refusal`` sets each choice's ``message.refusal`` (OpenAI's
    refusal field; give ``texts=[None]`` for the content it comes with); ``sse`` answers a stream of server-sent
    events (``chat.completion.chunk`` objects, then ``data: [DONE]``) whatever the request asked; ``content_type``
    overrides the header; ``body`` is sent as it is, instead of the completion.

    ``logprobs`` is each choice's ``logprobs`` object, sent as it is (``None``: ``null``, as a server that
    ignores ``logprobs: true`` sends): a script returns scripted log-probabilities with it.
    """

    texts: list[str | None] | None = None
    finish_reason: str = "stop"
    status: int = 200
    delay: float = 0.0
    prompt_tokens: int = 10
    completion_tokens: int = 5
    headers: dict[str, str] = field(default_factory=dict)
    message: str = ""
    trickle: float = 0.0
    refusal: str | None = None
    sse: bool = False
    content_type: str | None = None
    body: bytes | None = None
    logprobs: Any = None


Script = Callable[[dict[str, Any]], Reply | str | list[str]]
"""Maps the parsed JSON request body to the reply: a str is one choice, a list of str one choice per item."""


def _requested_n(request: Mapping[str, Any]) -> int:
    """The request's ``n`` (1 when absent or null)."""
    n = request.get("n")
    if n is None:
        return 1
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return n


def texts_for_n(request: Mapping[str, Any], make: Callable[[int], str]) -> list[str]:
    """Build one text per requested choice: ``[make(0), ..., make(n - 1)]``."""
    return [make(i) for i in range(_requested_n(request))]


def echo_n(text: str) -> Script:
    """A Script answering ``text`` once per requested choice (honours ``n``)."""

    def script(request: dict[str, Any]) -> list[str]:
        return texts_for_n(request, lambda _i: text)

    return script


def scripted(replies: list[Reply | str]) -> Script:
    """A Script answering ``replies`` in order, one per request, repeating the last one when exhausted."""
    if not replies:
        raise ValueError("scripted() needs at least one reply")
    queue = list(replies)
    lock = threading.Lock()
    position = 0

    def script(_request: dict[str, Any]) -> Reply | str:
        nonlocal position
        with lock:
            reply = queue[min(position, len(queue) - 1)]
            position += 1
        return reply

    return script


def refusing_format(
    kinds: Iterable[str], then: Script, status: int = 400, preamble: str = "", refused: threading.Event | None = None
) -> Script:
    """A Script refusing a ``response_format`` of ``kinds`` as a server that cannot serve it does, ``then`` the rest.

    The error (HTTP ``status``: 400 as OpenAI, 500 as llama.cpp's server) names the format after ``preamble``
    (a long message that names it late). With ``refused`` given, only while that event is set.
    """
    refusing = frozenset(kinds)

    def script(request: dict[str, Any]) -> Reply | str | list[str]:
        asked = (request.get("response_format") or {}).get("type")
        if asked in refusing and (refused is None or refused.is_set()):
            return Reply(status=status, message=f"{preamble}response_format type {asked!r} is not supported")
        return then(request)

    return script


def last_user_text(request: Mapping[str, Any]) -> str:
    """The text of the request's last user message (text parts joined by newlines); "" when there is none."""
    messages = request.get("messages") or []
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            parts = [part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"]
            return "\n".join(str(part) for part in parts)
        return ""
    return ""


def _phrase(status: int) -> str:
    """The standard reason phrase for a status code, or a generic one."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


def _error_body(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error body for an HTTP ``status``: ``{"error": {message, type, param, code}}``."""
    kind, code = _ERROR_TYPES.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _squash(text: str) -> str:
    """Collapse runs of whitespace, so line wrapping in a prompt template does not defeat matching."""
    return " ".join(text.split())


_CANDIDATE_BLOCK = ("<Candidate>\n", "\n</Candidate>")


def escalation_candidate(text: str) -> str | None:
    """The text of the message's ``<Candidate>`` block (the escalation prompt's), squashed; ``None`` if it has none."""
    opening, closing = _CANDIDATE_BLOCK
    _, found, rest = text.partition(opening)
    if not found or closing not in rest:
        return None
    return _squash(rest.split(closing, 1)[0])


def replay_server_script(rows: Iterable[Mapping[str, Any]], reply_field: str) -> Script:
    """A Script replaying recorded grader replies.

    For each request it finds a row whose ``question`` occurs in the last user message (with or without a trailing
    "?") and whose ``prediction`` is the candidate, and answers that row's ``reply_field``; no match answers a 400
    error. Whitespace runs count as one space on both sides.

    - When the message has a ``<Candidate>`` block (the escalation prompt's), the candidate is that block's text
      and the row's ``prediction`` must equal it exactly. A prediction that is also an acceptable answer (shown
      among the acceptable answers of every request about its question) then answers only its own requests.
      Among the rows that match, the longest question wins, then the earliest row.
    - Without such a block, the row's ``prediction`` need only occur anywhere in the message, preferring the
      longest matching prediction, then the longest question, then the earliest row.
    """
    entries: list[tuple[str, str, str]] = []
    for number, row in enumerate(rows):
        try:
            question, prediction, reply = row["question"], row["prediction"], row[reply_field]
        except KeyError as missing:
            raise ValueError(f"row {number} has no field {missing}") from None
        if not all(isinstance(value, str) for value in (question, prediction, reply)):
            raise ValueError(f"row {number}: question, prediction and {reply_field!r} must be strings")
        stem = _squash(question).rstrip("?").rstrip()
        entries.append((_squash(prediction), stem or _squash(question), reply))
    # Stable sort: longest prediction first, then longest question; equal keys keep the rows' order.
    entries.sort(key=lambda entry: (-len(entry[0]), -len(entry[1])))
    by_prediction: dict[str, list[tuple[str, str]]] = {}
    for prediction, question, reply in entries:  # within one prediction: longest question first, then row order
        by_prediction.setdefault(prediction, []).append((question, reply))

    def script(request: dict[str, Any]) -> Reply | str:
        text = last_user_text(request)
        content = _squash(text)
        candidate = escalation_candidate(text)
        if candidate is not None:
            for question, reply in by_prediction.get(candidate, ()):
                if question in content:
                    return reply
        else:
            for prediction, question, reply in entries:
                if prediction in content and question in content:
                    return reply
        preview = content[:200] + ("..." if len(content) > 200 else "")
        return Reply(status=400, message=f"no recorded row matches the last user message: {preview!r}")

    return script


class _Server(ThreadingHTTPServer):
    """The HTTP server, holding a back reference to its :class:`OpenAIServer`."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, owner: OpenAIServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client hangs up or :meth:`OpenAIServer.stop` cuts a connection; report anything else."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Answers the Chat Completions and Models endpoints of the OpenAI API."""

    protocol_version = "HTTP/1.1"
    server_version = "OpenAIServer/1.0"
    timeout = 60.0  # idle keep-alive connections end after this long
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: no stderr line per request."""

    def setup(self) -> None:
        super().setup()
        self.server.owner._register(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._unregister(self.connection)

    def do_GET(self) -> None:
        with self.server.owner._counting():
            path, _, query = self.path.partition("?")
            path = path.rstrip("/")
            if _is_batch_api(path):
                self._batch_api(path, query, b"")
            elif path == "/v1/models":
                model = {"id": OpenAIServer.MODEL, "object": "model", "created": 0, "owned_by": "openai-server"}
                self._send_json(200, {"object": "list", "data": [model]})
            elif path.startswith("/v1/models/"):
                name = path[len("/v1/models/") :]
                self._send_json(200, {"id": name, "object": "model", "created": 0, "owned_by": "openai-server"})
            else:
                self._send_error(404, f"Unknown path: GET {self.path}")

    def do_POST(self) -> None:
        with self.server.owner._counting():
            path, _, query = self.path.partition("?")
            path = path.rstrip("/")
            if path == "/v1/files":
                self._upload()
                return
            body = self._read_body()
            if body is None:  # the client hung up before the end of its body
                self.close_connection = True
                return
            if _is_batch_api(path):
                self._batch_api(path, query, body)
                return
            if path != "/v1/chat/completions":
                self._send_error(404, f"Unknown path: POST {self.path}")
                return
            try:
                request = json.loads(body or b"null")
            except ValueError:
                self._send_error(400, "The request body is not valid JSON.")
                return
            if not isinstance(request, dict):
                self._send_error(400, "The request body must be a JSON object.")
                return
            self.server.owner._record(request)
            if request.get("stream"):
                self._send_error(400, "This test server does not stream; send stream=false.")
                return
            with self.server.owner._turn() as served:
                if not served:  # stopping while it queued: dropped unanswered, as a server shutting down does
                    self.close_connection = True
                    return
                self._answer(request)

    def _answer(self, request: dict[str, Any]) -> None:
        """The reply to a chat completion ``request``: the script's, after its delay."""
        try:
            reply = self.server.owner._reply_for(request)
        except Exception as error:  # noqa: BLE001 - the script's failure becomes the client's HTTP 500
            self._send_error(500, f"The script raised {type(error).__name__}: {error}")
            return
        if reply.delay > 0 and self.server.owner._stopping.wait(reply.delay):
            self.close_connection = True
            return  # stopping: drop the request unanswered rather than hold the process
        if reply.status != 200:
            self._send_error(reply.status, reply.message or _phrase(reply.status), reply.headers)
            return
        owner = self.server.owner
        if reply.body is not None:
            data = reply.body
        elif reply.sse:
            data = owner._event_stream(request, reply)
        else:
            data = json.dumps(owner._completion(request, reply)).encode("utf-8")
        default_type = "text/event-stream" if reply.sse and reply.body is None else "application/json"
        self._send_bytes(200, data, reply.content_type or default_type, reply.headers, reply.trickle)

    def do_PUT(self) -> None:
        self._unsupported()

    def do_DELETE(self) -> None:
        with self.server.owner._counting():
            self._read_body()
            path, _, query = self.path.partition("?")
            self._batch_api(path.rstrip("/"), query, b"")

    def do_PATCH(self) -> None:
        self._unsupported()

    def _unsupported(self) -> None:
        with self.server.owner._counting():
            self._read_body()
            self._send_error(404, f"Unknown path: {self.command} {self.path}")

    def _upload(self) -> None:
        """``POST /v1/files``: the plan's upload hook and delay come before the body is read, while the client is
        still sending it or waiting for the answer."""
        owner = self.server.owner
        plan = owner.batch
        if plan.on_upload is not None:
            plan.on_upload()
        if plan.upload_delay > 0 and owner._stopping.wait(plan.upload_delay):
            self.close_connection = True
            return  # stopping: drop the upload unanswered
        body = self._read_body()
        if body is None:  # the client hung up mid-upload: no file
            self.close_connection = True
            return
        try:
            purpose, filename, data = read_upload(self.headers.get("Content-Type") or "", body)
            del body  # the form's copy goes before the file is stored
            self._send_json(200, owner._store.create_file(filename, purpose, data))
        except ApiError as error:
            self._send_error(error.status, error.message)

    def _batch_api(self, path: str, query: str, body: bytes | None) -> None:
        """The Files and Batch endpoints other than the upload: the store's answer, or its :class:`ApiError`."""
        store = self.server.owner._store
        parts = path.split("/")[1:]  # "v1", "files" | "batches", then an id and maybe "content" | "cancel"
        route = (self.command, *parts[1:2], *(["{id}"] if len(parts) > 2 else []), *parts[3:])
        params = dict(parse_qsl(query))
        content: bytes | None = None
        try:
            if route == ("GET", "files", "{id}", "content"):
                content = store.file_data(parts[2])
            elif route == ("GET", "files"):
                payload = store.list_files(params)
            elif route == ("GET", "files", "{id}"):
                payload = store.file_info(parts[2])
            elif route == ("DELETE", "files", "{id}"):
                payload = store.delete_file(parts[2])
            elif route == ("POST", "batches"):
                payload = store.create_batch(_json_or_none(body))
            elif route == ("GET", "batches"):
                payload = store.list_batches(params)
            elif route == ("GET", "batches", "{id}"):
                payload = store.retrieve(parts[2])
            elif route == ("POST", "batches", "{id}", "cancel"):
                payload = store.cancel(parts[2])
            else:
                raise ApiError(404, f"Unknown path: {self.command} {self.path}")
        except ApiError as error:
            self._send_error(error.status, error.message)
            return
        except Exception as error:  # noqa: BLE001 - a test's hook (lines, output) failing becomes the client's 500
            self._send_error(500, f"The batch plan raised {type(error).__name__}: {error}")
            return
        if content is not None:
            self._send_content(content)  # outside the try: once the headers are out, no error answer can follow
        else:
            self._send_json(200, payload)

    def _send_content(self, data: bytes) -> None:
        """A file's bytes, with the plan's content hook and delay midway (the headers and the first half sent)."""
        owner = self.server.owner
        plan = owner.batch
        if plan.on_content is None and plan.content_delay <= 0:
            self._send_bytes(200, data, "application/octet-stream")
            return

        def midway() -> bool:
            if plan.on_content is not None:
                plan.on_content()
            return not (plan.content_delay > 0 and owner._stopping.wait(plan.content_delay))

        self._send_bytes(200, data, "application/octet-stream", midway=midway)

    def _read_body(self) -> bytes | None:
        """The request body (``Content-Length`` or chunked); ``None`` when the client hung up before its end."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0:
            return b""
        body = self.rfile.read(length)
        return body if len(body) == length else None

    def _read_chunked(self) -> bytes | None:
        """A chunked body (a client streaming an upload whose size it does not know)."""
        chunks: list[bytes] = []
        while True:
            size_line = self.rfile.readline(1024)
            if not size_line.endswith(b"\n"):
                return None
            try:
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            except ValueError:
                return None  # not chunked encoding: read as a client gone astray
            if size == 0:
                while self.rfile.readline(65536).strip():  # trailers, up to the blank line
                    pass
                return b"".join(chunks)
            chunk = self.rfile.read(size)
            if len(chunk) != size:
                return None
            chunks.append(chunk)
            self.rfile.readline(1024)  # the CRLF ending the chunk

    def _send_error(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        self._send_json(status, _error_body(status, message), headers)

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode("utf-8"), "application/json", headers)

    def _send_bytes(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
        trickle: float = 0.0,
        midway: Callable[[], bool] | None = None,
    ) -> None:
        """Send a response; ``midway`` is called once half the body is sent, and ``False`` from it ends there."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req-{self.server.owner.requests}")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if midway is not None:
                view = memoryview(data)  # slices of a huge file without copying it
                self.wfile.write(view[: len(data) // 2])
                self.wfile.flush()
                if not midway():
                    self.close_connection = True
                    return
                self.wfile.write(view[len(data) // 2 :])
                self.wfile.flush()
                return
            if trickle <= 0:
                self.wfile.write(data)
                self.wfile.flush()
                return
            for index in range(len(data)):  # one byte at a time: no read ever waits long, the whole does
                self.wfile.write(data[index : index + 1])
                self.wfile.flush()
                if self.server.owner._stopping.wait(trickle):
                    self.close_connection = True
                    return
        except OSError:  # the client gave up (timeout) or the server is stopping
            self.close_connection = True


def _is_batch_api(path: str) -> bool:
    """Whether ``path`` is one of the Files or Batch endpoints."""
    return any(path == root or path.startswith(root + "/") for root in ("/v1/files", "/v1/batches"))


def _json_or_none(body: bytes | None) -> Any:
    """The JSON value of a request body; ``None`` (refused by the caller) when it is not JSON."""
    try:
        return json.loads(body or b"null")
    except ValueError:
        return None


GRADER_KEY_ENV = "ANSWER_EVAL_TEST_GRADER_KEY"
"""The variable holding the key the tests' generators send (a key from the environment, as a saved pipeline needs)."""
os.environ.setdefault(GRADER_KEY_ENV, "test-key")


def grader_generator(server: OpenAIServer, timeout: float = 10.0) -> Any:
    """Haystack's real ``OpenAIChatGenerator`` for ``server``: model ``grader``, no retries of its own, the key from
    :data:`GRADER_KEY_ENV` (a token secret cannot be serialised, and the components' round trips serialise it)."""
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    return OpenAIChatGenerator(
        api_key=Secret.from_env_var(GRADER_KEY_ENV),
        api_base_url=server.url,
        model="grader",
        max_retries=0,
        timeout=timeout,
    )


class OpenAIServer:
    """An OpenAI-compatible server on ``127.0.0.1`` (a free port), answering from a :data:`Script`.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. ``url`` ends in ``/v1`` and goes straight
    into ``api_base_url``. Counters (``requests``, ``bodies``, ``in_flight``, ``max_in_flight``) are thread-safe;
    ``requests`` and the in-flight counts cover every HTTP request, ``bodies`` the chat completion bodies only.

    ``one_at_a_time`` serves chat completions as a local server with one slot does (llama.cpp's with ``-np 1``,
    llama-cpp-python's): one at a time, in the order they came, the others queued without a byte sent, each reply
    still computed when its client has given up (a :class:`Reply`'s ``delay`` is the time to compute it).
    ``answered`` counts the chat completions it finished.

    Batches: ``batch`` is the :class:`BatchPlan` every batch follows (replace it at any time);
    :meth:`cancel_batch` cancels one on the server's side. ``batch_bodies`` holds the request bodies of every batch
    created (``bodies`` stays the live chat completions'), ``batch_polls`` counts ``GET /v1/batches/{id}``;
    :meth:`file_data` and :meth:`peek_batch` read the server's state without a request.
    """

    MODEL = "gpt-4o-mini"

    def __init__(
        self, script: Script | None = None, *, one_at_a_time: bool = False, batch: BatchPlan | None = None
    ) -> None:
        self.script: Script = script if script is not None else (lambda _request: Reply())
        self.one_at_a_time = one_at_a_time
        self.batch: BatchPlan = batch if batch is not None else BatchPlan()
        self._store = BatchStore(lambda: self.batch, self._batch_answer)
        self._slot = threading.Lock()  # the one slot of a one_at_a_time server
        self._answered = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._requests = 0
        self._bodies: list[dict[str, Any]] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle -------------------------------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        """Bind a free loopback port and serve from a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("the server is already started")
        self._stopping.clear()
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving, wake sleeping handlers, close open connections and join the thread (bounded)."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        if thread is not None:
            thread.join(timeout)
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        self._httpd = None
        self._thread = None

    def drop_connections(self) -> None:
        """Close every connection open now, as a server restarted behind the same URL does: what it held ends."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def wait_idle(self, timeout: float = 2.0) -> bool:
        """Wait until no request is in flight (a handler finishes just after its client has the reply)."""
        deadline = time.monotonic() + timeout
        while self.in_flight:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    # -- what tests read --------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The API base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> int:
        """How many HTTP requests arrived (any path)."""
        with self._lock:
            return self._requests

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """A copy of the chat completion request bodies, in arrival order."""
        with self._lock:
            return list(self._bodies)

    @property
    def in_flight(self) -> int:
        """How many requests are being handled right now."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The highest number of requests handled at once so far."""
        with self._lock:
            return self._max_in_flight

    @property
    def batch_bodies(self) -> list[dict[str, Any]]:
        """A copy of the request bodies of every batch created, in creation order, each batch in file order."""
        return self._store.bodies

    @property
    def batch_polls(self) -> int:
        """How many ``GET /v1/batches/{id}`` arrived (each advances its batch by one status)."""
        return self._store.polls

    def file_data(self, file_id: str) -> bytes:
        """The bytes of a file the server holds (uploaded, or a batch's result); :class:`ApiError` if unknown."""
        return self._store.file_data(file_id)

    def peek_batch(self, batch_id: str) -> dict[str, Any]:
        """A batch object as it stands, without advancing it as a GET does; :class:`ApiError` if unknown."""
        return self._store.peek(batch_id)

    def cancel_batch(self, batch_id: str, answered: int | None = None) -> dict[str, Any]:
        """Cancel a batch on the server's side, as an operator or an outage does: it ends ``cancelled`` now.

        The first ``answered`` requests got an answer (``None``: the plan's ``answered``, else half), the rest
        are in the error file with code ``batch_cancelled``. Returns the batch object; :class:`KeyError` for an
        unknown id, :class:`ValueError` for a batch that has already ended.
        """
        return self._store.cancel_now(batch_id, answered)

    # -- used by the handler ----------------------------------------------------------------------------------

    def _batch_answer(self, request: dict[str, Any]) -> tuple[int, Any]:
        """A batch request's status and response body: what the live endpoint answers, without its transport.

        A :class:`Reply`'s delay, trickle, stream and headers do not apply; a raw ``body`` is the response body
        (its JSON value, or its text when it is not JSON).
        """
        try:
            reply = self._reply_for(request)
        except Exception as error:  # noqa: BLE001 - as live: the script's failure is a 500
            return 500, _error_body(500, f"The script raised {type(error).__name__}: {error}")
        if reply.status != 200:
            return reply.status, _error_body(reply.status, reply.message or _phrase(reply.status))
        if reply.body is not None:
            try:
                return 200, json.loads(reply.body)
            except ValueError:
                return 200, reply.body.decode("utf-8", "replace")
        return 200, self._completion(request, reply)

    def _register(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)

    def _unregister(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)

    def _counting(self) -> _InFlight:
        return _InFlight(self)

    @contextlib.contextmanager
    def _turn(self) -> Iterator[bool]:
        """The request's turn to be answered (at once, or when the one slot is free); ``False``: stopping first."""
        if not self.one_at_a_time:
            yield True
        else:
            while not self._slot.acquire(timeout=0.05):  # queued; a stop must not wait for the queue
                if self._stopping.is_set():
                    yield False
                    return
            try:
                yield True
            finally:
                self._slot.release()
        with self._lock:
            self._answered += 1

    @property
    def answered(self) -> int:
        """How many chat completion requests were answered (a reply, or an error the script asked for)."""
        with self._lock:
            return self._answered

    def _record(self, request: dict[str, Any]) -> None:
        with self._lock:
            self._bodies.append(request)

    def _reply_for(self, request: dict[str, Any]) -> Reply:
        """Run the script and normalise its answer to a :class:`Reply` with texts filled in."""
        answer = self.script(request)
        if isinstance(answer, str):
            return Reply(texts=[answer])
        if isinstance(answer, list):
            if not all(isinstance(text, str) for text in answer):
                raise TypeError("a script's list must hold only str")
            return Reply(texts=list(answer))
        if not isinstance(answer, Reply):
            raise TypeError(f"a script must return Reply, str or list[str], not {type(answer).__name__}")
        if answer.texts is None and answer.status == 200:
            text = last_user_text(request)
            return replace(answer, texts=texts_for_n(request, lambda _i: text))
        return answer

    def _completion(self, request: Mapping[str, Any], reply: Reply) -> dict[str, Any]:
        """The ChatCompletion JSON for a 200 reply."""
        texts = reply.texts or []
        completion_tokens = reply.completion_tokens * len(texts)
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.MODEL,
            "system_fingerprint": None,
            "choices": [
                {
                    "index": index,
                    "message": {"role": "assistant", "content": text, "refusal": reply.refusal},
                    "logprobs": reply.logprobs,
                    "finish_reason": reply.finish_reason,
                }
                for index, text in enumerate(texts)
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": reply.prompt_tokens + completion_tokens,
            },
        }

    def _event_stream(self, request: Mapping[str, Any], reply: Reply) -> bytes:
        """The completion as server-sent events: one ``chat.completion.chunk`` per choice, then ``[DONE]``."""
        completion = self._completion(request, reply)
        events = []
        for choice in completion["choices"]:
            chunk = {
                "id": completion["id"],
                "object": "chat.completion.chunk",
                "created": completion["created"],
                "model": completion["model"],
                "choices": [
                    {
                        "index": choice["index"],
                        "delta": {"role": "assistant", "content": choice["message"]["content"]},
                        "finish_reason": choice["finish_reason"],
                    }
                ],
            }
            events.append(f"data: {json.dumps(chunk)}\n\n")
        events.append("data: [DONE]\n\n")
        return "".join(events).encode("utf-8")


class _InFlight:
    """Counts one request as in flight for the duration of a ``with`` block."""

    def __init__(self, owner: OpenAIServer) -> None:
        self.owner = owner

    def __enter__(self) -> None:
        owner = self.owner
        with owner._lock:
            owner._requests += 1
            owner._in_flight += 1
            owner._max_in_flight = max(owner._max_in_flight, owner._in_flight)

    def __exit__(self, *_exc: object) -> None:
        with self.owner._lock:
            self.owner._in_flight -= 1
