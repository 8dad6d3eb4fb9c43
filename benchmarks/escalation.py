"""Escalation benchmark: the judge's unsure verdicts on NQ301 dev go to GPT-4, replayed through a real HTTP server.

What runs is the package's own escalation path, unchanged: the AnswerJudge judges the 804 answers
of NQ301 dev (``data/judge/nq301-dev.jsonl``); every verdict with ``confidence < λ``
(:func:`~answer_eval.evaluators.judge.escalation.needs_escalation`) is sent by
:func:`~answer_eval.evaluators.judge.escalation.check_answers` through a
:class:`~answer_eval.llm.calls.ChatCaller` and Haystack's real ``OpenAIChatGenerator`` over HTTP
to an OpenAI-compatible server on loopback (``tests/openai_server.py``), and the replies are merged
into the verdicts by :func:`~answer_eval.evaluators.judge.escalation.merge_verdicts` (an
unreadable reply leaves the judge's verdict in place). The server answers each request with the
reply GPT-4 gave to the same question and candidate as a grader in the OpenQA-eval release
(``benchmarks/data/nq301-dev-gpt4-judge.jsonl``), so the figures are GPT-4's, at no cost and
reproducibly. Every request must find its row (misses: 0) and get that row's own reply
(wrong replies: 0); both are counted.

What saw what:

- the judge's acceptance model is fitted on EfficientQA and EVOUNA TriviaQA only (as in
  ``scripts/train_judge.py``): it never saw NQ301 dev;
- the Trust-or-Escalate thresholds (:func:`~answer_eval.evaluators.judge.guarantee.choose_threshold`,
  per source, delta 0.1) are calibrated on EfficientQA and EVOUNA TriviaQA only, each set's
  confidences from the model fitted on the other of the two (so no NQ301 dev label is involved);
- the λ grid and the "escalate about x%" rows are scanned on NQ301 dev itself: choosing λ from
  them is in-sample.

Each answer is sent once: the thresholds are visited in increasing order and the answers newly
below each are escalated then (the answers below a lower threshold are a subset), so a
threshold's "calls" are the requests its policy needs. The default threshold is also run on its
own from scratch, and must give the same verdicts.

Run: .venv/bin/python benchmarks/escalation.py [--markdown]   (about 15 s: 8 s fitting the judge)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _folder in (ROOT, ROOT / "scripts", ROOT / "benchmarks"):  # tests.openai_server, train_judge, escalation_offline
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

from escalation_offline import table  # noqa: E402
from haystack.components.generators.chat import OpenAIChatGenerator  # noqa: E402
from haystack.utils import Secret  # noqa: E402
from judge_calibration import cross_set_confidences  # noqa: E402
from judged_sets import SETS  # noqa: E402
from tests.openai_server import OpenAIServer, Reply, replay_server_script  # noqa: E402
from train_judge import Judged, _fit  # noqa: E402

from answer_eval.evaluators.judge.calibration import Calibration  # noqa: E402
from answer_eval.evaluators.judge.cascade import AnswerJudge, JudgeModel, JudgeVerdict  # noqa: E402
from answer_eval.evaluators.judge.escalation import (  # noqa: E402
    LLMVerdict,
    check_answers,
    merge_verdicts,
    needs_escalation,
)
from answer_eval.evaluators.judge.guarantee import Selection, choose_threshold  # noqa: E402
from answer_eval.evaluators.judge.judge_options import DEFAULT_ESCALATE_BELOW  # noqa: E402
from answer_eval.llm.calls import ChatCaller  # noqa: E402

REPLIES = ROOT / "benchmarks" / "data" / "nq301-dev-gpt4-judge.jsonl"
JUDGE_ROWS = ROOT / "data" / "judge" / "nq301-dev.jsonl"
CROSS_SET_ITEMS = ROOT / "benchmarks" / "data" / "nq301-dev-cross-set-judge.jsonl"
FITTED_ON = ("efficientqa", "evouna-tq")
GRID = (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0, 1.01)
SHARES = (0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.50)
TARGETS = (0.8, 0.85, 0.9)
DELTA = 0.1
CONCURRENCY = 8
GOAL_AGREEMENT, GOAL_SHARE = 0.851, 0.35


@dataclass(frozen=True)
class Point:
    """One threshold: what was escalated, what it cost, and how often the verdicts after escalation agree with people.

    :param threshold: Verdicts with ``confidence < threshold`` were escalated.
    :param escalated: How many were.
    :param calls: HTTP requests their escalation needed (answers with no text are not sent).
    :param unreadable: Escalated answers whose reply gave no verdict: the judge's verdict stands.
    :param agreement: Agreement with people of all verdicts after escalation.
    :param kept: Verdicts not escalated.
    :param kept_agreement: Their agreement with people (``nan`` when none is kept).
    :param total: Answers.
    """

    threshold: float
    escalated: int
    calls: int
    unreadable: int
    agreement: float
    kept: int
    kept_agreement: float
    total: int

    @property
    def share(self) -> float:
        """The share of answers escalated."""
        return self.escalated / self.total


@dataclass(frozen=True)
class Replay:
    """The points of :func:`replay_escalation` and the replay's own checks.

    :param points: One per threshold, in the order given.
    :param misses: Requests the server found no recorded row for (it answered HTTP 400).
    :param wrong_replies: Replies that are not the escalated row's own recorded reply.
    :param errors: Escalated answers whose request failed (misses included).
    :param requests: HTTP requests the server received.
    :param seconds: Wall time of the replay.
    """

    points: tuple[Point, ...]
    misses: int
    wrong_replies: int
    errors: int
    requests: int
    seconds: float


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gpt4_accepts(row: dict[str, Any]) -> bool:
    """GPT-4's recorded verdict: a reply that starts with "yes" is an accept (as in the OpenQA-eval paper)."""
    return str(row["gpt4_reply"]).strip().lower().startswith("yes")


def _counting(script: Callable[[dict[str, Any]], Any]) -> tuple[Callable[[dict[str, Any]], Any], list[int]]:
    """The script, counting the requests it could not match (it answers those with an error status)."""
    misses, lock = [0], threading.Lock()

    def counted(request: dict[str, Any]) -> Any:
        reply = script(request)
        if isinstance(reply, Reply) and reply.status != 200:
            with lock:
                misses[0] += 1
        return reply

    return counted, misses


def _point(
    rows: Sequence[dict[str, Any]], verdicts: Sequence[JudgeVerdict], llm: Sequence[LLMVerdict | None], threshold: float
) -> Point:
    unsure = needs_escalation([verdict.confidence for verdict in verdicts], threshold)
    answers = [answer for answer, flag in zip(llm, unsure, strict=True) if flag]
    assert all(answer is not None for answer in answers)
    merged = merge_verdicts(verdicts, unsure, [answer for answer in answers if answer is not None])
    agrees = [bool(score) == bool(row["human_acceptable"]) for score, row in zip(merged.scores, rows, strict=True)]
    kept = [agree for agree, flag in zip(agrees, unsure, strict=True) if not flag]
    return Point(
        threshold,
        sum(unsure),
        sum(answer.cost.calls for answer in answers if answer is not None),
        sum(1 for answer in answers if answer is not None and answer.correct is None),
        sum(agrees) / len(agrees),
        len(kept),
        sum(kept) / len(kept) if kept else math.nan,
        len(rows),
    )


def replay_escalation(
    rows: Sequence[dict[str, Any]],
    verdicts: Sequence[JudgeVerdict],
    thresholds: Iterable[float],
    concurrency: int = CONCURRENCY,
) -> Replay:
    """Escalate the verdicts below each threshold to the recorded GPT-4 replies, over HTTP on loopback.

    :param rows: The answers with ``question``, ``answers``, ``prediction``, ``human_acceptable``
        and ``gpt4_reply`` (the rows of ``nq301-dev-gpt4-judge.jsonl``).
    :param verdicts: The judge's verdict on each row.
    :param thresholds: The thresholds λ to measure (any order; each answer is sent at most once).
    :param concurrency: Requests in flight at most.
    """
    if len(rows) != len(verdicts):
        raise ValueError(f"{len(rows)} rows but {len(verdicts)} verdicts")
    asked = list(thresholds)
    confidences = [verdict.confidence for verdict in verdicts]
    llm: list[LLMVerdict | None] = [None] * len(rows)
    # The server matches the prompt's <Candidate> block exactly, so a prediction that is also an acceptable
    # answer (in the <Acceptable answers> block of every request about its question) answers only its own requests.
    script, misses = _counting(replay_server_script(rows, "gpt4_reply"))
    started = time.perf_counter()
    with OpenAIServer(script) as server:
        generator = OpenAIChatGenerator(
            api_key=Secret.from_token("replay"), api_base_url=server.url, model="gpt-4", max_retries=0, timeout=30
        )
        caller = ChatCaller(generator, concurrency=concurrency)
        for threshold in sorted(set(asked)):
            new = [i for i, flag in enumerate(needs_escalation(confidences, threshold)) if flag and llm[i] is None]
            if not new:
                continue
            questions = [rows[i]["question"] for i in new]
            golds = [rows[i]["answers"] for i in new]
            predictions = [rows[i]["prediction"] for i in new]
            answers, _ = caller.run_sync(lambda: check_answers(caller, questions, golds, predictions))  # noqa: B023
            for i, answer in zip(new, answers, strict=True):
                llm[i] = answer
        server.wait_idle()
        requests = server.requests
    seconds = time.perf_counter() - started
    sent = [(row, answer) for row, answer in zip(rows, llm, strict=True) if answer is not None]
    errors = sum(1 for _row, answer in sent if answer.failure_kind == "error")
    # A reply that could not be read comes back after why ("reply not read (...): <the reply>").
    wrong = sum(
        1
        for row, answer in sent
        if answer.failure_kind != "error"
        and not (answer.explanation or "").strip().endswith(str(row["gpt4_reply"]).strip())
    )
    points = tuple(_point(rows, verdicts, llm, threshold) for threshold in asked)
    return Replay(points, misses[0], wrong, errors, requests, seconds)


def unseen_judge() -> tuple[AnswerJudge, tuple[Calibration, ...]]:
    """The judge with its acceptance model fitted on EfficientQA and EVOUNA TriviaQA only, and their calibration.

    The calibration holds, for each of the two sets, the confidences given by the model fitted on
    the other one (cross-fitted, as ``scripts/judge_calibration.py`` does over three sets).
    """
    blank = AnswerJudge(model=JudgeModel(0.5, 0.5, 0.5, 0.0, 0.0, 0.0))  # the verdicts do not depend on it
    sets = [Judged(spec, blank) for spec in SETS if spec.name in FITTED_ON]
    shipped = JudgeModel.load()
    model = dataclasses.replace(
        shipped,
        acceptance=_fit(sets),
        info={"fitted_on": list(FITTED_ON), "by": "benchmarks/escalation.py (train_judge._fit)"},
    )
    confidences = cross_set_confidences(sets)
    calibration = tuple(
        Calibration.from_pairs(map(float, confidences[s.spec.name]), map(bool, s.rules == s.human), s.spec.name)
        for s in sets
    )
    return AnswerJudge(model=model), calibration


def share_thresholds(verdicts: Sequence[JudgeVerdict], shares: Iterable[float] = SHARES) -> list[float]:
    """For each share, the threshold below which about that share of the verdicts' confidences lie."""
    ordered = sorted(verdict.confidence for verdict in verdicts)
    return [ordered[min(round(share * len(ordered)), len(ordered) - 1)] for share in shares]


def _goal(point: Point) -> bool:
    return point.agreement >= GOAL_AGREEMENT and point.share <= GOAL_SHARE


def _check_rows(rows: list[dict[str, Any]]) -> None:
    judged = read_jsonl(JUDGE_ROWS)
    same = len(rows) == len(judged) and all(
        {key: value for key, value in row.items() if key != "gpt4_reply"} == other
        for row, other in zip(rows, judged, strict=True)
    )
    if not same:
        raise SystemExit(f"{REPLIES} is not {JUDGE_ROWS} with a gpt4_reply column")


def main() -> None:
    """Fit the judge, replay the escalations, print the tables and the verdict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown (for the docs)")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = read_jsonl(REPLIES)
    _check_rows(rows)
    judge, calibration = unseen_judge()
    verdicts = judge.judge_batch(
        [row["answers"] for row in rows], [row["prediction"] for row in rows], [row["question"] for row in rows]
    )
    items = read_jsonl(CROSS_SET_ITEMS)  # the same fit, computed by scripts/judge_calibration.py
    drift = max(abs(v.confidence - item["confidence"]) for v, item in zip(verdicts, items, strict=True))
    selections: dict[float, Selection] = {a: choose_threshold(a, DELTA, calibration) for a in TARGETS}
    shares = share_thresholds(verdicts)
    toe = [selection.threshold for selection in selections.values()]
    replay = replay_escalation(rows, verdicts, [*GRID, *shares, *toe, DEFAULT_ESCALATE_BELOW])
    points = list(replay.points)
    grid, by_share = points[: len(GRID)], points[len(GRID) : len(GRID) + len(SHARES)]
    by_target = points[len(GRID) + len(SHARES) : -1]
    default = points[-1]
    alone = replay.points[0].agreement  # λ = 0: nothing escalated
    gpt4 = sum(gpt4_accepts(row) == row["human_acceptable"] for row in rows) / len(rows)

    # An independent run of the default policy, from scratch, must give the same figures.
    again = replay_escalation(rows, verdicts, [DEFAULT_ESCALATE_BELOW]).points[0]

    questions = len({row["qid"] for row in rows})
    print(
        f"NQ301 dev, {len(rows)} answers to {questions} questions. Judge: acceptance model fitted on "
        f"{' + '.join(FITTED_ON)} only (its confidences equal the cross-set items' to {drift:.1e})."
    )
    print(
        f"Replay: {replay.requests} HTTP requests in {replay.seconds:.1f} s (concurrency {CONCURRENCY}); "
        f"misses {replay.misses}, wrong replies {replay.wrong_replies}, failed requests {replay.errors}."
    )
    print(f"Judge alone: {alone:.4f}. GPT-4 alone (its recorded replies, 'yes' = accept): {gpt4:.4f}.")
    header = ["λ", "escalated", "share escalated", "calls", "unreadable replies", "agreement", "kept agreement"]

    def cells(point: Point) -> list[Any]:
        return [
            point.threshold,
            point.escalated,
            point.share,
            point.calls,
            point.unreadable,
            point.agreement,
            point.kept_agreement,
        ]

    table(
        "Escalation on NQ301 dev: verdicts below λ sent to GPT-4 (replayed over HTTP). λ grid scanned on NQ301 dev "
        "(in-sample for the choice of λ); the judge never saw NQ301 dev",
        header,
        [cells(point) for point in grid],
        args.markdown,
    )
    table(
        "Escalating about a given share (λ = that quantile of the NQ301 dev confidences: in-sample)",
        ["target share", *header],
        [[f"{share:.0%}", *cells(point)] for share, point in zip(SHARES, by_share, strict=True)],
        args.markdown,
    )
    toe_rows = []
    for (target, selection), point in zip(selections.items(), by_target, strict=True):
        own = " / ".join(f"{s.name} {s.threshold:g}" for s in selection.sources)
        held = "yes" if point.kept_agreement >= target else ("yes (none kept)" if not point.kept else "NO")
        toe_rows.append(
            [target, point.threshold, own, point.share, point.calls, point.kept_agreement, held, point.agreement]
        )
    table(
        f"Trust or escalate (per source, delta {DELTA}), calibrated on {' + '.join(FITTED_ON)} only: "
        "did the guarantee hold on NQ301 dev?",
        [
            "target a",
            "λ",
            "each set's own λ",
            "share escalated",
            "calls",
            "kept agreement",
            "held",
            "agreement after escalation",
        ],
        toe_rows,
        args.markdown,
    )
    table(
        "Baselines and the default threshold",
        ["policy", "share escalated", "calls", "agreement"],
        [
            ["judge alone", 0.0, 0, alone],
            ["GPT-4 alone (recorded replies, 'yes' = accept)", 1.0, "-", gpt4],
            [
                f"everything escalated (λ {GRID[-1]}; unreadable replies keep the judge's)",
                grid[-1].share,
                grid[-1].calls,
                grid[-1].agreement,
            ],
            [f"default escalate_below={DEFAULT_ESCALATE_BELOW}", default.share, default.calls, default.agreement],
        ],
        args.markdown,
    )
    if (again.escalated, again.calls, again.agreement) != (default.escalated, default.calls, default.agreement):
        raise SystemExit(f"the default policy run on its own gives {again}, not {default}")
    if replay.misses or replay.wrong_replies or replay.errors:
        raise SystemExit("the replay did not give every escalated answer its own recorded reply")

    goal = f">= {GOAL_AGREEMENT} agreement with <= {GOAL_SHARE:.0%} escalated"

    def said(point: Point) -> str:
        return f"{'REACHED' if _goal(point) else 'not reached'} ({point.agreement:.4f}, {point.share:.1%} escalated)"

    toe_said = "; ".join(f"a={target}: {said(point)}" for target, point in zip(TARGETS, by_target, strict=True))
    print(f"\nVerdict: {goal}: default λ={DEFAULT_ESCALATE_BELOW}: {said(default)}; Trust-or-Escalate {toe_said}.")
    print(f"({time.perf_counter() - started:.1f} s in all)")


if __name__ == "__main__":
    main()
