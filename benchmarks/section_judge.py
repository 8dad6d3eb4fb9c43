"""Benchmark section: the judge's time against the length of the answer and the gold (linear, not quadratic)."""

from __future__ import annotations

import statistics
from functools import partial
from pathlib import Path
from typing import Any

import code_versions
import corpora
from common import Section, Settings, cpu_seconds

JUDGED = Path(__file__).resolve().parent.parent / "data" / "judge"
BEFORE_16K_SECONDS = 20.0
"""The judge on an answer and a gold of 16,000 words each before its word matching became linear
(measured when the issue was filed; every gold word was compared with every answer word)."""


def _words(count: int, offset: int) -> str:
    words = " ".join(text for text in corpora.real_corpus(4_212).texts if len(text) > 40).split()
    repeated = (words * (count // len(words) + 2))[offset : offset + count]
    return " ".join(repeated)


def section_judge_length(settings: Settings) -> list[Section]:
    """AnswerJudgeEvaluator (lexical stages) on an answer and a gold of 100 to 16,000 words, and a 1 MB answer."""
    from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator

    judge = AnswerJudgeEvaluator()
    section = Section(
        "judge_length",
        "Scaling with length: AnswerJudgeEvaluator (lexical) on one answer and one gold",
        ["answer", "gold", "fastest s", "median s", "us per KB of input (fastest)"],
    )
    sizes = [(100, 100), (1_000, 1_000), (16_000, 16_000)]
    if not settings.quick:
        sizes.append((160_000, 16_000))  # about 1 MB of answer: the longest answer read
    per_kb: list[float] = []
    for answer_words, gold_words in sizes:
        answer, gold = _words(answer_words, 0), _words(gold_words, 7)
        answer = answer[:1_000_000]

        def run(answer: str = answer, gold: str = gold) -> Any:
            return judge.run(ground_truth_answers=[gold], predicted_answers=[answer])

        times = [cpu_seconds(run) for _ in range(3 if settings.quick else 5)]
        kilobytes = (len(answer) + len(gold)) / 1000
        per_kb.append(min(times) / kilobytes * 1e6)
        section.rows.append(
            [f"{answer_words:,} words ({len(answer):,} chars)", f"{gold_words:,} words", f"{min(times):.4f}",
             f"{statistics.median(times):.4f}", f"{per_kb[-1]:.0f}"]
        )  # fmt: skip
        section.figures[f"{answer_words}x{gold_words}"] = {"round_seconds": times, "us_per_kb": per_kb[-1]}
    section.figures["largest_over_smallest_per_kb"] = max(per_kb) / min(per_kb)
    section.notes.append(
        "Real answer sentences, repeated, as the answer and (from another offset) as the gold, so the gold's "
        "words are not all in the answer and every stage runs. Time per KB of input, largest over smallest: "
        f"{max(per_kb) / min(per_kb):.2f}x (1.00x is exactly linear; the 100-word row is dominated by fixed "
        f"costs). Before the word matching became linear, 16,000 words each took about {BEFORE_16K_SECONDS:.0f} s."
    )
    return [section]


def _judged(name: str, limit: int) -> tuple[list[Any], list[Any], list[Any]]:
    import json

    rows = []
    with open(JUDGED / name, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rows.append(json.loads(line))
            if len(rows) >= limit:
                break
    return [r["answers"] for r in rows], [r["prediction"] for r in rows], [r.get("question") for r in rows]


def _cold() -> None:
    # The judge remembers what it read from golds, questions and words (answers to one question
    # share them); every timed pass starts with these caches empty and a new judge (whose contains
    # scorer keeps its own label cache), so the figure is that of a new batch.
    code_versions.clear_caches("answer_eval")


def section_judge_stages(settings: Settings) -> list[Section]:
    """The default judge and its rules alone on the human-judged answers, in answers per second."""
    from answer_eval.evaluators.judge.cascade import AnswerJudge, JudgeModel

    section = Section(
        "judge_stages",
        "AnswerJudge by stage on human-judged answers (answers per CPU second, caches cold each pass)",
        ["answers", "mode", "answers/s (fastest)", "answers/s (median)"],
    )
    limit = 1_000 if settings.quick else 6_000
    rounds = 3 if settings.quick else 5
    shipped = JudgeModel.load()
    stages = {
        "default (rules + acceptance model)": shipped,
        "rules only (no acceptance model: a format-1 model file)": JudgeModel(0.93, 0.88, 0.26, 0.0, 0.0, 0.0),
    }
    for label, file in (("NQ-open (EfficientQA)", "efficientqa-test-judged.jsonl"),
                        ("TriviaQA LLM sentences (EVOUNA)", "evouna-tq.jsonl")):  # fmt: skip
        truths, predictions, questions = _judged(file, limit)
        for mode, model in stages.items():
            AnswerJudge(model).judge_batch(truths[:200], predictions[:200], questions[:200])  # imports, untimed
            times = []
            for _ in range(rounds):
                _cold()
                judge = AnswerJudge(model)
                times.append(cpu_seconds(partial(judge.judge_batch, truths, predictions, questions)))
            rates = sorted(len(truths) / t for t in times)
            section.rows.append(
                [f"{label}, {len(truths):,}", mode, f"{rates[-1]:,.0f}", f"{statistics.median(rates):,.0f}"]
            )
            section.figures[f"{label}|{mode}"] = {"answers": len(truths), "answers_per_second": rates}
    section.notes.append(
        "CPU seconds of this process (model loading excluded). The default's target is 5,000 answers/s on "
        "NQ-open style answers; TriviaQA questions carry ~15 aliases each and long LLM sentences, so they cost more."
    )
    return [section]
