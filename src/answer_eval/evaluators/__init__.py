"""The evaluators and their one contract: options with a signature, roles, column-wise ``score``, a summary.

See :mod:`answer_eval.evaluators.base` for the contract and :mod:`answer_eval.evaluators.registry`
for the list every layer reads. The evaluator modules are imported when used, not here.
"""

from answer_eval.evaluators.base import Columns, Evaluator, ItemError, OptionError, Options, Role, option
from answer_eval.evaluators.registry import EVALUATORS, Entry, build

__all__ = [
    "EVALUATORS",
    "Columns",
    "Entry",
    "Evaluator",
    "ItemError",
    "OptionError",
    "Options",
    "Role",
    "build",
    "option",
]
