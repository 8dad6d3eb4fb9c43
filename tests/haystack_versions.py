"""What differs between the haystack-ai releases the package supports (2.31 to 3.x), for the tests.

CI runs the Haystack-facing tests on the newest release (the main environment) and on the oldest
(``make compat``): where the two differ in a way the package does not control, a test asks here.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import haystack
from haystack import Pipeline

HAYSTACK_VERSION = tuple(int(part) for part in version("haystack-ai").split(".")[:2])
"""The installed haystack-ai release, ``(major, minor)``."""

HAS_IMPORT_ALLOWLIST = HAYSTACK_VERSION >= (3, 0)
"""Haystack 3 refuses to import a module a saved pipeline names outside its allow-list; 2.x imports it."""


def async_pipeline() -> Any:
    """A pipeline with ``run_async``: Haystack 3's ``Pipeline``, or 2.x's ``AsyncPipeline``."""
    if hasattr(Pipeline, "run_async"):
        return Pipeline()
    return haystack.AsyncPipeline()  # type: ignore[attr-defined]
