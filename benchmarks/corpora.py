"""The benchmark's corpora: real model answers (OpenQA-eval) and a synthetic numeric corpus."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
REAL_FILES = (
    "openqa-eval-NQ_FiD.jsonl",
    "openqa-eval-NQ301_text-davinci-003_zeroshot.jsonl",
    "openqa-eval-NQ301_text-davinci-003_fewshot-n64.jsonl",
)


@dataclass
class Corpus:
    """Predictions as a pipeline gives them, their acceptable answers, and plain-string forms for peers.

    ``texts`` is each prediction as one string: a list of strings (some few-shot answers) joined
    with "; ", as ``answer_eval.read_output`` reads it, so every peer sees the same text.
    """

    name: str
    golds: list[list[str]]
    predictions: list[Any]
    texts: list[str]

    def __len__(self) -> int:
        return len(self.golds)

    def take(self, size: int) -> Corpus:
        """The first ``size`` items, cycling through the corpus when it is shorter."""
        count = len(self.golds)
        index = [i % count for i in range(size)]
        return Corpus(
            self.name,
            [self.golds[i] for i in index],
            [self.predictions[i] for i in index],
            [self.texts[i] for i in index],
        )

    def with_own_objects(self) -> Corpus:
        """The same items, each holding its own copies of its strings and lists.

        A replicated corpus repeats references to the same few thousand objects, which a large
        batch then finds in the CPU caches again and again; items read from a file or made by a
        pipeline are separate objects, even when their texts are equal.
        """
        return Corpus(self.name, _copied(self.golds), _copied(self.predictions), self.texts)


def _copied(value: Any) -> Any:
    if isinstance(value, str):
        return (value + " ")[:-1]  # a new str object with the same characters
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def _as_text(prediction: Any) -> str:
    return prediction if isinstance(prediction, str) else "; ".join(prediction)


def real_rows() -> list[dict[str, Any]]:
    """The 4,212 OpenQA-eval rows: ``question``, ``answer`` (gold list), ``prediction``."""
    rows: list[dict[str, Any]] = []
    for name in REAL_FILES:
        with open(DATA / name, encoding="utf-8") as handle:
            rows.extend(json.loads(line) for line in handle if line.strip())
    return rows


def real_corpus(size: int, seed: int | None = None) -> Corpus:
    """The real answers replicated (whole copies, then a partial one) to ``size`` items.

    With a ``seed``, the rows are first put in a seeded random order, so that a batch smaller
    than the corpus, or the partial copy, is a random sample rather than the first file's rows.
    """
    rows = real_rows()
    if seed is not None:
        random.Random(seed).shuffle(rows)
    base = Corpus(
        "real",
        [row["answer"] for row in rows],
        [row["prediction"] for row in rows],
        [_as_text(row["prediction"]) for row in rows],
    )
    return base.take(size)


_UNITS = ("units", "m", "km", "kg", "people", "votes", "tonnes", "%", " percent", "mg", "feet", "years")


def _group(value: int, rng: random.Random) -> str:
    plain = str(value)
    if value < 1000:
        return plain
    style = rng.random()
    if style < 0.4:
        return f"{value:,}"  # 12,400
    if style < 0.6:
        return f"{value:,}".replace(",", " ")  # 12 400
    if style < 0.7:
        return f"{value:,}".replace(",", "\u202f")  # narrow no-break space
    return plain


def _near_miss(value: str, rng: random.Random) -> str:
    # A number that holds the gold's digits but is not the gold: 2012 for 12, 145.2 for 45.2.
    kind = rng.randrange(5)
    if kind == 0:
        return str(rng.randint(1, 9)) + value
    if kind == 1:
        return value + str(rng.randint(0, 9))
    if kind == 2:
        return value + "." + str(rng.randint(1, 99))
    if kind == 3:
        return "0." + value.replace(".", "")
    return "-" + value


def numeric_corpus(size: int, seed: int = 20240611) -> Corpus:
    """``size`` synthetic numeric answers with a fixed seed.

    Sentences with grouped numbers (comma, space, narrow no-break space), decimals, ranges
    (hyphen and en dash), units and percent signs, Unicode minus signs, years and version numbers
    around the gold; about half hold the gold, a quarter a near miss (the gold inside a longer
    number, a decimal or a negative), the rest other numbers.
    """
    rng = random.Random(seed)
    golds: list[list[str]] = []
    texts: list[str] = []
    for _ in range(size):
        shape = rng.random()
        if shape < 0.45:
            value = rng.randint(1, 5_000_000)
            gold = str(value)
            shown = _group(value, rng)
        elif shape < 0.75:
            whole, frac = rng.randint(0, 999), rng.randint(1, 99)
            gold = f"{whole}.{frac}"
            shown = gold
        elif shape < 0.9:
            gold = str(rng.randint(1, 99))
            shown = gold
        else:
            value = -rng.randint(1, 500)
            gold = str(value)
            shown = "\u2212" + str(-value) if rng.random() < 0.5 else gold
        year = rng.randint(1900, 2030)
        unit = rng.choice(_UNITS)
        outcome = rng.random()
        if outcome < 0.5:
            number = shown
        elif outcome < 0.75:
            number = _near_miss(gold.lstrip("-"), rng)
        else:
            number = _group(rng.randint(1, 9_999_999), rng)
        template = rng.randrange(6)
        if template == 0:
            text = f"The plant produced {number} {unit} in {year}."
        elif template == 1:
            low = rng.randint(1, 50)
            text = f"Estimates range from {low}\u2013{number}{unit}, according to the {year} report."
        elif template == 2:
            text = f"It was {number}{unit} (version {rng.randint(1, 4)}.{rng.randint(0, 20)} of the survey)."
        elif template == 3:
            text = f"Answer: {number}"
        elif template == 4:
            text = f"In {year}, about {number} {unit} were recorded, up from {_group(rng.randint(1, 99_999), rng)}."
        else:
            text = f"Revenue was ${number} million in fiscal {year}-{(year + 1) % 100:02d}."
        alternatives = [gold]
        if rng.random() < 0.2:
            alternatives.append(f"{gold} {unit.strip()}")
        golds.append(alternatives)
        texts.append(text)
    return Corpus("numeric", golds, list(texts), texts)
