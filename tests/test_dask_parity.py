"""``--engine dask`` reads and writes as the local engine does: the same file, the same verdicts, rows and refusals.

Each test runs one command on one file through both engines (``tests.dask_runs.run_both``: the
local run, and ``--engine dask`` on the shared cluster of tests/conftest.py) and compares exit
codes, summaries and the rows written; the files are the ones issue 26 found read differently
(Parquet values, limits and invalid rows, column types, compressed JSONL, outputs).
"""

from __future__ import annotations

import gzip
import json
import os
import stat

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from answer_eval.cli.main import main
from answer_eval.dask.engine import score_dataframe, score_shards, summarize
from answer_eval.dask.io import read_shard
from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator
from tests.cli_runs import cli
from tests.conftest import EXAMPLES
from tests.dask_runs import read_jsonl, read_output, read_written, run_both, without

RAG = EXAMPLES / "data" / "rag_answers.jsonl"

pytestmark = pytest.mark.xdist_group("dask_cluster")


def test_parquet_values_are_read_on_dask_as_the_local_engine_reads_them(dask_client, capsys, tmp_path):
    # float32 at its own precision, NaN as missing, JSON text in a string column (a pandas
    # category too) as its value, TRUE a boolean only outside the prediction and answers.
    numbers = tmp_path / "numbers.parquet"
    pq.write_table(
        pa.table(
            {
                "prediction": ["pi is 3.14", "e is 2.72", "TRUE"],
                "answers": pa.array([3.14, 2.72, 0.5], pa.float32()),
                "weight": pa.array([float("nan"), 1.0, 2.0]),
                "label": ["TRUE", "false", "yes"],
            }
        ),
        numbers,
    )
    texts = tmp_path / "texts.parquet"
    pd.DataFrame(
        {
            "question": ["capital of France?", "capital of Italy?", "truth?"],
            "prediction": pd.Categorical(["Paris", "It is Rome", "TRUE"]),
            "answers": pd.Categorical(['["Paris", "Paname"]', "['Roma', 'Rome']", "TRUE"]),
            "context": ['{"source": "atlas"}', "[1] a citation", "plain"],
        }
    ).to_parquet(texts)
    for command, source, more in (("score", numbers, []), ("score", texts, []), ("judge", texts, [])):
        both = run_both(capsys, dask_client.scheduler.address, tmp_path, command, source, *more)
        assert both["same"], both
    numbers_rows = run_both(capsys, dask_client.scheduler.address, tmp_path, "score", numbers)["dask"]["rows"]
    assert [row["answers"] for row in numbers_rows] == [3.14, 2.72, 0.5]  # not 3.140000104904175
    assert [row["correct"] for row in numbers_rows] == [True, True, False]
    assert [row["weight"] for row in numbers_rows] == [None, 1.0, 2.0]
    assert [row["label"] for row in numbers_rows] == [True, False, "yes"]
    text_rows = run_both(capsys, dask_client.scheduler.address, tmp_path, "score", texts)["dask"]["rows"]
    assert [row["answers"] for row in text_rows] == [["Paris", "Paname"], ["Roma", "Rome"], "TRUE"]
    assert [row["correct"] for row in text_rows] == [True, True, True]
    assert text_rows[0]["context"] == {"source": "atlas"}


def test_parquet_rows_over_the_limit_and_bad_cells_are_invalid_rows_on_dask_as_locally(dask_client, capsys, tmp_path):
    # A cell whose page decodes past twice --max-line-bytes (its row group is never decoded), a
    # row over the limit, an answers cell that looks like a list and is none, then a good row.
    source = tmp_path / "hostile.parquet"
    table = pa.table(
        {
            "prediction": ["a" * 3000, "b" * 300, "Paris", "Paris"],
            "answers": [["Paris"], ["Paris"], None, ["Paris"]],
            "gold": ["Paris", "Paris", "[Paris, Lyon]", "Paris"],
        }
    )
    pq.write_table(table, source, row_group_size=1, compression="zstd")
    address = dask_client.scheduler.address
    limit = ["--max-line-bytes", "400"]
    refused = run_both(capsys, address, tmp_path, "score", source, *limit)
    assert refused["same"], refused
    assert refused["dask"]["summary"].endswith(f"{source}:1: row group 1 of the file holds a page of 3,004 bytes "
                                               "decoded in column 'prediction', over 800 (twice the limit); pyarrow "
                                               "decodes a page whole, and any row of the group needs it, so none is "
                                               "read (raise --max-line-bytes to read them)")  # fmt: skip
    skipped = run_both(capsys, address, tmp_path, "score", source, *limit, "--skip-invalid")
    assert skipped["same"], skipped
    assert (skipped["dask"]["summary"]["items"], skipped["dask"]["summary"]["invalid_lines"]) == (2, 2)
    listed = run_both(capsys, address, tmp_path, "score", source, "--answers-field", "gold")
    assert listed["same"], listed
    assert f"{source}:3: field 'gold': looks like a list but is neither JSON" in listed["dask"]["summary"]
    listed = run_both(capsys, address, tmp_path, "score", source, "--answers-field", "gold", "--skip-invalid")
    assert listed["same"], listed
    assert listed["dask"]["summary"]["invalid_lines"] == 1
    deep = tmp_path / "deep.parquet"  # past Arrow's 100 schema levels: the file is refused, as locally
    value, kind = "Paris", pa.string()
    for _ in range(200):
        value, kind = [value], pa.list_(kind)
    pq.write_table(pa.table({"answers": pa.array([value], kind), "prediction": ["Paris"]}), deep)
    refused = run_both(capsys, address, tmp_path, "score", deep, "--skip-invalid")
    assert refused["same"], refused
    assert "the Parquet file's columns are nested too deeply to read" in refused["dask"]["summary"]


def test_column_types_are_refused_on_dask_only_where_the_local_run_refuses_every_row(dask_client, capsys, tmp_path):
    # Dates, decimals, bytes and categories are read as their text by the local engine: Dask reads
    # them too. A column of booleans holds no answer: refused whole (naming its type) without
    # --skip-invalid, and with it each row skipped and counted as locally, beside good shards.
    import datetime
    import decimal

    address = dask_client.scheduler.address
    texts = {
        "date": pa.array([datetime.date(2020, 1, 2), datetime.date(2021, 3, 4)]),
        "decimal": pa.array([decimal.Decimal("3.14"), decimal.Decimal("2.50")], pa.decimal128(5, 2)),
        "binary": pa.array([b"Paris", b"Lyon"]),
        "category": pa.array(["Paris", "Lyon"]).dictionary_encode(),
    }
    for name, answers in texts.items():
        source = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"prediction": ["2020-01-02 in Paris, pi 3.14", "Nice"], "answers": answers}), source)
        both = run_both(capsys, address, tmp_path, "score", source)
        assert both["same"], (name, both)
        assert both["dask"]["summary"]["items"] == 2, name
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"prediction": "Paris", "answers": ["Paris"]}) + "\n", encoding="utf-8")
    flags = tmp_path / "flags.parquet"
    pq.write_table(pa.table({"prediction": ["yes", "no"], "answers": [True, False]}), flags)
    assert main(["score", str(flags), "--engine", "dask", "--scheduler", address]) == 2
    assert "column 'answers' has type bool; AnswerContainsEvaluator reads" in capsys.readouterr().err
    alone = run_both(capsys, address, tmp_path, "score", flags, "--skip-invalid")
    assert alone["same"], alone
    assert alone["dask"]["summary"].endswith(f"{flags}: no rows to score: every line (2) was invalid and skipped")
    capsys.readouterr()
    assert main(["score", str(good), str(flags), "--engine", "dask", "--scheduler", address, "--skip-invalid",
                 "--format", "json", "--no-progress"]) == 0  # fmt: skip
    on_dask = json.loads(capsys.readouterr().out)
    together = tmp_path / "together.jsonl"  # the same rows as one file, for the local run
    together.write_text(
        good.read_text(encoding="utf-8") + "".join(json.dumps(row) + "\n" for row in pq.read_table(flags).to_pylist()),
        encoding="utf-8",
    )
    assert main(["score", str(together), "--skip-invalid", "--format", "json", "--no-progress"]) == 0
    here = json.loads(capsys.readouterr().out)
    assert (on_dask["items"], on_dask["invalid_lines"]) == (here["items"], here["invalid_lines"]) == (1, 2)


def test_jsonl_shards_are_read_as_the_local_engine_reads_them(dask_client, capsys, tmp_path):
    # Compression told from the first bytes (a gzipped file named .jsonl too), .jsonlines, and
    # --input-format jsonl on another extension: the local engine reads all of them.
    lines = RAG.read_bytes()
    named = {"packed.jsonl": gzip.compress(lines), "rows.jsonl.gz": gzip.compress(lines), "rows.jsonlines": lines}
    address = dask_client.scheduler.address
    for name, data in named.items():
        source = tmp_path / name
        source.write_bytes(data)
        both = run_both(capsys, address, tmp_path, "score", source)
        assert both["same"], (name, both)
        assert both["dask"]["summary"]["items"] == 20, name
    text = tmp_path / "rows.txt"
    text.write_bytes(lines)
    both = run_both(capsys, address, tmp_path, "score", text, "--input-format", "jsonl")
    assert both["same"], both
    assert both["dask"]["summary"]["items"] == 20


def test_dask_output_shards_read_back_the_same_in_both_engines(dask_client, capsys, tmp_path):
    # Mixed columns (strings and mappings, strings and ints) are written as JSON text named in the
    # file's metadata: the local engine reads them back as those values, as the Dask engine does.
    # So is text a Parquet string would be read as another value from (a note "TRUE", '["x"]').
    original = read_jsonl(RAG)
    for index, row in enumerate(original):
        row["note"] = ["TRUE", '["x"]', "{not json", "plain"][index % 4]
    source = tmp_path / "noted.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in original), encoding="utf-8")
    out = tmp_path / "first"
    score_shards(str(source), AnswerContainsEvaluator(), output=out, client=dask_client)
    shard = out / "part-00000.parquet"
    both = run_both(capsys, dask_client.scheduler.address, tmp_path, "score", shard, "--column-prefix", "again_")
    assert both["same"], both
    assert [{key: row[key] for key in original[0]} for row in both["local"]["rows"]] == original
    assert [row["again_correct"] for row in both["local"]["rows"]] == [row["correct"] for row in read_written(shard)]


def test_a_dd_read_parquet_frame_gives_the_local_verdicts_on_float32(dask_client, capsys, tmp_path):
    # docs/dask.md: frames from dd.read_parquet work too. Their float32 columns (and arrays of
    # float32 in list columns) were widened by tolist(): 3.140000104904175 made "pi is 3.14" wrong.
    import dask.dataframe as dd

    source = tmp_path / "float32.parquet"
    answers = pa.array([3.14, 2.72, 0.5], pa.float32())
    listed = pa.array([[3.14], [2.72, 1.5], [0.5]], pa.list_(pa.float32()))
    prediction = ["pi is 3.14", "e is 2.72", "half is 0.25"]
    pq.write_table(pa.table({"prediction": prediction, "answers": answers, "listed": listed}), source)
    for column in ("answers", "listed"):
        expected = run_both(capsys, dask_client.scheduler.address, tmp_path, "score", source, "--answers-field", column)
        assert expected["same"], expected
        evaluator = AnswerContainsEvaluator()
        scored = score_dataframe(dd.read_parquet(source), evaluator, columns={"answers": column}).persist()
        summary = summarize(scored, evaluator, columns={"answers": column}, client=dask_client)
        assert [row["correct"] for row in expected["local"]["rows"]] == [True, True, False]
        assert scored.compute()["correct"].tolist() == [True, True, False], column
        assert without(summary.to_json(), "path", "output") == expected["local"]["summary"]


def test_a_read_only_output_shard_is_refused_before_a_cluster_starts_and_modes_are_kept(dask_client, tmp_path):
    # As the local engine: a read-only output is refused (exit 2, its mode and chmod u+w named),
    # before the scheduler is even reached; a writable one is replaced keeping its mode.
    out = tmp_path / "out"
    out.mkdir()
    shard = out / "part-00000.parquet"
    shard.write_bytes(b"an earlier result")
    shard.chmod(0o444)
    done = cli("score", RAG, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9", "--output", out)
    assert done.returncode == 2
    assert f"output {shard} is read-only (mode 0444)" in done.stderr
    assert f"chmod u+w {shard}" in done.stderr
    assert "cannot reach" not in done.stderr
    assert shard.read_bytes() == b"an earlier result"
    assert stat.S_IMODE(shard.stat().st_mode) == 0o444
    stale = out / "part-00007.parquet"  # a shard of a longer run, which this run would remove
    shard.chmod(0o640)
    stale.write_bytes(b"old")
    stale.chmod(0o400)
    with pytest.raises(ValueError, match=r"part-00007\.parquet is read-only \(mode 0400\)"):
        score_shards(str(RAG), AnswerContainsEvaluator(), output=out, client=dask_client)
    assert stale.read_bytes() == b"old"
    stale.chmod(0o600)
    summary = score_shards(str(RAG), AnswerContainsEvaluator(), output=out, client=dask_client)
    assert stat.S_IMODE(shard.stat().st_mode) == 0o640
    assert len(read_output(out)) == summary.items == 20
    assert not stale.exists()
    assert sorted(os.listdir(out)) == ["part-00000.parquet"]


def test_a_shard_read_by_the_worker_function_is_the_local_engines_rows(tmp_path):
    # What a worker runs for a partition (read_shard) gives the rows the local reader gives.
    from answer_eval.inputs.formats import InputFile, iter_rows

    source = tmp_path / "values.parquet"
    pq.write_table(
        pa.table({"prediction": ["pi is 3.14"], "answers": pa.array([[3.14, 2.5]], pa.list_(pa.float32()))}), source
    )
    frame = read_shard(source, text_fields={"prediction"}, value_fields={"answers"})
    local = [row for _, row in iter_rows(InputFile.of(source, text_fields=["prediction"], value_fields=["answers"]))]
    assert frame.to_dict("records") == local == [{"prediction": "pi is 3.14", "answers": [3.14, 2.5]}]
    assert frame.attrs["answer_eval_column_kinds"] == {"prediction": ["string"], "answers": ["list", "float"]}
