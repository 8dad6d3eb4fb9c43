"""benchmarks/judge_cascade.py on a few splits of NQ301 and GPT-4's recorded replies: its table adds up."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import judge_cascade


@pytest.fixture(scope="module")
def judged():
    return judge_cascade.nq301()


@pytest.fixture(scope="module")
def table(judged):
    return judge_cascade.run(3, seed=1, judged=judged)


def test_every_row_adds_up(table) -> None:
    assert [(row["target"], row["llm"]) for row in table] == [
        (target, name) for target in judge_cascade.TARGETS for name in judge_cascade.LLMS
    ]
    for row in table:
        assert row["splits"] == 3
        assert row["judge"] + row["llm_level"] + row["person"] == pytest.approx(1.0, abs=1e-12)
        for key in ("alone", "judge", "llm_level", "person", "reached", "alone_reached", "open"):
            assert 0.0 <= row[key] <= 1.0, key
        # delta / 2 passes fewer thresholds than delta: the cascade's judge level never keeps more than the judge alone
        assert row["judge"] <= row["alone"] + 1e-12
        if row["alone"]:
            assert row["ratio"] == pytest.approx((row["judge"] + row["llm_level"]) / row["alone"])
        assert row["calls"] >= 0
        assert row["calibration_calls"] >= 0


def test_one_reply_keeps_every_escalated_verdict_or_none(judged) -> None:
    accepts = judge_cascade.gpt4_accepts(judged)
    single = judge_cascade.Grader(judge_cascade.LLMS[0], accepts, np.ones(len(accepts)))
    rng = np.random.default_rng(5)
    for _ in range(2):
        calibrate = judge_cascade._split(judged, "40%", rng)
        rest = int((~calibrate).sum())
        found = judge_cascade.one_split(judged, [single], calibrate)
        for target in judge_cascade.TARGETS:
            cell = found[target, single.name]
            kept = round(cell["llm"] * rest)
            assert kept == (cell["calls"] if cell["open"] else 0)


def test_the_scripted_jury_follows_its_flip_chances(judged) -> None:
    accepts = judge_cascade.gpt4_accepts(judged)
    rng = np.random.default_rng(0)
    faithful = judge_cascade.jury(accepts, judged.human, (0.0, 0.0), rng)
    assert np.array_equal(faithful.accepts, accepts)
    assert set(faithful.confidence) == {1.0}
    mending = judge_cascade.jury(accepts, judged.human, (0.0, 1.0), rng)  # every juror flips what GPT-4 got wrong
    assert np.array_equal(mending.accepts, judged.human)
    noisy = judge_cascade.jury(accepts, judged.human, (0.05, 0.35), rng)
    assert set(np.round(noisy.confidence, 6)) == {1.0, round(2 / 3, 6)}
    right = accepts == judged.human
    # A wrong recorded verdict splits the jury more often: the majority share carries information
    assert noisy.confidence[~right].mean() < noisy.confidence[right].mean()


def test_the_table_prints_with_the_single_reply_note(table, capsys) -> None:
    judge_cascade.print_table(table, markdown=True)
    printed = capsys.readouterr().out
    assert printed.startswith("| a | LLM | judge alone |")
    assert judge_cascade.SINGLE_REPLY_NOTE in printed
    assert not any(math.isnan(row["reached"]) for row in table)
