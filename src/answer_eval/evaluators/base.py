"""The evaluator contract: what every evaluator of the package declares once, and every layer reads.

An evaluator is a class with:

- ``name``: its registry name (``answer_eval.evaluators.registry``), ``command``: its file command;
- ``roles``: its inputs (:class:`Role`: the name, the default field, whether it may be missing);
- ``options_type``: a frozen :class:`Options` dataclass, validated in one place, with ``to_dict``,
  ``from_dict`` and a :meth:`Options.signature` that records every option and the version;
- :meth:`Evaluator.outputs`: the columns it writes, with their dtypes; ``sockets``: its Haystack
  component's output sockets (:class:`Socket`), each an entry of :meth:`Evaluator.socket_columns` or
  an aggregate the component builds (``score``, ``failure_counts``, ``metrics``);
- :meth:`Evaluator.score`: *the* implementation, column-wise, from input columns by role to output
  columns; a bad item raises :class:`ItemError` naming its role and position;
- :meth:`Evaluator.new_summary`: a :class:`answer_eval.evaluators.summaries.Summary` that adds
  scored rows, merges partial summaries exactly, snapshots itself as JSON and prints itself;
- optional hooks: ``warm_up``, ``required``, ``check_fields``, ``files_written`` and ``files_read``
  (files it writes besides the output, and reads besides the input: kept apart from the input and
  the output).

The command line, ``--jobs``, ``--resume``, the Dask engine and the reports are built from this
alone, so a new evaluator costs one module and one registry line.

Beside the contract, what every evaluator and component checks with: the type checks of parameters
(``check_*``, shared by the core's options and the Haystack components, so ``from_dict`` validates),
and an item's error in the two places that report it. :meth:`Evaluator.score` raises an
:class:`ItemError` whose message leaves the position out, since the command line names the file and
line itself; a Haystack component reports the same item by its position in the batch, in the words
its checks use when given one ("ground truth at position 2 is blank"), as a `TypeError` or
`ValueError`. :func:`item_error` keeps both: the check that failed is run once more, given the
position, only on this error path.
"""

from __future__ import annotations

import dataclasses
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from answer_eval.errors import ItemError

if TYPE_CHECKING:
    from answer_eval.evaluators.summaries import Summary

__all__ = [
    "METRIC_SOCKETS",
    "Columns",
    "Evaluator",
    "Options",
    "Role",
    "Socket",
    "check_bool",
    "check_instance",
    "check_names",
    "check_number",
    "check_str",
    "item_error",
    "list_option",
    "option",
    "positioned",
    "shown_number",
    "signature_differences",
]


Columns = dict[str, list[Any]]
"""Columns by name (input roles, or output columns), all of one length."""

_PLAIN = re.compile(r"[\w.+-]+")
_WORDS = frozenset({"none", "yes", "no"})


def option(
    default: Any,
    *,
    help: str,
    flag: str | None = None,
    short: str | None = None,
    choices: Sequence[Any] | None = None,
    negate: bool = False,
    repeat: bool = False,
    panel: str | None = None,
    metavar: str | None = None,
    none_flag: str | None = None,
    none_help: str | None = None,
    off_flag: str | None = None,
    off_help: str | None = None,
    none_is_default: bool = False,
    cli: bool = True,
    signed: bool = True,
) -> Any:
    """A field of an :class:`Options` dataclass, with what the command line needs to offer it.

    :param default: The default value (a tuple for a list option: options are frozen).
    :param help: The option's help text.
    :param flag: Its command-line flag (default ``--`` and the field name with dashes).
    :param short: The key in :meth:`Options.signature` (default: the field name).
    :param choices: The values allowed on the command line.
    :param negate: A true default switched off by ``flag`` (``--no-strip`` for ``strip``).
    :param repeat: A list option given once per value (``--metric rouge --metric bleu``).
    :param panel: The field that names a jury's judges (``model``; this one's own name for that field):
        a value given once, or once per judge (``--model a --model b``), held as itself when once (so a
        single grader's signature is unchanged) and as a tuple in order when several; with one judge, a
        flag given twice keeps its last value, as any flag.
    :param metavar: The value's name in the help.
    :param none_flag: A second flag that sets the option to ``None`` (``--no-rounding`` for ``decimals``).
    :param none_help: That flag's help.
    :param off_flag: For a false default, a flag that keeps it off (``--no-semantic``), for old command lines.
    :param off_help: That flag's help.
    :param none_is_default: ``None`` (as a component's ``to_dict`` may hold) stands for the default:
        the option holds the default then, so both give one signature.
    :param cli: ``False`` for an option the command line does not offer.
    :param signed: ``False`` for an option that cannot change a result (a limit on concurrency, a
        cache's path): left out of :meth:`Options.signature`, so changing it does not stop a ``--resume``.
    """
    metadata = {
        "help": help,
        "flag": flag,
        "short": short,
        "choices": None if choices is None else tuple(choices),
        "negate": negate,
        "repeat": repeat,
        "panel": panel,
        "metavar": metavar,
        "none_flag": none_flag,
        "none_help": none_help,
        "off_flag": off_flag,
        "off_help": off_help,
        "none_is_default": none_is_default,
        "cli": cli,
        "signed": signed,
    }
    return dataclasses.field(default=default, metadata=metadata)


def list_option(
    default: tuple[str, ...],
    *,
    flag: str,
    help: str,
    choices: Sequence[str] | None = None,
    metavar: str | None = None,
) -> Any:
    """An :func:`option` holding a list of names, given once per name on the command line (``--metric bleu``).

    ``None`` stands for ``default`` (``none_is_default``): a component's ``to_dict`` may hold it.
    """
    return option(default, flag=flag, repeat=True, none_is_default=True, choices=choices, metavar=metavar, help=help)


def _signature_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return "[" + ",".join(_signature_value(item) for item in value) + "]"
    text = str(value)
    # A value that could be read as a separator, or as a None or a bool, is quoted, so that two
    # option sets never share a signature.
    plain = _PLAIN.fullmatch(text) and not (isinstance(value, str) and text in _WORDS)
    return text if plain else json.dumps(text, ensure_ascii=False)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def signature_differences(old: str, new: str) -> list[str]:
    """The parts of two signatures that differ, in words: ``["not_found_label: NOT_IN_DOCUMENT, now X"]``."""
    before = dict(part.partition(":")[::2] for part in _split(old))
    after = dict(part.partition(":")[::2] for part in _split(new))
    changed = []
    for key in dict.fromkeys([*before, *after]):
        if before.get(key) != after.get(key):
            changed.append(f"{key}: {before.get(key, 'absent')}, now {after.get(key, 'absent')}")
    return changed


def _split(signature: str) -> list[str]:
    # The first part is the evaluator's name; a quoted value may hold "|": split outside quotes only.
    parts, current, quoted, escaped = [], "", False, False
    for char in signature:
        if char == "|" and not quoted:
            parts.append(current)
            current = ""
            continue
        current += char
        if quoted and char == "\\" and not escaped:
            escaped = True
            continue
        if char == '"' and not escaped:
            quoted = not quoted
        escaped = False
    parts.append(current)
    return [f"evaluator:{parts[0]}", *parts[1:]]


_O = TypeVar("_O", bound="Options")


@dataclass(frozen=True)
class Options:
    """The options of one evaluator: a frozen dataclass, checked once when made.

    Subclasses declare their fields with :func:`option` and put their checks in :meth:`check`
    (raise ``TypeError`` or ``ValueError`` naming the option). Lists are held as tuples.
    """

    def __post_init__(self) -> None:
        """Put defaults for ``None`` where an option says so, then check the options (see :meth:`check`)."""
        for item in dataclasses.fields(self):
            if item.metadata.get("none_is_default") and getattr(self, item.name) is None:
                object.__setattr__(self, item.name, item.default)  # frozen: set once, while being made
        self.check()

    def check(self) -> None:
        """Raise ``TypeError`` or ``ValueError`` for a bad option; nothing to check by default."""

    def to_dict(self) -> dict[str, Any]:
        """Every option by field name, as plain JSON data (tuples as lists)."""
        return {item.name: _plain(getattr(self, item.name)) for item in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[_O], data: Mapping[str, Any]) -> _O:
        """The options :meth:`to_dict` gave; a missing option takes its default.

        :raises ValueError: For a key that is not an option (naming it and the options).
        """
        known = {item.name for item in dataclasses.fields(cls)}
        unknown = [key for key in data if key not in known]
        if unknown:
            raise ValueError(f"unknown option {unknown[0]!r}; options: {', '.join(sorted(known))}")
        values = {key: tuple(value) if isinstance(value, list) else value for key, value in data.items()}
        return cls(**values)

    def signature(self, name: str, items: Sequence[tuple[str, Any]] | None = None) -> str:
        """``name``, every option and the package version, joined by ``|``.

        For example ``contains|not_found_label:NOT_IN_DOCUMENT|extra_not_found_phrases:[]|v:0.1.0``.

        As sacrebleu's signatures: two runs with the same signature used the same options and
        version, so their scores can be compared (and a ``--resume`` trusted).

        :param items: The ``(key, value)`` pairs shown (default: :meth:`signed_items`), for a
            subclass that shows more than its options (the chat generator it was given).
        """
        from answer_eval import __version__

        shown = self.signed_items() if items is None else items
        parts = [name, *(f"{key}:{_signature_value(value)}" for key, value in shown)]
        parts.append(f"v:{__version__}")
        return "|".join(parts)

    def signed_items(self) -> list[tuple[str, Any]]:
        """The ``(key, value)`` pairs :meth:`signature` shows: every signed option, under its ``short`` key.

        A subclass may show an option as something else (a file's content digest rather than its path).
        """
        return [
            (item.metadata.get("short") or item.name, getattr(self, item.name))
            for item in dataclasses.fields(self)
            if item.metadata.get("signed", True)
        ]


@dataclass(frozen=True)
class Role:
    """One input of an evaluator.

    :param name: The role (``prediction``, ``answers``, ``question``...): the key of its column in
        :meth:`Evaluator.score`.
    :param field: Its default field (JSONL) or column (Parquet) name.
    :param help: What it holds, for ``--<role>-field``'s help.
    :param optional: The field may be missing (the evaluator then does without).
    :param fallbacks: Fields tried in order when ``field`` is missing and no field was chosen.
    :param kinds: The column kinds the Dask engine accepts for it (``string``, ``int``, ``float``,
        ``list``, ``null``); empty: any, each value checked by the evaluator.
    """

    name: str
    field: str
    help: str
    optional: bool = False
    fallbacks: tuple[str, ...] = ()
    kinds: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Socket:
    """One output socket of an evaluator's Haystack component, in the order declared.

    :param type: The socket's type, as ``component.output_types`` takes it.
    :param column: The entry of :meth:`Evaluator.socket_columns` it gives (a column, or a whole-batch
        value such as ``per_type``); ``None`` for an aggregate the component builds by the socket's
        name: ``score`` (the mean of ``individual_scores``), ``failure_counts`` (of ``failure_kinds``),
        ``metrics`` (per-metric tables, whose first metric gives ``individual_scores``).
    :param convert: Applied to each item of the column (``int`` for a bool verdict), or ``None``.
    """

    type: Any
    column: str | None = None
    convert: Callable[[Any], Any] | None = None


METRIC_SOCKETS: dict[str, Socket] = {
    "metrics": Socket(dict[str, dict[str, Any]]),
    "score": Socket(float),
    "individual_scores": Socket(list[float]),
    "failure_kinds": Socket(list[str | None], "failure_kind"),
    "failure_counts": Socket(dict[str, int]),
}
"""The sockets of a metric evaluator's component: per-metric tables, the first metric's flat score."""

_E = TypeVar("_E", bound="Evaluator")


class Evaluator(ABC):
    """The base of every evaluator; see the module docstring for the contract.

    An evaluator is made from its options alone (``type(self)(self.options)`` is the same
    evaluator), so it pickles as its options and rebuilds its scorers in each worker process.
    """

    name: ClassVar[str]
    """Its registry name."""
    component: ClassVar[str]
    """The Haystack component that wraps it (in ``haystack_integrations.components.evaluators.answer_eval``),
    also its name in messages and reports."""
    options_type: ClassVar[type[Options]]
    roles: ClassVar[tuple[Role, ...]]
    renamable: ClassVar[dict[str, str]] = {}
    """Output columns the command line may write under another name (``--<name>-field``), with their help."""
    local_only: str | None = None
    """Why the evaluator runs in one process only (no ``--jobs`` above 1; no Dask unless :meth:`dask_refusal`
    says otherwise), or ``None``; an instance may set its own (the judge does when it escalates to an LLM)."""
    on_dask: ClassVar[bool] = False
    """Whether an evaluator :attr:`local_only` for its class runs on Dask all the same (its command offers
    ``--engine dask``; :meth:`dask_refusal` says which options it refuses there)."""
    sockets: ClassVar[dict[str, Socket]] = {}
    """The output sockets of its Haystack component, by name, in order (see :class:`Socket`)."""
    batch_rows: int | None = None
    """Rows per :meth:`score` call on the command line (``None``: the engine's default); an instance may set its own."""

    def __init__(self, options: Options | None = None) -> None:
        """Make the evaluator (``options``: an instance of :attr:`options_type`; default: the defaults)."""
        made = self.options_type() if options is None else options
        if not isinstance(made, self.options_type):
            raise TypeError(f"{type(self).__name__} takes {self.options_type.__name__}, got {type(made).__name__}")
        self.options = made

    @classmethod
    def from_options(cls: type[_E], **values: Any) -> _E:
        """The evaluator with these options (the others at their defaults)."""
        return cls(cls.options_type.from_dict(values))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.options,))

    @property
    def signature(self) -> str:
        """The options' :meth:`Options.signature` under this evaluator's name."""
        return self.options.signature(self.name)

    def role(self, name: str) -> Role:
        """The input role called ``name``."""
        for role in self.roles:
            if role.name == name:
                return role
        raise ValueError(f"{self.component} has no input {name!r}; its inputs: {', '.join(r.name for r in self.roles)}")

    def required(self) -> tuple[str, ...]:
        """The roles whose field must be there."""
        return tuple(role.name for role in self.roles if not role.optional)

    def warm_up(self) -> None:  # noqa: B027 - a hook: most evaluators have nothing to load
        """Load what scoring needs (a model) once; nothing by default."""

    def dask_refusal(self) -> str | None:
        """Why the evaluator with these options does not run on Dask, or ``None``: by default :attr:`local_only`.

        An LLM grader runs there (each worker its own requests, within ``concurrency``), except with what
        one process alone can keep (a budget for the whole file, a reply cache): it says which.
        """
        return self.local_only

    def files_written(self) -> dict[str, str]:
        """The files the evaluator writes besides the output (a reply cache), each with what it is, for messages.

        The file driver refuses, before any work, one that is the input (under any name), a file
        of :meth:`files_read`, the output or one of the run's work files, or a folder
        (:func:`answer_eval.engine.runner.check_side_files`). None by default.
        """
        return {}

    def plan_options(self) -> dict[str, Any]:
        """The options as they travel to a Dask worker (JSON data the worker rebuilds the evaluator from).

        By default :meth:`Options.to_dict`; an evaluator that read a file its options name may send
        the content it read instead (a worker may not see the file).
        """
        return self.options.to_dict()

    def files_read(self) -> dict[str, str]:
        """The files the evaluator reads besides the input (a rubric file), each with what it is, for messages.

        The file driver treats them as inputs: the output and the run's work files may not be one
        of them. None by default.
        """
        return {}

    def check_fields(self, fields: Mapping[str, str], written: Sequence[str]) -> None:  # noqa: B027 - a hook
        """Refuse field choices that cannot work (``fields``: role to field; ``written``: the output names).

        :raises InputError: Naming the clash; by default every choice is accepted.
        """

    @abstractmethod
    def outputs(self) -> dict[str, str]:
        """The columns :meth:`score` gives, in order, with their pandas dtypes (``bool``, ``float64``, ``object``)."""

    @abstractmethod
    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Score a batch: input columns by role (an optional role may be absent) to the output columns.

        :raises ItemError: For an item that cannot be scored (its role and position).
        """

    def output_sockets(self) -> dict[str, Socket]:
        """The component sockets of this evaluator: :attr:`sockets`, unless what it fills depends on its options."""
        return self.sockets

    def socket_columns(self, inputs: Mapping[str, Sequence[Any]]) -> Mapping[str, Any]:
        """The entries :attr:`sockets` name, for a batch: by default :meth:`score`'s columns."""
        return self.score(inputs)

    @abstractmethod
    def new_summary(self) -> Summary:
        """An empty summary of this evaluator's results."""

    def run_failure(self, summary: Summary) -> str | None:
        """Why a run that went to its end gave nothing to use (``summary``: its results), or ``None``.

        The command line prints the summary, writes the output and then exits 3 with this reason
        (:class:`answer_eval.errors.NothingGraded`). ``None`` by default: a result that is all
        failures is still a result for an offline evaluator; an LLM grader says otherwise.
        """
        return None


def check_bool(name: str, value: Any) -> None:
    """Raise `TypeError` unless ``value`` is a bool."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def check_str(name: str, value: Any, *, optional: bool = False) -> None:
    """Raise `TypeError` unless ``value`` is a str (or ``None`` when ``optional``)."""
    check_instance(name, value, str, "a str", optional=optional)


def check_instance(name: str, value: Any, kinds: type | tuple[type, ...], what: str, *, optional: bool = False) -> None:
    """Raise `TypeError` saying ``what`` was expected unless ``value`` is a ``kinds`` (or ``optional`` None)."""
    if optional and value is None:
        return
    if not isinstance(value, kinds):
        raise TypeError(f"{name} must be {what}{' or None' if optional else ''}, got {type(value).__name__}")


def check_number(name: str, value: Any, *, integer: bool = False, optional: bool = False) -> None:
    """Raise `TypeError` unless ``value`` is a number (an int when ``integer``; ``None`` when ``optional``)."""
    if optional and value is None:
        return
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        what = "an int" if integer else "a number"
        raise TypeError(f"{name} must be {what}{' or None' if optional else ''}, got {type(value).__name__}")


def shown_number(value: object, limit: int) -> str:
    """``value`` for a message: its ``repr``, cut past ``limit`` characters (an int of 400 digits).

    A cut one is its first 20 characters and how many digits it has.
    """
    text = repr(value)
    return text if len(text) <= limit else f"{text[:20]}... ({len(text.lstrip('-')):,} digits)"


def check_names(name: str, value: Any, *, optional: bool = False) -> list[str]:
    """Return ``value`` as a list after checking it is a list (or tuple) of str; `TypeError` otherwise.

    With ``optional``, ``None`` is accepted and gives an empty list.
    """
    if optional and value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"{name} must be a list of str{' or None' if optional else ''}")
    return list(value)


class LocatedItemError(ItemError):
    """An :class:`ItemError` that also carries the error naming the item's position, as a batch caller reports it."""

    def __init__(self, message: str, role: str | None, position: int, located: TypeError | ValueError) -> None:
        super().__init__(message, role, position)
        self.located = located


def item_error(check: Callable[[int | None], object], role: str | None, position: int, error: Exception) -> ItemError:
    """The :class:`ItemError` of ``error``, raised by ``check(None)`` on the item at ``position``.

    :param check: The item's check, given the position to name (``None``: none).
    :returns: A :class:`LocatedItemError` carrying ``check(position)``'s error, or a plain
        :class:`ItemError` when the check passes given the position.
    """
    try:
        check(position)
    except (TypeError, ValueError) as located:
        return LocatedItemError(str(error), role, position, located)
    return ItemError(str(error), role, position)


def positioned(error: ItemError) -> TypeError | ValueError:
    """The error a batch caller raises for ``error``: the located one, else a `ValueError` naming the position."""
    if isinstance(error, LocatedItemError):
        return error.located
    if error.role is None:
        return ValueError(str(error))
    return ValueError(f"{error.role} at position {error.position}: {error}")
