"""Reading hostile grader replies: time per reply, and whether it grows linearly with the reply's length.

Each case is a reply built to be slow to read (100,000 and 200,000 ``{``, the same 2 MB long, deep
nesting, many verdicts, quotation marks, copied tags...), read by ``read_score`` as the graders
read it, and by the JSON scan alone without the length limit (``MAX_REPLY_CHARS``), so the
linearity of the scan itself is seen on 2 MB too. Before the reader was made linear, 100,000
braces took 1.46 s, 200,000 took 5.52 s and 2 MB was still running after 150 s (quadratic: the
old reader tried to decode a JSON object at every ``{``).

Run: .venv/bin/python benchmarks/reply_reading.py   (a few seconds)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from answer_eval.llm.replies import MAX_REPLY_CHARS, read_choice, read_score, read_yes_no, refused, scan_json_objects


def _scale(value: int) -> bool:
    return 1 <= value <= 5


def _seconds(run: Callable[[], Any], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def _cases(length: int) -> dict[str, str]:
    def fill(piece: str) -> str:
        return (piece * (length // len(piece) + 1))[:length]

    return {
        "braces `{{{...`": fill("{"),
        'unclosed keys `{"a":{"a":...`': fill('{"a":'),
        "empty objects `{}{}...`": fill("{}"),
        'verdict objects `{"score": 1}...`': fill('{"score": 1} '),
        "named verdicts `Score: 1 ...`": fill("Score: 1 "),
        # A verdict at the end, so that the quotes and copied blocks are looked for.
        "quotation marks, then a score": fill("\"a\" 'b' \u201cc\u201d ")[:-9] + " Score: 4",
        "copied tags `<Response>`, then a score": fill("<Response>\n")[:-9] + " Score: 4",
        "numbered list `1. 1. ...`": fill("1. "),
        "an unclosed string": '{"' + fill("a")[2:],
    }


def _verdict_word_runs() -> float:
    """A verdict word, then a long run of spaces (or stars, or quotes): once cubic, now linear. The worst ratio."""
    cases = {
        "`The winner` + spaces": lambda k: read_choice("The winner" + " " * k + "x"),
        "`Winner: A` + spaces": lambda k: read_choice("Winner: A" + " " * k + "x"),
        "`Score` + spaces": lambda k: read_score("Score" + " " * k + "x", _scale),
        "`Score` + stars": lambda k: read_score("Score" + "*" * k + "x", _scale),
        "`Final` + spaces": lambda k: read_score("Final" + " " * k + "x", _scale),
        "`Verdict` + spaces": lambda k: read_yes_no("Verdict" + " " * k + "x"),
        "quotes, `refused`": lambda k: refused("'" * k + "x"),
    }
    small, large = 5_000, 50_000
    print(f"\n| after a verdict word | {small:,} | {large:,} | ratio (linear: ~10) |")
    print("|---|---|---|---|")
    worst = 0.0
    for name, case in cases.items():
        times = [_seconds(lambda k=k, case=case: case(k)) for k in (small, large)]
        ratio = times[1] / max(times[0], 1e-6)
        worst = max(worst, ratio if times[1] > 0.01 else 0.0)
        print(f"| {name} | {times[0]:.4f} s | {times[1]:.4f} s | {ratio:.1f} |")
    return worst


def main() -> int:
    """Print the table; exit 1 when a case grows faster than linearly (over 20x for 10x the length)."""
    small, large = 20_000, 200_000
    print(f"| case | read_score, {small:,} chars | {large:,} chars | ratio (linear: ~10) |")
    print("|---|---|---|---|")
    worst = 0.0
    for name, text in _cases(small).items():
        long_text = _cases(large)[name]
        times = [_seconds(lambda t=t: read_score(t, _scale)) for t in (text, long_text)]
        ratio = times[1] / max(times[0], 1e-6)
        worst = max(worst, ratio if times[1] > 0.01 else 0.0)
        print(f"| {name} | {times[0]:.4f} s | {times[1]:.4f} s | {ratio:.1f} |")
    print()
    print("| reply | seconds | read as |")
    print("|---|---|---|")
    for size in (100_000, 200_000, 2_000_000):
        braces = "{" * size
        seconds = _seconds(lambda b=braces: read_score(b, _scale), rounds=1)
        read = read_score(braces, _scale)
        print(f"| {size:,} braces, read_score | {seconds:.3f} | {read.value} ({read.problem}) |")
    for size in (200_000, 2_000_000):
        braces = "{" * size
        seconds = _seconds(lambda b=braces: scan_json_objects(b), rounds=1)
        print(f"| {size:,} braces, the JSON scan alone (no length limit) | {seconds:.3f} | - |")
    for size in (190_000, 2_000_000):
        hostile = '{"a":' * (size // 5)
        readers = {
            "read_score": lambda h=hostile: read_score(h, _scale),
            "read_choice": lambda h=hostile: read_choice(h),
            "read_yes_no": lambda h=hostile: read_yes_no(h),
        }
        for name, reader in readers.items():
            seconds = _seconds(reader, rounds=1)
            print(f'| {size:,} characters nested `{{"a":`, {name} | {seconds:.3f} | {reader().problem} |')
    print(f"\nReplies over {MAX_REPLY_CHARS:,} characters are not read (parse_failure).")
    worst = max(worst, _verdict_word_runs())
    if worst > 20:
        print(f"a case grew {worst:.0f}x for 10x the length: not linear", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
