"""Pointwise grading by log-probabilities (``scoring="logprobs"``, G-Eval style): score and confidence from one call.

Each item is asked once, with ``logprobs: true, top_logprobs: 20`` (:data:`~answer_eval.llm.logprobs.LOGPROB_REQUEST`,
sent as the generator's ``generation_kwargs`` and part of the reply cache's key). The reply is read as
a sampled one is (:func:`~answer_eval.llm.grading.score_reader`), then the score's token is found and
its alternatives weighed (:func:`~answer_eval.llm.logprobs.weigh`): the score is the
probability-weighted mean of the scale's values (a float; the output rounds it to 4 decimals), and
the confidence the probability of the most likely value, both renormalised over the scale's values
among the token's top alternatives.

A reply that is read but has no usable log-probabilities (the server ignores ``logprobs``, sends
malformed ones, or writes the score over several tokens) is the item's failure ``no_logprobs``, its
detail saying why: never a score taken from the text alone, which would pass a sampled grade off as
a weighed one. The other failures are as :mod:`answer_eval.llm.grading`'s. Only a reply that gives
a weighed score is cached, so the cache replays a logprob grade, and a failed one is asked again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from answer_eval.errors import FailureKind, OptionError
from answer_eval.llm.calls import ChatCaller, Sample
from answer_eval.llm.grading import Cost, Grade, _cut, _failure, score_reader
from answer_eval.llm.logprobs import LOGPROB_REQUEST, Weighed, weigh
from answer_eval.llm.prompts import pointwise_messages
from answer_eval.llm.rubrics import Rubric
from answer_eval.llm.structured import Drawer, StructuredOutput, score_schema

__all__ = ["SCORINGS", "check_scoring", "grade_by_logprobs", "grade_one_by_logprobs"]

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

    :param drawer: Draws in a structured format (:mod:`answer_eval.llm.structured`), log-probabilities
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
