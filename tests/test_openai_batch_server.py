"""The loopback server's Files and Batch APIs, driven by the unpatched ``openai`` SDK over real HTTP."""

from __future__ import annotations

import http.client
import json
import random
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.openai_server import BatchPlan, OpenAIServer, Reply, last_user_text, texts_for_n

ENDED = ("completed", "failed", "expired", "cancelled")
BATCH_FIELDS = {
    "id", "object", "endpoint", "model", "errors", "input_file_id", "completion_window", "status", "output_file_id",
    "error_file_id", "created_at", "in_progress_at", "expires_at", "finalizing_at", "completed_at", "failed_at",
    "expired_at", "cancelling_at", "cancelled_at", "request_counts", "usage", "metadata",
}  # fmt: skip


def request_line(custom_id: str, text: str, **body: Any) -> dict[str, Any]:
    messages = [{"role": "user", "content": text}]
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "grader", "messages": messages, **body},
    }


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def questions(count: int) -> bytes:
    return jsonl([request_line(f"q{index}", f"question {index}") for index in range(count)])


def read_lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(lambda request: f"answer to {last_user_text(request)}") as running:
        yield running


@pytest.fixture
def client(server: OpenAIServer) -> Iterator[openai.OpenAI]:
    sdk = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0, timeout=5)
    yield sdk
    sdk.close()


def submit(client: openai.OpenAI, data: bytes, **kwargs: Any) -> Any:
    uploaded = client.files.create(file=("requests.jsonl", data), purpose="batch")
    return client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", **kwargs
    )


def run_to_end(client: openai.OpenAI, batch: Any) -> tuple[Any, list[str]]:
    """Poll until the batch ends; its last object and the statuses seen (the creation answer's first)."""
    seen = [batch.status]
    for _ in range(20):
        if batch.status in ENDED:
            return batch, seen
        batch = client.batches.retrieve(batch.id)
        seen.append(batch.status)
    raise AssertionError(f"the batch did not end: {seen}")


def content(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    assert file_id is not None
    return read_lines(client.files.content(file_id).read())


# -- files --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b'{"a": 1}\n',
        b'{"a": 1}\r\n{"b": 2}\r\n',  # CRLF inside, and just before the closing boundary
        b"lone\rcarriage\rreturns\r",
        b"--boundary-lookalike\r\n--\r\nContent-Type: text/plain\r\n\r\n",
        bytes(range(256)) * 4,
        "ünïcödé 字 \U0001f600\n".encode(),
    ],
)
def test_an_upload_comes_back_byte_for_byte(server: OpenAIServer, client: openai.OpenAI, data: bytes) -> None:
    uploaded = client.files.create(file=("requests.jsonl", data), purpose="batch")
    assert uploaded.id.startswith("file-")
    assert (uploaded.object, uploaded.bytes, uploaded.filename) == ("file", len(data), "requests.jsonl")
    assert (uploaded.purpose, uploaded.status) == ("batch", "processed")
    assert server.file_data(uploaded.id) == data
    assert client.files.content(uploaded.id).read() == data
    assert client.files.retrieve(uploaded.id) == uploaded


def test_files_are_listed_deleted_and_unknown_ids_are_404(client: openai.OpenAI) -> None:
    first = client.files.create(file=("a.jsonl", b"a\n"), purpose="batch")
    second = client.files.create(file=("b.jsonl", b"b\n"), purpose="user_data")
    assert [item.id for item in client.files.list()] == [second.id, first.id]  # newest first, as OpenAI's
    assert [item.id for item in client.files.list(purpose="batch")] == [first.id]
    deleted = client.files.delete(first.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (first.id, "file", True)
    for call in (client.files.retrieve, client.files.content, client.files.delete):
        with pytest.raises(openai.NotFoundError) as caught:
            call(first.id)
        assert caught.value.body == {
            "message": f"No such File object: {first.id}",
            "type": "not_found_error",
            "param": None,
            "code": "not_found",
        }


def test_an_upload_without_a_known_purpose_or_a_file_is_refused(server: OpenAIServer, client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="purpose"):
        client.files.create(file=("a.jsonl", b"a\n"), purpose="nonsense")  # type: ignore[arg-type]
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection.request("POST", "/v1/files", body=b"{}", headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 400
    assert "multipart/form-data" in json.load(response)["error"]["message"]
    connection.close()


def test_a_chunked_upload_is_read_whole(server: OpenAIServer) -> None:
    data = questions(3)
    boundary = "b0undary"
    form = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="r.jsonl"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    pieces = [form[index : index + 50] for index in range(0, len(form), 50)]
    connection.request(
        "POST",
        "/v1/files",
        body=iter(pieces),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        encode_chunked=True,
    )
    response = connection.getresponse()
    uploaded = json.load(response)
    assert response.status == 200, uploaded
    assert (uploaded["filename"], uploaded["bytes"]) == ("r.jsonl", len(data))
    assert server.file_data(uploaded["id"]) == data
    connection.close()


# -- a batch's life -----------------------------------------------------------------------------------------------


def test_a_batch_runs_validating_in_progress_completed(server: OpenAIServer, client: openai.OpenAI) -> None:
    batch = submit(client, questions(4), metadata={"run": "test"})
    assert batch.id == "batch_1"
    assert (batch.status, batch.endpoint, batch.completion_window) == ("validating", "/v1/chat/completions", "24h")
    assert batch.request_counts is not None
    assert (batch.request_counts.total, batch.request_counts.completed) == (0, 0)
    raw = client.batches.with_raw_response.retrieve(batch.id).http_response.json()
    assert set(raw) == BATCH_FIELDS  # every field of OpenAI's Batch, nulls included
    assert (raw["status"], raw["request_counts"]) == ("in_progress", {"total": 4, "completed": 2, "failed": 0})
    assert raw["in_progress_at"] is not None
    assert raw["expires_at"] == raw["created_at"] + 24 * 3600
    done = client.batches.retrieve(batch.id)
    assert done.status == "completed"
    assert done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (4, 4, 0)
    assert done.completed_at is not None
    assert done.finalizing_at is not None
    assert done.metadata == {"run": "test"}
    assert done.model == "grader"
    assert done.error_file_id is None  # no failures: no error file, as OpenAI's
    assert done.usage is not None
    assert (done.usage.input_tokens, done.usage.output_tokens, done.usage.total_tokens) == (40, 20, 60)
    assert client.batches.retrieve(batch.id) == done  # an ended batch stays as it is
    assert server.batch_polls == 3
    output = content(client, done.output_file_id)
    assert [line["custom_id"] for line in output] == ["q0", "q1", "q2", "q3"]
    first = output[0]
    assert first["id"].startswith("batch_req_")
    assert first["error"] is None
    assert first["response"]["status_code"] == 200
    assert first["response"]["request_id"].startswith("req_")
    assert first["response"]["body"]["choices"][0]["message"]["content"] == "answer to question 0"
    output_file = client.files.retrieve(done.output_file_id or "")
    assert (output_file.purpose, output_file.filename) == ("batch_output", "batch_1_output.jsonl")
    assert server.bodies == []  # the live endpoint saw nothing
    assert [body["messages"][0]["content"] for body in server.batch_bodies] == [f"question {i}" for i in range(4)]


def test_a_batch_answers_as_the_live_endpoint_does(server: OpenAIServer, client: openai.OpenAI) -> None:
    server.script = lambda request: Reply(
        texts=list(texts_for_n(request, lambda index: f"{last_user_text(request)} #{index}")),
        prompt_tokens=7,
        completion_tokens=2,
        finish_reason="length",
    )
    lines = [
        request_line("a", "first", n=3, temperature=0.0),
        request_line("b", "second", response_format={"type": "json_object"}),
    ]
    live = [client.chat.completions.with_raw_response.create(**line["body"]).http_response.json() for line in lines]
    batch, _ = run_to_end(client, submit(client, jsonl(lines)))
    answered = {line["custom_id"]: line["response"]["body"] for line in content(client, batch.output_file_id)}
    for line, reply in zip(lines, live, strict=True):
        body = answered[line["custom_id"]]
        assert body["id"] != reply["id"]
        assert {key: value for key, value in body.items() if key not in ("id", "created")} == {
            key: value for key, value in reply.items() if key not in ("id", "created")
        }
    assert server.batch_bodies == server.bodies == [line["body"] for line in lines]


def test_the_plan_sets_the_statuses_and_the_counts_grow(server: OpenAIServer, client: openai.OpenAI) -> None:
    server.batch = BatchPlan(statuses=("validating", "in_progress", "in_progress", "in_progress", "finalizing"))
    batch, seen = run_to_end(client, submit(client, questions(8)))
    assert seen == ["validating", "in_progress", "in_progress", "in_progress", "finalizing", "completed"]
    assert batch.request_counts is not None
    assert batch.request_counts.completed == 8
    server.batch = BatchPlan(statuses=["in_progress"])  # type: ignore[arg-type]
    assert server.batch.statuses == ("in_progress",)
    batch = submit(client, questions(8))
    assert batch.request_counts is not None
    assert (batch.status, batch.request_counts.total, batch.request_counts.completed) == ("in_progress", 8, 0)
    assert client.batches.retrieve(batch.id).status == "completed"
    server.batch = BatchPlan(statuses=())  # the creation answer already shows the end
    assert submit(client, questions(2)).status == "completed"
    server.batch = BatchPlan(statuses=("validating", "in_progress", "in_progress", "finalizing"))
    batch = submit(client, questions(8))
    progress = []
    while batch.status not in ENDED:
        batch = client.batches.retrieve(batch.id)
        counts = batch.request_counts
        assert counts is not None
        progress.append((batch.status, counts.total, counts.completed))
    assert progress == [("in_progress", 8, 2), ("in_progress", 8, 4), ("finalizing", 8, 6), ("completed", 8, 8)]


def test_failed_requests_go_to_the_error_file_with_the_live_error_body(
    server: OpenAIServer, client: openai.OpenAI
) -> None:
    def script(request: dict[str, Any]) -> Reply | str:
        text = last_user_text(request)
        if text == "question 1":
            return Reply(status=429, message="slow down")
        if text == "question 2":
            return Reply(status=400, message="bad prompt")
        if text == "question 3":
            raise RuntimeError("script broke")
        return "fine"

    server.script = script
    batch, _ = run_to_end(client, submit(client, questions(5)))
    assert batch.status == "completed"
    assert batch.request_counts is not None
    assert (batch.request_counts.total, batch.request_counts.completed, batch.request_counts.failed) == (5, 2, 3)
    assert [line["custom_id"] for line in content(client, batch.output_file_id)] == ["q0", "q4"]
    errors = {line["custom_id"]: line for line in content(client, batch.error_file_id)}
    assert set(errors) == {"q1", "q2", "q3"}
    assert errors["q1"]["error"] is None
    assert errors["q1"]["response"]["status_code"] == 429
    assert errors["q1"]["response"]["body"] == {
        "error": {"message": "slow down", "type": "rate_limit_error", "param": None, "code": "rate_limit_exceeded"}
    }
    assert errors["q2"]["response"]["status_code"] == 400
    assert errors["q2"]["response"]["body"]["error"]["type"] == "invalid_request_error"
    assert errors["q3"]["response"]["status_code"] == 500
    assert "script broke" in errors["q3"]["response"]["body"]["error"]["message"]
    assert batch.usage is not None
    assert batch.usage.input_tokens == 20  # the answered requests only

    server.script = lambda request: Reply(status=500)
    batch, _ = run_to_end(client, submit(client, questions(2)))
    assert batch.output_file_id is None  # nothing answered: no output file, as OpenAI's
    assert len(content(client, batch.error_file_id)) == 2


@pytest.mark.parametrize(("end", "code"), [("expired", "batch_expired"), ("cancelled", "batch_cancelled")])
@pytest.mark.parametrize(("answered", "ran"), [(2, 2), (None, 2), (0, 0), (99, 5)])
def test_an_expired_or_cancelled_batch_answers_only_the_first(
    server: OpenAIServer, client: openai.OpenAI, end: str, code: str, answered: int | None, ran: int
) -> None:
    server.batch = BatchPlan(end=end, answered=answered)  # type: ignore[arg-type]
    batch, seen = run_to_end(client, submit(client, questions(5)))
    assert seen == ["validating", "in_progress", end]
    assert batch.request_counts is not None
    counts = batch.request_counts
    assert (counts.total, counts.completed, counts.failed) == (5, ran, 5 - ran)
    assert getattr(batch, f"{end}_at") is not None
    if ran:
        assert [line["custom_id"] for line in content(client, batch.output_file_id)] == [f"q{i}" for i in range(ran)]
    else:
        assert batch.output_file_id is None
    if ran == 5:
        assert batch.error_file_id is None
        return
    errors = content(client, batch.error_file_id)
    assert [line["custom_id"] for line in errors] == [f"q{i}" for i in range(ran, 5)]
    assert all(line["response"] is None and line["error"]["code"] == code for line in errors)
    assert all(line["error"]["message"] for line in errors)


def test_a_failed_batch_has_errors_and_no_files(server: OpenAIServer, client: openai.OpenAI) -> None:
    server.batch = BatchPlan(statuses=("validating", "validating", "in_progress"), end="failed")
    batch, seen = run_to_end(client, submit(client, questions(3)))
    assert seen == ["validating", "validating", "in_progress", "failed"]
    assert batch.failed_at is not None
    assert (batch.output_file_id, batch.error_file_id) == (None, None)
    assert batch.errors is not None
    assert batch.errors.object == "list"
    assert [(error.code, error.line, error.param) for error in batch.errors.data or []] == [
        ("token_limit_exceeded", None, None)
    ]


def test_bad_input_lines_fail_validation_as_openai_does(server: OpenAIServer, client: openai.OpenAI) -> None:
    good = request_line("ok", "fine")
    lines = [
        json.dumps(good).encode(),
        b"{not json",
        json.dumps({**good, "custom_id": None}).encode(),
        json.dumps(good).encode(),  # the same custom_id again
        json.dumps({**good, "custom_id": "u", "url": "/v1/embeddings"}).encode(),
        json.dumps({**good, "custom_id": "m", "method": "GET"}).encode(),
        json.dumps({**good, "custom_id": "b", "body": "text"}).encode(),
        b"[1, 2]",
        b"",  # a blank line is skipped
        b"\xff\xfe",
    ]
    batch, seen = run_to_end(client, submit(client, b"\n".join(lines) + b"\n"))
    assert seen == ["validating", "failed"]  # a bad file shows only the validating statuses
    assert batch.errors is not None
    found = [(error.code, error.line, error.param) for error in batch.errors.data or []]
    assert found == [
        ("invalid_json_line", 2, None),
        ("missing_required_parameter", 3, "custom_id"),
        ("duplicate_custom_id", 4, "custom_id"),
        ("invalid_url", 5, "url"),
        ("invalid_method", 6, "method"),
        ("missing_required_parameter", 7, "body"),
        ("invalid_json_line", 8, None),
        ("invalid_json_line", 10, None),
    ]
    assert all(error.message for error in batch.errors.data or [])
    assert (batch.output_file_id, batch.error_file_id) == (None, None)
    assert len(server.batch_bodies) == 5  # every line's body as sent, valid or not ("text" is no body)

    empty, _ = run_to_end(client, submit(client, b"\n\n"))
    assert empty.errors is not None
    assert [(error.code, error.line) for error in empty.errors.data or []] == [("empty_file", None)]


def test_a_batch_create_with_bad_parameters_is_refused(server: OpenAIServer, client: openai.OpenAI) -> None:
    uploaded = client.files.create(file=("requests.jsonl", questions(1)), purpose="batch")
    other = client.files.create(file=("notes.jsonl", questions(1)), purpose="user_data")

    def create(**kwargs: Any) -> Any:
        arguments = {"input_file_id": uploaded.id, "endpoint": "/v1/chat/completions", "completion_window": "24h"}
        return client.batches.create(**{**arguments, **kwargs})

    with pytest.raises(openai.BadRequestError, match="endpoint"):
        create(endpoint="/v1/embeddings")
    with pytest.raises(openai.BadRequestError, match="completion_window"):
        create(completion_window="1h")
    with pytest.raises(openai.BadRequestError, match="metadata"):
        create(metadata={"n": 1})
    with pytest.raises(openai.NotFoundError, match="file-99"):
        create(input_file_id="file-99")
    with pytest.raises(openai.BadRequestError, match="purpose"):
        create(input_file_id=other.id)
    for call in (client.batches.retrieve, client.batches.cancel):
        with pytest.raises(openai.NotFoundError, match="batch_9"):
            call("batch_9")
    assert list(client.batches.list()) == []


def test_batches_are_listed_newest_first_in_pages_without_advancing(
    server: OpenAIServer, client: openai.OpenAI
) -> None:
    ids = [submit(client, questions(1)).id for _ in range(3)]
    page = client.batches.list(limit=2)
    assert [batch.id for batch in page.data] == ids[:0:-1]
    assert page.has_more is True
    assert [batch.id for batch in client.batches.list(limit=2)] == ids[::-1]  # the SDK follows the cursor
    assert [batch.status for batch in client.batches.list()] == ["validating"] * 3
    assert server.batch_polls == 0
    assert server.peek_batch(ids[0])["status"] == "validating"


# -- what a test programs -----------------------------------------------------------------------------------------


def test_the_lines_hook_reorders_adds_and_drops_output_lines(server: OpenAIServer, client: openai.OpenAI) -> None:
    def rewrite(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        shuffled = lines[1:]  # q0 dropped
        random.Random(3).shuffle(shuffled)
        stranger = {**lines[0], "id": "batch_req_x", "custom_id": "nobody"}
        return [stranger, *shuffled]

    server.batch = BatchPlan(lines=rewrite)
    batch, _ = run_to_end(client, submit(client, questions(6)))
    found = [line["custom_id"] for line in content(client, batch.output_file_id)]
    assert found[0] == "nobody"
    assert sorted(found[1:]) == ["q1", "q2", "q3", "q4", "q5"]
    assert found[1:] != sorted(found[1:])
    assert batch.request_counts is not None
    assert batch.request_counts.completed == 6  # what the server answered, whatever the file then says

    server.batch = BatchPlan(lines=lambda lines: [])
    batch, _ = run_to_end(client, submit(client, questions(2)))
    assert batch.output_file_id is None  # no line left: no file


def test_the_output_hook_truncates_nests_and_inflates(server: OpenAIServer, client: openai.OpenAI) -> None:
    server.batch = BatchPlan(output=lambda data: data[: len(data) // 2])
    batch, _ = run_to_end(client, submit(client, questions(3)))
    data = client.files.content(batch.output_file_id or "").read()
    assert not data.endswith(b"\n")
    with pytest.raises(ValueError, match=r"Unterminated|Expecting"):
        read_lines(data)

    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    server.batch = BatchPlan(output=lambda data: data + deep)
    batch, _ = run_to_end(client, submit(client, questions(1)))
    assert client.files.content(batch.output_file_id or "").read().endswith(deep)

    huge = b" " * (64 << 20) + b"\n"  # held once: the stored file is this very object, sent in place
    server.batch = BatchPlan(output=lambda data: huge, content_delay=0.001)
    batch, _ = run_to_end(client, submit(client, questions(1)))
    assert server.file_data(batch.output_file_id or "") is huge
    assert client.files.retrieve(batch.output_file_id or "").bytes == len(huge)
    received = 0
    with client.files.with_streaming_response.content(batch.output_file_id or "") as response:
        for chunk in response.iter_bytes(1 << 20):
            received += len(chunk)
            if received >= 8 << 20:
                break  # a client bounding what it reads hangs up; the server stays quiet
    assert received >= 8 << 20
    assert client.files.retrieve(batch.output_file_id or "").bytes == len(huge)  # still serving


def test_a_failing_hook_is_a_500_and_the_server_keeps_serving(server: OpenAIServer, client: openai.OpenAI) -> None:
    def broken(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise RuntimeError("hook broke")

    server.batch = BatchPlan(statuses=(), lines=broken)
    with pytest.raises(openai.InternalServerError, match="hook broke"):
        submit(client, questions(1))
    server.batch = BatchPlan()
    assert submit(client, questions(1)).status == "validating"


def test_a_plan_changed_after_creation_decides_the_end(server: OpenAIServer, client: openai.OpenAI) -> None:
    batch = submit(client, questions(4))
    server.batch = BatchPlan(end="expired", answered=1)
    batch, _ = run_to_end(client, batch)
    assert batch.status == "expired"
    assert batch.request_counts is not None
    assert batch.request_counts.completed == 1


def test_a_plan_is_checked() -> None:
    with pytest.raises(ValueError, match="statuses"):
        BatchPlan(statuses=("completed",))
    with pytest.raises(ValueError, match="end"):
        BatchPlan(end="done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="answered"):
        BatchPlan(answered=-1)
    with pytest.raises(ValueError, match="delays"):
        BatchPlan(content_delay=-1)


# -- cancellation -------------------------------------------------------------------------------------------------


def test_a_client_cancel_shows_cancelling_then_cancelled(server: OpenAIServer, client: openai.OpenAI) -> None:
    server.batch = BatchPlan(answered=1)
    batch = client.batches.retrieve(submit(client, questions(3)).id)
    assert batch.status == "in_progress"
    cancelling = client.batches.cancel(batch.id)
    assert cancelling.status == "cancelling"
    assert cancelling.cancelling_at is not None
    assert client.batches.cancel(batch.id).status == "cancelling"  # again: the same
    cancelled = client.batches.retrieve(batch.id)
    assert cancelled.status == "cancelled"
    assert cancelled.cancelled_at is not None
    assert cancelled.request_counts is not None
    assert (cancelled.request_counts.completed, cancelled.request_counts.failed) == (1, 2)
    assert [line["custom_id"] for line in content(client, cancelled.output_file_id)] == ["q0"]
    assert {line["error"]["code"] for line in content(client, cancelled.error_file_id)} == {"batch_cancelled"}
    assert client.batches.cancel(batch.id).status == "cancelled"
    done, _ = run_to_end(client, submit(client, questions(1)))
    with pytest.raises(openai.ConflictError, match="completed"):
        client.batches.cancel(done.id)


def test_a_server_side_cancel_ends_the_batch_at_once(server: OpenAIServer, client: openai.OpenAI) -> None:
    server.batch = BatchPlan(statuses=("validating", "in_progress", "in_progress"))
    batch = client.batches.retrieve(submit(client, questions(4)).id)
    assert batch.status == "in_progress"
    cancelled = server.cancel_batch(batch.id, answered=3)
    assert cancelled["status"] == "cancelled"
    assert server.batch_polls == 1  # no request was needed
    batch = client.batches.retrieve(batch.id)
    assert batch.status == "cancelled"
    assert batch.request_counts is not None
    assert (batch.request_counts.completed, batch.request_counts.failed) == (3, 1)
    assert [line["custom_id"] for line in content(client, batch.error_file_id)] == ["q3"]
    with pytest.raises(ValueError, match="already ended"):
        server.cancel_batch(batch.id)
    with pytest.raises(KeyError):
        server.cancel_batch("batch_99")
    fresh = submit(client, questions(4))
    assert server.cancel_batch(fresh.id)["request_counts"] == {"total": 4, "completed": 2, "failed": 2}  # half


def test_a_script_may_call_back_into_the_server(server: OpenAIServer, client: openai.OpenAI) -> None:
    seen: list[int] = []

    def script(request: dict[str, Any]) -> str:
        seen.append(len(server.batch_bodies) + server.batch_polls)  # no deadlock on the batch lock
        return "ok"

    server.script = script
    run_to_end(client, submit(client, questions(2)))
    assert seen == [4, 4]


# -- interruptions ------------------------------------------------------------------------------------------------


class Interrupted(Exception):
    pass


@pytest.fixture
def sigint() -> Iterator[None]:
    """SIGINT to this process raises :class:`Interrupted` in the test (the main thread), as Ctrl-C would."""

    def raise_interrupted(_signal: int, _frame: object) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGINT, raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupt() -> None:
    """Ctrl-C, from a server thread: the signal goes to the main thread, waking it from its blocked read (a signal
    raised in the server thread would wait for the main thread's next bytecode, after the read)."""
    main = threading.main_thread().ident
    assert main is not None
    signal.pthread_kill(main, signal.SIGINT)


def test_sigint_mid_download(server: OpenAIServer, client: openai.OpenAI, sigint: None) -> None:
    calls: list[float] = []

    def on_content() -> None:
        calls.append(time.monotonic())
        interrupt()

    batch, _ = run_to_end(client, submit(client, questions(3)))
    server.batch = BatchPlan(content_delay=5.0, on_content=on_content)
    started = time.monotonic()
    with pytest.raises(Interrupted):
        client.files.content(batch.output_file_id or "").read()
    assert len(calls) == 1
    assert time.monotonic() - started < 2.0  # interrupted in the delay, not after it
    server.batch = BatchPlan()
    assert len(content(client, batch.output_file_id)) == 3  # the file is still there for a rerun


def test_sigint_mid_upload(server: OpenAIServer, client: openai.OpenAI, sigint: None) -> None:
    server.batch = BatchPlan(upload_delay=5.0, on_upload=interrupt)
    started = time.monotonic()
    with pytest.raises(Interrupted):
        client.files.create(file=("requests.jsonl", questions(2)), purpose="batch")
    assert time.monotonic() - started < 2.0


def test_the_content_hook_runs_midway_and_may_hold_the_rest(server: OpenAIServer, client: openai.OpenAI) -> None:
    gate = threading.Event()
    batch, _ = run_to_end(client, submit(client, questions(40)))
    data = server.file_data(batch.output_file_id or "")
    server.batch = BatchPlan(on_content=lambda: gate.wait(5))
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection.request("GET", f"/v1/files/{batch.output_file_id}/content")
    started = time.monotonic()
    response = connection.getresponse()
    assert response.status == 200
    assert int(response.headers["Content-Length"]) == len(data)
    head = response.read(len(data) // 2)  # the first half arrives while the hook holds the rest
    assert head == data[: len(data) // 2]
    assert time.monotonic() - started < 2.0
    assert not gate.is_set()
    gate.set()
    assert head + response.read() == data
    connection.close()


def test_a_timed_out_download_and_upload_and_a_quick_stop() -> None:
    started = time.monotonic()
    with OpenAIServer(batch=BatchPlan(content_delay=30.0, upload_delay=30.0)) as server:
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0, timeout=0.1)
        with pytest.raises(openai.APITimeoutError):
            client.files.create(file=("requests.jsonl", b"x\n"), purpose="batch")
        server.batch = BatchPlan(content_delay=30.0)
        uploaded = client.with_options(timeout=5).files.create(file=("requests.jsonl", b"x\n"), purpose="batch")
        with pytest.raises(openai.APITimeoutError):
            client.files.content(uploaded.id).read()
        client.close()
    assert time.monotonic() - started < 2.0  # stopping wakes the sleeping handlers


def test_every_http_request_is_counted(server: OpenAIServer, client: openai.OpenAI) -> None:
    batch, _ = run_to_end(client, submit(client, questions(1)))  # upload, create, two GETs
    client.files.content(batch.output_file_id or "").read()
    client.batches.list()
    client.files.delete(batch.input_file_id)
    assert server.requests == 7
    assert server.batch_polls == 2
    assert server.bodies == []
