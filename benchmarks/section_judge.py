"""Benchmark section: the judge's time against the length of the answer and the gold (linear, not quadratic)."""

from __future__ import annotations

import statistics
from typing import Any

import corpora
from common import Section, Settings, cpu_seconds

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

    judge = AnswerJudgeEvaluator(semantic=False)
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
