"""Benchmark section: the judge's speed on LLM sentence answers, this code against two earlier commits in one process.

``AnswerJudgeEvaluator().run`` on 6,000 EVOUNA answers with their questions (the sentences of
GPT-3.5, ChatGPT, GPT-4 and Bing Chat to TriviaQA questions, ``data/judge/evouna-tq.jsonl``):

- **f2ec56e**: the lexical cascade before the acceptance model (``semantic=False``);
- **0d10fbb**: main before the speed-up of issue 30 (the acceptance model grading every answer);
- **this tree**.

The two commits are imported beside this tree under other names (``benchmarks/code_versions.py``),
and the three take turns round by round, the order rotating, so a slow spell of a shared machine
hits them all alike. Each timed pass is a new evaluator with the per-text caches of its version
emptied (golds, questions, words): the figure is that of a new batch.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import code_versions
from common import Section, Settings, taking_turns

EVOUNA = Path(__file__).resolve().parent.parent / "data" / "judge" / "evouna-tq.jsonl"
ANSWERS = 6_000
OLD, MAIN = "f2ec56e", "0d10fbb"
COMPONENT = "haystack_integrations.components.evaluators.answer_eval"


def llm_sentences(limit: int) -> tuple[list[list[str]], list[str], list[str]]:
    """The first ``limit`` EVOUNA answers of the LLMs (FiD's short spans left out): golds, predictions, questions."""
    rows: list[dict[str, Any]] = []
    with open(EVOUNA, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["model"] != "fid":
                rows.append(row)
            if len(rows) >= limit:
                break
    return [r["answers"] for r in rows], [r["prediction"] for r in rows], [r["question"] for r in rows]


def _runner(make: Callable[[], Any], prefix: str, data: tuple[list[Any], list[str], list[str]]) -> Callable[[], Any]:
    truths, predictions, questions = data

    def run() -> Any:
        code_versions.clear_caches(prefix)
        return make().run(ground_truth_answers=truths, predicted_answers=predictions, questions=questions)

    return run


def _versions(notes: list[str]) -> dict[str, tuple[Callable[[], Any], str]]:
    """Each version's evaluator maker and package name; an earlier commit git cannot give is left out, and said."""
    from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator

    versions: dict[str, tuple[Callable[[], Any], str]] = {}
    for commit, label, options in ((OLD, "f2ec56e (rules only)", {"semantic": False}), (MAIN, "0d10fbb (main)", {})):
        tag = f"v{commit}"
        try:
            evaluator = code_versions.module(commit, tag, COMPONENT).AnswerJudgeEvaluator
        except code_versions.Unavailable as exc:
            notes.append(f"{label}: not measured ({exc}).")
            continue
        versions[label] = (lambda evaluator=evaluator, options=options: evaluator(**options), f"answer_eval_{tag}")
    versions["this tree"] = (AnswerJudgeEvaluator, "answer_eval")
    return versions


def section_judge_speed(settings: Settings) -> list[Section]:
    """AnswerJudgeEvaluator on LLM sentences with questions: f2ec56e, 0d10fbb and this tree taking turns."""
    size = 1_000 if settings.quick else ANSWERS
    rounds = 3 if settings.quick else 5
    data = llm_sentences(size)
    notes: list[str] = []
    versions = _versions(notes)
    runs = {label: _runner(make, prefix, data) for label, (make, prefix) in versions.items()}
    scores = {label: run()["individual_scores"] for label, run in runs.items()}  # imports and warm-up, untimed
    times = taking_turns(runs, rounds)
    section = Section(
        "judge_speed",
        f"AnswerJudgeEvaluator on {size:,} LLM sentence answers with questions (EVOUNA), versions taking turns",
        ["version", "answers/s (fastest)", "answers/s (median)", "x 0d10fbb (median)", "x f2ec56e (median)", "right"],
    )
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, values in times.items():
        rates = sorted(size / value for value in values)
        versus = {
            other: f"{medians[key] / medians[label]:.2f}x" if key in medians else "-"
            for other, key in (("main", "0d10fbb (main)"), ("old", "f2ec56e (rules only)"))
        }
        right = sum(scores[label]) / size
        section.rows.append(
            [label, f"{rates[-1]:,.0f}", f"{size / medians[label]:,.0f}", versus["main"], versus["old"], f"{right:.3f}"]
        )
        section.figures[label] = {"answers": size, "round_seconds": values, "answers_per_second": rates}
    if "0d10fbb (main)" in medians:
        section.figures["speedup_over_main"] = medians["0d10fbb (main)"] / medians["this tree"]
    section.figures["this_tree_answers_per_second"] = size / medians["this tree"]
    section.notes.extend(notes)
    section.notes.append(
        f"CPU seconds of this process, {rounds} rounds, the versions taking turns (order rotating); each pass a new "
        "evaluator with its version's per-text caches emptied. The EVOUNA sentences of GPT-3.5, ChatGPT, GPT-4 "
        "and Bing Chat (FiD's spans left out) from data/judge/evouna-tq.jsonl (Apache-2.0, TriviaQA content). "
        "`right` is the share judged right (f2ec56e had no acceptance model and other rules; this tree gives "
        "0d10fbb's verdicts byte for byte: benchmarks/judge_identity.py)."
    )
    return [section]
