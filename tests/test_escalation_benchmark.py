"""The escalation benchmark (benchmarks/escalation.py) replays GPT-4's recorded replies over HTTP and measures right."""

import importlib.util
import json
import random
import sys

import pytest

from answer_eval.evaluators.judge.cascade import AnswerJudge
from tests.conftest import ROOT

REPLIES = ROOT / "benchmarks" / "data" / "nq301-dev-gpt4-judge.jsonl"
ROWS = 60  # the first 60 answers (12 questions): every reply starts with yes or no, and every answer has text


def _benchmark():
    spec = importlib.util.spec_from_file_location("escalation_benchmark", ROOT / "benchmarks" / "escalation.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def replayed():
    benchmark = _benchmark()
    rows = [json.loads(line) for line in REPLIES.read_text(encoding="utf-8").splitlines()][:ROWS]
    verdicts = AnswerJudge().judge_batch(
        [row["answers"] for row in rows], [row["prediction"] for row in rows], [row["question"] for row in rows]
    )
    thresholds = [0.0, 0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0, 1.01]
    shuffled = random.Random(0).sample(thresholds, len(thresholds))  # points come back in the order asked
    replay = benchmark.replay_escalation(rows, verdicts, shuffled)
    points = dict(zip(shuffled, replay.points, strict=True))
    return rows, verdicts, [points[threshold] for threshold in thresholds], replay


def test_every_request_gets_its_own_rows_reply(replayed):
    rows, _verdicts, points, replay = replayed
    assert (replay.misses, replay.wrong_replies, replay.errors) == (0, 0, 0)
    assert replay.requests == ROWS  # each answer sent once, however many thresholds escalate it
    # Among these rows a prediction is also an acceptable answer ("Asha Bhosle"): the replay must not
    # answer the other candidates of that question with its reply.
    assert any(row["prediction"] in row["answers"] for row in rows)
    assert points[-1].calls == ROWS


def test_the_escalated_share_grows_with_the_threshold(replayed):
    _rows, verdicts, points, _replay = replayed
    shares = [point.share for point in points]
    assert shares == sorted(shares)
    assert shares[0] == 0.0
    assert shares[-1] == 1.0
    assert 0.0 < points[3].share < 1.0  # λ = 0.8 escalates some, not all
    for point in points:
        assert point.escalated == sum(verdict.confidence < point.threshold for verdict in verdicts)
        assert point.calls == point.escalated  # every answer has text: one request each
        assert point.unreadable == 0
        assert point.kept == ROWS - point.escalated


def test_nothing_escalated_is_the_judge_and_everything_escalated_is_gpt4(replayed):
    rows, verdicts, points, _replay = replayed
    human = [row["human_acceptable"] for row in rows]
    judge = sum(verdict.correct == person for verdict, person in zip(verdicts, human, strict=True)) / ROWS
    gpt4 = (
        sum(
            row["gpt4_reply"].strip().lower().startswith("yes") == person
            for row, person in zip(rows, human, strict=True)
        )
        / ROWS
    )
    assert judge != gpt4  # the two ends differ on these rows, so the test tells them apart
    assert points[0].threshold == 0.0
    assert points[0].agreement == pytest.approx(judge, abs=1e-12)
    assert points[0].kept_agreement == pytest.approx(judge, abs=1e-12)
    assert points[-1].threshold > 1.0
    assert points[-1].agreement == pytest.approx(gpt4, abs=1e-12)
