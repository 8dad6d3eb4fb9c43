"""Write the catalogue part of docs/model-based-metrics.md from the code: every metric's criteria, scale and prompt.

The part between the ``catalogue`` markers is generated; the rest of the page is written by hand.
tests/test_model_metrics_doc.py fails when the page and the code disagree.

Run: python scripts/model_metrics_doc.py  (rewrites the page in place)
"""

from __future__ import annotations

import sys
from pathlib import Path

from answer_eval.llm.rubric_prompts import (
    PROMPT_VERSION,
    Rubric,
    catalogue,
    correctness_messages,
    pairwise_messages,
    pointwise_messages,
)

PAGE = Path(__file__).resolve().parent.parent / "docs" / "model-based-metrics.md"
START, END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"
PLACEHOLDERS = {
    "instruction": "{instruction}",
    "context": "{context}",
    "prediction": "{prediction}",
    "reference": "{reference}",
}
CALLED = {
    "instruction": "`questions`",
    "context": "`contexts`",
    "prediction": "`predicted_answers`",
    "reference": "`ground_truth_answers`",
}


def _prompt(messages: list[tuple[str, str]]) -> list[str]:
    lines = []
    for role, text in messages:
        lines += [f"{role}:", "", "```text", text, "```", ""]
    return lines


def _metric(rubric: Rubric) -> list[str]:
    inputs = ", ".join(f"{name} ({CALLED[name]})" for name in rubric.inputs)
    optional = ", ".join(f"{name} ({CALLED[name]})" for name in rubric.optional_inputs) or "none"
    lines = [
        f"### `{rubric.name}`",
        "",
        rubric.description,
        "",
        f"- Inputs: {inputs}; used when given: {optional}.",
        f"- Pairwise: {'yes' if rubric.pairwise else 'no'}. Fingerprint (in the signature): `{rubric.fingerprint}`.",
        "",
        "| Criterion | What it means |",
        "|---|---|",
        *(f"| {c.name} | {c.description} |" for c in rubric.criteria),
        "",
        "| Score | Meaning |",
        "|---|---|",
        *(f"| {r.value} | {r.label} |" for r in rubric.scale),
        "",
        "<details><summary>Prompt</summary>",
        "",
        *_prompt(pointwise_messages(rubric, PLACEHOLDERS)),
    ]
    if rubric.pairwise:
        pair = pairwise_messages(rubric, PLACEHOLDERS, "{first response}", "{second response}")
        lines += ["Pairwise (asked a second time with the responses swapped):", "", *_prompt(pair)]
    return [*lines, "</details>", ""]


def catalogue_text() -> str:
    """The generated part of the page."""
    lines = [START, "", f"Prompt version: **v{PROMPT_VERSION}**.", ""]
    for rubric in catalogue().values():
        lines += _metric(rubric)
    lines += [
        "### The judge's correctness check (escalation)",
        "",
        *_prompt(correctness_messages("{question}", ["{answer 1}", "{answer 2}"], "{candidate}")),
        END,
    ]
    return "\n".join(lines)


def page_with_catalogue(page: str) -> str:
    """``page`` with its catalogue part replaced by the current one."""
    head, _, rest = page.partition(START)
    _, _, tail = rest.partition(END)
    return head + catalogue_text() + tail


def main() -> int:
    """Rewrite the page; exit 0."""
    PAGE.write_text(page_with_catalogue(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
