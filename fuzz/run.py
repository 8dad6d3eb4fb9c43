"""Run every fuzz harness for a bounded number of iterations: ``python fuzz/run.py --runs N``.

Each target of ``fuzz/harnesses.py`` runs in its own subprocess under atheris (libFuzzer) for
``N`` inputs, starting from the seed inputs in ``fuzz/seeds/<target>/``. On a crash (an exception,
a failed property, a hang longer than ``--timeout`` seconds) the run stops, the crashing input is
printed (as a Python bytes literal) and saved as ``fuzz/crashes/<target>-<hash>``, and the script
exits 1. ``make test`` runs 20,000 inputs per target; ``make fuzz`` a million. New inputs the
fuzzer finds interesting are not kept unless ``--corpus DIR`` is given (one sub-folder per target).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGET_NAMES = ("text", "read_output", "jsonl", "replies")
_MAX_LEN = {"text": 512, "read_output": 512, "jsonl": 1024, "replies": 1024}


def _run_target(name: str, runs: int, timeout: int, corpus: Path | None, seed: int | None) -> int:
    crashes = HERE / "crashes"
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as scratch:
        work = Path(scratch)
        folders = [str(corpus / name)] if corpus is not None else [str(work / "corpus")]
        Path(folders[0]).mkdir(parents=True, exist_ok=True)
        seeds = HERE / "seeds" / name
        if seeds.is_dir():
            folders.append(str(seeds))
        command = [
            sys.executable,
            str(HERE / "harness.py"),
            name,
            f"-runs={runs}",
            f"-timeout={timeout}",
            f"-max_len={_MAX_LEN[name]}",
            f"-artifact_prefix={work}/",
            "-print_final_stats=1",
            *([f"-seed={seed}"] if seed is not None else []),
            *folders,
        ]
        started = time.monotonic()
        process = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
        found = sorted(path for path in work.iterdir() if path.is_file())
        if process.returncode == 0 and not found:
            print(f"{name}: {runs:,} runs, no crash ({seconds:.1f} s)")
            return 0
        print(f"{name}: CRASH after {seconds:.1f} s (exit {process.returncode})")
        print(process.stderr[-6000:])
        crashes.mkdir(exist_ok=True)
        for path in found:
            data = path.read_bytes()
            kept = crashes / f"{name}-{path.name}"
            shutil.copyfile(path, kept)
            print(f"crashing input ({len(data)} bytes), saved as {kept}:")
            print(repr(data))
        return 1


def main(argv: list[str] | None = None) -> int:
    """Run the chosen targets one after another; 1 when any crashed, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20_000, help="inputs per target (default: 20000)")
    parser.add_argument("--timeout", type=int, default=20, help="seconds one input may take (default: 20)")
    parser.add_argument("--target", action="append", choices=TARGET_NAMES, help="run only this target (repeatable)")
    parser.add_argument("--corpus", type=Path, help="keep the inputs found in DIR/<target>/ across runs")
    parser.add_argument("--seed", type=int, help="libFuzzer's random seed, to repeat a run")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    failed = 0
    for name in args.target or TARGET_NAMES:
        failed |= _run_target(name, args.runs, args.timeout, args.corpus, args.seed)
    return failed


if __name__ == "__main__":
    sys.exit(main())
