"""What ``compare``, ``agreement`` and ``report`` share: evaluator options, running them, terminal output.

Terminal output is drawn with rich: aligned tables, colour only when standard output is a
terminal and ``NO_COLOR`` is not set. rich is imported only when a console is made, so the
command line starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from answer_eval.errors import InputError
from answer_eval.evaluators.base import shown_number
from answer_eval.inputs.item_files import Items, read_items
from answer_eval.reports.scorers import DEFAULT_EVALUATORS, EVALUATORS, EvaluatorRun, build_scorer, unavailable
from answer_eval.stats.written_numbers import fixed

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = [
    "INPUT_HELP",
    "MAX_PROCESSES",
    "MAX_RESAMPLES",
    "add_evaluator_options",
    "add_field_options",
    "add_format_option",
    "add_input_format_option",
    "add_item_head",
    "add_item_text",
    "add_progress_option",
    "add_show_option",
    "count",
    "evaluator_names",
    "fixed",
    "format_p",
    "item_grid",
    "items_from_args",
    "make_console",
    "more_hint",
    "run_evaluators",
    "short",
    "show",
    "show_progress",
    "stdin_once",
    "written_path",
]

PLAIN_WIDTH = 120
"""Line width when standard output is not a terminal (``COLUMNS`` overrides it)."""


MAX_RESAMPLES = 1_000_000
"""The most bootstrap resamples a command draws (``--resamples``): each is a pass over the rows in Python."""

MAX_PROCESSES = 1024
"""The most worker processes a command starts (``--jobs``, ``--workers``)."""


def count(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum`` and, when given, at most ``maximum``.

    Without a ``maximum``, at most ``sys.maxsize``: a 400-digit count reached the standard library
    as an ``OverflowError`` (a buffer size, a process count), not as a bad flag.
    """
    highest = sys.maxsize if maximum is None else maximum

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {shown_number(value, 24)}")
        if value > highest:
            raise argparse.ArgumentTypeError(f"must be at most {highest:,}, got {shown_number(value, 24)}")
        return value

    return parse


def written_path(text: str) -> str:
    """An argparse type: a path to write to, not empty (``Path("")`` is the current folder, which no file is)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file: give one")
    return text


INPUT_HELP = (
    "JSONL (.jsonl), a JSON array (.json), CSV (.csv) or TSV (.tsv) with a header row, or Parquet (.parquet); "
    "the text formats may be compressed (.gz, .bz2, .xz); - reads standard input"
)
"""What an input file argument accepts, for its help."""


def show_progress(args: argparse.Namespace) -> bool:
    """Whether to draw a progress bar: on a terminal, unless ``--no-progress``."""
    return not args.no_progress and sys.stderr.isatty()


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``, which :func:`show_progress` reads."""
    parser.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")


def add_format_option(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--format``: what the command prints, as text (the default) or as one JSON document."""
    parser.add_argument("--format", choices=("text", "json"), default="text", help=help)


def add_show_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--show N`` (default 5): how many items a listing prints; ``what`` says which, for the help."""
    parser.add_argument("--show", type=count(0), default=5, metavar="N", help=f"{what} (default: %(default)s)")


def add_input_format_option(parser: argparse.ArgumentParser) -> None:
    """``--input-format``: read the input in this format whatever its extension (standard input: JSONL by default)."""
    from answer_eval.inputs.formats import FORMATS

    parser.add_argument(
        "--input-format",
        choices=FORMATS,
        help="read the input in this format whatever its name says (default: told by the extension; "
        "a name with no extension: jsonl; standard input: told from its first bytes)",
    )
    parser.add_argument(
        "--delimiter",
        metavar="CHAR",
        help="the delimiter of a CSV input (default: told from its header row: , ; tab or |); '\\t' is a tab",
        type=_delimiter,
    )


def _delimiter(text: str) -> str:
    value = {"\\t": "\t", "tab": "\t"}.get(text, text)
    if len(value) != 1 or value in '"\r\n' or value.isalnum():
        raise argparse.ArgumentTypeError(
            f"expected one character that is not a letter, a digit, a quote or a line end, got {text!r}"
        )
    return value


def probability(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a target agreement, a delta)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {text!r}") from None
    if not 0.0 < value < 1.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {text!r}")
    return value


def add_label_options(parser: argparse.ArgumentParser, label_help: str) -> None:
    """``--label-field`` (the person's verdict) and ``--positive`` (the values that mean acceptable)."""
    parser.add_argument("--label-field", help=label_help)
    parser.add_argument(
        "--positive",
        action="append",
        default=[],
        metavar="VALUE",
        help="a label value that means acceptable (repeatable); default: JSON true",
    )


def add_field_options(
    parser: argparse.ArgumentParser, *, answers: bool = True, question: bool = False, prediction: str = "the answer"
) -> None:
    """Add ``--prediction-field``, and ``--answers-field`` and ``--question-field`` when asked, with their defaults.

    ``--input-format`` comes with them: every command that reads fields reads every input format.
    """
    add_input_format_option(parser)
    parser.add_argument(
        "--prediction-field", default="prediction", help=f"field holding {prediction} (default: %(default)s)"
    )
    if answers:
        parser.add_argument(
            "--answers-field", default="answers", help="field holding the acceptable answer(s) (default: %(default)s)"
        )
    if question:
        parser.add_argument(
            "--question-field",
            default="question",
            help="field holding the question, used when present (default: %(default)s)",
        )


def items_from_args(
    path: str | os.PathLike[str], args: argparse.Namespace, names: Sequence[str], *, read_labels: bool = True
) -> Items:
    """:func:`answer_eval.inputs.item_files.read_items` with the field options of :func:`add_field_options`.

    The label options (``--label-field``, ``--positive``) are used when the command has them; the
    acceptable answers are required when one of the evaluators ``names`` reads them. ``read_labels``
    false leaves the label values in the rows for the caller (``calibrate``).
    """
    label_field = getattr(args, "label_field", None)
    return read_items(
        path,
        prediction_field=args.prediction_field,
        answers_field=args.answers_field,
        question_field=args.question_field,
        label_field=label_field,
        require_label=label_field is not None,
        positives=getattr(args, "positive", ()),
        require_answers=any(EVALUATORS[name].needs_answers for name in names),
        input_format=getattr(args, "input_format", None),
        delimiter=getattr(args, "delimiter", None),
        read_labels=read_labels,
    )


def stdin_once(paths: Sequence[str]) -> None:
    """Refuse standard input (``-``) given more than once: it can be read only once."""
    if sum(path == "-" for path in paths) > 1:
        raise InputError("standard input (-) can be read once: give it for one input at most")


def add_evaluator_options(parser: argparse.ArgumentParser, default: Sequence[str] = DEFAULT_EVALUATORS) -> None:
    """``--evaluator`` (repeatable) and ``--no-semantic``."""
    parser.add_argument(
        "--evaluator",
        "-e",
        action="append",
        choices=list(EVALUATORS),
        metavar="NAME",
        help=f"an evaluator to run (repeatable): {', '.join(EVALUATORS)}; default: {', '.join(default)}",
    )
    parser.add_argument(
        "--no-semantic", action="store_true", help="load no model: SAS is left out (the judge never loads one)"
    )


def evaluator_names(args: argparse.Namespace, default: Sequence[str] = DEFAULT_EVALUATORS) -> list[str]:
    """The evaluators asked for, each once, in the order given."""
    return list(dict.fromkeys(args.evaluator or default))


def run_evaluators(
    names: Sequence[str],
    systems: Sequence[Items],
    *,
    semantic: bool,
    progress: bool,
    reuse: Callable[[str, Items], EvaluatorRun | None] | None = None,
) -> dict[str, list[EvaluatorRun]]:
    """Run every named evaluator on every system; each evaluator is built (its model loaded) once.

    ``reuse`` may return a run read from a results file instead of scoring again.
    :raises InputError: When an evaluator cannot run here (an extra missing, or ``semantic`` off).
    """
    for name in names:
        reason = unavailable(name, semantic)
        if reason is not None:
            raise InputError(f"cannot run evaluator {name!r}: {reason}")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(names) * (len(systems) + 1), unit=" steps", file=sys.stderr, leave=False)
    runs: dict[str, list[EvaluatorRun]] = {}
    try:
        for name in names:
            scorer = None
            if bar is not None:
                bar.set_description(name)
            for items in systems:
                found = reuse(name, items) if reuse is not None else None
                if found is None:
                    scorer = scorer or build_scorer(name, semantic)
                    found = scorer(items)
                runs.setdefault(name, []).append(found)
                if bar is not None:
                    bar.update()
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    return runs


def make_console(stream: TextIO | None = None) -> Console:
    """A rich console on ``stream`` (default standard output).

    Colour only on a terminal and when ``NO_COLOR`` is unset or empty; elsewhere plain text at
    ``COLUMNS`` or :data:`PLAIN_WIDTH` characters, so piped output is stable.
    """
    from rich.console import Console

    target = stream or sys.stdout
    terminal = target.isatty()
    colour = terminal and not os.environ.get("NO_COLOR")
    width = None
    if not terminal:
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else PLAIN_WIDTH
    return Console(
        file=target,
        color_system="auto" if colour else None,
        no_color=not colour,
        width=width,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )


def show(console: Console, *objects: Any, markup: bool = False) -> None:
    """Print ``objects`` on ``console``; off a terminal, without the blanks rich pads lines with.

    Strings are printed as they are (no rich markup) unless ``markup`` is true.
    """
    if console.is_terminal:
        console.print(*objects, markup=markup)
        return
    with console.capture() as captured:
        console.print(*objects, markup=markup)
    console.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def short(text: Any, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def item_grid() -> Table:
    """A grid that lists items a few rows each: the line number, a field's name, its text (folded to the width)."""
    from rich.table import Table

    grid = Table.grid(padding=(0, 2))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


def add_item_head(grid: Table, line: int, question: str | None, golds: Sequence[str]) -> None:
    """The rows that open an item in an :func:`item_grid`: its line, its question and its acceptable answers."""
    add_item_text(grid, "question", question or "-", f"line {line}")
    add_item_text(grid, "gold", " | ".join(golds))


def add_item_text(grid: Table, name: str, text: str, line: str = "") -> None:
    """A row of an :func:`item_grid`: ``text`` on one line, cut to 90 characters, shown as it is (no markup)."""
    from rich.text import Text

    grid.add_row(line, name, Text(short(text, 90)))


def more_hint(shown: int, total: int) -> str:
    """How to see the items a listing left out: nothing when it shows them all."""
    if shown >= total:
        return ""
    if shown == 0:
        return " (--show N to list them, --format json for all)"
    return " (--show N for more, --format json for all)"


def format_p(p_value: float) -> str:
    """A p-value for people: three decimals, ``<0.001`` below that."""
    return "<0.001" if p_value < 0.001 else f"{p_value:.3f}"
