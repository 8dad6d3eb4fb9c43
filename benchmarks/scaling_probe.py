"""Why repeated 10k-item calls cost more per item than one 1M-item call: where the texts lie.

    python benchmarks/scaling_probe.py            # 1,000,000 items, 10,000 a call (about a minute)
    python benchmarks/scaling_probe.py --quick    # 100,000 items, 1,000 a call

The batch-size target of the benchmark (time per item within 15% across 10k, 100k and 1M items)
is missed because the 10k calls are slower. This probe measures the mechanism, in one process, on
the real answers (every item holding its own string and list objects):

1. ``AnswerContainsScorer.score_columns`` on all items in one call, and on the same item objects
   in calls of 10k (taking turns, CPU time, fastest and median round).
2. Where the answers' folded texts (the ``outcomes`` column, made by the call) lie in memory: the
   share of consecutive texts whose addresses are less than 1 KB apart, for a 10k call made after
   earlier calls freed theirs (the steady state of repeated calls) and for the same rows made by
   the 1M call. Python's allocator hands out blocks that earlier calls freed, in the order they
   were freed, so texts made by repeated calls end up scattered.
3. Whether that scatter costs time on its own: one C-level pass (``in`` on every text, repeated)
   over the same text objects of the steady-state 10k call, visited in list order and in address
   order, and over the same rows as the 1M call placed them. Same objects, same characters, same
   work: only the order of memory accesses differs.

Prints the figures and writes them to ``benchmarks/results/scaling_probe.json``. See
docs/performance.md ("Batch-size scaling").
"""

from __future__ import annotations

import argparse
import json
import operator
import statistics
import sys
from collections.abc import Callable, Sequence
from itertools import pairwise, repeat
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpora  # noqa: E402
from common import machine, taking_turns  # noqa: E402
from sections_extra import SCALING_SEED  # noqa: E402

from answer_eval.evaluators.contains_rules import AnswerContainsScorer  # noqa: E402

RESULTS = HERE / "results" / "scaling_probe.json"
STEADY = "texts of the last of many batch calls"
STEADY_LIST = STEADY + ", list order"
BY_ADDRESS = "the same objects, address order"
FROM_ONE_CALL = "the same rows, made by the one big call"
NEAR_BYTES = 1024
"""Two texts whose addresses are closer than this share a cache line or a neighbouring one's page."""


def near_share(texts: Sequence[str]) -> float:
    """Share of consecutive texts whose addresses are less than ``NEAR_BYTES`` apart, going up."""
    addresses = list(map(id, texts))
    near = sum(1 for here, after in pairwise(addresses) if 0 < after - here < NEAR_BYTES)
    return near / max(len(addresses) - 1, 1)


def _scan(texts: list[str], passes: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(passes):
            list(map(operator.contains, texts, repeat("\x00")))

    return run


def probe(items: int, batch: int, rounds: int) -> dict[str, Any]:
    """Run the three measurements; returns every figure."""
    corpus = corpora.real_corpus(items, seed=SCALING_SEED).with_own_objects()
    golds, predictions = corpus.golds, corpus.predictions
    golds_by_call = [golds[start : start + batch] for start in range(0, items, batch)]
    predictions_by_call = [predictions[start : start + batch] for start in range(0, items, batch)]
    scorer = AnswerContainsScorer()
    scorer.score_columns(golds, predictions)  # labels seen once, as in any repeated evaluation

    def one_call() -> None:
        scorer.score_columns(golds, predictions)

    def many_calls() -> None:
        for call_golds, call_predictions in zip(golds_by_call, predictions_by_call, strict=True):
            scorer.score_columns(call_golds, call_predictions)

    times = taking_turns({"one call": one_call, "calls of batch": many_calls}, rounds)

    # The steady state: the last of many calls, every earlier call's texts freed.
    for _ in range(2):
        for call_golds, call_predictions in zip(golds_by_call, predictions_by_call, strict=True):
            last = scorer.score_columns(call_golds, call_predictions)[2]
    steady = [text for text in last if text]
    from_one_call = [text for text in scorer.score_columns(golds, predictions)[2][items - batch :] if text]
    if steady != from_one_call:
        raise AssertionError("the two ways scored the same rows differently")
    by_address = sorted(steady, key=id)
    passes = max(1, 1_000_000 // batch)
    scans = taking_turns(
        {
            STEADY_LIST: _scan(steady, passes),
            BY_ADDRESS: _scan(by_address, passes),
            FROM_ONE_CALL: _scan(from_one_call, passes),
        },
        rounds,
    )
    return {
        "items": items,
        "batch": batch,
        "rounds": rounds,
        "us_per_item": {
            name: {
                "fastest": min(values) / items * 1e6,
                "median": statistics.median(values) / items * 1e6,
            }
            for name, values in times.items()
        },
        "near_share": {
            STEADY: near_share(steady),
            FROM_ONE_CALL: near_share(from_one_call),
            BY_ADDRESS: near_share(by_address),
        },
        "scan_ms": {name: min(values) * 1e3 for name, values in scans.items()},
        "scan_passes": passes,
    }


def report(figures: dict[str, Any]) -> str:
    """The figures as markdown, with the ratios that matter."""
    timing = figures["us_per_item"]
    one, many = timing["one call"], timing["calls of batch"]
    scans = figures["scan_ms"]
    listed, ordered = scans[STEADY_LIST], scans[BY_ADDRESS]
    lines = [
        f"## Scaling probe: {figures['items']:,} items, {figures['batch']:,} a call, fastest of {figures['rounds']}",
        "",
        "| way | fastest us/item | median us/item |",
        "| --- | --- | --- |",
        f"| one call of {figures['items']:,} | {one['fastest']:.2f} | {one['median']:.2f} |",
        f"| calls of {figures['batch']:,} | {many['fastest']:.2f} | {many['median']:.2f} |",
        "",
        f"Calls of {figures['batch']:,}: {many['fastest'] / one['fastest'] - 1:+.1%} per item (fastest rounds), "
        f"{many['median'] / one['median'] - 1:+.1%} (median rounds).",
        "",
        f"| where the folded texts lie | consecutive texts < {NEAR_BYTES} B apart |",
        "| --- | --- |",
        *(f"| {name} | {share:.1%} |" for name, share in figures["near_share"].items()),
        "",
        f"| one C-level pass over the same texts, x{figures['scan_passes']} | ms (fastest) |",
        "| --- | --- |",
        *(f"| {name} | {value:.1f} |" for name, value in scans.items()),
        "",
        f"List order takes {listed / ordered - 1:+.1%} against address order: same objects and work, only the "
        "order of memory accesses differs.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100,000 items in calls of 1,000 (a smoke run)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON figures")
    args = parser.parse_args(argv)
    items, batch, rounds = (100_000, 1_000, 3) if args.quick else (1_000_000, 10_000, 7)
    figures = probe(items, batch, rounds)
    figures["machine"] = machine()
    print(report(figures))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
