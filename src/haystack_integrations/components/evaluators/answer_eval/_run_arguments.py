"""The evaluator contract's argument order, and the deprecated positional calls of the old one.

Every component's `run` and `run_async` take `ground_truth_answers`, then `predicted_answers`, then
the rest. `ReferenceMetricsEvaluator`, `ToolCallEvaluator`, `TypedAnswerEvaluator` and
`PairwiseEvaluator` used to take `predicted_answers` first; their methods are keyword-only now and
:func:`old_positional_order` keeps calls that pass the inputs positionally, in the old order, working
with a `DeprecationWarning`.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["old_positional_order"]

P = ParamSpec("P")
R = TypeVar("R")


def old_positional_order(*names: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Let a keyword-only `run`/`run_async` still take its inputs positionally, in the old order ``names``.

    A call with positional arguments warns (`DeprecationWarning`, attributed to the caller) and
    passes them on as the keywords ``names`` give, in that order; keyword calls (the way Haystack
    pipelines call `run`) go straight through, unchanged and silent.

    Why keyword-only plus this shim rather than positional parameters in the new order: a positional
    call cannot tell the old order from the new one (both are lists), and existing positional code
    was written for the old order. Keyword-only parameters make the signature honest (it no longer
    advertises a positional order that would be read the other way) and make type checkers flag
    positional calls; the wrapper keeps them working meanwhile. Haystack builds the input sockets
    from `inspect.signature`, which follows ``__wrapped__`` to the decorated method, and compares
    `run` with `run_async` there: the socket names, types and defaults (so mandatory or optional)
    are those of the method, exactly as before. `*args` in the method itself would not do: the
    inputs after it would need defaults for a positional-only call, making mandatory sockets optional.

    :param names: The inputs' old positional order.
    :returns: A decorator for a component's `run` or `run_async` (coroutine functions stay coroutine
        functions, as Haystack requires of `run_async`).
    """

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        qualified = method.__qualname__
        parameters = inspect.signature(method).parameters
        if any(name not in parameters or parameters[name].kind is not inspect.Parameter.KEYWORD_ONLY for name in names):
            raise TypeError(f"{qualified}: the old positional names must all be keyword-only parameters")
        new = ", ".join(name for name in parameters if name != "self")

        def keywords(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            if len(args) > len(names):
                raise TypeError(f"{qualified}() takes at most {len(names)} positional arguments, got {len(args)}")
            merged = dict(kwargs)
            for name, value in zip(names[: len(args)], args, strict=True):
                if name in merged:
                    raise TypeError(f"{qualified}() got multiple values for argument {name!r}")
                merged[name] = value
            old = ", ".join(names[: len(args)])
            # Level 3: past this function and the wrapper, the line that called (or awaited) the method.
            warnings.warn(
                f"Positional arguments to {qualified}() are deprecated: they are read in the old order "
                f"({old}), while the parameters are now ({new}); pass them by keyword.",
                DeprecationWarning,
                stacklevel=3,
            )
            return merged

        if inspect.iscoroutinefunction(method):
            # An async wrapper, because Haystack requires run_async to be a coroutine function: so the
            # warning comes when the call is awaited (still at the caller's line when awaited directly).
            @functools.wraps(method)
            async def call_async(self: Any, *args: Any, **kwargs: Any) -> Any:
                if args:
                    kwargs = keywords(args, kwargs)
                return await method(self, **kwargs)

            return cast(Callable[P, R], call_async)

        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if args:
                kwargs = keywords(args, kwargs)
            return method(self, **kwargs)

        return cast(Callable[P, R], call)

    return decorate
