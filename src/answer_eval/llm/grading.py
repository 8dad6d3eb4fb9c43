"""Grading with an LLM on a rubric: its items, pointwise scores (sampled or by log-probabilities), pairwise choices.

The items an LLM grader reads: each input of a rubric as text, checked, with errors naming the caller's words.

A component names its inputs ``predicted_answers``, ``questions``, ``contexts`` and
``ground_truth_answers``; the command line names fields; the rubric names ``prediction``,
``instruction``, ``context`` and ``reference``. The checks here speak the caller's names.

Grading with an LLM on a rubric: pointwise scores and pairwise choices, with explanations and confidence.

**Self-consistency.** Each item is graded from ``samples`` replies drawn at the generator's
temperature. The result is their consensus and ``confidence`` is the share of *all* samples
asked for that agree with it (an unreadable or missing sample agrees with nothing), so one
sample gives 1.0 when it can be read, and five samples 4, 4, 5, 4, 3 give 4 with 0.6.
``samples_used`` says how many readable samples the grade rests on: fewer than asked when a
call budget stopped the draws, the server gave fewer replies or some could not be read.

- a score's consensus is the median of the readable samples (of the two middle values of an even
  count, the more frequent one, then the lower);
- a pairwise choice's consensus is the majority (``TIE`` when ``CANDIDATE`` and ``BASELINE`` are
  chosen equally often).

**Position bias.** With ``swap``, a pair is also asked with the responses in the other order; when
the two orders' consensus differ, the result is ``TIE``, and a flip when the choice crossed from
one response to the other (``flipped`` is ``None`` when one order could not be read). A pair the
call budget let be asked in one order only is ``budget_stop``, not decided by that order.

**Failures are data**, per item: ``error`` (the generator failed after its retries),
``budget_stop`` (the call budget was spent, or every reply was cut by the token limit),
``refusal`` (the grader declined, or its reply was filtered) and ``parse_failure`` (no reply could
be read: its detail says why, e.g. the two verdicts that conflict). An item with at least one
readable sample is graded from those.

**Replies are read knowing what the grader was shown**: every untrusted text of the prompt (the
graded answer, the baseline, the other inputs) goes to the reader, so that a verdict the reply
only quotes from them is not taken for the grader's (:mod:`answer_eval.llm.replies`).

Pointwise grading by log-probabilities (``scoring="logprobs"``, G-Eval style): score and confidence from one call.

Each item is asked once, with ``logprobs: true, top_logprobs: 20``
(:data:`~answer_eval.llm.reply_cache.LOGPROB_REQUEST`, sent as the generator's ``generation_kwargs``
and part of the reply cache's key). The reply is read as a sampled one is (:func:`score_reader`), then the
score's token is found and its alternatives weighed (:func:`~answer_eval.llm.reply_cache.weigh`): the score is the
probability-weighted mean of the scale's values (a float; the output rounds it to 4 decimals), and
the confidence the probability of the most likely value, both renormalised over the scale's values
among the token's top alternatives.

A reply that is read but has no usable log-probabilities (the server ignores ``logprobs``, sends
malformed ones, or writes the score over several tokens) is the item's failure ``no_logprobs``, its
detail saying why: never a score taken from the text alone, which would pass a sampled grade off as
a weighed one. The other failures are as a sampled grade's. Only a reply that gives
a weighed score is cached, so the cache replays a logprob grade, and a failed one is asked again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.errors import FailureKind, OptionError
from answer_eval.inputs.reading import REFUSAL_FINISH_REASONS, read_output
from answer_eval.llm.caller_setup import Drawer, StructuredOutput, choice_schema, score_schema
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.replies import read_choice, read_score, refused, scale_words
from answer_eval.llm.reply_cache import LOGPROB_REQUEST, Weighed, weigh
from answer_eval.llm.rubric_prompts import (
    Rubric,
    pairwise_messages,
    pairwise_words,
    pointwise_messages,
    pointwise_words,
)
from answer_eval.llm.spending import Drawn, Sample
from answer_eval.llm.stated_verdicts import Read, Shown
from answer_eval.stats.significance import binomial_two_sided

__all__ = [
    "BASELINE",
    "CANDIDATE",
    "SCORINGS",
    "TIE",
    "Cost",
    "Draw",
    "Grade",
    "MissingInput",
    "PairGrade",
    "build_items",
    "check_scoring",
    "grade_by_logprobs",
    "grade_pairs",
    "grade_pointwise",
    "majority_choice",
    "median_consensus",
    "pair_reader",
    "score_reader",
    "win_figures",
]


class MissingInput(ValueError):
    """An input the rubric needs is not given, or is empty for one item.

    :param input_name: The rubric's name of the input.
    :param position: The item (``None``: the whole input is missing).
    """

    def __init__(self, message: str, input_name: str, position: int | None) -> None:
        super().__init__(message)
        self.input_name = input_name
        self.position = position


def _part(value: Any) -> str | None:
    content = getattr(value, "content", None)  # a Haystack Document
    if isinstance(content, str):
        return content
    return read_output(value).text


def as_text(value: Any, input_name: str) -> str | None:
    """One input as text: a prediction in any form the package reads; several contexts or references joined."""
    if value is None:
        return None
    if input_name == "prediction":
        return read_output(value).text
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        parts = [text for part in value if (text := _part(part)) is not None]
        if not parts:
            return None
        if input_name == "reference" and len(parts) > 1:
            return "Any of these is a correct response:\n" + "\n".join(f"- {part}" for part in parts)
        return "\n\n".join(parts)
    return _part(value)


def _column(rubric: Rubric, name: str, values: Sequence[Any] | None, size: int, called: str) -> list[str | None]:
    required = name in rubric.inputs
    if values is None:
        if required:
            raise MissingInput(f"metric {rubric.name!r} needs {called} ({name}), one per predicted answer", name, None)
        return [None] * size
    if len(values) != size:
        raise ValueError(f"{called} has {len(values)} items where there are {size} predicted answers")
    texts = [as_text(value, name) for value in values]
    if required:
        for position, text in enumerate(texts):
            if name != "prediction" and (text is None or not text.strip()):
                message = f"metric {rubric.name!r} needs {called} ({name}); item {position} has none"
                raise MissingInput(message, name, position)
    return texts


def build_items(
    rubric: Rubric, columns: Mapping[str, Sequence[Any] | None], called: Mapping[str, str]
) -> list[dict[str, str | None]]:
    """One mapping per item, by rubric input name, from ``columns`` (input name to values, ``None``: not given).

    :param called: How the caller names each input, for the errors.
    :raises ValueError: For a required input not given, or empty at a position; columns of other lengths.
    """
    size = len(columns["prediction"] or ())
    texts = {
        name: _column(rubric, name, columns.get(name), size, called.get(name, name))
        for name in rubric.shown_inputs()
        if name != "prediction"
    }
    predictions = _column(rubric, "prediction", columns["prediction"], size, called.get("prediction", "prediction"))
    return [
        {"prediction": predictions[index], **{name: values[index] for name, values in texts.items()}}
        for index in range(size)
    ]


CANDIDATE, BASELINE, TIE = "CANDIDATE", "BASELINE", "TIE"
Draw = Callable[[Sequence[tuple[str, str]], int, Callable[[Sample], bool]], Awaitable[Drawn]]
"""How an item's replies are drawn: :meth:`ChatCaller.draw`, or in a structured format (:mod:`.structured`)."""
_CUT_REASONS = frozenset({"length", "content_filter"})


@dataclass(frozen=True)
class Cost:
    """What grading one item cost: requests (retries included) and the tokens reported."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def plus(self, drawn: Drawn) -> Cost:
        """The sum of this cost and the cost of ``drawn``."""
        return Cost(
            self.calls + drawn.calls,
            self.prompt_tokens + drawn.prompt_tokens,
            self.completion_tokens + drawn.completion_tokens,
        )


@dataclass(frozen=True)
class Grade:
    """One item's pointwise grade.

    :param score: The consensus score on the rubric's scale; scored by log-probabilities, their weighted
        mean, a float; ``None`` on failure.
    :param explanation: The grader's reasoning for it (of a sample that gave the consensus).
    :param confidence: The share of samples that agree with the score; ``None`` on failure.
    :param failure_kind: ``None``, or why there is no score (see the module docstring).
    :param detail: The failure in words.
    :param samples: Each sample's score (``None``: unreadable).
    :param cost: The requests and tokens spent.
    :param samples_used: The readable samples the score rests on (0 on failure; ``None``: no grader
        was asked, the response had no text). Fewer than asked: a budget, a server giving fewer
        replies or unreadable ones cut the consensus short.
    :param cut_replies: Replies cut by the token limit or the content filter (``finish_reason``
        ``length`` or ``content_filter``; Haystack's generator warns of each).
    """

    score: int | float | None
    explanation: str | None
    confidence: float | None
    failure_kind: str | None
    detail: str | None
    samples: tuple[int | None, ...]
    cost: Cost
    samples_used: int | None = None
    cut_replies: int = 0


@dataclass(frozen=True)
class PairGrade:
    """One pair's choice: ``CANDIDATE``, ``BASELINE`` or ``TIE``.

    :param choice: The consensus choice; ``None`` on failure.
    :param explanation: The grader's reasoning for it.
    :param confidence: The share of samples (both orders) that agree with the choice.
    :param flipped: With swap, whether the choice changed with the order (then ``TIE``).
    :param failure_kind: ``None``, or why there is no choice.
    :param detail: The failure in words.
    :param samples: Each sample's choice, forward order first (``None``: unreadable).
    :param cost: The requests and tokens spent.
    :param samples_used: The readable samples (both orders) the choice rests on, as :attr:`Grade.samples_used`.
    :param cut_replies: Replies cut by the token limit or the content filter, as :attr:`Grade.cut_replies`.
    """

    choice: str | None
    explanation: str | None
    confidence: float | None
    flipped: bool | None
    failure_kind: str | None
    detail: str | None
    samples: tuple[str | None, ...]
    cost: Cost
    samples_used: int | None = None
    cut_replies: int = 0


def median_consensus(values: Sequence[int]) -> int:
    """The median of ``values`` (not empty); of two middle values, the more frequent, then the lower."""
    ordered = sorted(values)
    low, high = ordered[(len(ordered) - 1) // 2], ordered[len(ordered) // 2]
    counts = Counter(ordered)
    return high if counts[high] > counts[low] else low


def majority_choice(choices: Sequence[str]) -> str:
    """The most frequent choice (not empty); ``TIE`` when the candidate and the baseline are chosen as often."""
    counts = Counter(choices)
    if counts[CANDIDATE] == counts[BASELINE]:
        return TIE if counts[CANDIDATE] or counts[TIE] else choices[0]
    best = max((CANDIDATE, BASELINE), key=lambda choice: counts[choice])
    return best if counts[best] >= counts[TIE] else TIE


def win_figures(wins: int, losses: int, ties: int) -> dict[str, Any]:
    """Wins, losses, ties, the win rate (a tie counts half) and the sign test's two-sided p-value (ties left out)."""
    graded = wins + losses + ties
    return {
        "wins": wins,
        "losses": losses,
        "ties": ties,
        "win_rate": (wins + ties / 2) / graded if graded else None,
        "p_value": binomial_two_sided(wins, wins + losses) if graded else None,
    }


def score_reader(rubric: Rubric, item: Mapping[str, str | None]) -> Callable[[str], Read[int]]:
    """How a reply to the pointwise prompt of ``item`` is read (``reader(text).readable``: whether it gave a grade)."""
    examples = rubric.examples
    shown = Shown(
        [*(item.get(name) for name in rubric.shown_inputs()), *(text for one in examples for _, text in one.inputs)],
        pointwise_words(rubric),
        [one.explanation for one in examples],
    )
    words = scale_words([(rating.value, rating.label) for rating in rubric.scale])
    return lambda text: read_score(text, rubric.allows, shown, words)


def pair_reader(rubric: Rubric, item: Mapping[str, str | None], pair: Sequence[str]) -> Callable[[str], Read[str]]:
    """How a reply to the pairwise prompt of ``item`` and ``pair`` (the two responses, either order) is read."""
    shown = Shown(
        [*(item.get(name) for name in rubric.shown_inputs() if name != "prediction"), *pair], pairwise_words(rubric)
    )
    return lambda text: read_choice(text, shown)


def _sample_failure(sample: Sample) -> str:
    if sample.finish_reason in REFUSAL_FINISH_REASONS or refused(sample.text):
        return FailureKind.REFUSAL
    if sample.finish_reason == "length":
        return FailureKind.BUDGET_STOP
    return FailureKind.PARSE_FAILURE


def _failure(drawn: Sequence[Drawn], reads: Sequence[tuple[Sample, Read[Any]]]) -> tuple[str, str]:
    """Why no sample could be read: the call's failure, else the most common sample failure (with the reader's why)."""
    for one in drawn:
        if one.failure is not None and len(one.samples) == 0:
            return one.failure, one.detail or one.failure
    kinds = Counter(_sample_failure(sample) for sample, _ in reads)
    kind = kinds.most_common(1)[0][0] if kinds else FailureKind.ERROR
    sample, read = next(((s, r) for s, r in reads if _sample_failure(s) == kind), (Sample(""), Read(None, "")))
    why = f" ({read.problem})" if kind == FailureKind.PARSE_FAILURE and read.problem else ""
    return kind, f"reply not read{why}: {sample.text[:200]!r}"


async def grade_one(
    caller: ChatCaller, rubric: Rubric, item: Mapping[str, str | None], samples: int, draw: Draw | None = None
) -> Grade:
    """The pointwise grade of one item (its inputs by rubric input name); no response text: no call.

    :param draw: How replies are drawn (default: ``caller.draw``, the prompt alone).
    """
    if not (item.get("prediction") or "").strip():
        return Grade(None, None, None, FailureKind.PARSE_FAILURE, "no response text", (), Cost())
    read = score_reader(rubric, item)
    # Only a reply that gives a grade is cached: a failed one is asked again next time.
    drawn = await (draw or caller.draw)(pointwise_messages(rubric, item), samples, lambda s: read(s.text).readable)
    reads = [read(sample.text) for sample in drawn.samples]
    scores = tuple(one.value for one in reads) + (None,) * (samples - len(reads))
    cost, cut = Cost().plus(drawn), _cut(drawn.samples)
    readable = [value for value in scores if value is not None]
    if not readable:
        kind, detail = _failure([drawn], list(zip(drawn.samples, reads, strict=True)))
        return Grade(None, None, None, kind, detail, scores, cost, 0, cut)
    score = median_consensus(readable)
    explanation = next(one.explanation for one in reads if one.value == score)
    return Grade(score, explanation, scores.count(score) / samples, None, None, scores, cost, len(readable), cut)


def _cut(samples: Sequence[Sample]) -> int:
    return sum(1 for sample in samples if sample.finish_reason in _CUT_REASONS)


async def grade_pointwise(
    caller: ChatCaller,
    rubric: Rubric,
    items: Sequence[Mapping[str, str | None]],
    samples: int = 1,
    structured: StructuredOutput | None = None,
) -> list[Grade]:
    """Grade every item, at most ``caller.concurrency`` requests in flight.

    :param structured: The formats of structured output to ask in (``None``: the prompt alone).
    """
    draw = None if structured is None else structured.drawer(caller, "grade", score_schema(rubric.values)).draw
    return await caller.each(lambda item: grade_one(caller, rubric, item, samples, draw), items)


def _choices(reads: Sequence[Read[str]], samples: int, swapped: bool) -> list[tuple[str | None, str]]:
    """Each sample's choice in candidate/baseline terms, with its explanation (missing samples: ``None``)."""
    names = {"A": BASELINE, "B": CANDIDATE} if swapped else {"A": CANDIDATE, "B": BASELINE}
    choices = [(None if r.value is None else names.get(r.value, TIE), r.explanation) for r in reads]
    return choices + [(None, "")] * (samples - len(choices))


async def grade_pair(
    caller: ChatCaller,
    rubric: Rubric,
    item: Mapping[str, str | None],
    pair: tuple[str | None, str | None],
    samples: int,
    swap: bool,
    draw: Draw | None = None,
) -> PairGrade:
    """The choice between ``pair`` = (candidate, baseline) for one item, asked in both orders with ``swap``.

    A response with no text loses to one with text, without a call (two without text tie).
    ``draw``: how replies are drawn (default: ``caller.draw``, the prompt alone).
    """
    candidate, baseline = pair
    if candidate is None or baseline is None or not candidate.strip() or not baseline.strip():
        return _without_call(candidate, baseline)
    read = pair_reader(rubric, item, (candidate, baseline))
    orders = [pairwise_messages(rubric, item, candidate, baseline)]
    if swap:
        orders.append(pairwise_messages(rubric, item, baseline, candidate))
    can_read = lambda sample: read(sample.text).readable  # noqa: E731 - only a reply giving a choice is cached
    drawn = list(await asyncio.gather(*((draw or caller.draw)(messages, samples, can_read) for messages in orders)))
    cost, cut = Cost(), sum(_cut(one.samples) for one in drawn)
    for one in drawn:
        cost = cost.plus(one)
    reads = [[read(sample.text) for sample in one.samples] for one in drawn]
    per_order = [_choices(order, samples, swapped=position == 1) for position, order in enumerate(reads)]
    every = tuple(choice for order in per_order for choice, _ in order)
    consensus = [_order_consensus(order) for order in per_order]
    readable = [choice for choice in consensus if choice is not None]
    unasked = next((one for one in drawn if one.failure == FailureKind.BUDGET_STOP and not one.samples), None)
    if swap and unasked is not None and len(readable) == 1:
        # One order alone cannot show position bias: a pair the budget asked one way only is not decided that way.
        detail = f"{unasked.detail} before the pair was asked in both orders"
        return PairGrade(None, None, None, None, FailureKind.BUDGET_STOP, detail, every, cost, 0, cut)
    if not readable:
        pairs = [
            pair
            for one, read_order in zip(drawn, reads, strict=True)
            for pair in zip(one.samples, read_order, strict=True)
        ]
        kind, detail = _failure(drawn, pairs)
        return PairGrade(None, None, None, None, kind, detail, every, cost, 0, cut)
    # Both orders read: a choice that differs is no choice (a tie), and a flip when it crossed sides.
    # One order unreadable: the other decides alone, and no flip could be seen (None).
    both = len(readable) == 2
    choice = TIE if both and readable[0] != readable[1] else readable[0]
    flipped = set(readable) == {CANDIDATE, BASELINE} if both else None
    confidence = sum(1 for c in every if c == choice) / len(every)
    explanation = _pair_explanation(per_order, choice, bool(flipped))
    used = sum(1 for c in every if c is not None)
    return PairGrade(choice, explanation, confidence, flipped if swap else None, None, None, every, cost, used, cut)


def _order_consensus(order: Sequence[tuple[str | None, str]]) -> str | None:
    read = [choice for choice, _ in order if choice is not None]
    return majority_choice(read) if read else None


def _without_call(candidate: str | None, baseline: str | None) -> PairGrade:
    has_candidate, has_baseline = bool((candidate or "").strip()), bool((baseline or "").strip())
    choice = CANDIDATE if has_candidate else BASELINE if has_baseline else TIE
    words = {CANDIDATE: "The baseline has no response text.", BASELINE: "The candidate has no response text."}
    return PairGrade(choice, words.get(choice, "Neither has response text."), 1.0, None, None, None, (), Cost())


def _pair_explanation(per_order: Sequence[Sequence[tuple[str | None, str]]], choice: str, flipped: bool) -> str:
    if flipped:
        first, second = (next((words for c, words in order if c is not None), "") for order in per_order)
        return (
            "The choice changed with the order of the responses (position bias), so it is a tie. "
            f"With the candidate shown as A: {first} With the baseline shown as A: {second}"
        )
    for position, order in enumerate(per_order):
        # The swapped order's words call the baseline A: said so, as the reader sees the forward order.
        note = "" if position == 0 else "(Asked with the baseline shown as A.) "
        for said, words in order:
            if said == choice:
                return note + words
    return next((words for order in per_order for said, words in order if said is not None), "")


async def grade_pairs(
    caller: ChatCaller,
    rubric: Rubric,
    items: Sequence[Mapping[str, str | None]],
    pairs: Sequence[tuple[str | None, str | None]],
    samples: int = 1,
    swap: bool = True,
    structured: StructuredOutput | None = None,
) -> list[PairGrade]:
    """Compare every (candidate, baseline) pair, at most ``caller.concurrency`` requests in flight.

    :param structured: The formats of structured output to ask in (``None``: the prompt alone).
    """
    pairs_of = list(zip(items, pairs, strict=True))
    draw = None if structured is None else structured.drawer(caller, "choice", choice_schema()).draw
    return await caller.each(lambda one: grade_pair(caller, rubric, one[0], one[1], samples, swap, draw), pairs_of)


SCORINGS = ("samples", "logprobs")
"""How a pointwise grade is scored: the consensus of sampled replies, or the log-probabilities of one."""


def check_scoring(scoring: object, samples: int, pairwise: bool) -> None:
    """Refuse a scoring that is not one of :data:`SCORINGS`, and logprobs with several samples or pairwise.

    :raises OptionError: Naming the option.
    """
    if not isinstance(scoring, str) or scoring not in SCORINGS:
        raise OptionError("scoring", f"is 'samples' or 'logprobs', got {scoring!r}")
    if scoring != "logprobs":
        return
    if pairwise:
        raise OptionError("scoring", "logprobs weighs a score on a scale; a pairwise choice is not weighed: drop one")
    if samples != 1:
        raise OptionError("samples", f"is 1 with scoring logprobs (one call an item gives the score), got {samples}")


async def grade_one_by_logprobs(
    caller: ChatCaller, rubric: Rubric, item: Mapping[str, str | None], drawer: Drawer | None = None
) -> Grade:
    """The logprob-weighted grade of one item (its inputs by rubric input name); no response text: no call.

    :param drawer: Draws in a structured format (:mod:`answer_eval.llm.caller_setup`), log-probabilities
        asked with it; ``None``: the prompt alone.
    """
    if not (item.get("prediction") or "").strip():
        return Grade(None, None, None, FailureKind.PARSE_FAILURE, "no response text", (), Cost())
    read, values = score_reader(rubric, item), rubric.values

    def weighed(sample: Sample) -> Weighed | str | None:
        got = read(sample.text).value
        return None if got is None else weigh(sample.logprobs, got, values)

    # Only a reply with a weighed score is cached: one without log-probabilities is asked again next time.
    messages, readable = pointwise_messages(rubric, item), lambda s: isinstance(weighed(s), Weighed)
    if drawer is None:
        drawn = await caller.draw(messages, 1, readable, request=LOGPROB_REQUEST)
    else:
        drawn = await drawer.draw(messages, 1, readable)
    cost, cut = Cost().plus(drawn), _cut(drawn.samples)
    reads = [(sample, read(sample.text)) for sample in drawn.samples]
    if not reads or reads[0][1].value is None:
        kind, detail = _failure([drawn], reads)
        return Grade(None, None, None, kind, detail, (None,), cost, 0, cut)
    sample, got = reads[0]
    result = weighed(sample)
    if not isinstance(result, Weighed):
        detail = f"{result} (the reply read as {got.value}: {sample.text[:200]!r})"
        return Grade(None, None, None, FailureKind.NO_LOGPROBS, detail, (got.value,), cost, 0, cut)
    return Grade(result.score, got.explanation, result.confidence, None, None, (got.value,), cost, 1, cut)


async def grade_by_logprobs(
    caller: ChatCaller,
    rubric: Rubric,
    items: Sequence[Mapping[str, str | None]],
    structured: StructuredOutput | None = None,
) -> list[Grade]:
    """Grade every item by log-probabilities, at most ``caller.concurrency`` requests in flight.

    :param structured: The formats of structured output to ask in (``None``: the prompt alone).
    """
    schema = score_schema(rubric.values)
    drawer = None if structured is None else structured.drawer(caller, "grade", schema, LOGPROB_REQUEST)
    return await caller.each(lambda item: grade_one_by_logprobs(caller, rubric, item, drawer), items)
