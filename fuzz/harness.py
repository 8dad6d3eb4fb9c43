"""Run one fuzz target under atheris: ``python fuzz/harness.py TARGET [libFuzzer options]``.

``fuzz/run.py`` calls this once per target; run it directly for a long session on one target,
e.g. ``python fuzz/harness.py jsonl -runs=10000000 fuzz/corpus/jsonl``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harnesses import TARGETS


def main() -> None:
    """Set atheris up for the target named by the first argument and fuzz it."""
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: harness.py {{{','.join(TARGETS)}}} [libFuzzer options]")
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
