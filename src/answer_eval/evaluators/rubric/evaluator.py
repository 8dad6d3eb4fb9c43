"""The LLM rubric grader (``answer-eval rubric``): pointwise scores or pairwise choices from an OpenAI-style server.

The evaluator is made from its options alone, as every evaluator of the contract: the model, the
server's URL and the name of the environment variable that holds the API key. The key itself is
read when the evaluator warms up, never kept in the options, a signature, an output or a cache; a
value of ``--api-key-env`` that cannot be a variable's name (the key itself, given by mistake) is
refused without being shown, and the name is shown only when that variable is set.

``--max-calls`` bounds the whole file, across ``--resume``: a resumed run counts the requests of the
rows already written (their ``calls``) as spent (:meth:`RubricCore.resumed`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.errors import ItemError, OptionError, RowsKept
from answer_eval.evaluators.base import Columns, Evaluator, Options, Role, option
from answer_eval.evaluators.rubric.summary import RubricSummary, nothing_to_use
from answer_eval.llm.calls import Budget, ChatCaller, GraderUnavailable, Usage
from answer_eval.llm.grading import Grade, PairGrade, grade_pairs, grade_pointwise
from answer_eval.llm.items import MissingInput, build_items
from answer_eval.llm.options import SamplingOptions
from answer_eval.llm.prompts import PROMPT_VERSION
from answer_eval.llm.rubrics import Rubric, catalogue, rubric
from answer_eval.llm.secrets import url_secrets, without_credentials
from answer_eval.llm.servers import check_key_variable, openai_caller, unavailable_advice

__all__ = ["RubricCore", "RubricOptions"]

_ROLE_OF_INPUT = {"prediction": "prediction", "instruction": "question", "context": "context", "reference": "reference"}


_RUBRIC_FILE_BYTES = 1024 * 1024  # a rubric is a few hundred bytes; /dev/zero is not one


def _rubric_file(path: str) -> Rubric:
    import json
    import stat

    try:
        # Non-blocking: a FIFO given as the rubric is refused, not waited on.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with open(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise OptionError("rubric_file", "is not a regular file")
            data = handle.read(_RUBRIC_FILE_BYTES + 1)
        if len(data) > _RUBRIC_FILE_BYTES:
            raise OptionError("rubric_file", f"is over {_RUBRIC_FILE_BYTES:,} bytes: not a rubric")
        return rubric(json.loads(data.decode("utf-8")))
    except OSError as exc:
        raise OptionError("rubric_file", f"cannot be read: {exc.strerror or exc}") from None
    except RecursionError:
        raise OptionError("rubric_file", "does not hold a rubric: nested too deeply") from None
    except OptionError:
        raise
    except ValueError as exc:
        raise OptionError("rubric_file", f"does not hold a rubric: {exc}") from None


@dataclass(frozen=True)
class _RubricFields(Options):
    """The rubric command's own options, a base of :class:`RubricOptions` so they come before the LLM's limits.

    (A dataclass lists its bases' fields first: the flags, ``to_dict`` and the signature keep this order.)
    """

    # Neither is signed as given: the signature names the rubric graded and its fingerprint instead.
    metric: str = option(
        "question_answering_quality",
        choices=tuple(catalogue()),
        help="the catalogue metric (default: %(default)s)",
        signed=False,
    )
    rubric_file: str | None = option(
        None, flag="--rubric", help="a JSON file with a rubric of your own (not --metric)", signed=False
    )
    pairwise: bool = option(False, help="compare each prediction with the --baseline-field answer")
    samples: int = option(1, help="replies per item; the consensus is the grade (default: %(default)s)")
    swap: bool = option(True, negate=True, flag="--no-swap", help="with --pairwise, ask each pair in one order only")
    model: str | None = option(None, help="the model's name on the server (required)")
    api_base_url: str | None = option(None, help="an OpenAI-compatible server (default: OpenAI's)")
    api_key_env: str = option(
        "OPENAI_API_KEY", help="the environment variable holding the API key (default: %(default)s)", signed=False
    )
    temperature: float | None = option(None, help="sampling temperature (default: the server's)")
    max_tokens: int | None = option(None, help="the longest reply, in tokens (default: the server's)")


@dataclass(frozen=True)
class RubricOptions(SamplingOptions, _RubricFields):
    """The options of :class:`RubricCore`: the metric, the sampling, the server and the limits.

    The limits and ``sampling`` are :class:`~answer_eval.llm.options.SamplingOptions`', as the rubric
    components name them (the reply cache is ``cache_path``, ``--cache`` on the command line).
    """

    def check(self) -> None:
        """The limits' checks; a positive sample count; a model; pairwise only for a metric that compares pairs."""
        super().check()
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise OptionError("samples", f"must be a positive integer, got {self.samples!r}")
        check_key_variable("api_key_env", self.api_key_env)
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise OptionError("temperature", f"must be between 0 and 2, got {self.temperature}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise OptionError("max_tokens", f"must be at least 1, got {self.max_tokens}")
        if self.rubric_file is not None and self.metric != "question_answering_quality":
            raise OptionError("rubric_file", "and --metric name two rubrics: give one")
        if not self.model:
            raise OptionError("model", "is required: the model's name on the server")
        if self.pairwise and not self.rubric().pairwise:
            pairs = ", ".join(name for name, item in catalogue().items() if item.pairwise)
            raise OptionError("pairwise", f"needs a metric that compares pairs ({pairs})")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RubricOptions:
        """As :meth:`Options.from_dict`; the reply cache's old key ``cache`` is named with its new one."""
        if "cache" in data:
            raise OptionError("cache", "is now cache_path (the rubric components' name; the flag stays --cache)")
        return super().from_dict(data)

    def rubric(self) -> Rubric:
        """The rubric graded: the file's, else the catalogue metric."""
        return rubric(self.metric) if self.rubric_file is None else _rubric_file(self.rubric_file)

    def signature(self, name: str) -> str:
        """The options' signature, with the rubric's name and fingerprint and the prompt version."""
        graded = self.rubric()
        head, _, rest = super().signature(name).partition("|")
        if self.api_base_url and url_secrets(self.api_base_url):  # a password in the URL is never shown
            rest = rest.replace(self.api_base_url, str(without_credentials(self.api_base_url)))
        return f"{head}|metric:{graded.name}|rubric:{graded.fingerprint}|prompt:v{PROMPT_VERSION}|{rest}"


class RubricCore(Evaluator):
    """An LLM grades each row on a rubric (or compares it with a baseline), with explanation and confidence."""

    name = "rubric"
    component = "RubricEvaluator"
    options_type = RubricOptions
    roles = (
        Role("prediction", "prediction", "the response graded"),
        Role("question", "question", "the instruction (the question and any instructions)", optional=True),
        Role("context", "context", "the text the response should rest on", optional=True),
        Role("reference", "reference", "the reference response", optional=True, fallbacks=("answers",)),
        Role("baseline", "baseline", "the baseline's response (with --pairwise)", optional=True),
    )
    local_only = "its cost is the LLM's, not the CPU's; raise --concurrency instead"
    batch_rows = 16
    options: RubricOptions

    def __init__(self, options: RubricOptions | None = None) -> None:
        """The grader; its generator is made when it warms up."""
        super().__init__(options)
        self.chosen = self.options.rubric()
        self.caller: ChatCaller | None = None
        self.budget: Budget | None = None  # the whole file's: --max-calls bounds the run, not a batch
        self._spent_before = 0  # requests of the rows a --resume keeps
        self.sent = Usage()  # this process's requests, of every batch: did any reach the server?

    def required(self) -> tuple[str, ...]:
        """The roles the metric needs (the baseline with ``--pairwise``)."""
        needed = [_ROLE_OF_INPUT[name] for name in self.chosen.inputs]
        return (*needed, "baseline") if self.options.pairwise else tuple(needed)

    def files_written(self) -> dict[str, str]:
        """The reply cache (``--cache``): the file driver keeps it apart from the input and the output."""
        cache = self.options.cache_path
        return {} if cache is None else {cache: "the reply cache, --cache"}

    def files_read(self) -> dict[str, str]:
        """The rubric file (``--rubric``): the file driver keeps the output from replacing it."""
        return {} if self.options.rubric_file is None else {self.options.rubric_file: "the rubric, --rubric"}

    def warm_up(self) -> None:
        """Make the OpenAI-compatible generator, its API key read from the environment now, and open the cache.

        A cache that cannot serve (see :mod:`answer_eval.llm.cache`) stops the run here, before any request.
        """
        if self.caller is not None:
            return
        options = self.options
        self.caller = openai_caller(
            model=str(options.model),
            api_base_url=options.api_base_url,
            api_key_env=options.api_key_env,
            limits=options,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
        )
        self.budget = self.caller.new_budget()
        self.budget.resume(self._spent_before)

    def resumed(self, summary: Any) -> None:
        """A ``--resume`` kept rows whose requests ``summary`` counts: they are spent from ``--max-calls``."""
        costs = getattr(summary, "costs", None)
        spent = costs.get("calls", 0) if isinstance(costs, dict) else 0
        self._spent_before = max(self._spent_before, int(spent))
        if self.budget is not None:
            self.budget.resume(self._spent_before)

    def outputs(self) -> dict[str, str]:
        """The grade (``score`` or ``choice``), explanation, confidence, failure kind and what the item cost."""
        grade = {"choice": "object", "flipped": "object"} if self.options.pairwise else {"score": "object"}
        costs = {"calls": "object", "prompt_tokens": "object", "completion_tokens": "object"}
        every = {**grade, "explanation": "object", "confidence": "object", "failure_kind": "object", **costs}
        return {**every, "samples_used": "object", "cut_replies": "object"}

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Grade a batch (every request of it in flight together, within the concurrency limit)."""
        self.warm_up()
        caller = self.caller
        assert caller is not None
        columns = {name: inputs.get(role) for name, role in _ROLE_OF_INPUT.items()}
        called = {name: f"field {role!r}" for name, role in _ROLE_OF_INPUT.items()}
        items = _items(self.chosen, columns, called)
        options = self.options
        try:
            if not options.pairwise:
                grades, usage = caller.run_sync(
                    lambda: grade_pointwise(caller, self.chosen, items, options.samples), self.budget
                )
                self._count(usage)
                return _pointwise_columns(grades)
            baselines = _items(self.chosen, {**columns, "prediction": inputs["baseline"]}, called)
            pairs = [(item["prediction"], base["prediction"]) for item, base in zip(items, baselines, strict=True)]
            work = lambda: grade_pairs(caller, self.chosen, items, pairs, options.samples, options.swap)  # noqa: E731
            pair_grades, usage = caller.run_sync(work, self.budget)
            self._count(usage)
        except GraderUnavailable as exc:
            # The file driver says which rows were kept and how to resume (only when some were).
            raise RowsKept(f"{exc}{unavailable_advice(exc, self.options.api_key_env)}") from None
        return _pairwise_columns(pair_grades)

    def new_summary(self) -> RubricSummary:
        """The mean score and its spread (or wins, losses, ties), failure kinds and the calls spent."""
        return RubricSummary(pairwise=self.options.pairwise, swap=self.options.swap, samples=self.options.samples)

    # -- issue 29: a run with nothing to show exits 3 (the command line's NothingGraded) --------------------------

    def _count(self, usage: Usage) -> None:
        self.sent.calls += usage.calls
        self.sent.unreachable += usage.unreachable

    def run_failure(self, summary: Any) -> str | None:
        """No item graded, or every request this process sent got no answer from the server (see the summary)."""
        server = without_credentials(self.options.api_base_url) if self.options.api_base_url else "OpenAI's API"
        return nothing_to_use(summary, self.sent, str(server))


def _items(chosen: Rubric, columns: Mapping[str, Any], called: Mapping[str, str]) -> list[dict[str, str | None]]:
    try:
        return build_items(chosen, columns, called)
    except MissingInput as exc:
        message = f"metric {chosen.name!r} needs {exc.input_name}, and this row has none"
        raise ItemError(message, _ROLE_OF_INPUT[exc.input_name], exc.position or 0) from None


def _cost_columns(grades: Sequence[Grade | PairGrade]) -> Columns:
    return {
        "calls": [grade.cost.calls for grade in grades],
        "prompt_tokens": [grade.cost.prompt_tokens for grade in grades],
        "completion_tokens": [grade.cost.completion_tokens for grade in grades],
        # issue 29: the samples a grade rests on (fewer than --samples: cut short) and the replies cut
        "samples_used": [grade.samples_used for grade in grades],
        "cut_replies": [grade.cut_replies for grade in grades],
    }


def _pointwise_columns(grades: Sequence[Grade]) -> Columns:
    return {
        "score": [grade.score for grade in grades],
        "explanation": [grade.explanation if grade.failure_kind is None else grade.detail for grade in grades],
        "confidence": [None if grade.confidence is None else round(grade.confidence, 4) for grade in grades],
        "failure_kind": [grade.failure_kind for grade in grades],
        **_cost_columns(grades),
    }


def _pairwise_columns(grades: Sequence[PairGrade]) -> Columns:
    return {
        "choice": [grade.choice for grade in grades],
        "flipped": [grade.flipped for grade in grades],
        "explanation": [grade.explanation if grade.failure_kind is None else grade.detail for grade in grades],
        "confidence": [None if grade.confidence is None else round(grade.confidence, 4) for grade in grades],
        "failure_kind": [grade.failure_kind for grade in grades],
        **_cost_columns(grades),
    }
