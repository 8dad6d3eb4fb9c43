"""The LLM rubric grader (``answer-eval rubric``): pointwise scores or pairwise choices from an OpenAI-style server.

The evaluator is made from its options alone, as every evaluator of the contract: the model, the
server's URL and the name of the environment variable that holds the API key. The key itself is
read when the evaluator warms up, never kept in the options, a signature, an output or a cache; a
value of ``--api-key-env`` that cannot be a variable's name (the key itself, given by mistake) is
refused without being shown, and the name is shown only when that variable is set.

``--max-calls`` bounds the whole file, across ``--resume``: a resumed run counts the requests of the
rows already written (their ``calls``) as spent (:meth:`RubricCore.resumed`).

``--examples FILE`` gives graded examples, a small JSONL file of labelled rows
(:func:`~answer_eval.inputs.jsonl.read_examples`),
read line by line by the rules of an input file (:func:`answer_eval.inputs.jsonl.parse_jsonl_line`):
a byte order mark is dropped from line 1, and a line that is not UTF-8, not JSON, not an object,
or gives a key twice (which value is meant is ambiguous) is refused naming ``FILE:LINE``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from answer_eval.errors import DuplicateKeyError, FailureKind, ItemError, OptionError, RowsKept, StoppedAfter
from answer_eval.evaluators.base import Columns, Evaluator, Options, Role, Socket, check_bool, check_str, option
from answer_eval.evaluators.rubric_jury import JURY_POOLS_SAMPLES, JuryResult, RubricJury
from answer_eval.evaluators.rubric_summary import (
    PAIRWISE_SOCKETS,
    POINTWISE_SOCKETS,
    RubricSummary,
    grade_columns,
    nothing_to_use,
)
from answer_eval.inputs.jsonl import decode_json, json_failure, read_examples, read_small_file
from answer_eval.llm.call_limits import keeping_answered
from answer_eval.llm.caller_setup import (
    STRUCTURED,
    SamplingOptions,
    StructuredOutput,
    check_key_variable,
    openai_caller,
    unavailable_advice,
)
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.generators import GraderUnavailable, shown_generator, url_secrets, without_credentials
from answer_eval.llm.grading import (
    SCORINGS,
    Grade,
    MissingInput,
    PairGrade,
    build_items,
    check_scoring,
    grade_by_logprobs,
    grade_pairs,
    grade_pointwise,
)
from answer_eval.llm.jury import judge_column, server_panel
from answer_eval.llm.rubric_prompts import PROMPT_VERSION, Rubric, catalogue, rubric
from answer_eval.llm.spending import MAX_TOKEN_COUNT, Budget, Usage

__all__ = ["RubricCore", "RubricOptions"]


_ROLE_OF_INPUT = {"prediction": "prediction", "instruction": "question", "context": "context", "reference": "reference"}
_FIELD_NAMES = {name: f"field {role!r}" for name, role in _ROLE_OF_INPUT.items()}
_SERVER_OPTIONS = ("model", "api_base_url", "temperature", "max_tokens")

MAX_SAMPLES = 128
"""The most samples an item is graded from (OpenAI's most replies to one request, ``n``)."""
"""The options a chat generator given replaces in the signature (it is the server, with its own options)."""


_RUBRIC_FILE_BYTES = 1024 * 1024  # a rubric is a few hundred bytes; /dev/zero is not one


def _rubric_file(path: str) -> Rubric:
    # Read as input files are: a byte order mark dropped, a key given twice refused (not the last kept).
    try:
        data = decode_json(read_small_file(path, "rubric_file", _RUBRIC_FILE_BYTES, "a rubric"))
    except DuplicateKeyError as exc:
        raise OptionError("rubric_file", f"gives the key {exc.key!r} twice in one JSON object") from None
    except OSError as exc:
        raise OptionError("rubric_file", f"cannot be read: {exc.strerror or exc}") from None
    except OptionError:  # a FIFO, a device, too large: already worded
        raise
    except UnicodeDecodeError:
        raise OptionError("rubric_file", "is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, a number past Python's digit limit
        raise OptionError("rubric_file", f"{path} is not valid JSON: {json_failure(exc)}") from None
    try:
        return rubric(data)
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
    # A component may give a rubric of its own inline, as a dict; the command line, a --rubric file.
    metric: str | Mapping[str, Any] = option(
        "question_answering_quality",
        choices=tuple(catalogue()),
        help="the catalogue metric (see docs/model-based-metrics.md), or, from Python, a rubric of your own as a "
        "dict (name, description, criteria as [name, description] pairs, scale as [value, label] pairs, "
        "inputs, optionally optional_inputs and pairwise) (default: %(default)s)",
        signed=False,
    )
    rubric_file: str | None = option(
        None, flag="--rubric", help="a JSON file with a rubric of your own (not --metric)", signed=False
    )
    examples_file: str | None = option(
        None,
        flag="--examples",
        help="a JSONL file of graded examples shown to the grader (few-shot): per line the input fields "
        "(prediction, question, context, reference), score and explanation",
        signed=False,
    )
    pairwise: bool = option(False, help="compare each prediction with the --baseline-field answer")
    samples: int = option(
        1,
        help="replies per item (self-consistency): the consensus is the grade, and the share agreeing with it "
        "the confidence; drawn at the generator's temperature, so give one above 0 with several (default: "
        "%(default)s)",
    )
    swap: bool = option(
        True,
        negate=True,
        flag="--no-swap",
        help="pairwise: ask each pair in one order only (by default each is asked in both orders too, and a "
        "choice that flips with the order is position bias: a tie)",
    )
    model: str | tuple[str, ...] | None = option(
        None,
        panel="model",
        help="the model's name on the server (required); given two or more times, a jury of those models",
    )
    api_base_url: str | tuple[str, ...] | None = option(
        None,
        panel="model",
        help="an OpenAI-compatible server (default: OpenAI's); for a jury, once for all or once per --model",
    )
    api_key_env: str | tuple[str, ...] = option(
        "OPENAI_API_KEY",
        panel="model",
        help="the environment variable holding the API key (default: %(default)s); for a jury, once for all or "
        "once per --model",
        signed=False,
    )
    temperature: float | None = option(None, help="sampling temperature (default: the server's)")
    max_tokens: int | None = option(None, help="the longest reply, in tokens (default: the server's)")
    scoring: str = option(
        "samples",
        choices=SCORINGS,
        help="samples (the consensus of the samples' replies) or logprobs (one reply per item, with logprobs "
        "and top_logprobs 20 asked: the score is the probability-weighted mean of the scale's values at the "
        "score's token, to 4 decimals, the confidence the probability of the most likely value; needs samples "
        "1; a reply without them fails no_logprobs) (default: %(default)s)",
    )


@dataclass(frozen=True)
class RubricOptions(SamplingOptions, _RubricFields):
    """The options of :class:`RubricCore`: the metric, the sampling, the server and the limits.

    The limits and ``sampling`` are :class:`~answer_eval.llm.caller_setup.SamplingOptions`', as the rubric
    components name them (the reply cache is ``cache_path``, ``--cache`` on the command line).

    :param structured: Structured output (:mod:`answer_eval.llm.caller_setup`): ``auto`` (a JSON
        schema from an OpenAI-compatible server, falling back on a refusal), ``json_schema``,
        ``json_object`` or ``off``. Signed: it changes the replies.
    """

    structured: str = option(
        "auto",
        choices=STRUCTURED,
        help="ask for a JSON schema (response_format): auto (json_schema, then json_object, then the prompt "
        "alone, each after the server refused the one before), json_schema, json_object or off (default: %(default)s)",
    )

    def check(self) -> None:
        """The limits' checks; a positive sample count; a model; pairwise only for a metric that compares pairs."""
        super().check()
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise OptionError("samples", f"must be a positive integer, got {self.samples!r}")
        if self.samples > MAX_SAMPLES:
            # A grade holds one slot a sample: 10**8 samples filled memory, 10**400 raised OverflowError.
            shown = str(self.samples) if len(str(self.samples)) <= 20 else f"{str(self.samples)[:20]}..."
            raise OptionError("samples", f"must be at most {MAX_SAMPLES} (OpenAI's most for n), got {shown}")
        check_bool("pairwise", self.pairwise)
        check_bool("swap", self.swap)
        check_str("structured", self.structured)
        if self.structured not in STRUCTURED:
            raise OptionError("structured", f"is one of {', '.join(STRUCTURED)}, got {self.structured!r}")
        for variable in self.api_key_env if isinstance(self.api_key_env, tuple) else (self.api_key_env,):
            check_key_variable("api_key_env", variable)
        check_scoring(self.scoring, self.samples, self.pairwise)
        if self.judges() and self.scoring == "logprobs":
            raise OptionError("scoring", JURY_POOLS_SAMPLES)
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise OptionError("temperature", f"must be between 0 and 2, got {self.temperature}")
        if self.max_tokens is not None and not 1 <= self.max_tokens <= MAX_TOKEN_COUNT:
            # No reply is a billion tokens long; a larger bound (400 digits) is a typo, sent and estimated as no number
            shown = str(self.max_tokens) if len(str(self.max_tokens)) <= 20 else f"{str(self.max_tokens)[:20]}..."
            raise OptionError("max_tokens", f"must be between 1 and {MAX_TOKEN_COUNT:,}, got {shown}")
        if self.rubric_file is not None and self.metric != "question_answering_quality":
            raise OptionError("rubric_file", "and --metric name two rubrics: give one")
        if self.pairwise and self.rubric().examples:
            raise OptionError("pairwise", "shows no graded examples: they are scores, for pointwise grading")
        if self.pairwise and not self.rubric().pairwise:
            pairs = ", ".join(name for name, item in catalogue().items() if item.pairwise)
            graded = self.rubric().name
            raise OptionError("pairwise", f"needs a metric that compares pairs: {graded!r} does not ({pairs} do)")

    def judges(self) -> list[tuple[str, str | None, str]]:
        """A jury's judges named by the options (``--model`` given several times); ``[]`` for one model."""
        return server_panel("model", self.model, self.api_base_url, self.api_key_env)

    def judge_options(self, judge: int) -> RubricOptions:
        """The options of one judge of :meth:`judges`: its model, server and key; the reply cache the first's alone.

        (The panel shares the first judge's cache object: one file, one lock.)
        """
        model, url, key = self.judges()[judge]
        cache = self.cache_path if judge == 0 else None
        return replace(self, model=model, api_base_url=url, api_key_env=key, cache_path=cache)

    def rubric(self) -> Rubric:
        """The rubric graded: the file's, else the catalogue metric (or the rubric given inline).

        The examples of ``examples_file``, when given, follow the rubric's own.
        """
        if self.rubric_file is not None:
            graded = _rubric_file(self.rubric_file)
        else:
            graded = rubric(dict(self.metric) if isinstance(self.metric, Mapping) else self.metric)
        if self.examples_file is None:
            return graded
        try:
            return replace(graded, examples=(*graded.examples, *read_examples(self.examples_file, _ROLE_OF_INPUT)))
        except OptionError:
            raise
        except ValueError as exc:
            raise OptionError("examples_file", f"does not fit the rubric: {exc}") from None

    def signed_items(self) -> list[tuple[str, Any]]:
        """The signed options: ``scoring`` only when it is ``logprobs``, ``swap`` only with ``pairwise`` (moot else)."""
        moot = {"scoring": self.scoring == "samples", "swap": not self.pairwise}
        return [(key, value) for key, value in super().signed_items() if not moot.get(key)]

    def signature(self, name: str, items: Sequence[tuple[str, Any]] | None = None) -> str:
        """The options' signature, with the rubric's name and fingerprint and the prompt version.

        :param items: As :meth:`Options.signature`'s (the core's, with the chat generator it was given).
        """
        graded = self.rubric()
        head, _, rest = super().signature(name, items).partition("|")
        urls = self.api_base_url if isinstance(self.api_base_url, tuple) else (self.api_base_url,)
        for url in urls:
            if url and url_secrets(url):  # a password in the URL is never shown
                rest = rest.replace(url, str(without_credentials(url)))
        return f"{head}|metric:{graded.name}|rubric:{graded.fingerprint}|prompt:v{PROMPT_VERSION}|{rest}"


class RubricCore(Evaluator):
    """An LLM grades each row on a rubric (or compares it with a baseline), with explanation and confidence.

    Made from its options alone (the command line's: the model and server are options, the API key
    read from the environment at warm-up), or given a Haystack chat generator (the components'
    ``chat_generator``): then the generator is the server and model, and the signature names it.

    A jury (:class:`~answer_eval.evaluators.rubric_jury.RubricJury`): a list of two or more chat
    generators, or two or more models in the options (``--model a --model b``). The core runs the
    panel itself: :meth:`grade` (a component's run), :meth:`score` (the command line's and Dask's
    batches, a ``judge_grades`` column beside the pooled grade) and :meth:`agreement`.
    """

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
    on_dask = True
    options: RubricOptions

    def __init__(self, options: RubricOptions | None = None, generator: Any = None) -> None:
        """The grader; without ``generator``, an OpenAI-compatible one is made from the options when it warms up.

        :param generator: A Haystack chat generator (the components'); ``None``: the options' ``model``
            on their server, which is then required.
        :raises OptionError: Without a generator or a model, or with both.
        """
        super().__init__(options)
        if generator is None and not self.options.model:
            raise OptionError("model", "is required: the model's name on the server")
        if generator is not None and self.options.model:
            raise OptionError("model", "names the model of a server: give a chat generator or a model, not both")
        self.generator = generator
        self.batch_rows = self.options.batch_rows()  # graded together, within --concurrency
        self.chosen = self.options.rubric()
        self.jury = RubricJury.of(self.options, generator, RubricCore)
        # A generator given is called through a caller made now; its cache is opened at warm-up.
        alone = generator is not None and self.jury is None
        self.caller: ChatCaller | None = self.options.caller(generator) if alone else None
        self.budget: Budget | None = None  # the whole file's: --max-calls bounds the run, not a batch
        self._spent_before = 0  # requests of the rows a --resume keeps
        self.sent = Usage()  # this process's requests, of every batch: did any reach the server?
        # What the server refused is kept for the whole run (every batch), made when the generator is known.
        self.structured: StructuredOutput | None = None

    @property
    def panel_size(self) -> int:
        """The judges that grade each item (one grader: 1)."""
        return 1 if self.jury is None else len(self.jury.judges)

    def required(self) -> tuple[str, ...]:
        """The roles the metric needs (the baseline with ``--pairwise``)."""
        needed = [_ROLE_OF_INPUT[name] for name in self.chosen.inputs]
        return (*needed, "baseline") if self.options.pairwise else tuple(needed)

    @property
    def signature(self) -> str:
        """The options' signature; with a chat generator, its class, server, model and options instead of the server's.

        The generator's credentials are masked (:func:`~answer_eval.llm.generators.shown_generator`).
        """
        if self.generator is None:
            return self.options.signature(self.name)
        if self.jury is not None:
            return self.jury.signature
        described = shown_generator(self.generator)
        shown = [
            ("generator", type(self.generator).__name__),
            ("server", described["api_base_url"]),
            ("model", described["model"]),
            *sorted(described["generation_kwargs"].items()),
        ]
        items = [(key, value) for key, value in self.options.signed_items() if key not in _SERVER_OPTIONS]
        return self.options.signature(self.name, [*items, *shown])

    def dask_refusal(self) -> str | None:
        """On Dask each worker grades its partitions (its own requests); a file's budget or cache is refused.

        So is a grader given chat generators: a plan carries options, and generators are objects (name the servers).
        """
        if self.generator is not None:
            return "its chat generators are objects a Dask plan cannot carry: name the servers (model)"
        return self.options.dask_refusal()

    def plan_options(self) -> dict[str, Any]:
        """The options as a Dask plan carries them: the rubric and its examples as read here, not their files' paths.

        A worker may not see the files, or see another version of them: it grades on what this process read.
        """
        options = self.options.to_dict()
        if self.options.rubric_file is not None or self.options.examples_file is not None:
            options.update(metric=self.chosen.to_dict(), rubric_file=None, examples_file=None)
        return options

    def files_written(self) -> dict[str, str]:
        """The reply cache (``--cache``): the file driver keeps it apart from the input and the output."""
        cache = self.options.cache_path
        return {} if cache is None else {cache: "the reply cache, --cache"}

    def files_read(self) -> dict[str, str]:
        """The rubric file (``--rubric``): the file driver keeps the output from replacing it."""
        return {} if self.options.rubric_file is None else {self.options.rubric_file: "the rubric, --rubric"}

    def warm_up(self) -> None:
        """Make the caller (an OpenAI-compatible generator, its key read from the environment now), open the cache.

        A cache that cannot serve (see :mod:`answer_eval.llm.reply_cache`) stops the run here, before any
        request. A chat generator given is warmed up each time (Haystack's generators do it once).
        A jury warms up every judge; the file's budget is then a panel's (:meth:`RubricJury.within`).
        """
        if self.jury is not None:
            self.jury.warm_up()
            if self.budget is None:
                self.budget = Budget(self.options.max_calls)
                self.budget.resume(self._spent_before)
            return
        if self.generator is not None:
            assert self.caller is not None
            if self.caller.cache is not None:
                self.caller.cache.open()
            if callable(getattr(self.generator, "warm_up", None)):
                self.generator.warm_up()
        elif self.caller is None:
            self.caller = self._server_caller()
        if self.structured is None:
            self.structured = StructuredOutput(self.options.structured, self.caller.generator)
        if self.budget is None:
            self.budget = self.caller.new_budget()
            self.budget.resume(self._spent_before)

    def _server_caller(self) -> ChatCaller:
        options = self.options
        url, key = options.api_base_url, options.api_key_env
        assert not isinstance(url, tuple)  # a jury's are its judges' (judge_options)
        assert not isinstance(key, tuple)
        return openai_caller(
            model=str(options.model),
            api_base_url=url,
            api_key_env=key,
            limits=options,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
        )

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
        # A jury's: per item each judge's own consensus, in the judges' order.
        judges = {} if self.jury is None else {"judge_grades": "object"}
        return {**every, "samples_used": "object", "cut_replies": "object", **judges}

    def work(
        self, inputs: Mapping[str, Sequence[Any] | None], called: Mapping[str, str] | None = None
    ) -> Callable[[], Awaitable[Sequence[Grade] | Sequence[PairGrade]]]:
        """The grading of a batch (inputs by role), for the caller to run: every request in flight together.

        :param called: How the caller names each rubric input, for the errors (default: as fields).
        :raises MissingInput: For an input the metric needs that is missing, or empty at a position.
        """
        caller, options, chosen = self.caller, self.options, self.chosen
        assert caller is not None, "warm_up() first"
        names = _FIELD_NAMES if called is None else called
        columns = {name: inputs.get(role) for name, role in _ROLE_OF_INPUT.items()}
        items = build_items(chosen, columns, names)
        structured = self.structured
        if options.scoring == "logprobs":
            return lambda: grade_by_logprobs(caller, chosen, items, structured)
        if not options.pairwise:
            return lambda: grade_pointwise(caller, chosen, items, options.samples, structured)
        baselines = build_items(chosen, {**columns, "prediction": inputs.get("baseline")}, names)
        pairs = [(item["prediction"], base["prediction"]) for item, base in zip(items, baselines, strict=True)]
        return lambda: grade_pairs(caller, chosen, items, pairs, options.samples, options.swap, structured)

    def output_sockets(self) -> dict[str, Socket]:
        """The component's sockets: a pairwise grader's, or a pointwise one's."""
        return PAIRWISE_SOCKETS if self.options.pairwise else POINTWISE_SOCKETS

    def columns(self, grades: Sequence[Grade] | Sequence[PairGrade]) -> Columns:
        """The output columns of graded items (:meth:`outputs`): confidence to 4 decimals, a failure's detail."""
        return grade_columns(grades, self.options.pairwise)

    def grade(
        self,
        inputs: Mapping[str, Sequence[Any]],
        called: Mapping[str, str] | None = None,
        progress: Callable[[], None] | None = None,
    ) -> JuryResult:
        """One run's grades within a budget of its own (a component's run: ``max_calls`` bounds one run).

        :returns: The grades, what they cost, and per item each judge's own grade (one grader: a list of one).
        :param progress: Called as each item (and judge) is graded.
        """
        if self.jury is not None:
            return self.jury.run_sync(inputs, called, progress)
        self.warm_up()
        assert self.caller is not None
        grades, usage = self.caller.run_sync(self.work(inputs, called), progress=progress)
        return grades, usage, judge_column([grades])

    async def grade_async(
        self,
        inputs: Mapping[str, Sequence[Any]],
        called: Mapping[str, str] | None = None,
        progress: Callable[[], None] | None = None,
    ) -> JuryResult:
        """As :meth:`grade`, in the running event loop."""
        if self.jury is not None:
            return await self.jury.run_async(inputs, called, progress)
        self.warm_up()
        assert self.caller is not None
        grades, usage = await self.caller.run_async(self.work(inputs, called), progress=progress)
        return grades, usage, judge_column([grades])

    def agreement(self, per_judge: Sequence[Sequence[Any]]) -> dict[str, Any] | None:
        """A jury's agreement between its judges over :meth:`grade`'s per-judge column (``None`` for one grader)."""
        return None if self.jury is None else self.jury.agreement(per_judge)

    def _file_grading(self, inputs: Mapping[str, Sequence[Any]]) -> Callable[[], JuryResult]:
        """A batch's grading against the file's budget (``--max-calls``); a missing input is the row's error."""
        assert self.budget is not None
        try:
            if self.jury is not None:
                return self.jury.within(inputs, self.budget)
            work, caller, budget = self.work(inputs), self.caller, self.budget
        except MissingInput as exc:
            message = f"metric {self.chosen.name!r} needs {exc.input_name}, and this row has none"
            raise ItemError(message, _ROLE_OF_INPUT[exc.input_name], exc.position or 0) from None
        assert caller is not None

        def run() -> JuryResult:
            grades, usage = caller.run_sync(work, budget)
            return grades, usage, []

        return run

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Grade a batch against the file's budget; a missing input is the row's error, a dead server keeps the rows.

        A jury's columns hold ``judge_grades`` too: per row each judge's own grade.
        """
        self.warm_up()
        grading = self._file_grading(inputs)
        try:
            with keeping_answered() as kept:
                grades, usage, per_judge = grading()
            self._count(usage)
        except GraderUnavailable as exc:
            # The file driver says which rows were kept and how to resume (only when some were).
            raise RowsKept(f"{exc}{self._advice(exc)}") from None
        columns = self.columns(grades)
        if self.jury is not None:
            columns["judge_grades"] = per_judge
        if kept.stop is not None:
            # Stopped once some were answered: the rows before the first failed one are written and kept; the
            # rest (an error may be the stop's, or a timeout of the server that then stopped) are asked again
            # by --resume.
            kinds = columns["failure_kind"]
            done = next((at for at, kind in enumerate(kinds) if kind == FailureKind.ERROR), len(kinds))
            raise StoppedAfter(f"{kept.stop}{self._advice(kept.stop)}", done, columns)
        return columns

    def _advice(self, exc: GraderUnavailable) -> str:
        """What to check after the server refused (a jury's: the first key variable named)."""
        keys = self.options.api_key_env
        return unavailable_advice(exc, keys[0] if isinstance(keys, tuple) else keys)

    def new_summary(self) -> RubricSummary:
        """The mean score and its spread (or wins, losses, ties), failure kinds and the calls spent."""
        options = self.options
        judges = 0 if self.jury is None else self.panel_size
        summary = RubricSummary(pairwise=options.pairwise, swap=options.swap, samples=options.samples, judges=judges)
        return replace(summary, scoring=options.scoring, sent=self.sent)

    def _count(self, usage: Usage) -> None:
        # Every batch's requests, so that a run whose every request went unanswered exits 3 (NothingGraded).
        self.sent.calls += usage.calls
        self.sent.unreachable += usage.unreachable
        self.sent.structured_fallbacks += usage.structured_fallbacks

    def run_failure(self, summary: Any) -> str | None:
        """No item graded, or every request this process sent got no answer from the server (see the summary)."""
        url = self.options.api_base_url
        url = url[0] if isinstance(url, tuple) else url  # a jury's: the first judge's server named
        server = without_credentials(url) if url else "OpenAI's API"
        return nothing_to_use(summary, self.sent, str(server))
