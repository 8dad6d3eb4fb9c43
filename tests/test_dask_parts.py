"""The pieces of the Dask engine that need no cluster: exact sums, shards, plans, options."""

import itertools
import json
import math
import pickle

import pandas as pd
import pyarrow.parquet as pq
import pytest
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret
from hypothesis import given
from hypothesis import strategies as st

from answer_eval.dask.io import expand_shards, read_shard, write_shard
from answer_eval.dask.partition import make_plan
from answer_eval.errors import InputError
from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore
from answer_eval.evaluators.judge.judge_options import JudgeOptions
from answer_eval.evaluators.summaries import MetricsSummary, TypedSummary
from answer_eval.inputs.parquet_rows import JSON_COLUMNS_KEY
from answer_eval.stats.written_numbers import ExactSum
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    AnswerJudgeEvaluator,
    PairwiseEvaluator,
    TypedAnswerEvaluator,
)
from tests.cli_runs import cli
from tests.conftest import EXAMPLES

RAG = EXAMPLES / "data" / "rag_answers.jsonl"
floats = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


@given(st.lists(floats, max_size=60), st.lists(st.integers(min_value=0, max_value=60), max_size=5))
def test_an_exact_sum_is_the_same_however_the_values_are_split(values, cuts):
    bounds = [0, *sorted(cut % (len(values) + 1) for cut in cuts), len(values)]
    parts = [ExactSum(values[start:end]) for start, end in itertools.pairwise(bounds)]
    merged = ExactSum()
    for part in parts:
        merged.merge(pickle.loads(pickle.dumps(part)))  # as partitions' sums travel back from workers
    assert merged.value == math.fsum(values)
    assert merged.count == len(values)


def test_an_exact_sum_reads_ints_bools_and_non_finite_values():
    assert ExactSum([1, True, 0.5]).value == 2.5
    assert ExactSum([10**20, 1.0, -(10**20)]).value == 1.0  # plain float addition gives 0.0
    assert ExactSum([float("inf"), 1.0]).value == math.inf
    assert math.isnan(ExactSum([float("inf"), -math.inf]).value)
    assert ExactSum().value == 0.0


def test_summaries_merged_in_order_equal_one_summary_of_every_row():
    rewards = [0.1, 0.7, 1 / 3, 0.2, 0.9, 2 / 7]
    types = ["numerical", "OCR", "numerical", "free-form", "OCR", "numerical"]
    kinds = [None, "wrong", None, "custom_kind", "wrong", None]
    whole = TypedSummary(path="x")
    parts = [TypedSummary(path=""), TypedSummary(path="")]
    for index, row in enumerate(zip(types, rewards, kinds, strict=True)):
        whole.add(*row)
        parts[index // 4].add(*row)
    merged = TypedSummary(path="x")
    for part in parts:
        merged.merge(part)
    assert merged.to_json() == whole.to_json()
    assert list(merged.failure_counts) == list(whole.failure_counts)  # carried kinds keep their place
    metrics = [MetricsSummary(path="", metrics=["bleu"]) for _ in range(3)]
    for index, value in enumerate(rewards):
        metrics[0].add({"bleu": value, "failure_kind": kinds[index]})
        metrics[1 + index // 3].add({"bleu": value, "failure_kind": kinds[index]})
    metrics[1].merge(metrics[2])
    assert metrics[1].to_json() == metrics[0].to_json()


def test_a_shard_keeps_python_values_through_parquet(tmp_path):
    rows = [json.loads(line) for line in RAG.read_text(encoding="utf-8").splitlines()]
    frame = pd.DataFrame(rows, dtype=object)
    frame["correct"] = pd.Series([index % 2 == 0 for index in range(len(rows))], dtype=bool)
    write_shard(frame, tmp_path / "rag.parquet")
    table = pq.read_table(tmp_path / "rag.parquet")
    # Mixed columns are JSON text, named in the metadata; plain ones keep their Parquet type.
    assert json.loads(table.schema.metadata[JSON_COLUMNS_KEY]) == ["answers", "prediction"]
    assert str(table.schema.field("question").type) == "string"
    assert str(table.schema.field("correct").type) == "bool"
    back = read_shard(tmp_path / "rag.parquet")
    assert back.drop(columns="correct").to_dict("records") == rows
    assert list(back.index) == list(range(1, len(rows) + 1))
    assert back.attrs["answer_eval_source"] == str(tmp_path / "rag.parquet")
    assert [name for name in tmp_path.iterdir()] == [tmp_path / "rag.parquet"]  # no temporary file left


def test_a_jsonl_shard_numbers_rows_by_line_and_marks_missing_keys(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"a": 1, "b": null}\n\n{"a": 2}\nnot json\n{"c": [1]}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"in\.jsonl:4: not valid JSON"):
        read_shard(path)
    frame = read_shard(path, skip_invalid=True)
    assert list(frame.index) == [1, 3, 5]
    assert frame.attrs["answer_eval_invalid_lines"] == 1
    assert frame["b"].tolist() == [None, pd.NA, pd.NA]  # null is None; a key the row lacks is NA
    assert frame["c"].tolist()[2] == [1]
    assert frame["a"].tolist()[:2] == [1, 2]


def test_a_jsonl_shard_refuses_a_line_over_the_limit_as_the_local_reader_does(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_text('{"a": 1}\n{"a": "' + "x" * 200 + '"}\n{"a": 3}\n', encoding="utf-8")
    assert read_shard(path)["a"].tolist()[2] == 3  # the default limit is 64 MiB
    with pytest.raises(InputError, match=r"long\.jsonl:2: .*100") as caught:
        read_shard(path, max_line_bytes=100)
    assert "line" in str(caught.value)
    frame = read_shard(path, skip_invalid=True, max_line_bytes=100)
    assert list(frame.index) == [1, 3]
    assert frame.attrs["answer_eval_invalid_lines"] == 1


def test_shard_patterns_expand_in_order_and_bad_ones_are_named(tmp_path):
    for name in ("b.jsonl", "a.jsonl", "c.parquet", "notes.txt"):
        (tmp_path / name).write_text("", encoding="utf-8")
    assert expand_shards([str(tmp_path / "*.jsonl"), str(tmp_path / "c.parquet"), str(tmp_path / "a.jsonl")]) == [
        str(tmp_path / "a.jsonl"),
        str(tmp_path / "b.jsonl"),
        str(tmp_path / "c.parquet"),
    ]
    with pytest.raises(InputError, match="no shard matches"):
        expand_shards([str(tmp_path / "*.pq")])
    with pytest.raises(InputError, match=r"notes\.txt is neither JSONL"):
        expand_shards([str(tmp_path / "notes.txt")])
    with pytest.raises(InputError, match="does not exist"):
        expand_shards([str(tmp_path / "gone.jsonl")])


def test_the_plan_carries_the_evaluator_as_plain_data_and_checks_names():
    plan = make_plan(AnswerJudgeEvaluator(), {"question": "q"}, {"outcome": "read"})
    # The evaluator travels as its registry name and options: the component's init parameters, by name.
    options = AnswerJudgeEvaluator().to_dict()["init_parameters"]
    # Not options: the chat generator (unset) and how the component shows its run (it stays where the component runs).
    given = {key: value for key, value in options.items() if key not in ("escalate_to", "progress_bar")}
    carried = JudgeOptions.from_dict(given).to_dict()
    assert json.loads(plan.to_json())["evaluator"] == {"name": "judge", "options": carried}
    assert set(given) < set(JudgeOptions().to_dict())  # the component's other parameters are options, by name
    quiet = make_plan(AnswerJudgeEvaluator(progress_bar=False), {"question": "q"}, {"outcome": "read"})
    assert quiet.to_json() == plan.to_json()
    # Abstention is CPU work and travels; an LLM to escalate to does not.
    assert (
        json.loads(make_plan(AnswerJudgeEvaluator(escalate_below=0.5)).to_json())["evaluator"]["options"][
            "escalate_below"
        ]
        == 0.5
    )
    chat = OpenAIChatGenerator(api_key=Secret.from_env_var("ANSWER_EVAL_NO_SUCH_KEY", strict=False))
    with pytest.raises(TypeError, match=r"escalate_to=\.\.\.\) hands work to a chat generator"):
        make_plan(AnswerJudgeEvaluator(escalate_to=chat))
    saved = AnswerJudgeEvaluator(escalate_below=0.5).to_dict()
    assert json.loads(make_plan(saved).to_json())["evaluator"]["options"]["escalate_below"] == 0.5
    with pytest.raises(TypeError, match="does not run on Dask: max_calls"):
        make_plan(AnswerJudgeCore(JudgeOptions(escalate_model="m", max_calls=5)))
    with pytest.raises(TypeError, match="PairwiseEvaluator compares two systems"):
        make_plan(PairwiseEvaluator(AnswerContainsEvaluator()))
    with pytest.raises(ValueError, match="has no input 'answer'"):
        make_plan(AnswerContainsEvaluator(), {"answer": "gold"})
    with pytest.raises(ValueError, match="writes no column 'score'"):
        make_plan(TypedAnswerEvaluator(), outputs={"score": "x"})
    with pytest.raises(TypeError, match="runs this package's evaluators"):
        make_plan({"type": "haystack.components.evaluators.sas_evaluator.SASEvaluator", "init_parameters": {}})


def test_dask_options_are_refused_on_the_local_engine_and_outputs_must_be_folders(tmp_path):
    done = cli("score", RAG, "--scheduler", "tcp://127.0.0.1:8786")
    assert done.returncode == 2
    assert "--scheduler needs --engine dask" in done.stderr
    done = cli("score", RAG, "--engine", "dask", "--output", tmp_path / "out.jsonl")
    assert done.returncode == 2
    assert "must be a folder with --engine dask" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_an_added_column_that_is_a_column_read_is_refused_on_dask_before_a_cluster_starts(tmp_path):
    # As locally: the verdict would be written over the very text it grades (--replace-columns), or
    # every row refused with advice that cannot work. The scheduler is never reached.
    source = tmp_path / "scored.jsonl"
    source.write_text(json.dumps({"answers": ["a"], "correct": "the graded answer"}) + "\n", encoding="utf-8")
    for more in (["--replace-columns"], []):
        done = cli(
            "score", source, "--prediction-field", "correct", *more, "--engine", "dask",
            "--scheduler", "tcp://127.0.0.1:9", "--output", tmp_path / "out",
        )  # fmt: skip
        assert done.returncode == 2
        assert "the prediction is read from the field 'correct', which this command also writes" in done.stderr
        assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="the answers is read from the field 'ae_outcome'"):
        make_plan(AnswerContainsEvaluator(), {"answers": "ae_outcome"}, {"outcome": "ae_outcome"})
