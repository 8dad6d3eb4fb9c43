"""The judge's verdicts on all 16,380 developer-set answers are byte-identical to those recorded before its speed-up.

``tests/data/judge_dev_digests.json`` holds the SHA-256 of every verdict (correct, confidence and
acceptance to the last bit, stage, evidence, failure kind, outcome, graded) that main gave at
0d10fbb, before the speed-up of issue 30, on the three human-judged sets of ``data/judge``, each
judged in one batch with its questions; revised once (its ``revised``): issue 38 dropped from the
evidence of 590 verdicts a feature that held only vacuously ("every number of the gold is in it" for
a gold with no number), every other field of every verdict unchanged (checked row by row against
the commit before). ``python benchmarks/judge_identity.py`` compares the two
versions row by row (it needs git) and names the rows that differ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "scripts"))

import judge_identity  # noqa: E402
import judged_sets  # noqa: E402

from answer_eval.evaluators.judge.cascade import AnswerJudge  # noqa: E402

RECORDED = json.loads(judge_identity.DIGESTS.read_text(encoding="utf-8"))


def test_the_digests_were_recorded_from_main_before_the_speed_up_on_these_files():
    assert RECORDED["against"] == "0d10fbb"
    assert sum(entry["answers"] for entry in RECORDED["sets"].values()) == 16_380
    for spec in judged_sets.SETS:
        assert RECORDED["sets"][spec.name]["file_sha256"] == judged_sets.sha256(spec)


@pytest.mark.parametrize("spec", judged_sets.SETS, ids=lambda spec: spec.name)
def test_every_verdict_on_the_developer_set_is_byte_identical(spec):
    rows = judged_sets.rows(spec)
    lines = judge_identity.judge_set(AnswerJudge, rows)
    assert len(lines) == RECORDED["sets"][spec.name]["answers"]
    assert judge_identity.digest(lines) == RECORDED["sets"][spec.name]["verdicts_sha256"], (
        f"the judge's verdicts on {spec.name} changed: run python benchmarks/judge_identity.py to see which"
    )
