"""The judge asks an LLM only when it is unsure, and an LLM grades on a rubric.

Without arguments the LLM is GPT-4's recorded replies as a grader (NQ301 dev, OpenQA-eval
release), served by a small OpenAI-compatible server on loopback that this script starts: every
request still goes through Haystack's real OpenAIChatGenerator over HTTP. With
``--api-base-url URL --model NAME`` it talks to your server instead (Ollama, vLLM, OpenAI; the
key from OPENAI_API_KEY) and also grades a few answers on a rubric and pairwise.

The judge shipped with the package was fitted on these answers among others, so the figures
printed here are in-sample; benchmarks/escalation.py measures a judge that never saw them.

Run: python examples/llm_grading.py [--api-base-url http://localhost:11434/v1 --model llama3.1]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from haystack_integrations.components.evaluators.answer_eval import (
    AnswerJudgeEvaluator,
    PairwiseRubricEvaluator,
    RubricEvaluator,
)

ROWS = [json.loads(line) for line in (Path(__file__).parent / "data" / "nq301_gpt4_replies.jsonl").open()]


class Replay(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions with GPT-4's recorded reply to the candidate the prompt names."""

    replies: ClassVar[dict[tuple[str, str], str]] = {(r["question"], r["prediction"]): r["gpt4_reply"] for r in ROWS}

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        question = prompt.split("<Question>\n", 1)[1].split("\n</Question>", 1)[0]
        candidate = prompt.split("<Candidate>\n", 1)[1].split("\n</Candidate>", 1)[0]
        reply = self.replies[(question, candidate)]
        payload = {
            "id": "replay",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(reply) // 4, "total_tokens": 0},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def agreement(scores: list[int]) -> float:
    """The share of verdicts people agree with."""
    return sum(int(score == int(row["human_acceptable"])) for score, row in zip(scores, ROWS, strict=True)) / len(ROWS)


def escalate(generator: OpenAIChatGenerator) -> None:
    """Judge the bundled answers alone, then with the unsure ones sent to the LLM."""
    inputs = {
        "ground_truth_answers": [row["answers"] for row in ROWS],
        "predicted_answers": [row["prediction"] for row in ROWS],
        "questions": [row["question"] for row in ROWS],
    }
    alone = AnswerJudgeEvaluator().run(**inputs)
    judged = AnswerJudgeEvaluator(escalate_to=generator, escalate_below=0.8).run(**inputs)
    gpt4 = [int(row["gpt4_reply"].strip().lower().startswith("yes")) for row in ROWS]
    print(f"{len(ROWS)} answers judged by people (NQ301 dev, 40 questions; in-sample for the shipped judge)")
    print(f"  judge alone                 agreement with people {agreement(alone['individual_scores']):.3f}")
    print(f"  GPT-4 alone (recorded)      agreement with people {agreement(gpt4):.3f}")
    print(
        f"  judge, escalating below 0.8 agreement with people {agreement(judged['individual_scores']):.3f}"
        f"  ({judged['escalated_share']:.0%} of the answers sent, {judged['usage']['calls']} calls)"
    )
    first = judged["escalated"].index(True)
    print(f"  e.g. {ROWS[first]['prediction']!r}: the LLM said {judged['llm_explanations'][first]!r}")


def rubric(generator: OpenAIChatGenerator) -> None:
    """Grade three answers for correctness, then compare them with shorter ones."""
    rows = ROWS[:3]
    grades = RubricEvaluator(metric="question_answering_correctness", chat_generator=generator).run(
        predicted_answers=[row["prediction"] for row in rows],
        questions=[row["question"] for row in rows],
        ground_truth_answers=[row["answers"] for row in rows],
    )
    print("rubric scores", grades["individual_scores"], "confidences", grades["confidences"])
    pairs = PairwiseRubricEvaluator(metric="question_answering_quality", chat_generator=generator).run(
        predicted_answers=[row["prediction"] for row in rows],
        baseline_answers=[row["answers"][0] for row in rows],
        questions=[row["question"] for row in rows],
        contexts=["(no context)"] * len(rows),
    )
    print("pairwise", pairs["pairwise_choices"], "win rate", pairs["win_rate"], "flips", pairs["position_flips"])


def main() -> None:
    """Replay GPT-4's recorded replies, or use the server given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-base-url", help="an OpenAI-compatible server (default: replay recorded replies)")
    parser.add_argument("--model", default="gpt-4", help="the model's name on the server")
    args = parser.parse_args()
    if args.api_base_url:
        key = Secret.from_env_var("OPENAI_API_KEY") if os.environ.get("OPENAI_API_KEY") else Secret.from_token("none")
        generator = OpenAIChatGenerator(api_key=key, api_base_url=args.api_base_url, model=args.model)
        escalate(generator)
        rubric(generator)
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), Replay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        escalate(OpenAIChatGenerator(api_key=Secret.from_token("replay"), api_base_url=url, model=args.model))
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
