"""The judge's abstention on Dask: the local run's rows and summary, exactly (escalation: tests/test_jury_dask.py)."""

from __future__ import annotations

import json

import pytest

from answer_eval.dask.engine import score_shards
from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator
from tests.dask_runs import read_output, run_both, without
from tests.test_judge_trust_cli import calibration_file, rows

pytestmark = pytest.mark.xdist_group("dask_cluster")


def test_abstention_on_dask_gives_the_local_rows_and_summary(dask_client, capsys, tmp_path):
    calibration = calibration_file(tmp_path / "calibration.json")
    source = tmp_path / "answers.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows(300)), encoding="utf-8")
    address = dask_client.scheduler.address
    both = run_both(
        capsys, address, tmp_path, "judge", source, "--calibration", calibration, "--target-agreement", "0.9"
    )
    assert both["local"]["code"] == both["dask"]["code"] == 0
    assert both["same"], both
    local = both["local"]
    abstained = [row["abstained"] for row in local["rows"]]
    assert 0 < sum(abstained) < len(abstained)  # the threshold keeps some and not others
    assert local["summary"]["abstained"] == sum(abstained)
    # In code: the component, its calibration given as the file's content, on the same shards.
    content = json.loads(calibration.read_text(encoding="utf-8"))
    judge = AnswerJudgeEvaluator(calibration=content, target_agreement=0.9)
    summary = score_shards([str(source)], judge, output=tmp_path / "component", client=dask_client)
    assert [row["abstained"] for row in read_output(tmp_path / "component")] == abstained
    assert without(summary.to_json(), "path", "output") == local["summary"]
