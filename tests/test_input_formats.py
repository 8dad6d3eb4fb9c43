"""Every input format a file command reads (JSONL compressed, standard input, CSV, TSV, a JSON array, Parquet).

The rule checked throughout: the same rows in another format give the same verdicts, through the
real command line; and what cannot be read is refused with exit 2 and a message naming the file,
the line and, for an unknown format, the formats there are.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
import lzma
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from answer_eval.errors import InputError
from answer_eval.inputs.formats import OTHER, TEXT, VALUE, InputFile, format_for, iter_rows, read_cell
from answer_eval.inputs.item_files import read_items
from answer_eval.reports.data import results_run
from tests.cli_runs import CLI, cli, cycled, record_path, start_cli, stop, stopped_at, wait_for_record, write_lines
from tests.conftest import EXAMPLES

RAG = EXAMPLES / "data" / "rag_answers.jsonl"
VERDICTS = ("correct", "failure_kind")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _scored_rows(source: Path | str, tmp_path: Path, *extra: str, stdin: bytes | None = None) -> list[dict[str, Any]]:
    output = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}.jsonl"
    done = cli("score", source, "--output", output, *extra, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return _rows(output)


def _score(source: Path | str, tmp_path: Path, *extra: str, stdin: bytes | None = None) -> list[tuple[Any, ...]]:
    rows = _scored_rows(source, tmp_path, *extra, stdin=stdin)
    prefix = extra[extra.index("--column-prefix") + 1] if "--column-prefix" in extra else ""
    return [tuple(row[prefix + name] for name in VERDICTS) for row in rows]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Any, ...]]:
    """The verdicts of ``answer-eval score`` on the example JSONL file."""
    return _score(RAG, tmp_path_factory.mktemp("reference"))


@pytest.mark.parametrize(("suffix", "opener"), [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)])
def test_a_compressed_jsonl_file_gives_the_verdicts_of_the_plain_file(tmp_path, reference, suffix, opener):
    source = tmp_path / f"answers.jsonl{suffix}"
    with opener(source, "wb") as handle:
        handle.write(RAG.read_bytes())
    assert _score(source, tmp_path) == reference
    assert _score(source, tmp_path, "--jobs", "2") == reference


def test_standard_input_is_read_plain_or_compressed(tmp_path, reference):
    assert _score("-", tmp_path, stdin=RAG.read_bytes()) == reference
    assert _score("-", tmp_path, stdin=gzip.compress(RAG.read_bytes())) == reference


def test_resume_from_standard_input_is_refused_with_the_reason(tmp_path):
    done = cli("score", "-", "--output", tmp_path / "out.jsonl", "--resume", stdin=RAG.read_bytes())
    assert done.returncode == 2
    assert "--resume cannot continue from standard input" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_json_array_gives_the_verdicts_of_the_jsonl_file(tmp_path, reference):
    source = tmp_path / "answers.json"
    source.write_text(json.dumps(_rows(RAG), indent=2), encoding="utf-8")
    assert _score(source, tmp_path) == reference
    lines = tmp_path / "lines.json"  # a .json file of JSON lines, as many are named
    lines.write_bytes(RAG.read_bytes())
    assert _score(lines, tmp_path) == reference


def test_a_csv_written_by_the_command_line_reads_back_to_the_same_verdicts(tmp_path, reference):
    written = tmp_path / "scored.csv"
    done = cli("score", RAG, "--output", written)
    assert done.returncode == 0, done.stderr
    # Dict predictions, list answers and numbers went out as JSON cells; they come back as values.
    assert _score(written, tmp_path, "--column-prefix", "again_") == reference
    again = _scored_rows(written, tmp_path, "--column-prefix", "again_")
    assert [(row["correct"], row["failure_kind"]) for row in again] == reference  # the first run's columns, read back
    assert again[2]["answers"] == [1250]
    assert isinstance(again[7]["prediction"], dict)


def test_compare_and_report_read_command_line_csv_as_they_read_its_jsonl(tmp_path):
    jsonl, table = tmp_path / "judged.jsonl", tmp_path / "judged.csv"
    for output in (jsonl, table):
        done = cli("judge", RAG, "--output", output)
        assert done.returncode == 0, done.stderr
    from_jsonl, from_csv = read_items(jsonl), read_items(table)
    assert from_csv.golds == from_jsonl.golds
    # A CSV cell cannot tell a missing answer from an empty one: both are missing, and read as no answer text.
    assert from_csv.predictions == tuple(None if value == "" else value for value in from_jsonl.predictions)
    assert results_run("judge", from_csv) == results_run("judge", from_jsonl)  # the verdicts are reused alike
    assert results_run("judge", from_csv) is not None
    compared = [cli("compare", a, b, "--format", "json") for a, b in ((jsonl, jsonl), (table, table))]
    assert all(run.returncode == 0 for run in compared), [run.stderr for run in compared]
    assert json.loads(compared[0].stdout)["evaluators"] == json.loads(compared[1].stdout)["evaluators"]


def test_a_hand_made_csv_and_tsv_hold_one_answer_or_a_json_list(tmp_path):
    rows = [
        ["question", "answers", "prediction", "human_acceptable"],
        ["Capital of France?", "Paris", "It is Paris.", "TRUE"],
        ["Fee?", '["1250", "1,250"]', "The fee is $1,250.", "true"],
        ["Is it true?", "true", "true", "FALSE"],
        ["Height?", "3.5", "About 3.5 metres", "true"],
    ]
    for name, delimiter in (("hand.csv", ","), ("hand.tsv", "\t")):
        source = tmp_path / name
        with source.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle, delimiter=delimiter).writerows(rows)
        items = read_items(source)
        assert items.golds == (("Paris",), ("1250", "1,250"), ("true",), ("3.5",))
        assert items.predictions[2] == "true"  # a text field keeps the word
        assert items.labels == (True, True, False, True)
        assert _score(source, tmp_path) == [(True, None), (True, None), (True, None), (True, None)]


def test_csv_errors_name_the_files_own_line(tmp_path):
    source = tmp_path / "broken.csv"
    source.write_text('question,answers,prediction\nq1,Paris,"Paris is\nthe capital"\nq2,x\n', encoding="utf-8")
    done = cli("score", source)
    assert done.returncode == 2
    assert f"{source}:4: missing field 'prediction'" in done.stderr  # the record after a two-line cell
    extra = tmp_path / "extra.csv"
    extra.write_text("answers,prediction\na,a\na,b,c\n", encoding="utf-8")
    done = cli("score", extra)
    assert done.returncode == 2
    assert f"{extra}:3: the row has 3 cells where the header names 2" in done.stderr
    skipped = cli("score", extra, "--skip-invalid", "--format", "json")  # a bad row, not a bad file: skippable
    assert skipped.returncode == 0, skipped.stderr
    assert (json.loads(skipped.stdout)["items"], json.loads(skipped.stdout)["invalid_lines"]) == (1, 1)
    twice = tmp_path / "twice.csv"
    twice.write_text("answers,answers,prediction\n", encoding="utf-8")
    assert "the column 'answers' appears twice in the header" in cli("score", twice).stderr


def test_a_csv_with_a_byte_order_mark_and_a_long_cell_is_read(tmp_path):
    long_answer = "word " * 60_000  # over the csv module's default cell limit of 131,072 characters
    source = tmp_path / "excel.csv"
    source.write_bytes(("\ufeffanswers,prediction\nword," + long_answer + "\n").encode("utf-8"))
    ((number, row),) = list(iter_rows(InputFile.of(source)))
    assert number == 2
    assert row == {"answers": "word", "prediction": long_answer}


def test_a_json_array_item_with_a_key_twice_or_of_another_type_is_an_invalid_line(tmp_path):
    source = tmp_path / "items.json"
    source.write_text(
        '[{"answers": ["a"], "prediction": "a"}, {"answers": ["a"], "prediction": "a", "prediction": "b"},'
        ' 3, {"answers": ["x"], "prediction": "x", "meta": {"k": 1, "k": 2}}]',
        encoding="utf-8",
    )
    done = cli("score", source)
    assert done.returncode == 2
    assert f"{source}:2: the key 'prediction' appears twice" in done.stderr
    skipped = cli("score", source, "--skip-invalid", "--format", "json")
    assert skipped.returncode == 0, skipped.stderr
    assert json.loads(skipped.stdout)["items"] == 1
    assert json.loads(skipped.stdout)["invalid_lines"] == 3


def test_a_broken_json_array_or_archive_is_refused_naming_the_file(tmp_path):
    array = tmp_path / "cut.json"
    array.write_text('[{"answers": ["a"], "prediction": "a"}, {"answers": ', encoding="utf-8")
    done = cli("score", array)
    assert done.returncode == 2
    assert f"{array}: not a valid JSON array" in done.stderr
    archive = tmp_path / "cut.jsonl.gz"
    archive.write_bytes(gzip.compress(RAG.read_bytes())[:200])
    done = cli("score", archive)
    assert done.returncode == 2
    assert f"{archive}: cannot decompress the input" in done.stderr
    assert "Traceback" not in done.stderr


def test_zstd_is_named_and_refused_with_a_way_round(tmp_path):
    source = tmp_path / "answers.jsonl.zst"
    source.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 16)
    done = cli("score", source)
    assert done.returncode == 2
    assert "zstd-compressed input is not read" in done.stderr
    assert "zstd -dc FILE | answer-eval COMMAND -" in done.stderr


def test_an_unknown_extension_lists_the_formats_and_input_format_overrides_it(tmp_path, reference):
    source = tmp_path / "answers.txt"
    source.write_bytes(RAG.read_bytes())
    done = cli("score", source)
    assert done.returncode == 2
    for name in (
        "JSONL (.jsonl",
        "JSON array (.json)",
        "CSV (.csv)",
        "TSV (.tsv)",
        "Parquet (.parquet)",
        "--input-format",
    ):
        assert name in done.stderr
    assert _score(source, tmp_path, "--input-format", "jsonl") == reference
    assert format_for("rows.CSV.GZ") == "csv"
    assert format_for("answers") == "jsonl"


def test_parquet_is_read_locally_and_refused_from_standard_input(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="Parquet needs the parquet (or dask) extra")
    import pyarrow as pa

    rows = [{"answers": ["Paris"], "prediction": "Paris, France"}, {"answers": ["3.5"], "prediction": "about 4"}]
    source = tmp_path / "answers.parquet"
    pq.write_table(pa.Table.from_pylist(rows), source)
    assert _score(source, tmp_path) == [(True, None), (False, "wrong")]
    done = cli("score", "-", "--input-format", "parquet", stdin=source.read_bytes())
    assert done.returncode == 2
    assert "Parquet cannot be read from standard input" in done.stderr


def test_the_dask_engine_refuses_standard_input_and_csv_before_starting_a_cluster(tmp_path):
    source = tmp_path / "answers.csv"
    source.write_text("answers,prediction\na,a\n", encoding="utf-8")
    done = cli("score", source, "--engine", "dask", "--input-format", "csv")
    assert done.returncode == 2
    assert "score a csv file with the local engine" in done.stderr
    done = cli("score", "-", "--engine", "dask")
    assert done.returncode == 2
    assert "not standard input" in done.stderr


@pytest.mark.subprocess  # stopped by a signal
def test_an_interrupted_run_on_a_compressed_csv_resumes_to_the_uninterrupted_output(tmp_path):
    rows = [json.loads(line) for line in cycled("rag_answers.jsonl", 600)]
    plain = tmp_path / "rows.csv"
    with plain.open("w", newline="", encoding="utf-8") as handle:
        table = csv.writer(handle)
        table.writerow(["question", "answers", "prediction"])
        for row in rows:
            prediction = row["prediction"]
            table.writerow(
                [
                    row["question"],
                    json.dumps(row["answers"]),
                    prediction if isinstance(prediction, str) else json.dumps(prediction),
                ]
            )
    source = tmp_path / "rows.csv.gz"
    source.write_bytes(gzip.compress(plain.read_bytes()))
    reference = tmp_path / "reference.jsonl"
    whole = cli("score", source, "--output", reference)
    assert whole.returncode == 0, whole.stderr

    output = tmp_path / "resumed.jsonl"
    process = start_cli("score", source, "--output", output, "--checkpoint-seconds", "0")
    wait_for_record(process, output)
    code, _, stderr = stop(process, signal.SIGINT)
    assert code == 128 + signal.SIGINT, stderr
    record = json.loads(record_path(output).read_text(encoding="utf-8"))
    assert 0 < record["position"]["rows"] < 600
    assert record["options"]["input_format"] == "csv"
    resumed = cli("score", source, "--output", output, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == reference.read_bytes()


def test_resuming_a_csv_checkpoint_as_another_format_is_refused(tmp_path):
    source = tmp_path / "rows.csv"
    write_lines(source, iter(["answers,prediction", *(f"a{i},a{i}" for i in range(2000))]))
    output = tmp_path / "out.jsonl"
    stopped_at(1000, ["score"], source, output, bad=b'"a stray quote,a\n')  # a checkpoint of the rows before it
    done = cli("score", source, "--output", output, "--resume", "--input-format", "tsv")
    assert done.returncode == 2
    assert "input_format" in done.stderr


@pytest.mark.parametrize(
    ("cell", "kind", "value"),
    [
        ("", OTHER, None),
        ("", VALUE, None),
        ("", TEXT, None),
        ("'[1]", TEXT, "[1]"),  # text the CSV writer marked: not a list
        ("'{}", OTHER, "{}"),
        ("'TRUE", OTHER, "TRUE"),
        ('["a", "b"]', TEXT, ["a", "b"]),
        ("[1]", TEXT, "[1]"),  # a citation mark in an answer stays text
        ("[1250]", VALUE, [1250]),
        ('{"replies": ["x"]}', TEXT, {"replies": ["x"]}),
        ("TRUE", OTHER, True),
        ("false", OTHER, False),
        ("true", TEXT, "true"),
        ("true", VALUE, "true"),
        ("3.5", OTHER, "3.5"),
        ("'=SUM(1)", TEXT, "=SUM(1)"),
        ("'plain", TEXT, "'plain"),
        ("[not json", OTHER, "[not json"),
    ],
)
def test_read_cell(cell, kind, value):
    assert read_cell(cell, kind) == value


def test_format_errors_are_input_errors():
    with pytest.raises(InputError, match="unknown input format 'xml'"):
        format_for("a.jsonl", "xml")
    with pytest.raises(InputError, match="does not exist"):
        InputFile.of("/nonexistent/answers.csv").check()


def test_text_that_reads_as_json_or_a_boolean_survives_a_csv_written_and_read_back(tmp_path):
    rows = [
        {"prediction": '{"answer": "Paris"}', "answers": ["Rome"], "note": "TRUE"},
        {"prediction": "[]", "answers": ["[]"], "note": "false"},
        {"prediction": "[1] Paris", "answers": ["Paris"], "note": "=1+1"},
    ]
    source = tmp_path / "tricky.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    written = tmp_path / "tricky.csv"
    assert cli("score", source, "--output", written).returncode == 0
    again = _scored_rows(written, tmp_path, "--replace-columns")
    assert [{name: row[name] for name in ("prediction", "answers", "note")} for row in again] == rows
    assert [row["correct"] for row in again] == [False, True, True]


def test_a_stray_quote_in_a_csv_is_an_error_not_a_merged_row(tmp_path):
    source = tmp_path / "quotes.csv"
    source.write_text('question,answers,prediction\nq1,Rome,"Rome\nq2,Paris,Paris\nq3,Oslo,Oslo\n', encoding="utf-8")
    done = cli("score", source)
    assert done.returncode == 2
    assert "not a valid CSV row" in done.stderr  # it read as one row holding the rest of the file before


def test_bad_utf8_in_a_csv_is_an_invalid_row_on_its_own_line(tmp_path):
    source = tmp_path / "latin1.csv"
    good = "".join(f"q{i},Paris,Paris\n" for i in range(600)).encode("utf-8")
    source.write_bytes(b"question,answers,prediction\n" + good + b"q,Z\xfcrich,Z\xfcrich\n")
    done = cli("score", source)
    assert done.returncode == 2
    assert f"{source}:602: not valid UTF-8" in done.stderr
    skipped = cli("score", source, "--skip-invalid", "--format", "json")
    assert json.loads(skipped.stdout)["items"] == 600


def test_a_header_with_trailing_commas_and_a_marked_name_is_read(tmp_path):
    source = tmp_path / "excel.csv"
    source.write_text("answers,prediction,'@tag,,\nParis,Paris,x,,\n", encoding="utf-8")
    ((_, row),) = list(iter_rows(InputFile.of(source)))
    assert row == {"answers": "Paris", "prediction": "Paris", "@tag": "x"}


def test_a_json_array_with_a_byte_order_mark_is_read(tmp_path):
    source = tmp_path / "bom.json"
    source.write_bytes(b'\xef\xbb\xbf[{"prediction": "Paris", "answers": ["Paris"]}]')
    assert _score(source, tmp_path) == [(True, None)]


def test_a_slow_pipe_is_still_told_compressed(tmp_path, reference):
    archive = tmp_path / "rows.jsonl.gz"
    archive.write_bytes(gzip.compress(RAG.read_bytes()))
    output = tmp_path / "slow.jsonl"
    # The first byte alone, then the rest a moment later: the first read of the pipe holds one byte.
    data = archive.read_bytes()
    reader, writer = os.pipe()

    def feed() -> None:
        os.write(writer, data[:1])
        time.sleep(0.5)
        with open(writer, "wb") as rest:
            rest.write(data[1:])

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        done = cli("score", "-", "--output", output, stdin=reader)
    finally:
        feeder.join()
        os.close(reader)
    assert done.returncode == 0, done.stderr
    assert [tuple(row[name] for name in VERDICTS) for row in _rows(output)] == reference


def test_standard_input_twice_empty_or_a_file_named_dash(tmp_path):
    twice = cli("compare", "-", "-", stdin=b"")
    assert twice.returncode == 2
    assert "standard input (-) can be read once" in twice.stderr
    with open(os.devnull, "rb") as nothing:
        empty = cli("score", "-", stdin=nothing)
    assert empty.returncode == 2  # empty: no rows
    named = tmp_path / "-"
    named.write_bytes(RAG.read_bytes())
    done = cli("score", "./-", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"] == 20


@pytest.mark.subprocess  # a process started with its standard input closed
def test_a_closed_standard_input_is_refused():
    shut = subprocess.run(["bash", "-c", f"{' '.join(CLI)} score - <&-"], capture_output=True, text=True, check=False)
    assert shut.returncode == 2
    assert "standard input is closed" in shut.stderr


@pytest.mark.slow
@pytest.mark.subprocess  # stopped by a signal
def test_an_interrupted_run_from_standard_input_leaves_nothing_to_resume(tmp_path):
    output = tmp_path / "out.jsonl"
    process = subprocess.Popen(
        [*CLI, "score", "-", "--output", str(output), "--checkpoint-seconds", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdin is not None
    for line in cycled("rag_answers.jsonl", 3000):
        process.stdin.write(line.encode("utf-8") + b"\n")
    process.stdin.flush()  # the pipe stays open: the run waits for more rows
    wait_for_record(process, output)  # type: ignore[arg-type]
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert b"--resume" not in stderr
    assert list(tmp_path.iterdir()) == []  # no partial output, no record


def test_parquet_with_a_column_named_twice_or_a_damaged_page_is_refused(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="Parquet needs the parquet (or dask) extra")
    import pyarrow as pa

    twice = tmp_path / "twice.parquet"
    pq.write_table(
        pa.table(
            [pa.array(["Paris"]), pa.array(["London"]), pa.array([["Paris"]])],
            names=["prediction", "prediction", "answers"],
        ),
        twice,
    )
    done = cli("score", twice)
    assert done.returncode == 2
    assert "the column 'prediction' appears twice" in done.stderr
    damaged = tmp_path / "damaged.parquet"
    rows = [{"prediction": f"answer {i}", "answers": [f"answer {i}"]} for i in range(20_000)]
    pq.write_table(pa.Table.from_pylist(rows), damaged, row_group_size=5_000, compression="none")
    data = bytearray(damaged.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 2000] = b"\xff" * 2000
    damaged.write_bytes(bytes(data))
    done = cli("score", damaged)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(damaged) in done.stderr
