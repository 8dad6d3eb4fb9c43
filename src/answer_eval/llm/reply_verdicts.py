"""Which of the verdicts a grader's reply states is its verdict: the rules every reply reader shares.

A reply may state a verdict several times, and may quote verdicts that are not its own (the
graded answer's "Score: 5"). The readers of :mod:`answer_eval.llm.replies` find every statement
of a verdict, in four kinds: a top-level JSON object's verdict key, a named verdict in the words
("Score: 4", "Overall 2", "Verdict: no"), the reply's opening ("4 - clear", "Yes, ...") and, on a
two-point scale, a verdict phrased as a sentence ("The candidate is correct.", "The answer is: No.",
:mod:`answer_eval.llm.reply_labels`). Then, in this order:

1. **Quotes are not verdicts**: a statement inside quotation marks, inside a prompt block the
   reply copies, or copied word for word from a text the grader was shown
   (:mod:`answer_eval.llm.reply_quotes`) is dropped.
2. **The JSON object is the answer the prompt asks for**: named statements *before* the last JSON
   verdict are the grader's reasoning (per-criterion scores) and are dropped; one after it must
   agree with it. Every JSON verdict counts (two that disagree conflict).
3. **A JSON or named verdict outranks a phrased one** (a sentence may describe the graded answer
   rather than grade it). For a score, **a named score outranks the opening too** (a number may
   number a list); a yes/no or a choice the reply opens with always counts.
4. **A verdict marked final** ("Final score: 3", "Overall: 3", "Final verdict: no") outranks the
   named statements not so marked.
5. The statements left must agree: one value, the verdict (or, when that one value is not on the
   scale, no verdict, saying why). Two values are a **conflict**: nothing says which is final,
   so there is no verdict, and the problem names both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["JSON", "LEADING", "NAMED", "PHRASE", "Read", "Said", "decide"]

T = TypeVar("T")

JSON, NAMED, LEADING, PHRASE = "json", "named", "leading", "phrase"


@dataclass(frozen=True)
class Read(Generic[T]):
    """What a reply says.

    :param value: The verdict (a score, ``"A"``/``"B"``/``"TIE"``, or a bool); ``None`` when unreadable.
    :param explanation: The grader's reasoning (the whole reply when it gave no separate explanation).
    :param problem: Why there is no verdict (``None`` when there is one): no verdict found, two that
        conflict (both named), a value off the scale, a reply too long or nested too deeply.
    """

    value: T | None
    explanation: str
    problem: str | None = None

    @property
    def readable(self) -> bool:
        """Whether the reply gave a verdict (what may be cached: an unreadable reply is asked again)."""
        return self.value is not None


@dataclass(frozen=True)
class Said(Generic[T]):
    """One statement of a verdict in a reply.

    :param start: Where it starts in the reply.
    :param end: Where it ends.
    :param kind: :data:`JSON`, :data:`NAMED`, :data:`LEADING` or :data:`PHRASE`.
    :param value: The verdict it states; ``None`` when it states one that is not on the scale.
    :param words: It, as the reply says it (to name it in a conflict).
    :param final: Whether it says it is final ("Final score", "Overall").
    :param why: Why ``value`` is ``None``.
    :param explanation: A JSON object's explanation, if it gave one.
    """

    start: int
    end: int
    kind: str
    value: T | None
    words: str
    final: bool = False
    why: str | None = None
    explanation: str | None = None


def _kept(said: Sequence[Said[T]], leading_yields: bool) -> list[Said[T]]:
    last_json = max((one.end for one in said if one.kind == JSON), default=-1)
    kept = [one for one in said if one.kind != NAMED or one.start >= last_json]
    if any(one.kind in (JSON, NAMED) for one in kept):
        # A phrase (and, for a score, the opening) is a verdict only when nothing names one.
        kept = [one for one in kept if one.kind != PHRASE and not (leading_yields and one.kind == LEADING)]
    if any(one.final for one in kept):
        kept = [one for one in kept if one.final or one.kind == JSON]
    return kept


def decide(said: Sequence[Said[T]], text: str, leading_yields: bool) -> Read[T]:
    """The reply's verdict from its unquoted statements ``said`` (in reply order), by the module's rules."""
    kept = _kept(said, leading_yields)
    if not kept:
        return Read(None, text.strip(), "no verdict found")
    first = kept[0]
    other = next((one for one in kept if _key(one) != _key(first)), None)
    if other is not None:
        words = f"{_shown(first.words)} and {_shown(other.words)}"
        return Read(None, text.strip(), f"two verdicts, {words}, and nothing says which is final")
    explained = [one.explanation for one in kept if one.kind == JSON and one.explanation]
    explanation = explained[-1] if explained else text.strip()
    if first.value is None:
        return Read(None, explanation, first.why or f"{_shown(first.words)} is not a verdict on the scale")
    return Read(first.value, explanation)


def _key(one: Said[T]) -> tuple[bool, object]:
    return (True, one.value) if one.value is not None else (False, one.why or one.words)


def _shown(words: str) -> str:
    words = " ".join(words.split())
    return repr(words if len(words) <= 60 else words[:57] + "...")
