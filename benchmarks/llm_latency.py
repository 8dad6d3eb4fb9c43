"""LLM grading at the latency limit: requests per second against a server that answers after 50 ms.

With ``concurrency=16`` and a server that takes 50 ms a request, no client can send more than
16 / 0.05 = 320 requests a second: that is the limit each grader is measured against. The server
is ``tests/openai_server.py`` (a real HTTP server, a thread per connection) in a process of its
own, so that its work is not counted as the client's, and every grader goes through Haystack's
real ``OpenAIChatGenerator`` over loopback HTTP, unpatched. Each run is a fresh process of its own
too (``--measure``), so that old and new code (``ANSWER_EVAL_BASELINE_SRC``, another checkout's
``src``) can take turns, and its CPU time is the client's alone: CPU per request says how many
requests one core can drive.

Two rows say what any grader could reach on this machine: 16 threads sending the same JSON with
the standard library's ``http.client`` (the server's and the machine's ceiling), and 16 threads
calling ``OpenAIChatGenerator.run`` with nothing of this package around it (the ceiling the OpenAI
SDK's own CPU cost leaves).

    python benchmarks/llm_latency.py [--items 1000] [--rounds 3]
    python benchmarks/run.py --only llm_latency
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
for _folder in (ROOT, HERE):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

DELAY = 0.05
CONCURRENCY = 16
LIMIT = CONCURRENCY / DELAY
TARGET = 0.8

# scenario -> what the row is called; the grader's requests per item come from the server's count.
SCENARIOS: dict[str, str] = {
    "raw_http": "http.client, 16 threads (the server's ceiling)",
    "generator_threads": "OpenAIChatGenerator.run, 16 threads (the SDK's ceiling)",
    "rubric": "RubricEvaluator(concurrency=16), samples=1",
    "rubric_samples3": "RubricEvaluator, samples=3 (one request for n=3)",
    "rubric_samples3_calls": "RubricEvaluator, samples=3, sampling='calls'",
    "pairwise": "PairwiseRubricEvaluator(swap=True), samples=1",
    "escalation": "AnswerJudgeEvaluator(escalate_to=generator), every answer escalated",
    "cli_rubric": "answer-eval rubric --concurrency 16 (in-process main)",
}


# -- the server process ------------------------------------------------------------------------------


def _reply_text(request: dict[str, Any]) -> str:
    messages = request.get("messages") or [{}]
    system = str(messages[0].get("content") or "")
    if "compare two AI responses" in system:
        return json.dumps({"explanation": "A answers the question better.", "choice": "A"})
    if "candidate answer is correct" in system:
        return json.dumps({"explanation": "It gives an acceptable answer.", "correct": True})
    return json.dumps({"explanation": "It answers the question, with a minor omission.", "score": 4})


def serve(delay: float) -> None:
    """Serve until stdin closes; each stdin line ``stats`` prints the requests and their span since the last one."""
    import tests.openai_server as server_module
    from tests.openai_server import OpenAIServer, Reply, texts_for_n

    # 16 clients connect at once: the default listen backlog of 5 drops some connection attempts.
    server_module._Server.request_queue_size = 128
    arrivals: list[float] = []
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Reply:
        with lock:
            arrivals.append(time.monotonic())
        text = _reply_text(request)
        return Reply(texts=texts_for_n(request, lambda _i: text), delay=delay)

    with OpenAIServer(script) as server:
        print(server.url, flush=True)
        cpu = time.process_time()
        for line in sys.stdin:
            if line.strip() == "stats":
                with lock:
                    taken, arrivals[:] = list(arrivals), []
                span = (taken[-1] - taken[0] + delay) if taken else 0.0
                now = time.process_time()
                used, cpu = now - cpu, now
                figures = {"requests": len(taken), "span": span, "max_in_flight": server.max_in_flight, "cpu": used}
                print(json.dumps(figures))
                sys.stdout.flush()


class Server:
    """The server process: its URL, and the requests it saw since the last :meth:`stats`."""

    def __init__(self, delay: float = DELAY) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", str(delay)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError("the benchmark server did not start")

    def stats(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("stats\n")
        self.process.stdin.flush()
        return dict(json.loads(self.process.stdout.readline()))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


# -- one measured run, in a process of its own ---------------------------------------------------------


def _rows(items: int) -> list[dict[str, Any]]:
    import corpora

    rows = corpora.real_rows()
    chosen = [rows[index % len(rows)] for index in range(items)]
    # Each prompt differs (a grader sends one request per distinct prompt of a run).
    return [
        {
            "question": f"{row['question']} (#{index})",
            "answers": [str(gold) for gold in row["answer"]],
            "prediction": str(row["prediction"]),
            "baseline": str(rows[(index + 1) % len(rows)]["prediction"]),
        }
        for index, row in enumerate(chosen)
    ]


def _generator(url: str) -> Any:
    from tests.openai_server import grader_generator

    class _At:  # grader_generator reads only .url
        pass

    where = _At()
    where.url = url  # type: ignore[attr-defined]
    return grader_generator(where, timeout=60.0)  # type: ignore[arg-type]


def _raw_http(url: str, rows: list[dict[str, Any]]) -> Callable[[], Any]:
    import http.client
    from urllib.parse import urlsplit

    place = urlsplit(url)
    body = json.dumps(
        {"model": "grader", "messages": [{"role": "user", "content": row["question"]} for row in rows[:1]]}
    )
    left = list(range(len(rows)))
    lock = threading.Lock()

    def worker() -> None:
        connection = http.client.HTTPConnection(place.hostname, place.port)
        while True:
            with lock:
                if not left:
                    return
                left.pop()
            connection.request("POST", f"{place.path}/chat/completions", body, {"Content-Type": "application/json"})
            connection.getresponse().read()

    def run() -> None:
        threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return run


def _generator_threads(url: str, rows: list[dict[str, Any]]) -> Callable[[], Any]:
    from concurrent.futures import ThreadPoolExecutor

    from haystack.dataclasses import ChatMessage

    from answer_eval.llm.rubric_prompts import pointwise_messages, rubric

    generator = _generator(url)
    generator.warm_up()
    chosen = rubric("question_answering_quality")
    prompts = []
    for row in rows:
        item = {"instruction": row["question"], "context": ", ".join(row["answers"]), "prediction": row["prediction"]}
        made = pointwise_messages(chosen, item)
        prompts.append([ChatMessage.from_system(made[0][1]), ChatMessage.from_user(made[1][1])])

    def run() -> None:
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(lambda messages: generator.run(messages=messages), prompts))

    return run


def _component(scenario: str, url: str, rows: list[dict[str, Any]]) -> Callable[[], Any]:
    from haystack_integrations.components.evaluators.answer_eval import (
        AnswerJudgeEvaluator,
        PairwiseRubricEvaluator,
        RubricEvaluator,
    )

    questions = [row["question"] for row in rows]
    contexts = [", ".join(row["answers"]) for row in rows]
    predictions = [row["prediction"] for row in rows]
    limits = {"concurrency": CONCURRENCY, "chat_generator": _generator(url)}
    if scenario.startswith("rubric"):
        samples = 3 if "samples3" in scenario else 1
        sampling = "calls" if scenario.endswith("calls") else "auto"
        grader = RubricEvaluator(samples=samples, sampling=sampling, **limits)
        grader.warm_up()
        return lambda: grader.run(predicted_answers=predictions, questions=questions, contexts=contexts)
    if scenario == "pairwise":
        pairs = PairwiseRubricEvaluator(swap=True, **limits)
        pairs.warm_up()
        baselines = [row["baseline"] for row in rows]
        return lambda: pairs.run(
            predicted_answers=predictions, baseline_answers=baselines, questions=questions, contexts=contexts
        )
    generator = limits.pop("chat_generator")
    judge = AnswerJudgeEvaluator(escalate_to=generator, escalate_below=1.0, concurrency=CONCURRENCY)
    judge.warm_up()
    golds = [row["answers"] for row in rows]
    return lambda: judge.run(ground_truth_answers=golds, predicted_answers=predictions, questions=questions)


def _cli(url: str, rows: list[dict[str, Any]], folder: Path) -> Callable[[], Any]:
    from haystack.components.generators.chat import OpenAIChatGenerator  # noqa: F401 - imported before the clock

    from answer_eval.cli.main import main

    source = folder / "rows.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        for row in rows:
            line = {"question": row["question"], "context": ", ".join(row["answers"]), "prediction": row["prediction"]}
            handle.write(json.dumps(line) + "\n")
    output = folder / "graded.jsonl"
    arguments = ["rubric", str(source), "--api-base-url", url, "--model", "grader", "--no-progress"]
    arguments += ["--concurrency", str(CONCURRENCY), "--output", str(output), "--format", "json"]

    def run() -> None:
        output.unlink(missing_ok=True)
        if main(arguments) != 0:
            raise RuntimeError("answer-eval rubric failed")

    return run


def measure(scenario: str, url: str, items: int) -> dict[str, float]:
    """One run of ``scenario`` against the server at ``url``: its wall and CPU seconds (setup excluded)."""
    import contextlib
    import io

    rows = _rows(items)
    with tempfile.TemporaryDirectory() as name:
        if scenario == "raw_http":
            run = _raw_http(url, rows)
        elif scenario == "generator_threads":
            run = _generator_threads(url, rows)
        elif scenario == "cli_rubric":
            run = _cli(url, rows, Path(name))
        else:
            run = _component(scenario, url, rows)
        wall, cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):  # the CLI's summary
            result = run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    failures = result.get("failure_counts", {}) if isinstance(result, dict) else {}
    return {"wall": wall, "cpu": cpu, "failed": float(sum(failures.values()))}


# -- the section ---------------------------------------------------------------------------------------


def _one(scenario: str, url: str, items: int, src: str | None, server: Server) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src  # ahead of the editable install's path: that checkout's package runs
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", scenario, url, str(items)]
    server.stats()  # reset the count
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{scenario} failed: {done.stderr[-3000:]}")
    figures = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    seen = server.stats()
    figures["requests"] = float(seen["requests"])
    figures["server_span"] = float(seen["span"])
    figures["server_cpu"] = float(seen["cpu"])
    return figures


def run_scenarios(
    items: int, rounds: int, scenarios: list[str], baseline: str | None, current: str | None
) -> dict[str, dict[str, list[dict[str, float]]]]:
    """Every scenario ``rounds`` times, this code and the baseline taking turns; the runs' figures."""
    server = Server()
    runs: dict[str, dict[str, list[dict[str, float]]]] = {name: {"this": [], "baseline": []} for name in scenarios}
    try:
        for _ in range(rounds):
            for name in scenarios:
                runs[name]["this"].append(_one(name, server.url, items, current, server))
                print(f"{name} this: {json.dumps(runs[name]['this'][-1])}", file=sys.stderr, flush=True)
                if baseline and name not in ("raw_http", "generator_threads"):
                    runs[name]["baseline"].append(_one(name, server.url, items, baseline, server))
                    print(f"{name} baseline: {json.dumps(runs[name]['baseline'][-1])}", file=sys.stderr, flush=True)
    finally:
        server.close()
    return runs


def _rate(run: dict[str, float], scenario: str) -> float:
    # The command line's start (argument checks, the generator made) is not grading: its span at the server counts.
    seconds = run["server_span"] if scenario == "cli_rubric" else run["wall"]
    return run["requests"] / seconds


def section_llm_latency(settings: Any) -> list[Any]:
    """Requests per second of every LLM grader against the 320/s limit, CPU per request; against a baseline."""
    from common import Section

    items = 200 if settings.quick else 1_000
    rounds = 1 if settings.quick else 3
    baseline = os.environ.get("ANSWER_EVAL_BASELINE_SRC")
    load_before = os.getloadavg()[0]
    runs = run_scenarios(items, rounds, list(SCENARIOS), baseline, os.environ.get("ANSWER_EVAL_SRC"))
    load_after = os.getloadavg()[0]
    columns = ["run", "requests", "requests/s (median)", "share of 320/s", "CPU ms per request", "failed items"]
    if baseline:
        columns += ["baseline requests/s", "baseline CPU ms/request"]
    section = Section("llm_latency", f"LLM grading at the latency limit: {items:,} items, 50 ms server", columns)
    for name, label in SCENARIOS.items():
        here = runs[name]["this"]
        rate = statistics.median(_rate(run, name) for run in here)
        cpu = statistics.median(run["cpu"] / run["requests"] for run in here) * 1e3
        requests = int(statistics.median(run["requests"] for run in here))
        failed = int(max(run["failed"] for run in here))
        row = [label, f"{requests:,}", f"{rate:,.0f}", f"{rate / LIMIT:.0%}", f"{cpu:.2f}", failed]
        figures: dict[str, Any] = {"requests": requests, "requests_per_second": rate, "share_of_limit": rate / LIMIT}
        figures.update({"cpu_ms_per_request": cpu, "runs": here})
        there = runs[name]["baseline"]
        if baseline:
            if there:
                old = statistics.median(_rate(run, name) for run in there)
                old_cpu = statistics.median(run["cpu"] / run["requests"] for run in there) * 1e3
                row += [f"{old:,.0f}", f"{old_cpu:.2f}"]
                figures.update({"baseline_requests_per_second": old, "baseline_cpu_ms": old_cpu, "baseline": there})
            else:
                row += ["-", "-"]
        section.rows.append(row)
        section.figures[name] = figures
    section.figures["load_average_1min_before_after"] = [load_before, load_after]
    section.notes.append(
        f"Limit: {CONCURRENCY} requests in flight / {DELAY * 1e3:.0f} ms = {LIMIT:.0f} requests/s; target "
        f"{TARGET:.0%} of it ({TARGET * LIMIT:.0f}/s). Median of {rounds} run(s), each a fresh process, this code "
        "and the baseline taking turns; requests counted by the server. Requests/s: the requests over the wall "
        "time of the `run` call (the command line's: from the first request's arrival to the last reply, its "
        "start-up aside). CPU per request: the client process's CPU time over the same call, divided by the "
        f"requests (1,000 ms / it = the requests one core can drive). Load average (1 min) before/after: "
        f"{load_before:.2f}/{load_after:.2f} on {os.cpu_count()} cores."
    )
    return [section]


def main(argv: list[str] | None = None) -> int:
    """``--serve``, ``--measure`` (the subprocesses), or the section on its own."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=3, metavar=("SCENARIO", "URL", "ITEMS"), help=argparse.SUPPRESS)
    parser.add_argument("--items", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve)
        return 0
    if args.measure:
        scenario, url, items = args.measure
        print(json.dumps(measure(scenario, url, int(items))))
        return 0
    baseline = os.environ.get("ANSWER_EVAL_BASELINE_SRC")
    runs = run_scenarios(args.items, args.rounds, args.only, baseline, os.environ.get("ANSWER_EVAL_SRC"))
    for name in args.only:
        for which, measured in runs[name].items():
            if measured:
                rates = [_rate(run, name) for run in measured]
                cpus = [run["cpu"] / run["requests"] * 1e3 for run in measured]
                shown = ", ".join(
                    f"{rate:.0f}/s ({rate / LIMIT:.0%}) {cpu:.2f} ms" for rate, cpu in zip(rates, cpus, strict=True)
                )
                print(f"{name:24} {which:8} {int(measured[0]['requests']):6} requests: {shown}", flush=True)
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
