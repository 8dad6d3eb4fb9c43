"""The judge's options (:class:`JudgeOptions`): its verdict rules, and what it trusts, abstains on or escalates.

One set of options for every layer: ``answer-eval judge`` makes its flags from them, the Haystack
component's init parameters are named as them, and the Dask engine rebuilds the judge from them.

- The verdict: the contains rules' not-found options.
- Trust (Jung et al. 2024): a confidence threshold below which a verdict is not trusted, given
  (``escalate_below``) or chosen for a target agreement with people (``target_agreement``,
  ``delta``) on a calibration: the user's own (``calibration``, a file ``answer-eval calibrate``
  wrote, or its content) or the shipped one (``calibration_sets``).
- Escalation: an OpenAI-compatible server named by ``escalate_model``, ``api_base_url`` and
  ``api_key_env`` (the variable's name, never the key) that gets the untrusted verdicts, within
  the limits every LLM grader shares (:class:`~answer_eval.llm.caller_setup.LLMOptions`: concurrency,
  retries, a call budget, a reply cache, a deadline), as ``answer-eval rubric`` and the LLM
  components name them. Without one, the untrusted verdicts are flagged ``abstained``.

The limits cannot change a verdict and are left out of the signature (``signed=False``). The trust
options at their defaults are left out too, so a plain judge's signature is what it always was; a
calibration is signed by its content's digest, not its path.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from answer_eval.errors import OptionError
from answer_eval.evaluators.base import check_names, check_number, check_str, option
from answer_eval.evaluators.contains import ContainsOptions
from answer_eval.llm.caller_setup import STRUCTURED, LLMOptions, check_key_variable
from answer_eval.llm.generators import url_secrets, without_credentials
from answer_eval.llm.jury import server_panel

__all__ = ["DEFAULT_ESCALATE_BELOW", "JudgeOptions"]

DEFAULT_ESCALATE_BELOW = 0.8
"""With an LLM to escalate to and no threshold or target: verdicts a person agrees with less than 80% of the time."""

TRUST_FIELDS = ("calibration", "target_agreement", "delta", "calibration_sets", "escalate_below", "escalate_model")
"""The signed options of trust and escalation: shown in the signature only when set (a plain judge's is unchanged)."""

_SHOWN_WHEN_SET = frozenset({*TRUST_FIELDS, "api_base_url"})


def calibration_digest(content: Mapping[str, Any]) -> str:
    """A calibration's identity in a signature: the digest of its content (so a path and a dict of it sign alike)."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _unit(name: str, value: Any, *, closed: bool) -> None:
    check_number(name, value, optional=True)
    if value is None:
        return
    inside = 0.0 <= value <= 1.0 if closed else 0.0 < value < 1.0
    if not inside or math.isnan(value):
        raise ValueError(f"{name} must be in {'[0, 1]' if closed else '(0, 1)'}, got {value}")


@dataclass(frozen=True)
class _JudgeFields(ContainsOptions):
    """The judge's own options, a base of :class:`JudgeOptions` so they come before the LLM's limits.

    (A dataclass lists its bases' fields first: the flags, ``to_dict`` and the signature keep this order.)
    """

    calibration: str | Mapping[str, Any] | None = option(
        None,
        metavar="FILE",
        help="a calibration on your own labels: the file answer-eval calibrate writes (from Python also a "
        "pathlib.Path, saved as a string, or its content as a dict); the target agreement's threshold is chosen "
        "on it and its recalibration applied. One made for other verdict options or another model is refused "
        "(naming what differs), as is a damaged file; one with an LLM level, with an LLM to escalate to and a "
        "target, runs the cascade judge -> LLM -> person (docs/answer-judge.md)",
    )
    target_agreement: float | None = option(
        None,
        metavar="A",
        help="instead of a threshold, the agreement with people the kept verdicts must reach: only the verdicts "
        "confident enough to agree with people at least this often (with probability 1 - delta, on data like "
        "the calibration's: yours, else the shipped human-judged sets) are trusted; the others are abstained "
        "(for a person), or escalated to an LLM",
    )
    delta: float = option(0.1, help="the risk allowed for the target agreement's guarantee (default: %(default)s)")
    calibration_sets: tuple[str, ...] | None = option(
        None,
        flag="--calibration-set",
        repeat=True,
        none_is_default=True,  # the default is None (the shipped default sets, with a warning)
        metavar="SET",
        help="with a target agreement and no calibration of your own: the shipped calibration sets the threshold "
        "must hold on, each on its own (nq301-dev, efficientqa, evouna-tq; repeatable; default: nq301-dev and "
        "evouna-tq, with a warning that the promise assumes annotators like theirs); choose the ones like your "
        "data, or better, calibrate",
    )
    escalate_below: float | None = option(
        None,
        metavar="C",
        help="trust only the verdicts with confidence at least this (not with a target agreement; default with "
        f"an LLM to escalate to: {DEFAULT_ESCALATE_BELOW})",
    )
    escalate_model: str | tuple[str, ...] | None = option(
        None,
        metavar="MODEL",
        panel="escalate_model",
        help="send the untrusted verdicts to this model on an OpenAI-compatible server; given two or more "
        "times, a jury of those models (the majority of their verdicts decides)",
    )
    api_base_url: str | tuple[str, ...] | None = option(
        None,
        panel="escalate_model",
        help="with --escalate-model: the server (default: OpenAI's); for a jury, once for all or once per model",
    )
    api_key_env: str | tuple[str, ...] = option(
        "OPENAI_API_KEY",
        panel="escalate_model",
        help="with --escalate-model: the environment variable holding the API key (default: %(default)s); for a "
        "jury, once for all or once per model",
        signed=False,
    )
    structured: str = option(
        "auto",
        choices=STRUCTURED,
        help="with an LLM to escalate to: ask for a JSON schema of the verdict (response_format): auto "
        "(json_schema, then json_object, then the prompt alone, each after the server refused the one before), "
        "json_schema, json_object or off; without one, only auto (default: %(default)s)",
    )


@dataclass(frozen=True)
class JudgeOptions(LLMOptions, _JudgeFields):
    """The options of :class:`~answer_eval.evaluators.judge.judge_core.AnswerJudgeCore` (see the module docstring).

    :param calibration: A calibration on the user's labels: the path of the file ``answer-eval
        calibrate`` wrote (a ``str`` or an ``os.PathLike``, kept as a ``str``), or its content as a
        dict. Its judge signature must be this judge's.
    :param target_agreement: The agreement with people the trusted verdicts must reach (with
        probability ``1 - delta``); the threshold is chosen on the calibration.
    :param delta: The risk allowed for that guarantee.
    :param calibration_sets: Without ``calibration``, the shipped sets the threshold must hold on.
    :param escalate_below: A confidence threshold given instead of a target.
    :param escalate_model: The model of an OpenAI-compatible server the untrusted verdicts go to; a tuple
        of two or more: a jury of those models (:meth:`judges`).
    :param api_base_url: That server (default: OpenAI's); for a jury, one for all or a tuple of one per model.
    :param api_key_env: The environment variable holding its API key (never the key); for a jury, as
        ``api_base_url``.
    :param structured: Structured output of the escalation's replies (:mod:`answer_eval.llm.caller_setup`):
        ``auto`` (a JSON schema of the verdict from an OpenAI-compatible server, falling back on a
        refusal), ``json_schema``, ``json_object`` or ``off``. Signed when escalating: it changes the replies.
    :param timeout: Seconds one escalation request may take in all.
    :param concurrency: Escalation requests in flight at most.
    :param max_retries: Retries after HTTP 429, 5xx, a timeout or a lost connection.
    :param retry_backoff: Seconds before the first retry, doubled each time.
    :param max_calls: Escalation requests the run may send (a file's, across ``--resume``).
    :param cache_path: A JSONL file of the LLM's replies, so that a rerun costs nothing.
    """

    def __post_init__(self) -> None:
        """A calibration path is kept as text, a dict as a copy of plain JSON.

        A ``pathlib.Path`` (any ``os.PathLike``) is kept as its text, so that it saves as a string; a
        dict is copied, so that later changes to the caller's do not reach it.
        """
        if isinstance(self.calibration, os.PathLike):
            object.__setattr__(self, "calibration", os.fspath(self.calibration))  # frozen: set once, while being made
        if isinstance(self.calibration, Mapping):
            try:
                copied = json.loads(json.dumps(self.calibration, allow_nan=False))
            except (TypeError, ValueError, RecursionError) as exc:
                raise ValueError(f"calibration must be JSON data (a calibration file's content): {exc}") from None
            object.__setattr__(self, "calibration", copied)  # frozen: set once, while being made
        super().__post_init__()

    def check(self) -> None:
        """The contains options' checks, then trust and escalation (``OptionError`` names one)."""
        super().check()
        self._check_trust()
        self._check_escalation()

    def _check_trust(self) -> None:
        if self.calibration is not None and not isinstance(self.calibration, str | Mapping):
            got = type(self.calibration).__name__
            raise TypeError(f"calibration must be a path (str or os.PathLike), a dict or None, got {got}")
        if isinstance(self.calibration, str) and not self.calibration.strip():
            raise OptionError("calibration", "must name a file, got a blank string")
        _unit("escalate_below", self.escalate_below, closed=True)
        _unit("target_agreement", self.target_agreement, closed=False)
        _unit("delta", self.delta, closed=False)
        if self.delta is None:
            raise TypeError("delta must be a number, got NoneType")
        if self.escalate_below is not None and self.target_agreement is not None:
            raise ValueError("give escalate_below or target_agreement, not both")
        self._check_sets()

    def _check_sets(self) -> None:
        """``calibration_sets``: ``None`` (every set), or known sets, each once, with a target to choose for.

        An empty list used to mean every set, and a set name was read only with ``target_agreement``:
        both hid a mistake, so both are refused.
        """
        if self.calibration_sets is None:
            return
        from answer_eval.evaluators.judge.calibration import calibration_set_names

        names = check_names("calibration_sets", self.calibration_sets)
        known = calibration_set_names()
        sets = f"the known sets are {', '.join(known)} (None: all of them)"
        if not names:
            raise ValueError(f"calibration_sets is empty (no sets): {sets}")
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(f"calibration_sets: unknown or no sets {unknown}; {sets}")
        repeated = sorted(name for name, times in Counter(names).items() if times > 1)
        if repeated:
            raise ValueError(f"calibration_sets names {', '.join(repeated)} more than once")
        if self.target_agreement is None:
            raise ValueError(
                "calibration_sets chooses the data target_agreement's threshold must hold on; "
                "without target_agreement it does nothing: give target_agreement, or leave calibration_sets None"
            )
        if self.calibration is not None:
            raise ValueError(
                "calibration_sets names shipped calibration sets and calibration gives your own: give one of them"
            )

    def _check_escalation(self) -> None:
        models = self.escalate_model if isinstance(self.escalate_model, tuple) else (self.escalate_model,)
        if self.escalate_model is not None and not all(isinstance(model, str) and model for model in models):
            raise OptionError("escalate_model", "must name the model on the server")
        for variable in self.api_key_env if isinstance(self.api_key_env, tuple) else (self.api_key_env,):
            check_key_variable("api_key_env", variable)
        self.judges()
        if self.api_base_url is not None and self.escalate_model is None:
            raise OptionError("api_base_url", "names the server of --escalate-model: give --escalate-model too")
        check_str("structured", self.structured)
        if self.structured not in STRUCTURED:
            raise OptionError("structured", f"is one of {', '.join(STRUCTURED)}, got {self.structured!r}")

    def judges(self) -> list[tuple[str, str | None, str]]:
        """A jury's judges named by the options (``--escalate-model`` given several times); ``[]`` for one model.

        :raises OptionError: For servers or key variables given per judge of a different count (see
            :func:`~answer_eval.llm.jury.server_panel`).
        """
        return server_panel("escalate_model", self.escalate_model, self.api_base_url, self.api_key_env)

    def signed_items(self) -> list[tuple[str, Any]]:
        """The signed options; the trust options only when set, the calibration as its content's digest."""
        defaults = JudgeOptions.__dataclass_fields__
        items = []
        for key, value in super().signed_items():
            if key == "delta" and self.target_agreement is None:
                continue  # delta qualifies a target's guarantee: without one it changes nothing
            if key in _SHOWN_WHEN_SET and value == defaults[key].default:
                continue
            if key == "structured" and value == defaults[key].default and self.escalate_model is None:
                continue  # the escalation's: a judge without a server to escalate to keeps its signature
            if key == "calibration" and value is not None:
                value = self.calibration_signature()
            if key == "api_base_url" and isinstance(value, tuple):  # a jury's: a password in a URL is never shown
                value = tuple(str(without_credentials(url)) if url_secrets(url) else url for url in value)
            elif key == "api_base_url" and value and url_secrets(value):  # a password in the URL is never shown
                value = str(without_credentials(value))
            items.append((key, value))
        return items

    def calibration_signature(self) -> str:
        """The digest of the calibration's content (read now when the evaluator has not read it yet)."""
        known = self.__dict__.get("_calibration_digest")
        if known is not None:
            return str(known)
        if self.calibration is None:
            return "none"
        from answer_eval.evaluators.judge.user_calibration import load_user_calibration

        loaded = load_user_calibration(self)
        return "none" if loaded is None else calibration_digest(loaded.to_dict())

    def remember_calibration(self, content: Mapping[str, Any]) -> None:
        """Sign the calibration as the evaluator read it (so the file is not read again, nor read changed)."""
        object.__setattr__(self, "_calibration_digest", calibration_digest(content))
