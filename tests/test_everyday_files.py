"""Everyday files read right: pandas CSV lists, float32 and JSON text in Parquet, spreadsheet CSVs, messages.

The rule checked throughout: the same rows give the same verdicts in every format, whatever
wrote the file (pandas, a spreadsheet in another language, an old Mac), through the real command
line; what cannot be read is named with its line, and nothing else is printed.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from answer_eval.inputs.formats import TEXT, VALUE, read_cell
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    AnswerJudgeEvaluator,
    TypedAnswerEvaluator,
)
from tests.cli_runs import cli
from tests.conftest import EXAMPLES

RAG = EXAMPLES / "data" / "rag_answers.jsonl"


def _verdicts(source: Path | str, tmp_path: Path, *extra: str, stdin: bytes | None = None) -> list[tuple[Any, ...]]:
    output = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}.jsonl"
    done = cli("score", source, "--output", output, *extra, stdin=stdin)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    return [(row["correct"], row["failure_kind"]) for row in rows]


def _flat_rows() -> list[dict[str, Any]]:
    """The example rows with a JSON text for each value that is not a string: what a flat format holds."""
    flat = []
    for line in RAG.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        prediction = row["prediction"]
        text = prediction if isinstance(prediction, str) or prediction is None else json.dumps(prediction)
        flat.append({**row, "answers": json.dumps(row["answers"]), "prediction": text})
    return flat


def _csv_text(rows: list[dict[str, Any]]) -> str:
    handle = io.StringIO(newline="")
    writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return handle.getvalue()


def test_pandas_list_cells_in_a_csv_are_read_as_lists(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "question": ["capital of France?", "pi to two places?", "a quote?"],
            "answers": [["Paris", "Paris, France"], [3.14, "3.14"], ["it's", 'say "hi"']],
            "prediction": ["Lyon, not Paris, is wrong: Paris", "pi is 3.14", "it's"],
        }
    )
    table = tmp_path / "frame.csv"
    frame.to_csv(table, index=False)  # list cells as Python's repr: ['Paris', 'Paris, France']
    assert "['Paris', 'Paris, France']" in table.read_text(encoding="utf-8")
    lines = tmp_path / "frame.jsonl"
    frame.to_json(lines, orient="records", lines=True)
    expected = _verdicts(lines, tmp_path)
    assert [verdict for verdict, _ in expected] == [True, True, True]
    assert _verdicts(table, tmp_path) == expected  # read as the literal text "['Paris', ...]" it was wrong
    pytest.importorskip("pyarrow")
    parquet = tmp_path / "frame.parquet"
    frame.assign(answers=frame["answers"].map(lambda items: [str(item) for item in items])).to_parquet(parquet)
    assert _verdicts(parquet, tmp_path) == expected
    # A cell that looks like a list and is not one is an invalid row where a list is expected...
    broken = tmp_path / "broken.csv"
    broken.write_text(
        "answers,prediction\n\"[Paris, Lyon]\",Paris\n['Paris' 'Lyon'],Paris\n['Paris'],[1] Paris\n", encoding="utf-8"
    )
    done = cli("score", broken)
    assert done.returncode == 2
    assert f"{broken}:2: field 'answers': looks like a list but is neither JSON nor a Python list" in done.stderr
    skipped = cli("score", broken, "--skip-invalid", "--format", "json")
    assert (json.loads(skipped.stdout)["items"], json.loads(skipped.stdout)["invalid_lines"]) == (1, 2)
    # ... and text elsewhere: a citation mark in an answer stays text.
    assert read_cell("[1] Paris", TEXT) == "[1] Paris"
    assert read_cell("[citation needed]", TEXT) == "[citation needed]"
    assert read_cell("['Paris']", TEXT) == ["Paris"]
    assert read_cell("['a\\nb', '\\u00e9\\x41', 1e3, -2, nan]", VALUE)[:4] == ["a\nb", "\u00e9A", 1000.0, -2]
    assert read_cell("['a', __import__('os')]", TEXT) == "['a', __import__('os')]"  # never evaluated


def test_a_list_cell_of_a_million_digits_is_refused_in_linear_time(tmp_path):
    # The list reader's number pattern once split a run of digits every way it could (quadratic):
    # a one-megabyte cell took hours. Read once, it is an invalid row at once.
    hostile = tmp_path / "digits.csv"
    hostile.write_text(f"answers,prediction\n[{'1' * 1_000_000}x],Paris\n", encoding="utf-8")
    done = cli("score", hostile, timeout=60)
    assert done.returncode == 2
    assert f"{hostile}:2: field 'answers': looks like a list but is neither JSON nor a Python list" in done.stderr


def test_float32_parquet_values_are_read_at_their_own_precision(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    parquet = tmp_path / "float32.parquet"
    table = pa.table(
        {
            "prediction": ["pi is 3.14", "about 0.1", "7.25 dollars"],
            "answers": pa.array([3.14, 0.1, 7.25], pa.float32()),
            "listed": pa.array([[3.14], [0.1], [7.25]], pa.list_(pa.float32())),
            "meta": pa.array([{"score": 0.3}] * 3, pa.struct([("score", pa.float32())])),
        }
    )
    pq.write_table(table, parquet)
    output = tmp_path / "out.jsonl"
    done = cli("score", parquet, "--output", output, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["correct"] == 3  # 3.140000104904175 was wrong for "pi is 3.14"
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [(row["answers"], row["listed"], row["meta"]) for row in rows] == [
        (3.14, [3.14], {"score": 0.3}),
        (0.1, [0.1], {"score": 0.3}),
        (7.25, [7.25], {"score": 0.3}),
    ]
    # The components read numpy's float32 labels as they read float64 ones: at their own precision.
    for component in (
        AnswerContainsEvaluator(),
        AnswerJudgeEvaluator(),
        TypedAnswerEvaluator(default_type="numerical"),
    ):
        # A pandas column of lists read from Parquet holds numpy arrays: read as lists, items at their precision.
        for label in (np.float32(3.14), [np.float32(3.14)], np.float64(3.14), np.array([3.14], dtype=np.float32)):
            assert component.run(ground_truth_answers=[label], predicted_answers=["pi is 3.14"])["score"] == 1.0


def test_pandas_categories_and_float16_in_parquet_are_read_as_their_values(tmp_path):
    # A pandas category is a dictionary-encoded string column: its JSON text and TRUE are read as a
    # plain string column's (they were left as text); float16 at its own precision, as float32.
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import pandas as pd

    parquet = tmp_path / "categories.parquet"
    pd.DataFrame(
        {
            "prediction": pd.Categorical(["Paris is the capital", "It is Rome", "pi is 3.14"]),
            "answers": pd.Categorical(['["Paris", "Paname"]', "['Roma', 'Rome']", '["3.14"]']),
            "flag": pd.Categorical(["TRUE", "false", "TRUE"]),
            "half": np.array([3.14, 0.1, np.nan], dtype=np.float16),
        }
    ).to_parquet(parquet)
    assert pa.types.is_dictionary(pq.read_schema(parquet).field("answers").type)
    output = tmp_path / "out.jsonl"
    done = cli("score", parquet, "--output", output, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["correct"] == 3
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [(row["answers"], row["flag"], row["half"]) for row in rows] == [
        (["Paris", "Paname"], True, 3.14),  # float16 3.14 is 3.140625 widened
        (["Roma", "Rome"], False, 0.1),
        (["3.14"], True, None),
    ]


def test_json_text_in_parquet_string_columns_is_read_as_in_csv(tmp_path):
    # The rule for the text of every flat format: a JSON object or list written as text is that
    # value. Parquet string columns were read as plain text: the example gave "wrong 9, error 0"
    # from Parquet against "error 1, budget_stop 3" from CSV and JSONL.
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    flat = _flat_rows()
    parquet = tmp_path / "rag.parquet"
    pq.write_table(pa.Table.from_pylist(flat), parquet)
    table = tmp_path / "rag.csv"
    table.write_text(_csv_text(flat), encoding="utf-8", newline="")
    expected = _verdicts(RAG, tmp_path)
    assert {"error", "budget_stop"} <= {kind for _, kind in expected}
    assert _verdicts(table, tmp_path) == expected
    assert _verdicts(parquet, tmp_path) == expected
    # Parquet tells an empty string from a missing value; a CSV cannot (its empty cell is missing).
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"answers": ["Paris", "Paris"], "prediction": ["", None]}), empty)
    output = tmp_path / "empty.jsonl"
    assert cli("score", empty, "--output", output).returncode == 0
    assert [json.loads(line)["prediction"] for line in output.read_text(encoding="utf-8").splitlines()] == ["", None]


def test_compare_report_and_agreement_print_only_their_message_on_a_bad_csv_row(tmp_path):
    label = tmp_path / "label.csv"
    label.write_text("question,answers,prediction,human_acceptable\nq,Paris,Paris,yes\n", encoding="utf-8")
    empty = tmp_path / "empty.csv"
    empty.write_text("question,answers,prediction\nq,,Paris\n", encoding="utf-8")
    runs = [
        (("agreement", label, "-e", "contains"), f"{label}:2: label 'yes' is not true/false"),
        (("compare", label, label, "-e", "contains"), f"{label}:2: label 'yes' is not true/false"),
        (("report", empty, "-e", "contains", "--html", tmp_path / "r.html"), f"{empty}:2: field 'answers'"),
        (("compare", empty, empty, "-e", "contains"), f"{empty}:2: field 'answers'"),
    ]
    for args, message in runs:
        done = cli(*args)
        assert done.returncode == 2
        assert done.stderr.startswith("answer-eval: error: " + message), done.stderr  # no "Exception ignored"
        assert len(done.stderr.splitlines()) == 1, done.stderr


def test_a_semicolon_csv_is_read_and_a_wrong_delimiter_is_named(tmp_path):
    semicolons = tmp_path / "excel.csv"  # Excel in many languages: semicolons, a byte order mark, CRLF
    semicolons.write_bytes(
        "\ufeffquestion;answers;prediction\r\nq1;Paris;Paris, the capital\r\nq2;3,5;3,5 metres\r\n".encode()
    )
    done = cli("score", semicolons, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["correct"] == 2
    done = cli("score", semicolons, "--delimiter", ",")
    assert done.returncode == 2
    assert "the row has 2 cells where the header names 1 (cells split at ','; give --delimiter" in done.stderr
    one_column = tmp_path / "one.csv"
    one_column.write_text("prediction\nParis, France\n", encoding="utf-8")
    done = cli("score", one_column)
    assert "(cells split at ',', told from the header row; give --delimiter if the file uses another)" in done.stderr
    pipes = tmp_path / "pipes.txt"
    pipes.write_text("answers|prediction\nParis|Paris\n", encoding="utf-8")
    done = cli("agreement", pipes, "--input-format", "csv", "--delimiter", "|", "-e", "contains", "-e", "judge")
    assert done.returncode == 0, done.stderr
    assert "expected one character" in cli("score", pipes, "--delimiter", "ab").stderr


def test_standard_input_is_told_csv_or_parquet_from_its_first_bytes(tmp_path):
    reference = _verdicts(RAG, tmp_path)
    rows = [json.loads(line) for line in RAG.read_text(encoding="utf-8").splitlines()]
    assert _verdicts("-", tmp_path, stdin=_csv_text(_flat_rows()).encode()) == reference  # was "not valid JSON"
    assert _verdicts("-", tmp_path, stdin=json.dumps(rows, indent=1).encode()) == reference  # a JSON array
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"answers": ["Paris"], "prediction": ["Paris"]}), parquet)
    done = cli("score", "-", stdin=parquet.read_bytes())
    assert done.returncode == 2
    assert "standard input holds a Parquet file (it starts with PAR1)" in done.stderr  # was "not valid UTF-8"
    assert "give its path instead of -" in done.stderr


def test_csv_line_numbers_count_line_feeds_only(tmp_path):
    # A carriage return inside a quoted cell counted as a line: every later row was named one line off.
    source = tmp_path / "cr.csv"
    source.write_bytes(b'question,answers,prediction\n"one\rtwo",Paris,Paris\nq2,Paris\n')
    done = cli("score", source)
    assert done.returncode == 2
    assert f"{source}:3: missing field 'prediction'" in done.stderr
    mac = tmp_path / "mac.csv"  # lines ended by carriage returns only: Excel's "CSV (Macintosh)"
    mac.write_bytes(b"question,answers,prediction\rq1,Paris,Paris\rq2,Lyon,Paris\rq3,Paris\r")
    done = cli("score", mac)
    assert done.returncode == 2
    assert f"{mac}:4: missing field 'prediction'" in done.stderr
    # A CR alone outside quotes is text of its cell, as Python's csv writer (and pandas) leaves it.
    unquoted = tmp_path / "unquoted.csv"
    unquoted.write_bytes(b"question,answers,prediction\nq1,Paris,Paris\rFrance\nq2,Paris\n")
    output = tmp_path / "out.jsonl"
    done = cli("score", unquoted, "--skip-invalid", "--output", output)
    assert done.returncode == 0, done.stderr
    assert json.loads(output.read_text(encoding="utf-8"))["prediction"] == "Paris\rFrance"
    done = cli("score", unquoted)
    assert done.stderr.endswith(f"{unquoted}:3: missing field 'prediction' (fields: 'question', 'answers')\n")


def test_everyday_values_keep_their_meaning_in_every_format(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    big = 2**53 + 1  # not a float: read as its digits in every format
    parquet = tmp_path / "values.parquet"
    pq.write_table(
        pa.table(
            {
                "answers": pa.array([float("nan"), 1.5], pa.float64()),  # pandas writes a missing number as NaN
                "prediction": ["Paris", "1.5 metres"],
                "id": pa.array([big, 1], pa.int64()),
                "flag": ["TRUE", "false"],
            }
        ),
        parquet,
    )
    done = cli("score", parquet)
    assert done.returncode == 2
    assert f"{parquet}:1: field 'answers'" in done.stderr
    assert "ground truth is missing (empty or null)" in done.stderr  # a missing value, not "nan"
    output = tmp_path / "out.jsonl"
    assert cli("score", parquet, "--skip-invalid", "--output", output).returncode == 0
    (row,) = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert (row["answers"], row["id"], row["flag"], row["correct"]) == (1.5, 1, False, True)
    array = tmp_path / "values.json"
    array.write_text(json.dumps([{"answers": [big], "prediction": f"it is {big}"}]), encoding="utf-8")
    lines = tmp_path / "values.jsonl"
    lines.write_text(json.dumps({"answers": [big], "prediction": f"it is {big}"}) + "\n", encoding="utf-8")
    table = tmp_path / "values.csv"
    table.write_text(f"answers,prediction\n{big},it is {big}\n", encoding="utf-8")
    for source in (array, lines, table):
        assert _verdicts(source, tmp_path) == [(True, None)]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.csv", "answers,prediction\n,Paris\n"),
        ("quoted.csv", 'answers,prediction\n"",Paris\n'),
        ("null.jsonl", '{"answers": null, "prediction": "Paris"}\n'),
        ("null-item.jsonl", '{"answers": ["Paris", null], "prediction": "Paris"}\n'),
    ],
)
def test_a_missing_answers_cell_is_named_missing(tmp_path, name, content):
    source = tmp_path / name
    source.write_text(content, encoding="utf-8")
    done = cli("score", source)
    assert done.returncode == 2, done.stderr
    assert "field 'answers'" in done.stderr
    assert "is missing (empty or null): no answer can match it" in done.stderr
    assert "NoneType" not in done.stderr


@pytest.mark.parametrize("form", ["csv", "parquet"])
def test_json_text_in_a_cell_that_gives_a_key_twice_is_refused_as_in_jsonl(tmp_path, form):
    rows = {"answers": ["Paris", "Paris"], "prediction": ["Paris", "Paris"], "meta": ['{"k": 1, "k": 2}', '{"k": 1}']}
    if form == "csv":
        source = tmp_path / "dup.csv"
        with source.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(rows)
            writer.writerows(zip(*rows.values(), strict=True))
    else:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        source = tmp_path / "dup.parquet"
        pq.write_table(pa.table(rows), source)
    done = cli("score", source)
    assert done.returncode == 2
    assert "field 'meta': a JSON object gives the key 'k' twice" in done.stderr
    output = tmp_path / "out.jsonl"
    assert cli("score", source, "--skip-invalid", "--output", output).returncode == 0
    kept = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [row["meta"] for row in kept] == [{"k": 1}]
