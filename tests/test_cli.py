"""The answer-eval command line on real files: in process, and as the installed script where that is the subject."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from answer_eval import __version__
from tests.cli_runs import cli, write_jsonl
from tests.conftest import EXAMPLES

SCRIPT = Path(sys.executable).parent / "answer-eval"
RAG = EXAMPLES / "data" / "rag_answers.jsonl"


@pytest.mark.subprocess  # the installed entry point
def test_installed_script_prints_a_summary():
    done = subprocess.run([str(SCRIPT), "score", str(RAG)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "items            20" in done.stdout
    assert "95% CI" in done.stdout
    for kind in ("parse_failure", "budget_stop", "refusal", "not_in_document", "wrong", "error"):
        assert kind in done.stdout


def test_json_summary_matches_the_component(tmp_path):
    from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

    rows = [json.loads(line) for line in RAG.read_text(encoding="utf-8").splitlines()]
    expected = AnswerContainsEvaluator().run(
        ground_truth_answers=[r["answers"] for r in rows], predicted_answers=[r["prediction"] for r in rows]
    )
    done = cli("score", RAG, "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["items"] == 20
    assert summary["score"] == pytest.approx(expected["score"])
    assert summary["failure_counts"] == expected["failure_counts"]
    low, high = summary["interval"]
    assert low < summary["score"] < high


def test_jsonl_output_keeps_every_row_in_order_and_adds_the_verdict(tmp_path):
    out = tmp_path / "scored.jsonl"
    done = cli("score", RAG, "--output", out)
    assert done.returncode == 0, done.stderr
    source = [json.loads(line) for line in RAG.read_text(encoding="utf-8").splitlines()]
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(scored) == len(source)
    for original, row in zip(source, scored, strict=False):
        assert {k: row[k] for k in original} == original
        assert set(row) - set(original) == {"correct", "failure_kind", "outcome", "scored_by"}
        assert row["scored_by"] == f"answer-eval score {__version__}"  # the mark report recognises
    assert scored[0]["correct"] is True
    assert scored[0]["outcome"] == "sheffield produced 12400 units in 2023."
    assert scored[1]["failure_kind"] == "wrong"
    assert [p.name for p in tmp_path.iterdir()] == ["scored.jsonl"]  # no temporary files left


def test_csv_output(tmp_path):
    out = tmp_path / "scored.csv"
    done = cli("score", RAG, "--output", out)
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 20
    assert list(rows[0]) == ["question", "answers", "prediction", "correct", "failure_kind", "outcome", "scored_by"]
    assert rows[0]["correct"] == "true"
    assert rows[0]["failure_kind"] == ""
    assert json.loads(rows[0]["answers"]) == ["12400"]
    assert [p.name for p in tmp_path.iterdir()] == ["scored.csv"]


def test_renamed_fields(tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", [{"gold": [12400], "reply": "It made 12 400 units."}])
    done = cli("score", data, "--prediction-field", "reply", "--answers-field", "gold", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] == 1.0


def test_malformed_line_stops_with_its_number_writes_nothing_at_the_output_and_keeps_the_rows_before_it(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text('{"answers": "a", "prediction": "a"}\n\n{"answers": "b", "prediction": \n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = cli("score", data, "--output", out)
    assert done.returncode == 2
    assert f"{data}:3: not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()
    # The row before the bad line is kept for --resume, as after Ctrl-C (hidden files beside the output).
    assert f"the 1 row done before this is kept in {tmp_path / '.out.jsonl.partial'}" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.jsonl.partial", ".out.jsonl.partial.json", "in.jsonl"]
    # Mending the bad line leaves the bytes before it as they were: the run resumes there.
    data.write_text('{"answers": "a", "prediction": "a"}\n\n{"answers": "b", "prediction": "b"}\n', encoding="utf-8")
    resumed = cli("score", data, "--output", out, "--resume", "--format", "json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["items"] == 2
    assert [json.loads(line)["prediction"] for line in out.read_text().splitlines()] == ["a", "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('["a", "b"]', "expected a JSON object, got a JSON array"),
        ('{"prediction": "a"}', "missing field 'answers'"),
        ('{"answers": "a"}', "missing field 'prediction'"),
        ('{"answers": [], "prediction": "a"}', "empty list"),
        ('{"answers": NaN, "prediction": "a"}', "not a finite number (nan)"),
        ('{"answers": {"a": 1}, "prediction": "a"}', "must be a str or a number"),
    ],
)
def test_invalid_rows_name_the_line(tmp_path, line, message):
    data = tmp_path / "in.jsonl"
    data.write_text('{"answers": "a", "prediction": "a"}\n' + line + "\n", encoding="utf-8")
    done = cli("score", data)
    assert done.returncode == 2
    assert f"{data}:2:" in done.stderr
    assert message in done.stderr


def test_skip_invalid_continues_and_counts(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text(
        '{"answers": "a", "prediction": "a"}\nnot json\n{"answers": "b", "prediction": "c"}\n[1]\n', encoding="utf-8"
    )
    out = tmp_path / "out.jsonl"
    done = cli("score", data, "--skip-invalid", "--format", "json", "--output", out)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["items"], summary["invalid_lines"], summary["score"]) == (2, 2, 0.5)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2


def test_bom_and_crlf_are_accepted(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_bytes(b'\xef\xbb\xbf{"answers": "a", "prediction": "A"}\r\n{"answers": "b", "prediction": "B"}\r\n')
    done = cli("score", data, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] == 1.0


def test_invalid_utf8_names_the_line(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_bytes(b'{"answers": "a", "prediction": "a"}\n{"answers": "a", "prediction": "\xff"}\n')
    done = cli("score", data)
    assert done.returncode == 2
    assert ":2: not valid UTF-8" in done.stderr


@pytest.mark.parametrize("case", ["same", "directory", "missing_folder", "suffix"])
def test_bad_output_paths(tmp_path, case):
    data = write_jsonl(tmp_path / "in.jsonl", [{"answers": "a", "prediction": "a"}])
    output = {
        "same": data,
        "directory": tmp_path,
        "missing_folder": tmp_path / "nope" / "out.jsonl",
        "suffix": tmp_path / "out.txt",
    }[case]
    before = data.read_bytes()
    done = cli("score", data, "--output", output)
    assert done.returncode == 2
    assert "error" in done.stderr
    assert data.read_bytes() == before


def test_missing_input_and_empty_input(tmp_path):
    done = cli("score", tmp_path / "absent.jsonl")
    assert done.returncode == 2
    assert "does not exist" in done.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    done = cli("score", empty)
    assert done.returncode == 2
    assert done.stderr.endswith("no rows to score\n")


def test_a_file_whose_every_line_was_skipped_says_so(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n[1]\n", encoding="utf-8")
    done = cli("score", bad, "--skip-invalid")
    assert done.returncode == 2
    assert "no rows to score: every line (2) was invalid and skipped" in done.stderr


def test_not_found_options(tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", [{"answers": "UNANSWERABLE", "prediction": "Keine Angabe."}])
    done = cli(
        "score", data, "--not-found-label", "UNANSWERABLE", "--not-found-phrase", "keine angabe", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] == 1.0


def test_usage_error_exit_code():
    assert cli("score").returncode == 2
    assert cli("frobnicate").returncode == 2


def run_on_terminal(*args):
    """Run the CLI with stderr on a pseudo-terminal; return (exit code, what reached the terminal)."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a real terminal has a size
    try:
        done = subprocess.run(
            [sys.executable, "-m", "answer_eval", *map(str, args)], stdout=subprocess.PIPE, stderr=follower, timeout=120
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO once the terminal's other end is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return done.returncode, b"".join(chunks)


@pytest.mark.subprocess  # standard error on a pseudo-terminal
def test_progress_bar_on_a_terminal_only(tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", [{"answers": "a", "prediction": "a"}] * 50)
    code, terminal = run_on_terminal("score", data)
    assert code == 0
    assert b"rows" in terminal  # tqdm drew the bar
    code, terminal = run_on_terminal("score", data, "--no-progress")
    assert code == 0
    assert b"rows" not in terminal
    piped = cli("score", data)
    assert "rows" not in piped.stderr  # no bar when stderr is a pipe


@pytest.mark.parametrize("command", ["score", "judge", "typed", "metrics", "tools", "rubric"])
def test_a_missing_input_names_only_the_input_not_the_optional_shards(command):
    done = cli(command)
    assert done.returncode == 2
    assert "the following arguments are required: file\n" in done.stderr
    assert "SHARD" not in done.stderr.splitlines()[-1]


def test_version_names_the_package_haystack_and_python():
    done = cli("--version")
    assert done.returncode == 0
    assert done.stdout.startswith(f"answer-eval {__version__} (haystack-ai ")
    assert f"Python {sys.version.split()[0]}" in done.stdout


BIG = "1" + "0" * 400
"""A count of 401 digits: before, the standard library met it as an OverflowError (exit 1, "this is a bug")."""


@pytest.mark.parametrize(
    ("command", "more", "message"),
    [
        ("score", ("--jobs", BIG), "--jobs/-j: must be at most 1,024, got 10000000000000000000... (401 digits)"),
        ("score", ("--max-line-bytes", BIG), "--max-line-bytes: must be at most 1,099,511,627,776, got 1000"),
        ("compare", ("--resamples", BIG), "--resamples: must be at most 1,000,000, got 1000"),  # was: endless
        ("rubric", ("--samples", BIG), "--samples must be at most 128 (OpenAI's most for n), got 1000"),
        ("rubric", ("--samples", "100000000"), "--samples must be at most 128 (OpenAI's most for n), got 100000000"),
    ],
)
def test_a_count_no_run_can_use_is_refused_by_its_flag_before_any_work(tmp_path, command, more, message):
    from tests.openai_server import OpenAIServer

    rows = [{"question": "q", "prediction": "Paris", "answers": ["Paris"]}]
    source = write_jsonl(tmp_path / "answers.jsonl", rows)
    args: tuple = (source, source) if command == "compare" else (source, "--output", tmp_path / "out.jsonl")
    with OpenAIServer() as server:
        llm = ("--model", "grader", "--api-base-url", server.url) if command == "rubric" else ()
        done = cli(command, *args, *llm, *more, "--no-progress", env={**os.environ, "OPENAI_API_KEY": "k"}, timeout=60)
        assert server.requests == 0
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert BIG not in done.stderr  # the value is shown cut
    assert not (tmp_path / "out.jsonl").exists()
