"""An OpenAI-compatible server named by options: what the command line's LLM graders (rubric, judge escalation) share.

The options name the model, the server's URL and the environment variable that holds the API key,
never the key: the key is read when the grader warms up (:func:`openai_caller`) and goes only to
the generator and the caller's redactor. A value given as the variable's name that cannot be one
(the key itself, given by mistake) is refused without being shown (:func:`check_key_variable`), and
the name is shown only when that variable is set (:func:`unavailable_advice`).
"""

from __future__ import annotations

import os

from answer_eval.errors import OptionError
from answer_eval.llm.call_failures import GraderUnavailable, ServerMisbehaves, StructuredRefused
from answer_eval.llm.calls import ChatCaller
from answer_eval.llm.options import SERVER_TIMEOUT, LLMOptions
from answer_eval.llm.secrets import plausible_variable_name

__all__ = ["check_key_variable", "openai_caller", "unavailable_advice"]


def check_key_variable(field: str, value: object) -> None:
    """Raise :class:`OptionError` for ``field`` unless ``value`` can name an environment variable (never shown)."""
    if not plausible_variable_name(value):
        # Not echoed: the likeliest value here that is not a variable's name is the key itself.
        raise OptionError(
            field,
            "must name an environment variable (letters, digits and _, not starting with a digit); the value "
            "given is not one and is not shown. Put the key in a variable and give its name",
        )


def openai_caller(
    *,
    model: str,
    api_base_url: str | None,
    api_key_env: str,
    limits: LLMOptions,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> ChatCaller:
    """A :class:`ChatCaller` over Haystack's ``OpenAIChatGenerator``, its key read from ``api_key_env`` now.

    ``limits`` are the caller's (:meth:`LLMOptions.caller`); a request's deadline is its ``timeout``,
    else :data:`~answer_eval.llm.options.SERVER_TIMEOUT`, for the generator and the caller alike.
    The reply cache is opened here, before any request: a cache that cannot serve
    (:mod:`answer_eval.llm.cache`) stops the run first.
    """
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    key = os.environ.get(api_key_env)
    # A local server (Ollama, vLLM) needs no key; OpenAI's client still wants one to send.
    secret = Secret.from_env_var(api_key_env) if key else Secret.from_token("no-key")
    generation = {"temperature": temperature, "max_tokens": max_tokens}
    timeout = SERVER_TIMEOUT if limits.timeout is None else limits.timeout
    generator = OpenAIChatGenerator(
        api_key=secret,
        model=model,
        api_base_url=api_base_url,
        generation_kwargs={name: value for name, value in generation.items() if value is not None},
        timeout=timeout,
        max_retries=0,  # the caller retries, with its own bound and backoff
    )
    caller = limits.caller(generator, redact=(key,) if key else (), default_timeout=timeout)
    if caller.cache is not None:
        caller.cache.open()
    generator.warm_up()
    return caller


def unavailable_advice(exc: GraderUnavailable, api_key_env: str, model_flag: str = "--model") -> str:
    """What to check after the server refused every request (appended to ``exc``'s words)."""
    if isinstance(exc, ServerMisbehaves | StructuredRefused):
        return ""  # its words say what to check
    if os.environ.get(api_key_env):
        return f"; check {model_flag}, --api-base-url and the key in ${api_key_env}"
    # Unset: the value may be anything but a name (it passed the name check): not shown.
    return f"; check {model_flag}, --api-base-url and --api-key-env (the variable it names is not set: no key was sent)"
