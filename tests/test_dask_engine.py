"""``--engine dask`` on a real ``distributed.LocalCluster`` (2 worker processes): the local run's results.

Every test compares with the local command run on the same rows (in this process, through
``answer_eval.cli.main.main``): the per-row verdicts read back from the Parquet shards and the summary
must be equal, not close. One cluster serves every Dask test module (``dask_client`` in
tests/conftest.py; with ``pytest -n auto --dist loadgroup``, the ``dask_cluster`` group's tests stay
on one pytest worker: one cluster in all).
"""

import json
import os
import signal
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed import wait

from answer_eval import __version__
from answer_eval.cli.main import main
from answer_eval.dask import partition as dask_partition
from answer_eval.dask.engine import read_shards, score_dataframe, score_shards, summarize
from answer_eval.dask.io import write_shard
from answer_eval.engine.row_transforms import MARKER, marker_value
from answer_eval.errors import InputError
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    AnswerJudgeEvaluator,
    ReferenceMetricsEvaluator,
    ToolCallEvaluator,
    TypedAnswerEvaluator,
)
from tests.cli_runs import cli
from tests.conftest import EXAMPLES, ROOT
from tests.dask_runs import read_jsonl, read_output, without

NQ = EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl"
RAG = EXAMPLES / "data" / "rag_answers.jsonl"
TYPED = EXAMPLES / "data" / "typed_example.jsonl"
TOOLS = EXAMPLES / "data" / "tool_calls.jsonl"
JUDGED = ROOT / "data" / "judge" / "nq301-dev.jsonl"

pytestmark = pytest.mark.xdist_group("dask_cluster")


@pytest.fixture
def client(dask_client):
    return dask_client  # one cluster for every Dask test module (tests/conftest.py)


def local(capsys, *args):
    """The local command's JSON summary (run in this process), and its output rows when written."""
    capsys.readouterr()
    assert main([*map(str, args), "--format", "json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


def split(source, folder, shards):
    """The lines of ``source`` as ``shards`` JSONL files of about equal length, in order."""
    folder.mkdir(exist_ok=True)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    size = -(-len(lines) // shards)
    paths = []
    for index in range(shards):
        path = folder / f"shard-{index:03d}.jsonl"
        path.write_text("".join(lines[index * size : (index + 1) * size]), encoding="utf-8")
        paths.append(str(path))
    return paths


def typed_rows(folder):
    """90 typed rows over every built-in question type, aliases, fractional rewards and parse failures."""
    rows = []
    for index in range(90):
        value = index * 1.25
        rows.append([
            (f"The answer is <answer>{'ABCD'[index % 4]}</answer>", "<answer>B</answer>", "multiple choice"),
            (f"<answer>{value:.2f}</answer>", f"<answer>{value + (index % 3) * 0.01}</answer>", "numeric"),
            (f"<answer>Invoice N0. {index}</answer>", f"<answer>Invoice No. {index}</answer>", "OCR"),
            (f"<answer>The cat on mat {index}</answer>", f"<answer>A cat on mat {index % 5}</answer>", "free-form"),
            (f"<answer>{value + index % 4}</answer>", f"<answer>{value}</answer>", "regression"),
            ("I cannot answer that.", "<answer>7</answer>", "numerical"),
            (f"<answer>{index}</answer>", f"<answer>{index}</answer>", "Numerical "),
            ("<answer>B</answer>", "<answer>B</answer>", "multiple-choice"),
            (f"<answer>{index / 7}</answer>", f"<answer>{index / 7:.3f}</answer>", "numerical"),
        ][index % 9])  # fmt: skip
    path = folder / "typed.jsonl"
    keys = ("model_output", "solution", "problem_type")
    path.write_text("".join(json.dumps(dict(zip(keys, row, strict=True))) + "\n" for row in rows), encoding="utf-8")
    return path


CASES = {
    "score": (AnswerContainsEvaluator(), RAG, [], {}),
    "score-nq": (AnswerContainsEvaluator(), NQ, [], {}),
    "judge": (AnswerJudgeEvaluator(), JUDGED, [], {}),
    "typed": (TypedAnswerEvaluator(), TYPED, [], {}),
    "typed-mixed": (TypedAnswerEvaluator(), typed_rows, [], {}),
    "metrics": (ReferenceMetricsEvaluator(), NQ, [], {}),
    "tools": (ToolCallEvaluator(), TOOLS, [], {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_evaluator_gives_the_local_verdicts_and_summary(client, capsys, tmp_path, case):
    evaluator, source, options, _ = CASES[case]
    command = case.split("-")[0]
    source = source(tmp_path) if callable(source) else source
    expected = local(capsys, command, source, "--output", tmp_path / "local.jsonl", *options)
    shards = split(source, tmp_path / "in", 3)
    summary = score_shards(shards, evaluator, output=tmp_path / "out", client=client)
    rows, local_rows = read_output(tmp_path / "out"), read_jsonl(tmp_path / "local.jsonl")
    assert rows == local_rows
    assert list(rows[0]) == list(local_rows[0])  # the same columns, in the same order
    assert without(summary.to_json(), "path", "output") == without(expected, "path", "output")
    assert summary.to_json()["output"] == str(tmp_path / "out")
    assert len(list((tmp_path / "out").glob("part-*.parquet"))) == 3


def test_renamed_columns_and_outputs(client, capsys, tmp_path):
    rows = read_jsonl(TYPED)
    renamed = [{"reply": row["model_output"], "gold": row["solution"], "kind": row["problem_type"]} for row in rows]
    source = tmp_path / "renamed.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in renamed), encoding="utf-8")
    expected = local(
        capsys, "typed", source, "--prediction-field", "reply", "--solution-field", "gold", "--type-field", "kind",
        "--reward-field", "score", "--output", tmp_path / "local.jsonl",
    )  # fmt: skip
    columns = {"prediction": "reply", "solution": "gold", "type": "kind"}
    summary = score_shards(
        str(source), TypedAnswerEvaluator(), output=tmp_path / "out", client=client, columns=columns,
        outputs={"reward": "score"},
    )  # fmt: skip
    assert read_output(tmp_path / "out") == read_jsonl(tmp_path / "local.jsonl")
    assert without(summary.to_json(), "output") == without(expected, "output")


def test_the_judge_is_built_once_per_worker_and_agrees(client, capsys, tmp_path):
    rows = read_jsonl(JUDGED)[:48]  # contains, lexical, no_evidence and no_answer verdicts
    source = tmp_path / "judged.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    expected = local(capsys, "judge", source, "--output", tmp_path / "local.jsonl")
    evaluator = AnswerJudgeEvaluator()
    frame = read_shards(split(source, tmp_path / "in", 4))
    scored = score_dataframe(frame, evaluator, mark=(MARKER, marker_value("judge"))).persist()  # as the CLI marks
    wait(scored)
    built = client.run(built_judges)
    assert summarize(scored, evaluator, path=str(source), client=client).to_json() == {**expected, "output": None}
    verdicts = scored.compute().to_dict("records")
    assert verdicts == read_jsonl(tmp_path / "local.jsonl")
    # Four partitions on two workers: a worker that scored any built the judge once, and a second
    # pass reuses it.
    assert all(len(ids) <= 1 for ids in built.values())
    assert sum(len(ids) for ids in built.values()) >= 1
    score_dataframe(read_shards(split(source, tmp_path / "again", 4)), evaluator).compute()
    again = client.run(built_judges)
    assert all(again[worker] == ids for worker, ids in built.items() if ids)


def built_judges():
    """On a worker: the id of every judge in the engine's cache of built evaluators."""
    return [id(judge) for judge in dask_partition._BUILT.values() if judge.name == "judge"]


@pytest.mark.slow
def test_a_worker_killed_mid_run_still_gives_complete_identical_results(client, capsys, tmp_path):
    lines = NQ.read_text(encoding="utf-8")
    whole = tmp_path / "whole.jsonl"
    whole.write_text(lines * 30, encoding="utf-8")
    expected = local(capsys, "judge", whole, "--output", tmp_path / "local.jsonl")
    shards = split(whole, tmp_path / "in", 30)
    out = tmp_path / "out"
    pids_before = set(client.run(os.getpid).values())
    killed = {}

    def kill_a_busy_worker():
        deadline = time.monotonic() + 120  # the test fails (no kill recorded) rather than hang
        while not list(out.glob("part-*.parquet")):  # the run has started writing
            if time.monotonic() > deadline:
                return
            time.sleep(0.005)
        busy = None
        while busy is None:  # a worker with a task in hand
            if time.monotonic() > deadline:
                return
            busy = next((worker for worker, keys in client.processing().items() if keys), None)
        pid = client.run(os.getpid, workers=[busy])[busy]
        killed["done"] = len(list(out.glob("part-*.parquet")))
        os.kill(pid, signal.SIGKILL)
        killed["pid"] = pid

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    summary = score_shards(shards, AnswerJudgeEvaluator(), output=out, client=client, path=str(whole))
    killer.join()
    assert "pid" in killed, "no worker was killed mid-run"
    assert 1 <= killed["done"] < 30  # the kill landed mid-run
    assert killed["pid"] in pids_before
    assert killed["pid"] not in set(client.run(os.getpid).values())  # that process is gone (the nanny made another)
    assert summary.to_json() == {**expected, "output": str(out)}
    assert read_output(out) == read_jsonl(tmp_path / "local.jsonl")
    assert sorted(path.name for path in out.iterdir()) == [f"part-{index:05d}.parquet" for index in range(30)]


def test_parquet_shards_give_the_same_results_as_jsonl(client, capsys, tmp_path):
    expected = local(capsys, "score", RAG, "--output", tmp_path / "local.jsonl")
    rows = read_jsonl(RAG)  # predictions mix strings, mappings and null; answers mix strings and ints
    (tmp_path / "in").mkdir()
    import pandas as pd

    for index, start in enumerate(range(0, len(rows), 7)):
        frame = pd.DataFrame(rows[start : start + 7], dtype=object)
        write_shard(frame, tmp_path / "in" / f"rag-{index}.parquet")
    pattern = str(tmp_path / "in" / "*.parquet")
    summary = score_shards(pattern, AnswerContainsEvaluator(), output=tmp_path / "out", client=client)
    assert read_output(tmp_path / "out") == read_jsonl(tmp_path / "local.jsonl")
    assert without(summary.to_json(), "path", "output") == without(expected, "path", "output")
    # Plain Parquet written by pyarrow (list<string> answers), mixed with JSONL shards.
    nq = read_jsonl(NQ)
    pq.write_table(pa.Table.from_pylist(nq[:150]), tmp_path / "nq-a.parquet")
    (tmp_path / "nq-b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in nq[150:]), encoding="utf-8")
    inputs = [str(tmp_path / "nq-a.parquet"), str(tmp_path / "nq-b.jsonl")]
    mixed = score_shards(inputs, AnswerContainsEvaluator(), client=client)
    assert without(mixed.to_json(), "path") == without(local(capsys, "score", NQ), "path")


def test_schema_errors_name_the_shard_and_the_column(client, tmp_path):
    shards = split(NQ, tmp_path / "in", 3)
    rows = read_jsonl(NQ)[:5]
    renamed = [{("gold" if key == "answers" else key): value for key, value in row.items()} for row in rows]
    bad = tmp_path / "in" / "shard-009.jsonl"
    bad.write_text("".join(json.dumps(row) + "\n" for row in renamed), encoding="utf-8")
    with pytest.raises(InputError, match=r"shard-009\.jsonl: missing column 'answers' \(answers\)") as caught:
        score_shards([*shards, str(bad)], AnswerContainsEvaluator(), client=client)
    assert "gold" in str(caught.value)
    # A float column holds number labels (12.0 is the number 12); a bool column is refused.
    pq.write_table(pa.table({"prediction": ["12 units"], "answers": [12.0]}), tmp_path / "float.parquet")
    assert score_shards(str(tmp_path / "float.parquet"), AnswerContainsEvaluator(), client=client).correct == 1
    pq.write_table(pa.table({"prediction": ["12 units"], "answers": [True]}), tmp_path / "bool.parquet")
    with pytest.raises(InputError, match=r"bool\.parquet: column 'answers' has type bool"):
        score_shards([shards[0], str(tmp_path / "bool.parquet")], AnswerContainsEvaluator(), client=client)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"prediction": "a", "answers": ["a"]}\n\n{"prediction": "b", "answers": [""]}\n', "utf-8")
    with pytest.raises(InputError, match=r"broken\.jsonl:3: column 'answers': ground truth is blank"):
        score_shards(str(broken), AnswerContainsEvaluator(), client=client)
    broken.write_text('{"prediction": "a", "answers": ["a"]}\n{"prediction": "b"\n', "utf-8")
    with pytest.raises(InputError, match=r"broken\.jsonl:2: not valid JSON"):
        score_shards(str(broken), AnswerContainsEvaluator(), client=client)


def test_skipped_rows_are_counted_as_the_local_run_counts_them(client, capsys, tmp_path):
    lines = RAG.read_text(encoding="utf-8").splitlines()
    lines[3] = "not json"
    lines[7] = '{"prediction": "x"}'  # no answers
    lines[11] = '{"prediction": "x", "answers": []}'
    source = tmp_path / "rag.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = local(capsys, "score", source, "--skip-invalid", "--output", tmp_path / "local.jsonl")
    summary = score_shards(split(source, tmp_path / "in", 2), AnswerContainsEvaluator(), output=tmp_path / "out",
                           client=client, skip_invalid=True)  # fmt: skip
    assert expected["invalid_lines"] == 3
    assert without(summary.to_json(), "path", "output") == without(expected, "path", "output")
    local_rows = read_jsonl(tmp_path / "local.jsonl")
    assert [row["outcome"] for row in read_output(tmp_path / "out")] == [row["outcome"] for row in local_rows]


def test_a_failed_run_leaves_no_partial_shard_and_a_new_run_replaces_the_old_one(client, tmp_path):
    out = tmp_path / "out"
    score_shards(split(NQ, tmp_path / "six", 6), AnswerContainsEvaluator(), output=out, client=client)
    assert len(list(out.glob("part-*.parquet"))) == 6
    shards = split(NQ, tmp_path / "in", 3)
    (tmp_path / "in" / "shard-001.jsonl").write_text('{"prediction": "x", "answers": NaN}\n', encoding="utf-8")
    with pytest.raises(InputError, match="shard-001"):
        score_shards(shards, AnswerContainsEvaluator(), output=out, client=client)
    for path in out.glob("part-*.parquet"):  # every file under a final name is a whole shard
        assert pq.read_table(path).num_rows > 0
    summary = score_shards(split(NQ, tmp_path / "two", 2), AnswerContainsEvaluator(), output=out, client=client)
    # Shards of the longer run are gone, and so is any temporary file of the failed one.
    assert sorted(path.name for path in out.iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    assert len(read_output(out)) == summary.items == 301


def _fail_when_started(path: str) -> None:
    while not Path(path).exists():  # fail only once the slow task is running
        time.sleep(0.01)
    raise ValueError("a bad partition")


def test_a_failed_run_raises_only_after_the_running_partitions_have_ended(client, tmp_path):
    # Cancelling cannot stop a partition a worker is already running; the error must not reach
    # the caller while such a partition may still write into the output folder.
    from dask.delayed import delayed

    from answer_eval.dask.engine import _compute

    started, written = tmp_path / "started", tmp_path / "written"

    def slow() -> None:
        started.write_text("", encoding="utf-8")
        time.sleep(1.5)
        written.write_text("done", encoding="utf-8")

    tasks = [delayed(slow)(), delayed(_fail_when_started)(str(started))]
    with pytest.raises(ValueError, match="a bad partition"):
        _compute(tasks, client, progress=False)
    assert written.exists()  # the running partition had ended when the error was raised


def test_the_command_line_on_an_existing_cluster(client, capsys, tmp_path):
    (tmp_path / "in").mkdir()
    nq = read_jsonl(NQ)
    for index in range(3):
        pq.write_table(pa.Table.from_pylist(nq[index * 101 : (index + 1) * 101]), tmp_path / "in" / f"{index}.parquet")
    address = client.scheduler.address
    pattern = str(tmp_path / "in" / "*.parquet")
    mark = marker_value("score")
    done = cli("score", pattern, "--engine", "dask", "--scheduler", address, "--output", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    capsys.readouterr()
    assert main(["score", str(NQ), "--no-progress"]) == 0
    text = capsys.readouterr().out
    lines, here = done.stdout.splitlines(), text.splitlines()
    assert lines[1:-2] == here[1:-1]  # all but the input and output lines, and the signature
    assert lines[0] == f"answer-eval score: {pattern}"
    assert lines[-2].split() == ["output", str(tmp_path / "out")]
    assert lines[-1] == here[-1]  # the same evaluator with the same options
    assert lines[-1].split()[0] == "signature"
    assert read_output(tmp_path / "out") == [
        {**row, **{name: verdict[name] for name in ("correct", "failure_kind", "outcome")}, "scored_by": mark}
        for row, verdict in zip(nq, read_output(tmp_path / "out"), strict=True)
    ]
    assert mark == f"answer-eval score {__version__}"
    # A schema error on the cluster: exit 2, the shard and the column named (the command run in this
    # process, as the subprocess above runs it: one interpreter start-up less).
    capsys.readouterr()
    arguments = ["judge", str(tmp_path / "in" / "0.parquet"), "--engine", "dask", "--scheduler", address]
    assert main([*arguments, "--answers-field", "gold"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"answer-eval: error: {tmp_path / 'in' / '0.parquet'}: missing column 'gold' (answers); "
        "columns: question, answers, prediction"
    )


def test_the_command_line_starts_and_closes_a_local_cluster(capsys, tmp_path):
    shards = split(TYPED, tmp_path / "in", 2)
    command = ["typed", *shards, "--engine", "dask", "--workers", "1", "--format", "json", "--output", tmp_path / "out"]
    done = cli(*command, timeout=240)
    assert done.returncode == 0, done.stderr
    expected = local(capsys, "typed", TYPED)
    assert without(json.loads(done.stdout), "path", "output") == without(expected, "path", "output")
    assert json.loads(done.stdout)["path"] == " ".join(shards)
    assert len(read_output(tmp_path / "out")) == 3
    several = cli("score", *shards)
    assert several.returncode == 2
    assert "several input files need --engine dask" in several.stderr


def test_two_local_clusters_at_once_do_not_fight_over_a_port():
    # The scheduler serves HTTP even without a dashboard; on the fixed default port 8787 the second
    # of two runs at once (two users, parallel test workers) would warn and move to another port.
    import warnings

    from answer_eval.dask.engine import connect

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*already in use.*")
        with connect(workers=1) as first, connect(workers=1) as second:
            assert first.scheduler_info()["address"] != second.scheduler_info()["address"]
            assert first.submit(sum, [1, 2]).result() == 3
            assert second.submit(sum, [3, 4]).result() == 7


def test_a_column_the_rows_already_have_is_refused_on_dask_too(client, capsys, tmp_path):
    # A person's "correct" column in the second shard only: the local run refuses it at its line,
    # the Dask run at its shard and line; with --column-prefix both keep it, with the same rows.
    rows = read_jsonl(RAG)
    rows[15]["correct"] = False
    source = tmp_path / "labelled.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    shards = split(source, tmp_path / "in", 2)
    with pytest.raises(InputError, match=r"shard-001\.jsonl:6: the row already has a column 'correct'"):
        score_shards(shards, AnswerContainsEvaluator(), output=tmp_path / "refused", client=client)
    assert not (tmp_path / "refused" / "part-00001.parquet").exists()  # the refused shard is not written
    capsys.readouterr()
    assert main(["score", shards[1], "--engine", "dask", "--scheduler", client.scheduler.address]) == 2
    assert "already has a column 'correct'" in capsys.readouterr().err
    expected = local(capsys, "score", source, "--output", tmp_path / "local.jsonl", "--column-prefix", "ae_")
    arguments = ["score", *shards, "--engine", "dask", "--scheduler", client.scheduler.address]
    assert main([*arguments, "--output", str(tmp_path / "out"), "--column-prefix", "ae_", "--format", "json"]) == 0
    assert without(json.loads(capsys.readouterr().out), "path", "output") == without(expected, "path", "output")
    written = read_output(tmp_path / "out")
    for shard_row, local_row in zip(written, read_jsonl(tmp_path / "local.jsonl"), strict=True):
        # A Parquet shard has every column on every row: null where a JSON row lacked the key.
        assert {key: value for key, value in shard_row.items() if key in local_row} == local_row
        assert all(shard_row[key] is None for key in set(shard_row) - set(local_row))
    assert written[15]["correct"] is False
    assert written[15]["ae_scored_by"] == f"answer-eval score {__version__}"


def test_an_input_that_is_an_output_shard_under_another_name_is_refused(client, tmp_path):
    # A hard link (or symbolic link) of an input at out/part-00000.parquet: the run would replace it.
    shards = split(RAG, tmp_path / "in", 2)
    out = tmp_path / "out"
    out.mkdir()
    os.link(shards[0], out / "part-00000.parquet")
    (out / "part-00001.parquet").symlink_to(shards[1])
    before = [Path(shard).read_bytes() for shard in shards]
    with pytest.raises(InputError, match=r"input .*shard-00[01]\.jsonl is an output shard of this run"):
        score_shards(shards, AnswerContainsEvaluator(), output=out, client=client)
    assert [Path(shard).read_bytes() for shard in shards] == before
