"""The human-judged sets in data/judge, read the same way by every script that fits or measures the judge.

Each set gives its rows, the person's verdict per row (EfficientQA's "possibly correct" counts as
acceptable: its annotators' looser category), the question each answer belongs to (answers to one
question are never split between fitting and testing), and the file's SHA-256 for provenance.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "judge"


@dataclass(frozen=True)
class SetSpec:
    """Where a set lives and how to read its verdicts and question groups."""

    name: str
    file: str
    group_key: str
    label: Callable[[dict[str, Any]], bool]
    label_rule: str


def _acceptable(row: dict[str, Any]) -> bool:
    return bool(row["human_acceptable"])


def _rated(row: dict[str, Any]) -> bool:
    return str(row["rating"]) != "definitely_incorrect"


SETS = (
    SetSpec("nq301-dev", "nq301-dev.jsonl", "qid", _acceptable, "human_acceptable"),
    SetSpec("efficientqa", "efficientqa-test-judged.jsonl", "question", _rated, "rating != definitely_incorrect"),
    SetSpec("evouna-tq", "evouna-tq.jsonl", "id", _acceptable, "human_acceptable"),
)
"""NQ301 dev (804 answers), EfficientQA (5,886), EVOUNA TriviaQA (9,690)."""


def rows(spec: SetSpec, folder: Path = DATA) -> list[dict[str, Any]]:
    """The rows of a set's JSONL file."""
    with open(folder / spec.file, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def sha256(spec: SetSpec, folder: Path = DATA) -> str:
    """The SHA-256 of a set's file."""
    return hashlib.sha256((folder / spec.file).read_bytes()).hexdigest()
