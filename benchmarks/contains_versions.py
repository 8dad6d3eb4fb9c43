"""Contains across versions: f2ec56e, main at 0d10fbb and this checkout, taking turns (section ``contains_vs_old``).

Each version's ``src`` is unpacked from git (``git archive <rev> src``) into a temporary folder;
this checkout runs from its own ``src``. Every round runs one subprocess per version, the order
rotating from round to round, so that a slow spell of a shared machine falls on every version
alike. In its subprocess a version imports its own package (its ``src`` first on ``sys.path``),
builds the real-answer corpus of the ``contains`` section (the OpenQA-eval rows replicated, the
same items for every version), calls ``AnswerContainsEvaluator().run`` once to warm up, then
times it, the bare loop and the SQuAD normalisation (``peers``) in turns, CPU seconds of the
process for each call. Ratios (ours to the bare loop, SQuAD to ours) pair calls of one
subprocess; speeds across versions are compared by their fastest and median calls.

    python benchmarks/run.py --only contains_vs_old
    CONTAINS_VS_OLD_FILE=rows.jsonl python benchmarks/run.py --only contains_vs_old   # other answers

``CONTAINS_VS_OLD_FILE`` names a JSONL file of other answers (``prediction`` and ``answers`` or
``answer`` a line, such as the EVOUNA rows of LLM sentence answers), replicated to the same size;
``CONTAINS_VS_OLD_ITEMS`` another size (long answers make the SQuAD peer slow: 15 s per 100,000).
    python benchmarks/contains_versions.py --worker SRC ITEMS REPEATS   # one subprocess, prints JSON
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import Section, Settings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
VERSIONS = {"f2ec56e": "f2ec56e", "main 0d10fbb": "0d10fbb", "this checkout": None}
"""Label -> git revision whose ``src`` is timed (``None``: this checkout's ``src``)."""
BASELINE = "f2ec56e"
ITEMS = 100_000
FILE_VARIABLE = "CONTAINS_VS_OLD_FILE"
ITEMS_VARIABLE = "CONTAINS_VS_OLD_ITEMS"


def _unpack(revision: str, folder: Path) -> Path:
    """``git archive <revision> src | tar -x`` under ``folder``; the path of its ``src``."""
    target = folder / revision
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "src"


def _call(src: Path, items: int, repeats: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src), "HAYSTACK_TELEMETRY_ENABLED": "False"}
    command = [sys.executable, str(Path(__file__)), "--worker", str(src), str(items), str(repeats)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the worker for {src} failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["module"].startswith(str(src)):  # another copy of the package was imported
        raise RuntimeError(f"the worker for {src} imported {result['module']}")
    return result


def _load() -> float:
    return os.getloadavg()[0]


def section_contains_versions(settings: Settings) -> list[Section]:
    """``AnswerContainsEvaluator.run`` of f2ec56e, main 0d10fbb and this checkout, one subprocess each per round."""
    items = int(os.environ.get(ITEMS_VARIABLE) or (20_000 if settings.quick else ITEMS))
    rounds, repeats = (2, 2) if settings.quick else (3, 3)
    source = os.environ.get(FILE_VARIABLE)
    answers = f"answers of {Path(source).name}" if source else "real answers (the contains section's)"
    section = Section(
        "contains_vs_old",
        f"Contains across versions: AnswerContainsEvaluator.run on {items:,} {answers}, taking turns",
        [
            "version",
            "answers/s (fastest)",
            "answers/s (median)",
            "time over f2ec56e's (median)",
            "time over the bare loop's",
            "SQuAD normalisation time over ours",
            "outputs",
        ],
    )
    names = list(VERSIONS)
    calls: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    load_before = _load()
    with tempfile.TemporaryDirectory() as folder:
        sources = {
            name: ROOT / "src" if revision is None else _unpack(revision, Path(folder))
            for name, revision in VERSIONS.items()
        }
        for round_number in range(rounds):
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                calls[name].append(_call(sources[name], items, repeats))
    load_after = _load()
    ours = {name: [t for call in calls[name] for t in call["ours"]] for name in names}
    base = statistics.median(ours[BASELINE])
    digests = {name: {call["digest"] for call in calls[name]} for name in names}
    for name in names:
        times = ours[name]
        over_bare = [o / b for call in calls[name] for o, b in zip(call["ours"], call["bare"], strict=True)]
        squad = [s / o for call in calls[name] for o, s in zip(call["ours"], call["squad"], strict=True)]
        same = [other for other in names if other != name and digests[other] == digests[name]]
        section.rows.append(
            [
                name,
                f"{items / min(times):,.0f}",
                f"{items / statistics.median(times):,.0f}",
                f"{statistics.median(times) / base:.3f}",
                f"{statistics.median(over_bare):.2f}x ({min(over_bare):.2f}-{max(over_bare):.2f})",
                f"{statistics.median(squad):.2f}x ({min(squad):.2f}-{max(squad):.2f})",
                "same as " + ", ".join(same) if same else "differ from the others",
            ]
        )
        section.figures[name] = {
            "revision": VERSIONS[name],
            "items": items,
            "seconds": times,
            "bare_seconds": [t for call in calls[name] for t in call["bare"]],
            "squad_seconds": [t for call in calls[name] for t in call["squad"]],
            "answers_per_second_fastest": items / min(times),
            "answers_per_second_median": items / statistics.median(times),
            "time_over_baseline_median": statistics.median(times) / base,
            "time_over_bare_loop_median": statistics.median(over_bare),
            "squad_time_over_ours_median": statistics.median(squad),
            "outputs_digest": sorted(digests[name]),
        }
    section.notes.append(
        f"{rounds} rounds, each one subprocess per version (order rotating), {repeats} timed calls of each scorer "
        f"per subprocess after a warm-up call; CPU seconds of the process. Load average (1 min) before "
        f"{load_before:.2f}, after {load_after:.2f}, on {os.cpu_count()} cores. Ratios to the bare loop and "
        "from SQuAD pair calls of one subprocess (median, range). f2ec56e's outputs differ by design (the number "
        "forms and the hedged abstentions came later); this checkout's must be main's, byte for byte."
    )
    section.figures["load_average"] = {"before": load_before, "after": load_after}
    return [section]


def _corpus(items: int) -> Any:
    """The real answers of the ``contains`` section, or the rows of ``CONTAINS_VS_OLD_FILE``, ``items`` of them."""
    import corpora

    path = os.environ.get(FILE_VARIABLE)
    if not path:
        return corpora.real_corpus(items)
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    golds = [row["answers"] if "answers" in row else row["answer"] for row in rows]
    predictions = [row["prediction"] for row in rows]
    texts = [p if isinstance(p, str) else "; ".join(p) for p in predictions]
    return corpora.Corpus(Path(path).stem, golds, predictions, texts).take(items)


def _worker(src: str, items: int, repeats: int) -> dict[str, Any]:
    """Time one version in this process (its ``src`` first on ``sys.path``)."""
    sys.path.insert(0, src)
    import peers

    from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

    corpus = _corpus(items)
    evaluator = AnswerContainsEvaluator()

    def ours() -> dict[str, Any]:
        return evaluator.run(ground_truth_answers=corpus.golds, predicted_answers=corpus.predictions)

    output = ours()  # the warm-up: labels folded once, as in any repeated evaluation
    digest = hashlib.sha256(json.dumps(output, sort_keys=True).encode()).hexdigest()[:16]
    runs = {"ours": ours, "bare": lambda: peers.bare_loop(corpus), "squad": lambda: peers.squad_contains(corpus)}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            gc.collect()
            start = time.process_time()
            run()
            times[name].append(time.process_time() - start)
    module = sys.modules[AnswerContainsEvaluator.__module__].__file__
    return {**times, "digest": digest, "module": module}


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        sys.path.insert(0, str(HERE))
        print(json.dumps(_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    else:
        sys.exit(__doc__)
