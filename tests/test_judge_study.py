"""scripts/judge_study.py on a slice of the real data: every figure it publishes is computed, and computed right."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import judge_study
from judged_sets import SETS

from answer_eval.evaluators.judge.acceptance_model import DESCRIPTIONS, FEATURES


def test_the_study_reports_cross_set_and_same_set_figures() -> None:
    sets = [judge_study.load_set(spec, questions=40) for spec in SETS]
    assert all(data.features.shape[1] == len(FEATURES) for data in sets)
    assert set(FEATURES) == set(DESCRIPTIONS)
    report = judge_study.study(sets, ["shipped"])
    json.dumps(report)  # what --json writes
    nq = report["sets"]["nq301-dev"]
    rules = nq["rules (today's judge, not fitted)"]
    data = sets[0]
    assert rules["agreement"] == round(float((data.rules == data.human).mean()), 4)
    low, high = rules["interval"]
    assert low <= rules["agreement"] <= high
    crossed = next(value for key, value in nq.items() if key.startswith("shipped, cross-set"))
    assert 0.0 <= crossed["calibration_error"] <= 1.0
    assert "shipped: fit on evouna-tq, test on nq301-dev" in report


def test_calibration_error_and_kappa_are_the_textbook_ones() -> None:
    human = np.array([True, True, False, False])
    assert judge_study.kappa(human, human) == 1.0
    assert judge_study.calibration_error(np.array([0.95, 0.95, 0.05, 0.05]), human) == pytest.approx(0.05)
