"""Trust or escalate, measured offline on the human-judged sets (no model is called: GPT-4's replies are stored).

(a) Held-out sets: for each set, the threshold is chosen on the other two sets' cross-set
    confidences (``choose_threshold``, delta 0.1) in both modes, pooled (the two sets summed into
    one calibration) and per source (the threshold must pass on each of the two), and applied to
    the held-out set's cross-set confidences: the share of its verdicts kept, how often people
    agree with them, and whether that meets the target (the guarantee held on the held-out set).
(b) Escalation on nq301-dev: every answer whose cross-set judge confidence is below a threshold
    goes to GPT-4 (its stored verdict replaces the judge's; a reply that does not start with "yes"
    counts as a reject); agreement with people against the share escalated, next to GPT-4 alone
    and the judge alone. ``benchmarks/escalation.py`` measures the same through the package's
    escalation code and a real HTTP server.

Inputs: src/answer_eval/evaluators/judge/calibration.json and
benchmarks/data/nq301-dev-cross-set-judge.jsonl (both from scripts/judge_calibration.py), and the
GPT-4 replies (``--gpt4``, rows aligned with data/judge/nq301-dev.jsonl).

Run: .venv/bin/python benchmarks/escalation_offline.py [--gpt4 PATH] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import print_cells  # benchmarks/ is on the path: run as a script, or by escalation.py

from answer_eval.evaluators.judge.calibration import Calibration
from answer_eval.evaluators.judge.guarantee import choose_threshold

ROOT = Path(__file__).resolve().parent.parent
ITEMS = ROOT / "benchmarks" / "data" / "nq301-dev-cross-set-judge.jsonl"
GPT4 = ROOT / "benchmarks" / "data" / "nq301-dev-gpt4-judge.jsonl"
SETS = ("nq301-dev", "efficientqa", "evouna-tq")
TARGETS = (0.8, 0.85, 0.9, 0.95)
DELTA = 0.1
MODES = (("pooled", False), ("per source", True))
SHARES = (0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.50)
GOAL_AGREEMENT, GOAL_SHARE = 0.851, 0.35


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "inf" if value == math.inf else f"{value:.4f}"
    return str(value)


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool = False) -> None:
    """Print a table: aligned plain text, or Markdown (``markdown=True``)."""
    cells = [[str(c) for c in header], *[[_cell(c) for c in row] for row in rows]]
    print(f"\n{'**' + title + '**' if markdown else title}\n")
    print_cells(cells, markdown, indent="  ", underline=True)


def held_out(markdown: bool = False) -> None:
    """(a) Calibrate on two sets, test on the third, pooled and per source."""
    rows: list[list[Any]] = []
    for mode, per_source in MODES:
        for held in SETS:
            calibration = Calibration.load_sources(sets=[name for name in SETS if name != held])
            test = Calibration.load(sets=[held])
            for target in TARGETS:
                selection = choose_threshold(target, DELTA, calibration, per_source=per_source)
                own = " / ".join(f"{s.name} {_cell(s.threshold)}" for s in selection.sources)
                kept, disagreeing = test.kept(selection.threshold)
                agreement = (kept - disagreeing) / kept if kept else math.nan
                held_up = "yes" if agreement >= target else ("yes (none kept)" if not kept else "NO")
                rows.append([mode, held, target, selection.threshold, own, f"{kept}/{test.total}",
                             kept / test.total, agreement, held_up])  # fmt: skip
    table(
        f"(a) held-out sets: threshold chosen on the other two sets' cross-set confidences, delta {DELTA}",
        [
            "mode",
            "held out",
            "target",
            "lambda",
            "each calibration set's own lambda",
            "kept",
            "kept share",
            "kept agreement",
            "held",
        ],
        rows,
        markdown,
    )


def _agreement(items: list[dict[str, Any]], gpt4: list[bool], threshold: float) -> tuple[float, float]:
    """Share escalated (confidence below ``threshold``) and the agreement of the mixed verdicts with people."""
    escalated = agree = 0
    for item, gpt4_accepts in zip(items, gpt4, strict=True):
        escalate = item["confidence"] < threshold
        escalated += escalate
        agree += (gpt4_accepts if escalate else item["judge_correct"]) == item["human_acceptable"]
    return escalated / len(items), agree / len(items)


def _load_nq(gpt4_path: Path) -> tuple[list[dict[str, Any]], list[bool]]:
    items, replies = _jsonl(ITEMS), _jsonl(gpt4_path)
    if len(items) != len(replies) or any(
        i["prediction"] != r["prediction"] or i["human_acceptable"] != r["human_acceptable"]
        for i, r in zip(items, replies, strict=True)
    ):
        raise SystemExit(f"{gpt4_path} is not aligned with {ITEMS}")
    return items, [str(r["gpt4_reply"]).strip().lower().startswith("yes") for r in replies]


def escalation(gpt4_path: Path, markdown: bool = False) -> None:
    """(b) Escalate the least confident nq301-dev verdicts to GPT-4."""
    items, gpt4 = _load_nq(gpt4_path)
    ordered = sorted(item["confidence"] for item in items)
    rows: list[list[Any]] = [["judge alone", "-", 0.0, _agreement(items, gpt4, 0.0)[1]],
                             ["GPT-4 alone", "-", 1.0, _agreement(items, gpt4, math.inf)[1]]]  # fmt: skip
    for share in SHARES:
        threshold = ordered[round(share * len(items))]
        rows.append([f"escalate ~{share:.0%}", threshold, *_agreement(items, gpt4, threshold)])
    others = Calibration.load_sources(sets=[name for name in SETS if name != "nq301-dev"])
    for mode, per_source in MODES:
        for target in TARGETS[:-1]:
            threshold = choose_threshold(target, DELTA, others, per_source=per_source).threshold
            rows.append([f"trust or escalate a={target} ({mode})", threshold, *_agreement(items, gpt4, threshold)])
    table(
        "(b) nq301-dev: verdicts below lambda escalated to GPT-4",
        ["policy", "lambda", "escalated", "agreement"],
        rows,
        markdown,
    )
    cuts = sorted({*ordered, math.inf})
    reached = [(threshold, *_agreement(items, gpt4, threshold)) for threshold in cuts]
    good = [r for r in reached if r[2] >= GOAL_AGREEMENT and r[1] <= GOAL_SHARE]
    best = max((r for r in reached if r[1] <= GOAL_SHARE), key=lambda r: r[2])
    print(f"\n  best agreement with <= {GOAL_SHARE:.0%} escalated: {best[2]:.4f} at lambda {best[0]:.4f} "
          f"({best[1]:.1%} escalated)")  # fmt: skip
    if good:
        first = min(good, key=lambda r: r[1])
        print(f"  >= {GOAL_AGREEMENT} agreement with <= {GOAL_SHARE:.0%} escalated: REACHED, first at lambda "
              f"{first[0]:.4f} ({first[1]:.1%} escalated, agreement {first[2]:.4f}); "
              f"{len(good)} of the thresholds reach it")  # fmt: skip
    else:
        print(f"  >= {GOAL_AGREEMENT} agreement with <= {GOAL_SHARE:.0%} escalated: NOT reached")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpt4", type=Path, default=GPT4, help="GPT-4 replies aligned with nq301-dev")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args()
    held_out(args.markdown)
    escalation(args.gpt4, args.markdown)


if __name__ == "__main__":
    main()
