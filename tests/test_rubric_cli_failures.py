"""``answer-eval rubric`` runs that must not pass for a success, and what a run says of itself (issue 29).

The command line in process, against a port where nothing listens and against the loopback
test server: a run with no item graded, or with no request answered, exits 3 after printing its
summary and writing its output; a budget that cuts the samples is counted; Haystack's warning for
each cut reply is counted, not printed; ``--help`` offers only the flags the command takes.
"""

from __future__ import annotations

import json
import socket

from tests.cli_runs import cli, write_jsonl
from tests.openai_server import OpenAIServer, Reply, texts_for_n
from tests.test_rubric_cli import env_with_key, grading_script, rows, rubric_args

EXIT_NOTHING_GRADED = 3
RUBRIC_KINDS = ["parse_failure", "budget_stop", "refusal", "error"]


def dead_url() -> str:
    """The URL of a loopback port where nothing listens (bound, then closed: the system does not hand it out again)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def dead_args(source, *more):
    args = ("rubric", source, "--metric", "question_answering_correctness", "--model", "grader", "--no-progress")
    return (*args, "--api-base-url", dead_url(), "--api-key-env", "ANSWER_EVAL_CLI_KEY", *more)


def test_a_dead_server_exits_3_after_printing_the_summary_and_writing_every_row(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    output = tmp_path / "graded.jsonl"
    done = cli(*dead_args(source, "--output", output, "--format", "json", "--max-retries", "1"), env=env_with_key())
    assert done.returncode == EXIT_NOTHING_GRADED, done.stderr
    summary = json.loads(done.stdout)  # the summary is printed all the same
    assert (summary["items"], summary["graded"], summary["failure_counts"]["error"]) == (3, 0, 3)
    assert summary["calls"] == 6  # each request tried twice
    assert "all 6 requests (tries included) to http://127.0.0.1:" in done.stderr
    assert "got no answer (no connection, or none within --timeout)" in done.stderr
    assert f"the output {output} is written" in done.stderr
    assert "Traceback" not in done.stderr
    written = [json.loads(line) for line in output.read_text().splitlines()]  # what was paid for is kept
    assert [row["failure_kind"] for row in written] == ["error"] * 3
    assert all("Connection" in row["explanation"] for row in written)
    assert [row["samples_used"] for row in written] == [0, 0, 0]


def test_a_dead_server_exits_3_even_when_some_rows_were_decided_without_a_call(tmp_path):
    # A pair whose baseline has no text is decided without asking: graded, though no request got an answer.
    data = [
        {"prediction": f"Paris ({n})", "baseline": "Lyon" if n else "", "question": "Capital?", "context": "Paris."}
        for n in range(3)
    ]
    source = write_jsonl(tmp_path / "pairs.jsonl", data)
    done = cli(*dead_args(source, "--metric", "question_answering_quality", "--pairwise", "--max-retries", "0"))
    assert done.returncode == EXIT_NOTHING_GRADED, done.stderr
    assert "graded           1" in done.stdout
    assert "all 4 requests (tries included)" in done.stderr  # two rows, asked in both orders


def test_a_run_in_which_no_reply_could_be_read_exits_3_and_keeps_its_output(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    output = tmp_path / "graded.jsonl"
    with OpenAIServer(lambda request: "I would rather not say.") as server:
        done = cli(*rubric_args(source, server, "--output", output), env=env_with_key())
        assert server.requests == 4
    assert done.returncode == EXIT_NOTHING_GRADED, done.stderr
    assert "no item was graded: all 4 items failed (parse_failure 4)" in done.stderr
    assert len(output.read_text().splitlines()) == 4


def test_a_run_with_one_item_graded_exits_0(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(3))
    replies = iter(['{"explanation": "ok", "score": 1}', "unreadable", "unreadable"])
    with OpenAIServer(lambda request: next(replies)) as server:
        done = cli(*rubric_args(source, server, "--concurrency", "1", "--output", tmp_path / "o.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "graded           1" in done.stdout


def test_a_budget_that_cuts_the_samples_marks_each_row_and_counts_them(tmp_path):
    # The server ignores n, as llama.cpp does: one reply a request, and the budget stops the top-ups.
    source = write_jsonl(tmp_path / "answers.jsonl", rows(4))
    output = tmp_path / "graded.jsonl"
    # --structured off: under auto the first row's draw, top-ups included, proves the schema alone, first.
    with OpenAIServer(grading_script) as server:
        more = ("--samples", "3", "--max-calls", "4", "--structured", "off", "--output", output, "--format", "json")
        done = cli(*rubric_args(source, server, *more), env=env_with_key())
        assert server.requests == 4
        less = ("--samples", "3", "--max-calls", "4", "--structured", "off")
        text = cli(*rubric_args(source, server, *less), env=env_with_key())
    assert done.returncode == text.returncode == 0, done.stderr + text.stderr
    summary = json.loads(done.stdout)
    assert (summary["graded"], summary["samples_asked"], summary["graded_on_fewer_samples"]) == (4, 3, 4)
    written = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["samples_used"] for row in written] == [1] * 4
    assert [row["confidence"] for row in written] == [0.3333] * 4
    assert "fewer samples    4 graded on fewer than the 3 asked" in text.stdout


def test_all_samples_read_is_no_shortfall(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(lambda request: texts_for_n(request, lambda _: grading_script(request))) as server:
        done = cli(*rubric_args(source, server, "--samples", "3", "--format", "json"), env=env_with_key())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["graded_on_fewer_samples"] == 0


def test_haystacks_warning_for_each_cut_reply_is_counted_not_printed(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(5))
    cut = Reply(texts=['{"explanation": "the reference matches", "score": 1}'], finish_reason="length")
    with OpenAIServer(lambda request: cut) as server:
        done = cli(*rubric_args(source, server, "--format", "json", "--output", tmp_path / "o.jsonl"))
        assert server.requests == 5
    assert done.returncode == 0, done.stderr
    assert "truncated" not in done.stderr
    assert done.stderr.strip() == ""
    summary = json.loads(done.stdout)
    assert summary["cut_replies"] == 5
    assert summary["graded"] == 5  # cut, but still readable
    written = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [row["cut_replies"] for row in written] == [1] * 5


def test_rubric_help_offers_only_the_flags_it_takes_and_the_summary_only_the_graders_failure_kinds(tmp_path):
    helped = cli("rubric", "--help")
    assert helped.returncode == 0
    assert "--jobs N" not in helped.stdout  # the grader runs in one process locally; Dask runs it too
    for flag in ("--engine", "--scheduler", "--workers", "SHARD"):
        assert flag in helped.stdout
    assert "Exit 3 when" in " ".join(helped.stdout.split())
    assert "--engine" in cli("score", "--help").stdout  # the file commands that take them still offer them
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_script) as server:
        done = cli(*rubric_args(source, server, "--format", "json"), env=env_with_key())
        text = cli(*rubric_args(source, server), env=env_with_key())
    assert list(json.loads(done.stdout)["failure_counts"]) == RUBRIC_KINDS
    assert "not_in_document" not in text.stdout
    assert "wrong" not in text.stdout


def test_jobs_given_to_rubric_anyway_is_an_unknown_argument_and_the_engine_s_flags_need_dask(tmp_path):
    source = write_jsonl(tmp_path / "answers.jsonl", rows(2))
    with OpenAIServer(grading_script) as server:
        done = cli(*rubric_args(source, server, "--jobs", "2"), env=env_with_key())
        assert done.returncode == 2
        assert "unrecognized arguments: --jobs 2" in done.stderr
        for flags in (("--workers", "2"), ("--scheduler", "tcp://x:8786")):
            done = cli(*rubric_args(source, server, *flags), env=env_with_key())
            assert done.returncode == 2
            assert f"{flags[0]} needs --engine dask" in done.stderr
        assert server.requests == 0
