"""A run that fails keeps what it did: real command-line runs (a real loopback server for the paid ones).

Whatever stops a file command (a bug, a bad line, a grader's failure), the output path is left as
it was and the rows done are kept for ``--resume``, as after Ctrl-C: a resumed run pays for no row
twice and writes what an uninterrupted run writes. Also here: the files an evaluator writes
besides the output (the rubric's reply cache) are never the input or the output, and
``--checkpoint-seconds 0`` keeps a grader's batch.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runs import (
    cli,
    cycled,
    partial_path,
    record_path,
    sha256,
    start_cli,
    stop,
    wait_for_record,
    write_jsonl,
    write_lines,
)
from tests.crashing_cli import CRASH_ON, registered
from tests.openai_server import OpenAIServer, Reply, last_user_text


def crashing_cli(*args: Any, crash_on: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command line with the crashing commands (:mod:`tests.crashing_cli`), failing where asked; in process."""
    env = {key: value for key, value in os.environ.items() if key != CRASH_ON}
    if crash_on is not None:
        env[CRASH_ON] = crash_on
    with registered():
        return cli(*args, env=env)


def rows(count: int) -> list[dict[str, str]]:
    return [
        {"question": f"What is {n} plus {n}?", "prediction": f"answer-{n}: {2 * n}", "reference": str(2 * n)}
        for n in range(count)
    ]


def grading_script(request: dict[str, Any]) -> str:
    """Correct when the reply's number is the reference's: a deterministic stand-in for a grader."""
    text = last_user_text(request)
    prediction = text.split("<Response>\n", 1)[1].split("\n</Response>", 1)[0]
    reference = text.split("<Reference response>\n", 1)[1].split("\n</Reference response>", 1)[0]
    return json.dumps({"explanation": "compared", "score": int(prediction.endswith(" " + reference))})


def asked(server: OpenAIServer) -> Counter[str]:
    """How many times each prediction was sent to the grader."""
    return Counter(last_user_text(body).split("<Response>\n", 1)[1].split("\n", 1)[0] for body in server.bodies)


def grader_args(command: str, source: Path, server: OpenAIServer, *more: Any, metric: bool = True) -> tuple[Any, ...]:
    return (
        command,
        source,
        *(("--metric", "question_answering_correctness") if metric else ()),
        "--api-base-url",
        server.url,
        "--model",
        "grader",
        "--no-progress",
        *more,
    )


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def kept_note(rows: int, output: Path) -> str:
    return f"the {rows:,} rows done before this are kept in {partial_path(output)}"


# -- any exception keeps the rows done ---------------------------------------------------------------


def test_an_unexpected_exception_keeps_the_paid_rows_exits_1_and_resume_pays_no_row_twice(tmp_path):
    # 48 rows graded 16 at a time; the batch holding the 40th fails after the server answered it.
    count = 48
    source = write_jsonl(tmp_path / "answers.jsonl", rows(count))
    output = tmp_path / "graded.jsonl"
    with OpenAIServer(grading_script) as server:
        args = grader_args("crashing-rubric", source, server, "--output", output)
        failed = crashing_cli(*args, crash_on="answer-39: 78")
        assert failed.returncode == 1, failed.stderr  # a bug: exit 1, with its traceback
        assert "Traceback (most recent call last)" in failed.stderr
        assert "RuntimeError: a failure on purpose" in failed.stderr
        assert "this is a bug in answer-eval" in failed.stderr
        assert kept_note(32, output) in failed.stderr
        assert "--resume" in failed.stderr
        assert not output.exists()
        kept = lines_of(partial_path(output))
        assert [row["prediction"] for row in kept] == [row["prediction"] for row in rows(32)]
        assert json.loads(record_path(output).read_text(encoding="utf-8"))["position"]["rows"] == 32
        assert server.requests == 48

        resumed = crashing_cli(*args, "--resume", "--format", "json")
        assert resumed.returncode == 0, resumed.stderr
        paid = asked(server)
    assert all(paid[row["prediction"]] == 1 for row in kept)  # the rows kept were not paid again
    assert server.requests == 48 + 16  # only the failed batch is asked again
    assert json.loads(resumed.stdout)["calls"] == 48  # the summary counts the calls of the rows written
    graded = lines_of(output)
    assert [row["prediction"] for row in graded] == [row["prediction"] for row in rows(count)]
    assert all(row["score"] == 1 for row in graded)
    assert not partial_path(output).exists()
    assert not record_path(output).exists()


def test_a_free_evaluator_that_fails_keeps_its_rows_and_the_resumed_output_is_the_uninterrupted_one(tmp_path):
    lines = list(cycled("rag_answers.jsonl", 1000))
    marker = "The 600th answer, whose batch (rows 513 to 768) fails."
    lines[599] = json.dumps({**json.loads(lines[599]), "prediction": marker})
    source = write_lines(tmp_path / "answers.jsonl", iter(lines))
    reference = tmp_path / "reference.jsonl"
    whole = crashing_cli("crashing-score", source, "--output", reference, "--format", "json")
    assert whole.returncode == 0, whole.stderr
    output = tmp_path / "scored.jsonl"

    failed = crashing_cli("crashing-score", source, "--output", output, crash_on=marker)

    assert failed.returncode == 1
    assert "RuntimeError: a failure on purpose" in failed.stderr
    assert kept_note(512, output) in failed.stderr  # the two batches of 256 rows before the one that failed
    assert not output.exists()
    resumed = crashing_cli("crashing-score", source, "--output", output, "--format", "json", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == reference.read_bytes()
    summary, uninterrupted = json.loads(resumed.stdout), json.loads(whole.stdout)
    assert {**summary, "output": None} == {**uninterrupted, "output": None}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bad_line_keeps_the_rows_before_it_and_a_resume_after_mending_it_gives_the_whole_output(tmp_path, jobs):
    count, bad = (1000, 700) if jobs == "1" else (6000, 5000)
    lines = list(cycled("rag_answers.jsonl", count))
    good = lines[bad - 1]
    lines[bad - 1] = good[:-5]  # cut short: not JSON
    source = write_lines(tmp_path / "answers.jsonl", iter(lines))
    output = tmp_path / "scored.jsonl"

    failed = cli("score", source, "--output", output, "--jobs", jobs)

    assert failed.returncode == 2
    assert f"{source}:{bad}: not valid JSON" in failed.stderr
    # One process writes every row before the bad line; workers keep the chunks of 2,000 lines before it.
    done = bad - 1 if jobs == "1" else 4000
    assert kept_note(done, output) in failed.stderr
    assert "Traceback" not in failed.stderr
    assert not output.exists()
    assert len(partial_path(output).read_text(encoding="utf-8").splitlines()) == done
    # Resumed before mending, it fails on the same line at once and keeps the same rows, still resumable.
    again = cli("score", source, "--output", output, "--jobs", jobs, "--resume")
    assert again.returncode == 2
    assert f"{source}:{bad}: not valid JSON" in again.stderr
    assert kept_note(done, output) in again.stderr

    lines[bad - 1] = good
    write_lines(source, iter(lines))
    reference = tmp_path / "reference.jsonl"
    assert cli("score", source, "--output", reference).returncode == 0
    resumed = cli("score", source, "--output", output, "--resume", "--jobs", jobs)
    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == reference.read_bytes()


def test_a_row_holding_an_added_column_keeps_nothing_a_resume_could_not_use(tmp_path):
    # Going on needs --column-prefix or --replace-columns, which a resume refuses: no checkpoint is left.
    data = [{"answers": ["a"], "prediction": "a"}] * 600 + [{"answers": ["a"], "prediction": "a", "correct": False}]
    source = write_jsonl(tmp_path / "answers.jsonl", data)
    output = tmp_path / "scored.jsonl"
    failed = cli("score", source, "--output", output)
    assert failed.returncode == 2
    assert f"{source}:601: the row already has a column 'correct'" in failed.stderr
    assert "kept in" not in failed.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["answers.jsonl"]


def test_a_failure_reading_standard_input_keeps_nothing(tmp_path):
    # Standard input cannot be read again: there is nothing to resume.
    source = write_lines(tmp_path / "answers.jsonl", iter([*cycled("rag_answers.jsonl", 600), "not json"]))
    output = tmp_path / "out" / "scored.jsonl"
    output.parent.mkdir()
    with open(source, "rb") as stdin:
        failed = cli("score", "-", "--output", output, stdin=stdin)
    assert failed.returncode == 2
    assert "<stdin>:601: not valid JSON" in failed.stderr
    assert "--resume" not in failed.stderr
    assert list(output.parent.iterdir()) == []


# -- the files an evaluator writes besides the output -----------------------------------------------


@pytest.mark.parametrize(
    "alias", ["the input", "a symbolic link to the input", "a hard link to the input", "the output", "the old output",
              "the partial output", "the checkpoint record", "standard input's file", "a folder"],
)  # fmt: skip
def test_a_reply_cache_that_is_the_input_or_the_output_is_refused_before_any_call(tmp_path, alias):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(40))
    digest = sha256(source)
    output = tmp_path / "graded.jsonl"
    cache = {
        "the input": source,
        "a symbolic link to the input": tmp_path / "link.jsonl",
        "a hard link to the input": tmp_path / "hard.jsonl",
        "the output": output,
        "the old output": tmp_path / "alias.jsonl",
        "the partial output": partial_path(output),
        "the checkpoint record": record_path(output),
        "standard input's file": source,
        "a folder": tmp_path / "replies",
    }[alias]
    if alias == "a symbolic link to the input":
        cache.symlink_to(source)
    elif alias == "a hard link to the input":
        os.link(source, cache)
    elif alias == "the old output":
        output.write_text("an earlier result\n", encoding="utf-8")
        cache.symlink_to(output)
    elif alias == "a folder":
        cache.mkdir()
    given = "-" if alias == "standard input's file" else source
    with OpenAIServer(grading_script) as server, open(source, "rb") as stdin:
        done = cli(*grader_args("rubric", given, server), "--cache", cache, "--output", output, stdin=stdin)
        assert server.requests == 0
    assert done.returncode == 2, done.stderr
    assert f"{cache} (the reply cache, --cache) is " in done.stderr
    assert "Traceback" not in done.stderr
    assert sha256(source) == digest  # 40 lines, not 80
    assert not partial_path(output).exists()
    if alias == "the old output":
        assert output.read_text(encoding="utf-8") == "an earlier result\n"
    else:
        assert not output.exists()


# -- --checkpoint-seconds 0 keeps a grader's batch --------------------------------------------------


@pytest.mark.slow
@pytest.mark.subprocess  # stopped by a signal
def test_checkpoint_seconds_0_keeps_the_graders_batch_and_records_after_each(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(256))
    output = tmp_path / "graded.jsonl"
    slow = lambda request: Reply(texts=[grading_script(request)], delay=0.1)  # noqa: E731 - a one-line script
    with OpenAIServer(slow) as server:
        args = grader_args("rubric", source, server, "--output", output, "--checkpoint-seconds", "0")
        process = start_cli(*args, "--concurrency", "16")
        record = wait_for_record(process, output)
        code, _, stderr = stop(process, signal.SIGINT)
        assert code == 130, stderr
        # The batch's requests went together (up to 16 on an idle machine), not one row at a time.
        assert server.max_in_flight > 1
    # At --concurrency 16 a batch is 64 rows (four rounds of requests): a record after each, never inside one.
    assert record["position"]["rows"] % 64 == 0
    kept = json.loads(record_path(output).read_text(encoding="utf-8"))["position"]["rows"]
    assert kept % 64 == 0
    assert 0 < kept < 256


@pytest.mark.parametrize("clash", ["the output", "the reply cache"])
def test_a_rubric_file_the_output_or_the_cache_would_overwrite_is_refused_before_any_call(tmp_path, clash):
    # The rubric is read before the run; an output (or a cache) at its path would replace it (or append to it).
    from answer_eval.llm.rubric_prompts import catalogue

    rubric = tmp_path / "rubric.jsonl"
    rubric.write_text(json.dumps(catalogue()["question_answering_correctness"].to_dict()), encoding="utf-8")
    text = rubric.read_bytes()
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    output = rubric if clash == "the output" else tmp_path / "graded.jsonl"
    with OpenAIServer(grading_script) as server:
        more = ("--rubric", rubric, "--output", output, *(("--cache", rubric) if clash == "the reply cache" else ()))
        done = cli(*grader_args("rubric", source, server, *more, metric=False))
        assert server.requests == 0
    assert done.returncode == 2, done.stderr
    assert f"is {rubric} (the rubric, --rubric): the run would write into a file it reads" in done.stderr
    assert rubric.read_bytes() == text


def test_an_output_path_holding_a_fifo_is_refused(tmp_path):
    source = write_lines(tmp_path / "answers.jsonl", cycled("rag_answers.jsonl", 20))
    output = tmp_path / "scored.jsonl"
    os.mkfifo(output)
    done = cli("score", source, "--output", output)
    assert done.returncode == 2
    assert f"output {output} is not a regular file" in done.stderr
    assert stat.S_ISFIFO(os.lstat(output).st_mode)  # still the FIFO, not replaced by a file
