"""``--jobs``: worker processes give byte-identical output, summaries and errors (the CLI in process)."""

import json

import pytest

from answer_eval.engine.runner import process_jsonl
from answer_eval.errors import InputError
from answer_eval.evaluators.registry import EVALUATORS
from tests.cli_runs import cli
from tests.conftest import EXAMPLES

RAG = EXAMPLES / "data" / "rag_answers.jsonl"
NQ = EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl"


def make_input(path, lines=4_000, invalid_every=0):
    """A few thousand real rows (the example files, cycled), with malformed lines sprinkled in."""
    rows = [line for source in (RAG, NQ) for line in source.read_text(encoding="utf-8").splitlines()]
    bad = ["not json", "[1, 2]", '{"prediction": "x"}', '{"answers": [], "prediction": "x"}', ""]
    out = []
    for index in range(lines):
        if invalid_every and index % invalid_every == invalid_every - 1:
            out.append(bad[(index // invalid_every) % len(bad)])
        else:
            out.append(rows[index % len(rows)])
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_two_jobs_write_the_same_bytes_and_summary(tmp_path, suffix):
    source = make_input(tmp_path / "in.jsonl", invalid_every=97)
    runs = {}
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}{suffix}"
        done = cli("score", source, "--skip-invalid", "--format", "json", "--jobs", jobs, "--output", out)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary.pop("output") == str(out)
        runs[jobs] = (out.read_bytes(), summary)
    assert runs[1] == runs[2]
    blank = 4_000 // 97 // 5  # every fifth sprinkled line is blank: skipped, not invalid
    assert runs[1][1]["invalid_lines"] == 4_000 // 97 - blank
    assert runs[1][1]["items"] == 4_000 - 4_000 // 97
    assert "error" in runs[1][1]["failure_counts"]


# Every file command, on rows it reads (cycled to a few thousand so the workers get several chunks),
# with one malformed line for --skip-invalid to skip in a worker.
# Every file command of the registry that runs on several processes (an LLM grader's cost is the server's),
# on its bundled example file.
EVERY_COMMAND = {
    entry.command: ([entry.command], entry.example, entry.name)
    for entry in EVALUATORS.values()
    if entry.parameters_are_options
}


@pytest.mark.parametrize("case", sorted(EVERY_COMMAND))
def test_every_file_command_gives_the_same_output_and_summary_with_two_jobs(tmp_path, case):
    from tests.cli_runs import cycled, write_lines

    command, name, registered = EVERY_COMMAND[case]
    lines = list(cycled(name, 4_500))
    lines[2_600] = "not json"  # in the second chunk
    source = write_lines(tmp_path / "in.jsonl", iter(lines))
    runs = {}
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}.jsonl"
        done = cli(*command, source, "--skip-invalid", "--format", "json", "--jobs", jobs, "--output", out)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary.pop("output") == str(out)
        runs[jobs] = (out.read_bytes(), summary)
    assert runs[1] == runs[2]
    assert runs[1][1]["items"] == 4_499
    assert runs[1][1]["invalid_lines"] == 1
    assert runs[1][1]["signature"].startswith(f"{registered}|")


def test_two_jobs_print_the_same_text_summary(tmp_path):
    source = make_input(tmp_path / "in.jsonl", invalid_every=250)
    one = cli("score", source, "--skip-invalid", "--jobs", "1")
    two = cli("score", source, "--skip-invalid", "-j", "2")
    assert one.returncode == two.returncode == 0
    assert one.stdout == two.stdout
    assert "invalid lines" in one.stdout


def test_without_skip_invalid_the_same_line_is_named_and_nothing_written_at_the_output(tmp_path):
    # The bad line sits in the second chunk a worker gets, after thousands of good rows.
    source = make_input(tmp_path / "in.jsonl", lines=5_000)
    lines = source.read_text(encoding="utf-8").splitlines()
    lines[3_210] = '{"answers": "Paris"}'
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = []
    for jobs, kept in ((1, 3210), (2, 2000)):
        out = tmp_path / f"out{jobs}.jsonl"
        done = cli("score", source, "--jobs", jobs, "--output", out)
        assert not out.exists()
        # The rows before the line are kept for --resume: every one in one process, whole chunks with workers.
        assert sorted(path.name for path in tmp_path.glob(f".{out.name}*")) == [
            f".{out.name}.partial",
            f".{out.name}.partial.json",
        ]
        assert f"the {kept:,} rows done before this are kept" in done.stderr
        results.append((done.returncode, done.stdout, done.stderr.splitlines()[0]))
    assert results[0] == results[1]
    assert results[0][0] == 2
    assert f"{source}:3211: missing field 'prediction'" in results[0][2]


def test_a_parse_error_is_named_the_same(tmp_path):
    source = make_input(tmp_path / "in.jsonl", lines=3_000)
    with source.open("a", encoding="utf-8") as handle:
        handle.write("{broken\n")
    one, two = cli("score", source, "--jobs", 1), cli("score", source, "--jobs", 2)
    assert (one.returncode, one.stderr) == (two.returncode, two.stderr)
    assert f"{source}:3001: not valid JSON" in one.stderr


def test_jobs_must_be_a_positive_number(tmp_path):
    for bad in ("0", "-1", "two"):
        done = cli("score", RAG, "--jobs", bad)
        assert done.returncode == 2
        assert "--jobs" in done.stderr


def test_a_transform_that_cannot_be_pickled_runs_in_this_process(tmp_path):
    source = make_input(tmp_path / "in.jsonl", lines=300)
    seen = []

    def transform(row, number):  # a closure: cannot go to a worker
        if number == 7:
            raise InputError("bad row")
        return {"n": number, "fields": len(row)}

    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}.jsonl"
        stats = process_jsonl(source, transform, output=out, jobs=jobs, skip_invalid=True, on_row=seen.append)
        assert (stats.rows, stats.invalid_lines) == (299, 1)
    assert (tmp_path / "out1.jsonl").read_bytes() == (tmp_path / "out2.jsonl").read_bytes()
    assert len(seen) == 598


def test_process_jsonl_counts_fields_in_workers_as_in_one_process(tmp_path):
    from answer_eval.engine.row_transforms import EvaluatorRows, default_fields
    from answer_eval.evaluators.contains import AnswerContainsCore

    evaluator = AnswerContainsCore()
    rows = EvaluatorRows(evaluator, default_fields(evaluator), tuple((name, name) for name in evaluator.outputs()))
    source = make_input(tmp_path / "in.jsonl", lines=4_500, invalid_every=301)
    stats = {
        jobs: process_jsonl(source, rows, jobs=jobs, skip_invalid=True, count_fields=("failure_kind",))
        for jobs in (1, 2)
    }
    assert stats[1] == stats[2]
    assert list(stats[1].counts) == list(stats[2].counts)  # first-seen order too
    assert sum(stats[1].counts.values()) == stats[1].rows
