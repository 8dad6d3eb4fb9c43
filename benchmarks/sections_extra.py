"""Benchmark sections beyond the peer tables: scaling, adversarial input, the CLI, import time."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import corpora
import peers
from common import Section, Settings, cpu_seconds, taking_turns

SCALING_SEED = 20261130
"""Order of the real rows in the batch-size scaling: every size is a random sample of the same rows."""


def _section(*args: Any) -> Section:
    return Section(*args)


def _median_seconds(run: Callable[[], Any], rounds: int) -> float:
    return statistics.median(cpu_seconds(run) for _ in range(rounds))


def section_scaling(settings: Settings) -> list[Section]:
    """Time per item across batch sizes, and time per byte across answer lengths."""
    sizes = _section(
        "scaling_items",
        "Scaling with batch size: AnswerContainsEvaluator.run, real answers",
        ["items", "calls per round", "fastest round: us per item", "median round: us per item", "slowest round"],
    )
    largest = max(settings.scaling_sizes)
    runs = {}
    for size in settings.scaling_sizes:
        run = peers.answer_contains(corpora.real_corpus(size, seed=SCALING_SEED).with_own_objects())
        run()  # labels seen once, as in any repeated evaluation
        calls = largest // size  # every size scores the same number of items a round

        def repeated(run: Callable[[], Any] = run, calls: int = calls) -> None:
            for _ in range(calls):
                run()

        runs[str(size)] = repeated
    rounds = 3 if settings.quick else 7
    times = taking_turns(runs, rounds)
    fastest, middle = [], []
    for size in settings.scaling_sizes:
        values = times[str(size)]
        scale = 1e6 / largest  # every round scores `largest` items at each size
        fastest.append(min(values) * scale)
        middle.append(statistics.median(values) * scale)
        slowest = max(values) * scale
        cells = [fastest[-1], middle[-1], slowest]
        sizes.rows.append([f"{size:,}", f"{largest // size:,}", *(f"{cell:.2f}" for cell in cells)])
        sizes.figures[str(size)] = {
            "us_per_item_fastest": fastest[-1],
            "us_per_item_median": middle[-1],
            "round_seconds": values,
        }
    spread = max(fastest) / min(fastest) - 1
    sizes.figures["spread"] = spread
    sizes.figures["spread_of_medians"] = max(middle) / min(middle) - 1
    sizes.notes.append(
        f"Largest over smallest time per item: +{spread:.1%} from each size's fastest round (target: within "
        f"15%), +{sizes.figures['spread_of_medians']:.1%} from the median rounds. Each of {rounds} rounds scores "
        f"{largest:,} items at every size (the smaller batches called repeatedly), sizes taking turns in a "
        "rotating order; the rows are a seeded random sample of the real answers, every item holding its own "
        "string and list objects, as items read from a file do. The fastest round is the one least slowed by "
        "other work on the machine (the "
        "estimate timeit recommends); on this shared VM a round's time moves by up to 40% from one round to "
        "the next, by more than the target, and the median keeps that noise."
    )

    lengths = _section(
        "scaling_length",
        "Scaling with answer length: AnswerContainsEvaluator.run",
        ["answer length", "items", "fastest s", "median s", "us per KB (fastest)"],
    )
    sentences = " ".join(text for text in corpora.real_corpus(4_212).texts if len(text) > 40)
    total = 500_000 if settings.quick else 2_000_000
    text = (sentences * (total // len(sentences) + 1))[:total]
    by_length = {}
    for length in (100, 10_000, 100_000, 1_000_000):
        answers = [text[start : start + length] for start in range(0, total, length)]
        corpus = corpora.Corpus("long", [["Zanzibar archipelago", "1,234,567"]] * len(answers), answers, answers)
        by_length[str(length)] = peers.answer_contains(corpus)
    length_times = taking_turns(by_length, 3 if settings.quick else 5)
    per_kb = []
    for name, values in length_times.items():
        length = int(name)
        per_kb.append(min(values) / total * 1e3 * 1e6)
        count = -(-total // length)
        seconds = f"{min(values):.3f}", f"{statistics.median(values):.3f}"
        lengths.rows.append([_size(length), f"{count:,}", *seconds, f"{per_kb[-1]:.1f}"])
        lengths.figures[name] = {"items": count, "round_seconds": values, "us_per_kb": per_kb[-1]}
    lengths.figures["largest_over_smallest_per_kb"] = max(per_kb) / min(per_kb)
    lengths.notes.append(
        f"The same {total:,} characters of real answer sentences (repeated), cut into answers of each length, "
        "so only the length changes. The labels are not found, so every answer is read to the end and the "
        f"not-found detector runs. Time per KB, largest over smallest: {max(per_kb) / min(per_kb):.2f}x "
        "(1.00x is exactly linear)."
    )
    return [sizes, lengths]


def _size(length: int) -> str:
    return (
        f"{length // 1_000_000} MB"
        if length >= 1_000_000
        else f"{length // 1_000} KB"
        if length >= 1_000
        else f"{length} B"
    )


def _adversarial_cases(length: int) -> dict[str, tuple[str, list[str]]]:
    sentences = " ".join(text for text in corpora.real_corpus(4_212).texts if len(text) > 40)
    prose = (sentences * (length // len(sentences) + 1))[:length]
    many_labels = [f"unseen label {i}" for i in range(500)] + [str(7_000_000 + i) for i in range(500)]
    # At most `length` characters each: 1 MB is also the longest answer read (MAX_ANSWER_CHARS),
    # and a longer one would be refused unread, timing nothing.
    return {
        "1,000 acceptable answers, none found": (prose, many_labels),
        "long digit run, number labels glued in": ("1" * length, ["11", "111", "1.1", "-1"]),
        "grouped number, many separators": ("1" + ",234" * ((length - 1) // 4), ["234", "1,234", "4,2"]),
        "comma-separated list of numbers": (", ".join(str(i % 1000) for i in range(length // 5)), ["12,5", "1000"]),
        'runs of "-" and "." between digits': (("1" + "-." * 50 + "2 ") * (length // 103), ["1", "2", "-2", ".2"]),
        'run of source words ("the the ... no")': ("the " * ((length - 2) // 4) + "no", ["x"]),
    }


def section_adversarial(settings: Settings) -> list[Section]:
    """Inputs built to be slow: time at two lengths, ten times apart; linear means about 10x."""
    small, large = (10_000, 100_000) if settings.quick else (100_000, 1_000_000)
    section = _section(
        "adversarial",
        f"Adversarial answers: AnswerContainsEvaluator.run on one answer of {_size(small)} and {_size(large)}",
        ["case", f"{_size(small)} s", f"{_size(large)} s", "ratio (linear: ~10)"],
    )
    small_cases, large_cases = _adversarial_cases(small), _adversarial_cases(large)
    for name in small_cases:
        times = []
        for text, labels in (small_cases[name], large_cases[name]):
            corpus = corpora.Corpus("adversarial", [labels], [text], [text])
            run = peers.answer_contains(corpus)
            if run()["failure_kinds"] == ["error"]:
                raise AssertionError(f"adversarial case {name!r} was not read ({len(text):,} characters)")
            times.append(_median_seconds(run, 3))
        ratio = times[1] / times[0]
        section.rows.append([name, f"{times[0]:.4f}", f"{times[1]:.4f}", f"{ratio:.1f}"])
        section.figures[name] = {"small_seconds": times[0], "large_seconds": times[1], "ratio": ratio}
    return [section]


def _write_cli_input(path: Path, lines: int) -> None:
    rows = corpora.real_rows()
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(lines):
            row = rows[index % len(rows)]
            handle.write(
                json.dumps(
                    {
                        "id": index,
                        "question": row["question"],
                        "answers": row["answer"],
                        "prediction": row["prediction"],
                    }
                )
                + "\n"
            )


# Runs the CLI and reports the largest peak RSS of it and its workers (RUSAGE_CHILDREN: the most
# any one of them reached; Linux reports KB), from a fresh process so no earlier child counts.
_MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
seconds = time.perf_counter() - start
print(done.returncode, seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.stderr.write(done.stderr)
sys.stdout.write(done.stdout)
"""


def _run_cli(path: Path, output: Path, jobs: int) -> tuple[float, float, str]:
    command = [sys.executable, "-m", "answer_eval", "score", str(path), "--format", "json", "--no-progress"]
    command += ["--output", str(output), "--jobs", str(jobs)]
    done = subprocess.run([sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True, check=True)
    first, _, summary = done.stdout.partition("\n")
    code, seconds, rss_kb = first.split()
    if code != "0":
        raise RuntimeError(f"answer-eval score failed: {done.stderr}")
    return float(seconds), int(rss_kb) / 1024, summary


def section_cli(settings: Settings) -> list[Section]:
    """``answer-eval score`` on a large JSONL file as a subprocess: speed, --jobs, peak RSS."""
    lines = settings.cli_lines
    section = _section(
        "cli",
        f"CLI: answer-eval score on {lines:,} JSONL lines (real answers), --output to a file",
        ["run", "median s", "lines/s", "peak RSS MB (largest process)"],
    )
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "answers.jsonl"
        _write_cli_input(source, lines)
        size_mb = source.stat().st_size / 1e6
        results: dict[int, list[tuple[float, float, str]]] = {1: [], 2: []}
        load_before = os.getloadavg()[0]
        for jobs in (1, 2):
            results[jobs].append(_run_cli(source, Path(folder) / f"out{jobs}.jsonl", jobs))
        load_after = os.getloadavg()[0]
        identical = (Path(folder) / "out1.jsonl").read_bytes() == (Path(folder) / "out2.jsonl").read_bytes()
        summaries = {jobs: json.loads(runs[-1][2]) for jobs, runs in results.items()}
        same_summary = all(
            {k: v for k, v in summaries[1].items() if k != "output"}
            == {k: v for k, v in summaries[j].items() if k != "output"}
            for j in summaries
        )
    medians = {jobs: statistics.median(run[0] for run in runs) for jobs, runs in results.items()}
    rss = {jobs: max(run[1] for run in runs) for jobs, runs in results.items()}
    for jobs in (1, 2):
        section.rows.append(
            [f"--jobs {jobs}", f"{medians[jobs]:.2f}", f"{lines / medians[jobs]:,.0f}", f"{rss[jobs]:.0f}"]
        )
    speedup = medians[1] / medians[2]
    section.figures = {
        "lines": lines,
        "file_mb": size_mb,
        "seconds": medians,
        "peak_rss_mb": max(rss.values()),
        "peak_rss_mb_by_jobs": rss,
        "speedup": speedup,
        "byte_identical_output": identical,
        "same_summary": same_summary,
        "cores": os.cpu_count(),
        "load_average_1min_before_after": [load_before, load_after],
    }
    section.notes.append(
        f"Input {size_mb:.0f} MB. --jobs 2 over --jobs 1: {speedup:.2f}x; outputs byte-identical: {identical}; "
        f"summaries identical: {same_summary}. Times include interpreter start-up and writing the output. "
        f"Load average (1 min) before/after: {load_before:.2f}/{load_after:.2f}: other work on the machine's "
        f"{os.cpu_count()} cores takes from --jobs 2 what it needs."
    )
    return [section]


_COMPONENTS = "haystack_integrations.components.evaluators.answer_eval"


def section_import(settings: Settings) -> list[Section]:
    """Import time of the core and of the Haystack component module, and whether torch comes along."""
    section = _section("import", "Import time (fresh interpreter each run, median)", ["command", "median ms"])
    commands = {
        "python -c pass": "pass",
        "python -c 'import answer_eval'": "import answer_eval",
        "python -c 'import haystack_integrations...answer_eval'": f"import {_COMPONENTS}",
    }
    medians = {}
    for label, code in commands.items():
        times = []
        # The component module pulls in Haystack (and with it torch): seconds a run, so fewer runs.
        for _ in range(settings.import_runs if "haystack" not in code else 3):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append((time.perf_counter() - start) * 1e3)
        medians[label] = statistics.median(times)
        section.rows.append([label, f"{medians[label]:.0f}"])
    probe = "import sys, haystack_integrations.components.evaluators.answer_eval; print('torch' in sys.modules)"
    torch_loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    section.figures = {
        "import_answer_eval_ms": medians["python -c 'import answer_eval'"],
        "interpreter_ms": medians["python -c pass"],
        "component_module_ms": medians["python -c 'import haystack_integrations...answer_eval'"],
        "component_module_imports_torch": torch_loaded == "True",
    }
    section.notes.append(
        f"Importing the component module loads torch: {torch_loaded}. "
        "Times are whole processes, interpreter start-up included."
    )
    return [section]
