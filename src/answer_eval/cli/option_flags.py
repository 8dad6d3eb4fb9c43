"""An evaluator's options on the command line: flags made from its options dataclass, and read back.

Each field of the :class:`answer_eval.evaluators.base.Options` dataclass becomes one flag (its
metadata from :func:`answer_eval.evaluators.base.option`: the flag, help, choices, whether it
switches a true default off or repeats), and the parsed flags become the options again, so a
command has no option code of its own. Input roles become ``--<role>-field`` flags.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Collection
from typing import Any

from answer_eval.errors import InputError, OptionError
from answer_eval.evaluators.base import Evaluator, Options, Role

__all__ = ["NONE_SUFFIX", "add_option_flags", "add_role_flags", "flag_of", "flag_value", "options_from_args"]

NONE_SUFFIX = "__none"
"""The suffix of the destination of an option's ``none_flag`` (``--no-rounding``: ``decimals__none``)."""


def flag_of(item: dataclasses.Field[Any]) -> str:
    """The command-line flag of an options field."""
    return str(item.metadata.get("flag") or "--" + item.name.replace("_", "-"))


def _value_type(item: dataclasses.Field[Any]) -> type:
    annotation = str(item.type)
    if "float" in annotation:
        return float
    if "int" in annotation:
        return int
    return str


def add_role_flags(parser: argparse.ArgumentParser, evaluator: type[Evaluator], group: Any = None) -> None:
    """``--<role>-field`` for every input role, and ``--<output>-field`` for every output that may be renamed."""
    target = group or parser
    for role in evaluator.roles:
        _add_role(target, role)
    for name, help_text in evaluator.renamable.items():
        target.add_argument(f"--{name}-field", default=name, help=f"{help_text} (default: %(default)s)")


def _add_role(target: Any, role: Role) -> None:
    if role.fallbacks:
        target.add_argument(f"--{role.name}-field", help=f"field holding {role.help}")
    else:
        target.add_argument(
            f"--{role.name}-field", default=role.field, help=f"field holding {role.help} (default: %(default)s)"
        )


def add_option_flags(
    parser: argparse.ArgumentParser, options: type[Options], only: Collection[str] | None = None
) -> None:
    """One flag per field of ``options`` that the command line offers (``only``: of these fields alone)."""
    for item in dataclasses.fields(options):
        meta = item.metadata
        if not meta.get("cli", True) or (only is not None and item.name not in only):
            continue
        flag, help_text = flag_of(item), meta.get("help")
        if isinstance(item.default, bool) and meta.get("off_flag"):
            pair = parser.add_mutually_exclusive_group()
            pair.add_argument(flag, dest=item.name, action="store_true", default=item.default, help=help_text)
            pair.add_argument(
                meta["off_flag"], dest=item.name, action="store_false", default=item.default, help=meta.get("off_help")
            )
        elif isinstance(item.default, bool):
            action = "store_false" if meta.get("negate") else "store_true"
            parser.add_argument(flag, dest=item.name, action=action, help=help_text)
        elif meta.get("repeat") or meta.get("panel"):
            parser.add_argument(
                flag,
                dest=item.name,
                action="append",
                choices=meta.get("choices"),
                metavar=meta.get("metavar"),
                help=help_text,
            )
        else:
            parser.add_argument(
                flag,
                dest=item.name,
                type=_value_type(item),
                default=item.default,
                choices=meta.get("choices"),
                metavar=meta.get("metavar"),
                help=help_text,
            )
        if meta.get("none_flag"):
            parser.add_argument(
                meta["none_flag"], dest=item.name + NONE_SUFFIX, action="store_true", help=meta.get("none_help")
            )


def options_from_args(evaluator: type[Evaluator], args: argparse.Namespace) -> Options:
    """The options the parsed flags set (the others at their defaults).

    :raises InputError: For options that do not go together, naming the flag.
    """
    options = evaluator.options_type
    values: dict[str, Any] = {}
    for item in dataclasses.fields(options):
        if not item.metadata.get("cli", True) or not hasattr(args, item.name):
            continue
        value = flag_value(item, getattr(args, item.name), args)
        if getattr(args, item.name + NONE_SUFFIX, False):
            value = None
        values[item.name] = value
    try:
        return options(**values)
    except OptionError as exc:
        raise as_input_error(exc, options) from None
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None


def flag_value(item: dataclasses.Field[Any], value: Any, args: argparse.Namespace) -> Any:
    """The option's value from its parsed flag: a repeated list deduplicated, a jury's values as given.

    A ``panel`` option (:func:`~answer_eval.evaluators.base.option`): once per judge in order, kept as
    given (a tuple); given once, the value itself; with one judge named, a flag given twice keeps its last value.
    """
    if item.metadata.get("repeat"):
        return item.default if value is None else tuple(dict.fromkeys(value))
    lead = item.metadata.get("panel")
    if not lead or not isinstance(value, list):
        return item.default if lead and value is None else value
    judges = len(getattr(args, lead, None) or ())
    return value[-1] if len(value) == 1 or judges <= 1 else tuple(value)


def as_input_error(error: OptionError, options: type[Options]) -> InputError:
    """An option error as the command line says it: naming the flag rather than the field."""
    for item in dataclasses.fields(options):
        if item.name == error.option:
            return InputError(f"{flag_of(item)} {error.detail}")
    return InputError(str(error))
