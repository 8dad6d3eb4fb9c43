"""answer-eval benchmark: this package against what users would otherwise use, in one process.

    python benchmarks/run.py            # the full run (under ten minutes on 2 cores)
    python benchmarks/run.py --quick    # a smoke run in well under a minute
    python benchmarks/run.py --only contains numeric

Prints markdown tables and writes every figure to benchmarks/results/latest.json. Speeds are
medians of several interleaved rounds (each round runs every scorer once, so a slow spell of a
shared machine hits them all alike); ratios are taken between figures of this one run. Memory is
the peak of Python allocations (tracemalloc) during one more call, or the peak resident set size
(RSS) of a process where that is said. See docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import contains_versions  # noqa: E402
import corpora  # noqa: E402
import jobs_scaling  # noqa: E402
import llm_latency  # noqa: E402
import peers  # noqa: E402
import section_commands  # noqa: E402
import section_judge  # noqa: E402
import section_judge_speed  # noqa: E402
import sections_extra  # noqa: E402
from common import Section, Settings, cpu_seconds, interleaved, machine, peak_memory_mb  # noqa: E402

RESULTS = HERE / "results" / "latest.json"


def _scores(result: Any) -> list[int]:
    values = result["individual_scores"] if isinstance(result, dict) else result
    return [int(value) for value in values]


def compare_scorers(
    name: str, title: str, corpus: corpora.Corpus, runs: dict[str, Callable[[], Any]], rounds: int
) -> Section:
    """Time, memory and agreement of every scorer on one corpus, and the ratios to ours."""
    cold = cpu_seconds(peers.answer_contains(corpus))  # a new evaluator: no label seen yet
    results = {scorer: _scores(run()) for scorer, run in runs.items()}  # also a warm-up call each
    medians = interleaved(runs, rounds)
    ours = medians["AnswerContainsEvaluator.run"]
    reference = results["AnswerContainsEvaluator.run"]
    section = Section(
        name,
        title,
        [
            "scorer",
            "items/s",
            "median s",
            "peak MB (tracemalloc)",
            "ours is faster by",
            "mean score",
            "agrees with ours",
        ],
    )
    for scorer, run in runs.items():
        scores = results[scorer]
        agree = sum(a == b for a, b in zip(scores, reference, strict=True)) / len(scores)
        memory = peak_memory_mb(run)
        speed = len(corpus) / medians[scorer]
        ratio = medians[scorer] / ours
        section.rows.append(
            [
                scorer,
                f"{speed:,.0f}",
                f"{medians[scorer]:.3f}",
                f"{memory:.1f}",
                f"{ratio:.2f}x",
                f"{sum(scores) / len(scores):.4f}",
                f"{agree:.1%}",
            ]
        )
        section.figures[scorer] = {
            "items": len(corpus),
            "median_seconds": medians[scorer],
            "items_per_second": speed,
            "peak_memory_mb_tracemalloc": memory,
            "peer_time_over_ours": ratio,
            "mean_score": sum(scores) / len(scores),
            "agreement_with_ours": agree,
        }
    section.notes.append(
        f"AnswerContainsEvaluator.run on a new evaluator (no label cached yet): {len(corpus) / cold:,.0f} items/s "
        f"({cold:.3f} s); the table gives later calls, as in any repeated evaluation."
    )
    section.figures["AnswerContainsEvaluator.run"]["first_call_seconds"] = cold
    return section


def section_contains(settings: Settings) -> list[Section]:
    """The real-answer corpus: ours against the bare loop, Haystack exact match and SQuAD normalisation."""
    corpus = corpora.real_corpus(settings.corpus_size)
    runs: dict[str, Callable[[], Any]] = {
        "AnswerContainsEvaluator.run": peers.answer_contains(corpus),
        "bare loop (lower, in)": lambda: peers.bare_loop(corpus),
        "Haystack AnswerExactMatchEvaluator.run (best over golds)": peers.haystack_exact_match(corpus),
        "SQuAD v1.1 normalisation, contains (reimplemented)": lambda: peers.squad_contains(corpus),
    }
    title = f"Real answers: OpenQA-eval (FiD, InstructGPT zero-/few-shot), {len(corpus):,} items"
    return [compare_scorers("contains", title, corpus, runs, settings.rounds)]


def section_numeric(settings: Settings) -> list[Section]:
    """The synthetic numeric corpus: the same peers, and math-verify on a slice."""
    corpus = corpora.numeric_corpus(settings.corpus_size)
    runs: dict[str, Callable[[], Any]] = {
        "AnswerContainsEvaluator.run": peers.answer_contains(corpus),
        "bare loop (lower, in)": lambda: peers.bare_loop(corpus),
        "Haystack AnswerExactMatchEvaluator.run (best over golds)": peers.haystack_exact_match(corpus),
        "SQuAD v1.1 normalisation, contains (reimplemented)": lambda: peers.squad_contains(corpus),
    }
    title = f"Synthetic numeric answers (seeded), {len(corpus):,} items"
    full = compare_scorers("numeric", title, corpus, runs, settings.rounds)
    # math-verify takes about a millisecond an item: it runs on a slice, ours on the same slice.
    piece = corpus.take(settings.math_verify_items)
    slice_runs: dict[str, Callable[[], Any]] = {
        "AnswerContainsEvaluator.run": peers.answer_contains(piece),
        "bare loop (lower, in)": lambda: peers.bare_loop(piece),
        "math-verify parse+verify (best over golds)": peers.math_verify_contains(piece),
    }
    title = f"Synthetic numeric answers, the first {len(piece):,} items: math-verify"
    rounds = max(1, min(settings.rounds, 3))
    return [full, compare_scorers("numeric_math_verify", title, piece, slice_runs, rounds)]


def typed_section(settings: Settings) -> list[Section]:
    """TypedAnswerEvaluator free-form against rouge-score, from benchmarks/bench_typed.py."""
    import bench_typed

    section = Section("free_form", "Free-form answers: TypedAnswerEvaluator against rouge-score", ["figure", "value"])
    items, repeats = (1_000, 2) if settings.quick else (5_000, 5)
    result = bench_typed.bench_free_form(items, repeats)
    section.figures = result
    for key, value in result.items():
        section.rows.append([key, f"{value:,.4g}" if isinstance(value, float) else json.dumps(value)])
    return [section]


SECTIONS: dict[str, Callable[[Settings], list[Section]]] = {
    "contains": section_contains,
    "contains_vs_old": contains_versions.section_contains_versions,
    "numeric": section_numeric,
    "scaling": sections_extra.section_scaling,
    "adversarial": sections_extra.section_adversarial,
    "cli": sections_extra.section_cli,
    "import": sections_extra.section_import,
    "free_form": typed_section,
    "judge_length": section_judge.section_judge_length,
    "judge_stages": section_judge.section_judge_stages,
    "judge_speed": section_judge_speed.section_judge_speed,
    "file_commands": section_commands.section_commands,
    "llm_latency": llm_latency.section_llm_latency,
    "jobs_scaling": jobs_scaling.section_jobs_scaling,
}
"""Every section, in order; another engineer's section plugs in here."""


def targets(sections: dict[str, Section]) -> Section:
    """The issue's targets, met or missed, from this run's figures."""
    table = Section("targets", "Targets", ["target", "measured", "met"])

    def add(text: str, measured: float | None, ok: Callable[[float], bool], unit: str) -> None:
        if measured is None:
            table.rows.append([text, "not measured", "-"])
            return
        table.rows.append([text, f"{measured:.2f}{unit}", "yes" if ok(measured) else "NO"])
        table.figures[text] = {"measured": measured, "met": ok(measured)}

    real = sections.get("contains")
    if real is not None:
        ours = real.figures["AnswerContainsEvaluator.run"]["median_seconds"]
        squad = real.figures["SQuAD v1.1 normalisation, contains (reimplemented)"]["median_seconds"]
        bare = real.figures["bare loop (lower, in)"]["median_seconds"]
        add(
            "AnswerContainsEvaluator.run >= 5x SQuAD-normalisation throughput (real answers)",
            squad / ours,
            lambda x: x >= 5,
            "x",
        )
        add("AnswerContainsEvaluator.run time <= 4x the bare loop's (real answers)", ours / bare, lambda x: x <= 4, "x")
    scaling = sections.get("scaling_items")
    if scaling is not None and "spread" in scaling.figures:
        add(
            "time per item within 15% across batch sizes (fastest rounds)",
            scaling.figures["spread"] * 100,
            lambda x: x <= 15,
            "%",
        )
    free_form = sections.get("free_form")
    if free_form is not None and "ratio" in free_form.figures:
        add(
            "TypedAnswerEvaluator free-form >= 5x a new RougeScorer per item",
            free_form.figures["ratio"],
            lambda x: x >= 5,
            "x",
        )
    cli = sections.get("cli")
    if cli is not None and cli.figures:
        add(
            f"CLI peak RSS < 300 MB ({cli.figures['lines']:,} lines, largest process)",
            cli.figures["peak_rss_mb"],
            lambda x: x < 300,
            " MB",
        )
        add("CLI --jobs 2 >= 1.7x faster than --jobs 1", cli.figures["speedup"], lambda x: x >= 1.7, "x")
    latency = sections.get("llm_latency")
    if latency is not None:
        for name in ("rubric", "rubric_samples3", "pairwise", "escalation", "cli_rubric"):
            if name in latency.figures:
                add(
                    f"{llm_latency.SCENARIOS[name]}: >= 0.8 of the 320 requests/s limit",
                    latency.figures[name]["share_of_limit"],
                    lambda x: x >= llm_latency.TARGET,
                    "",
                )
    jobs = sections.get("jobs_scaling")
    if jobs is not None and jobs.figures:
        add("answer-eval judge --jobs 2 >= 1.7x --jobs 1 (100k rows)", jobs.figures["speedup"], lambda x: x >= 1.7, "x")
    imports = sections.get("import")
    if imports is not None and imports.figures:
        add(
            'python -c "import answer_eval" < 150 ms',
            imports.figures["import_answer_eval_ms"],
            lambda x: x < 150,
            " ms",
        )
    stages = sections.get("judge_stages")
    default = "NQ-open (EfficientQA)|default (rules + acceptance model)"
    if stages is not None and default in stages.figures:
        rates = stages.figures[default]["answers_per_second"]
        add(
            "AnswerJudge default >= 5,000 answers/s (NQ-open answers, median)",
            statistics.median(rates),
            lambda x: x >= 5000,
            "",
        )
    speed = sections.get("judge_speed")
    if speed is not None and "speedup_over_main" in speed.figures:
        add(
            "AnswerJudgeEvaluator >= 3x 0d10fbb on LLM sentences with questions (median)",
            speed.figures["speedup_over_main"],
            lambda x: x >= 3,
            "x",
        )
    if speed is not None:
        add(
            "AnswerJudgeEvaluator >= 15,000 answers/s on LLM sentences with questions (median)",
            speed.figures["this_tree_answers_per_second"],
            lambda x: x >= 15_000,
            "",
        )
    return table


def render(section: Section) -> str:
    """A section as a markdown table with its notes."""
    lines = [f"### {section.title}", ""]
    if section.rows:
        lines.append("| " + " | ".join(section.columns) + " |")
        lines.append("| " + " | ".join("---" for _ in section.columns) + " |")
        lines.extend("| " + " | ".join(str(cell) for cell in row) + " |" for row in section.rows)
    lines.extend(f"\n{note}" for note in section.notes)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the chosen sections, print their tables and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds: a smoke run")
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), help="run only these sections")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results (default: %(default)s)")
    args = parser.parse_args(argv)
    settings = Settings.make(args.quick)
    info = machine()
    print(f"# answer-eval benchmark ({'quick' if settings.quick else 'full'} run)\n")
    print(f"{info['date']}; {info['nproc']} cores, {info['cpu']}; Python {info['python']}; {info['platform']}\n")
    started = time.perf_counter()
    done: dict[str, Section] = {}
    for name, run in SECTIONS.items():
        if args.only and name not in args.only:
            continue
        began = time.perf_counter()
        for section in run(settings):
            done[section.name] = section
            print(render(section), flush=True)
        print(f"({name}: {time.perf_counter() - began:.0f} s)\n", flush=True)
    goals = targets(done)
    print(render(goals))
    elapsed = time.perf_counter() - started
    print(f"Total {elapsed:.0f} s.")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": info,
        "quick": settings.quick,
        "seconds": elapsed,
        "sections": {name: {"title": s.title, "figures": s.figures, "notes": s.notes} for name, s in done.items()},
        "targets": goals.figures,
    }
    args.output.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"Wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
