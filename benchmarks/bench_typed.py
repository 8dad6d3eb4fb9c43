"""Free-form scoring speed: TypedAnswerEvaluator against a new rouge-score RougeScorer per item.

The reference design builds a ``RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)``
for every item and averages the three F-measures. TypedAnswerEvaluator builds its scorer once and
remembers every word's stem. Both run here in one process on the same items; the values must be
identical. Run: ``python benchmarks/bench_typed.py [--items 2000] [--repeats 3]``.

Items: InstructGPT's answers to 301 Natural Questions (``examples/data/nq301_davinci_zeroshot.jsonl``),
each gold answer paired with a model answer; beyond 301 items the pairing shifts, so the pairs are
distinct but the vocabulary is that of the 301 answers. Stems are remembered process-wide, so the
timed runs after the first find most words' stems known, as a long-running process does; the
"empty stem cache" line scores the first (at most 301) items once after emptying it, as the first
batch of a process does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from common import taking_turns  # benchmarks/ is on the path: run as a script, or by run.py

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "data" / "nq301_davinci_zeroshot.jsonl"
ROUGE_TYPES = ["rouge1", "rouge2", "rougeL"]


def free_form_items(n_items: int, distinct_references: bool = False) -> list[tuple[str, str]]:
    """``n_items`` distinct (reference, prediction) pairs from the bundled NQ-301 answers.

    The references are the 301 questions' gold answers, each used by several items (as when a
    prompt is sampled several times); with ``distinct_references`` every item's reference is
    different (the gold answers of two questions joined), so nothing is reused between items.
    """
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    count = len(rows)
    items = []
    for i in range(n_items):
        golds = rows[i % count]["answers"]
        if distinct_references:
            golds = golds + rows[(i % count + 1 + i // count) % count]["answers"]
        items.append((" / ".join(golds), rows[(i + i // count) % count]["prediction"]))
    return items


def naive_scores(items: list[tuple[str, str]]) -> list[float]:
    """The reference design's way: a new RougeScorer per item, mean of the three F-measures."""
    from rouge_score import rouge_scorer

    scores = []
    for reference, prediction in items:
        scorer = rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=True)
        result = scorer.score(reference, prediction)
        scores.append((result["rouge1"].fmeasure + result["rouge2"].fmeasure + result["rougeL"].fmeasure) / 3)
    return scores


def reused_scorer_scores(items: list[tuple[str, str]]) -> list[float]:
    """One RougeScorer built once and reused: shows what building once alone gains."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=True)
    scores = []
    for reference, prediction in items:
        result = scorer.score(reference, prediction)
        scores.append((result["rouge1"].fmeasure + result["rouge2"].fmeasure + result["rougeL"].fmeasure) / 3)
    return scores


def typed_scores(items: list[tuple[str, str]]) -> list[float]:
    """A fresh TypedAnswerEvaluator (empty stem cache) scoring every item as free-form."""
    from haystack_integrations.components.evaluators.answer_eval import TypedAnswerEvaluator

    evaluator = TypedAnswerEvaluator(default_type="free-form")
    result = evaluator.run(
        predicted_answers=[prediction for _, prediction in items],
        ground_truth_answers=[reference for reference, _ in items],
    )
    scores: list[float] = result["individual_scores"]
    return scores


def _best_times(
    functions: dict[str, Callable[[list[tuple[str, str]]], list[float]]], items: Any, repeats: int
) -> dict[str, float]:
    """Fewest CPU seconds of each function on ``items`` over ``repeats`` rounds, taking turns.

    Timed by ``common.taking_turns``, as every section of ``benchmarks/run.py``; the fastest round
    is the one least disturbed by other work on a shared machine.
    """
    times = taking_turns({name: partial(function, items) for name, function in functions.items()}, repeats)
    return {name: min(values) for name, values in times.items()}


def bench_free_form(n_items: int, repeats: int) -> dict[str, Any]:
    """Time free-form scoring both ways on the same items, check the values are identical.

    :returns: Items per second of each way (best of ``repeats``), the ratio, and the cold-cache
        figures; raises ``AssertionError`` if any value differs.
    """
    if n_items < 1 or repeats < 1:
        raise ValueError("n_items and repeats must be at least 1")
    from answer_eval.evaluators.text_metrics import clear_stem_cache

    items = free_form_items(n_items)
    # Imports (NLTK, numpy, Haystack) are a one-time process cost shared by both ways: paid here.
    naive_scores(items[:2])
    typed_scores(items[:2])
    # Cold: the process-wide stem cache emptied, the first (at most 301) items scored once.
    cold = items[: min(n_items, 301)]
    clear_stem_cache()
    cold_times = _best_times({"typed": typed_scores, "naive": naive_scores}, cold, 1)
    cold_typed, cold_naive = cold_times["typed"], cold_times["naive"]
    naive = naive_scores(items)
    typed = typed_scores(items)
    if naive != typed:
        differing = sum(a != b for a, b in zip(naive, typed, strict=True))
        raise AssertionError(f"{differing} of {n_items} free-form scores differ from rouge-score's")
    ways = {"naive": naive_scores, "reused": reused_scorer_scores, "typed": typed_scores}
    times = _best_times(ways, items, repeats)
    naive_time, reused_time, typed_time = times["naive"], times["reused"], times["typed"]
    distinct = free_form_items(n_items, distinct_references=True)
    if naive_scores(distinct) != typed_scores(distinct):
        raise AssertionError("free-form scores with distinct references differ from rouge-score's")
    distinct_times = _best_times({"naive": naive_scores, "typed": typed_scores}, distinct, repeats)
    distinct_ratio = distinct_times["naive"] / distinct_times["typed"]
    return {
        "n_items": n_items,
        "repeats": repeats,
        "identical": True,
        "naive_items_per_s": n_items / naive_time,
        "reused_scorer_items_per_s": n_items / reused_time,
        "typed_items_per_s": n_items / typed_time,
        "ratio": naive_time / typed_time,
        "distinct_references_ratio": distinct_ratio,
        "cold_items": len(cold),
        "cold_ratio": cold_naive / cold_typed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    result = bench_free_form(args.items, args.repeats)
    print(
        f"free-form scoring, {result['n_items']} items, fastest of {result['repeats']} rounds taking turns "
        "(CPU time), values identical"
    )
    print(f"  {'way':<52} {'items/s':>10}")
    print(f"  {'new RougeScorer per item (reference design)':<52} {result['naive_items_per_s']:>10.0f}")
    print(f"  {'one RougeScorer, reused':<52} {result['reused_scorer_items_per_s']:>10.0f}")
    print(f"  {'TypedAnswerEvaluator (new per run, stems remembered)':<52} {result['typed_items_per_s']:>10.0f}")
    print(f"  speed-up over the reference design: {result['ratio']:.1f}x (target >= 5x)")
    print(f"  every item with its own reference (no reference reused): {result['distinct_references_ratio']:.1f}x")
    print(f"  empty stem cache, first {result['cold_items']} items once: {result['cold_ratio']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
