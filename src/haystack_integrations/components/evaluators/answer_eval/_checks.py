"""Type checks for component parameters, so that `__init__` (and so `from_dict`) validates them (the core's own)."""

from __future__ import annotations

from answer_eval.evaluators.checks import check_bool, check_instance, check_names, check_number, check_str

__all__ = ["check_bool", "check_instance", "check_names", "check_number", "check_str"]
