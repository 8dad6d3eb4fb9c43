"""Text-overlap metrics: ROUGE F-measures equal to the ``rouge-score`` package, and word error rate.

:class:`RougeMean` gives exactly the values of ``rouge_score.rouge_scorer.RougeScorer`` (same
tokenizer rules, same Porter stemmer from NLTK, same counting and the same floating-point
operations; the test suite checks equality against ``RougeScorer`` itself), but is built once and
remembers the stem of every word seen in the process: stemming is most of ``RougeScorer``'s time,
and a word's stem never changes. ROUGE-L's longest common subsequence is computed with a bit-parallel
algorithm instead of a full table; the length is the same.

:func:`word_error_rate` is ``jiwer.wer`` on words split at any white space, with optional case
and punctuation folding, and an explicit rule for an empty reference.

Both import their third-party packages (``nltk`` through ``rouge-score``, and ``jiwer``) lazily;
they come with the ``typed`` extra: ``pip install "answer-eval-haystack[typed]"``.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

__all__ = [
    "DEFAULT_ROUGE_TYPES",
    "RougeMean",
    "RougeReference",
    "clear_stem_cache",
    "ocr_words",
    "require_typed_extra",
    "word_error_rate",
]

DEFAULT_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
"""The ROUGE variants whose F-measures are averaged for free-form answers."""
EXTRA_HINT = 'pip install "answer-eval-haystack[typed]"'
"""How to install what typed-answer scoring needs."""
# The modules imported, and the package pip installs each from (nltk comes with rouge-score).
_NEEDED = (("jiwer", "jiwer"), ("rouge_score", "rouge-score"), ("nltk", "nltk (which rouge-score uses)"))
_ROUGE_TYPE = re.compile(r"rouge[1-9]|rougeL")
_STEM_CACHE_LIMIT = 500_000
# Word to its Porter stem (or "" when the stem is not a valid token), shared by every RougeMean of
# the process: a stem never changes, and stemming is most of ROUGE's time. Emptied when full.
_STEMS: dict[str, str] = {}


def require_typed_extra() -> None:
    """Raise ``ImportError`` naming the ``typed`` extra when jiwer or rouge-score is not installed.

    Only looks the packages up (cheap); they are imported when first used.
    """
    import importlib.util

    missing = [package for module, package in _NEEDED if _find_spec(importlib.util.find_spec, module) is None]
    if missing:
        names = " and ".join((", ".join(missing[:-1]), missing[-1])) if len(missing) > 1 else missing[0]
        verb, them = ("are", "them") if len(missing) > 1 else ("is", "it")
        raise ImportError(
            f"typed-answer scoring needs {names}, which {verb} not installed; install {them} with: {EXTRA_HINT}"
        )


def _find_spec(find: Any, name: str) -> Any:
    try:
        return find(name)
    except (ImportError, ValueError):
        return None


def clear_stem_cache() -> None:
    """Forget every remembered stem (to measure a cold start, or free memory)."""
    _STEMS.clear()


class RougeMean:
    """Mean F-measure over ROUGE variants, equal to ``rouge-score``; build once, score many.

    :param rouge_types: ``"rouge1"`` to ``"rouge9"`` (n-gram overlap) and ``"rougeL"`` (longest
        common subsequence). ``"rougeLsum"`` is not supported.
    :param use_stemmer: Strip word suffixes with the Porter stemmer (words longer than three
        letters), as ``RougeScorer(use_stemmer=True)`` does.

    Tokenization is rouge-score's: lower case, every run of characters other than ``a-z`` and
    ``0-9`` splits words. Text in other scripts therefore has no tokens and scores 0.
    """

    def __init__(self, rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES, use_stemmer: bool = True) -> None:
        types = tuple(rouge_types)
        if not types:
            raise ValueError("rouge_types is empty: give at least one of rouge1..rouge9, rougeL")
        for name in types:
            if not isinstance(name, str) or _ROUGE_TYPE.fullmatch(name) is None:
                raise ValueError(f"unsupported ROUGE type {name!r}: use rouge1..rouge9 or rougeL")
        self.rouge_types = types
        # n-gram length of each type, 0 for rougeL
        self._orders = tuple(0 if name == "rougeL" else int(name[5:]) for name in types)
        self.use_stemmer = use_stemmer
        self._stem: Any = None
        self._non_alphanumeric: re.Pattern[str] | None = None
        self._valid_token: re.Pattern[str] | None = None
        self._ascii_table: dict[int, str] | None = None

    def warm_up(self) -> None:
        """Import rouge-score's tokenizer rules and NLTK's Porter stemmer (done on first use otherwise)."""
        if self._non_alphanumeric is not None:
            return
        try:
            from rouge_score import tokenize as rouge_tokenize  # type: ignore[import-untyped]
        except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
            raise ImportError(f"free-form scoring needs rouge-score: {EXTRA_HINT}") from exc
        if self.use_stemmer:
            from nltk.stem import porter  # type: ignore[import-untyped]

            self._stem = porter.PorterStemmer().stem
        self._valid_token = rouge_tokenize.VALID_TOKEN_RE
        self._non_alphanumeric = rouge_tokenize.NON_ALPHANUM_RE
        if self._non_alphanumeric.pattern == "[^a-z0-9]+":
            # The same split for ASCII text: every character but a-z and 0-9 becomes a space.
            keep = set(string.ascii_lowercase + string.digits)
            self._ascii_table = {code: " " for code in range(128) if chr(code) not in keep}

    def tokens(self, text: str) -> list[str]:
        """rouge-score's tokens of ``text`` (``rouge_score.tokenize.tokenize`` with the same stemmer)."""
        if self._non_alphanumeric is None:
            self.warm_up()
        assert self._non_alphanumeric is not None
        lowered = text.lower()
        if self._ascii_table is not None and lowered.isascii():
            words = lowered.translate(self._ascii_table).split()  # C-level, no regular expression
        else:
            words = self._non_alphanumeric.sub(" ", lowered).split()
        if self._stem is None:
            return words  # only a-z and 0-9 are left: every word is a valid token
        cache = _STEMS
        if len(cache) > _STEM_CACHE_LIMIT:
            cache.clear()
        get = cache.get
        tokens = [get(word) for word in words]
        if None in tokens:
            tokens = [self._remember(w) if t is None else t for w, t in zip(words, tokens, strict=True)]
        if "" in tokens:
            return [token for token in tokens if token]
        return tokens  # type: ignore[return-value]  # no None left

    def _remember(self, word: str) -> str:
        """Stem ``word`` as rouge-score does and remember it: "" when its stem is not a valid token."""
        assert self._valid_token is not None
        if len(word) <= 3:  # rouge-score stems longer words only
            token = word
        else:
            token = self._stem(word)
            if not self._valid_token.match(token):
                token = ""
        _STEMS[word] = token
        return token

    def prepare(self, reference: str) -> RougeReference:
        """Tokenize ``reference`` once, for scoring many predictions against it with :meth:`score_prepared`."""
        return RougeReference(self.tokens(reference))

    def fmeasures(self, reference: str, prediction: str) -> dict[str, float]:
        """The F-measure of each ROUGE type, as ``RougeScorer.score(reference, prediction)`` gives."""
        prepared = self.prepare(reference)
        predicted = self.tokens(prediction)
        return {name: _fmeasure(n, prepared, predicted) for name, n in zip(self.rouge_types, self._orders, strict=True)}

    def score(self, reference: str, prediction: str) -> float:
        """The mean of the F-measures, in ``[0, 1]``."""
        return self.score_prepared(self.prepare(reference), prediction)

    def score_prepared(self, reference: RougeReference, prediction: str) -> float:
        """:meth:`score` against a reference made by :meth:`prepare` (the same value)."""
        predicted = self.tokens(prediction)
        total = 0.0
        for n in self._orders:
            total += _fmeasure(n, reference, predicted)
        return total / len(self._orders)


class RougeReference:
    """A reference text's tokens, with its n-gram counts and LCS bit masks made on first use.

    Made by :meth:`RougeMean.prepare`; reuse it when one reference is scored against many answers
    (several samples per prompt) so it is tokenized and counted once.
    """

    __slots__ = ("_grams", "_masks", "tokens")

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self._grams: dict[int, Counter[Any]] = {}
        self._masks: dict[str, int] | None = None

    def grams(self, n: int) -> Counter[Any]:
        """Count of every n-gram of the tokens."""
        counts = self._grams.get(n)
        if counts is None:
            counts = self._grams[n] = _ngrams(self.tokens, n)
        return counts

    def masks(self) -> dict[str, int]:
        """Token to the bit set of its positions, for the bit-parallel LCS."""
        if self._masks is None:
            self._masks = _position_masks(self.tokens)
        return self._masks


def _fmeasure(n: int, reference: RougeReference, predicted: list[str]) -> float:
    """F-measure of ROUGE-n, or of ROUGE-L when ``n`` is 0."""
    target = reference.tokens
    if n == 0:
        if not target or not predicted:
            return 0.0
        common = _lcs_with_masks(reference.masks(), len(target), predicted)
        return _f(common / len(predicted), common / len(target))
    target_ngrams = reference.grams(n)
    predicted_ngrams = _ngrams(predicted, n)
    # Integer sum: the same whichever side is walked.
    overlap = sum(
        min(count, predicted_ngrams[gram]) for gram, count in target_ngrams.items() if gram in predicted_ngrams
    )
    target_count = max(len(target) - n + 1, 0)
    predicted_count = max(len(predicted) - n + 1, 0)
    return _f(overlap / max(predicted_count, 1), overlap / max(target_count, 1))


def _f(precision: float, recall: float) -> float:
    # The same operations, in the same order, as rouge_score.scoring.fmeasure.
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def _ngrams(tokens: list[str], n: int) -> Counter[Any]:
    if n == 1:
        return Counter(tokens)
    if n == 2:
        return Counter(pairwise(tokens))
    return Counter(zip(*(tokens[i:] for i in range(n)), strict=False))


def _position_masks(tokens: Sequence[str]) -> dict[str, int]:
    masks: dict[str, int] = {}
    for position, token in enumerate(tokens):
        masks[token] = masks.get(token, 0) | (1 << position)
    return masks


def _lcs_with_masks(masks: dict[str, int], length: int, first: Sequence[str]) -> int:
    """LCS length of ``first`` and the sequence ``masks`` describes, bit-parallel (Crochemore et al., 2001)."""
    full = (1 << length) - 1
    row = full
    for token in first:
        matches = row & masks.get(token, 0)
        row = ((row + matches) | (row - matches)) & full
    return length - row.bit_count()


def _lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    """Length of the longest common subsequence (symmetric in its arguments)."""
    return _lcs_with_masks(_position_masks(second), len(second), first)


_PUNCTUATION: dict[int, str | None] = {}


def _strip_punctuation(word: str) -> str:
    if word.isalnum():
        return word
    table = _PUNCTUATION
    for character in word:
        code = ord(character)
        if code not in table:
            table[code] = None if unicodedata.category(character).startswith("P") else character
    return word.translate(table)


def ocr_words(text: str, *, ignore_case: bool = False, ignore_punctuation: bool = False) -> list[str]:
    """The words WER compares: ``text`` split at any white space, optionally case- and punctuation-folded.

    ``ignore_case`` applies ``str.casefold``; ``ignore_punctuation`` removes every Unicode
    punctuation character (categories ``P*``: ``. , ; : ! ? ' " - ( ) % &`` ...) from each word
    and drops words left empty ("don't" becomes "dont"; a lone "-" disappears).

    >>> ocr_words("Hello,  World !", ignore_case=True, ignore_punctuation=True)
    ['hello', 'world']
    """
    words = text.split()
    if ignore_case:
        words = [word.casefold() for word in words]
    if ignore_punctuation:
        words = [stripped for stripped in (_strip_punctuation(word) for word in words) if stripped]
    return words


def word_error_rate(
    reference: str, hypothesis: str, *, ignore_case: bool = False, ignore_punctuation: bool = False
) -> float:
    """Word error rate of ``hypothesis`` against ``reference``, computed by ``jiwer.wer``.

    Words are split at any white space (see :func:`ocr_words`), case-sensitive and keeping
    punctuation unless asked otherwise. An empty reference (no words, after folding) has a WER of
    0.0 when the hypothesis is empty too, and 1.0 otherwise: the division by the reference length
    is undefined there, and every hypothesis word is an error.
    """
    reference_words = ocr_words(reference, ignore_case=ignore_case, ignore_punctuation=ignore_punctuation)
    hypothesis_words = ocr_words(hypothesis, ignore_case=ignore_case, ignore_punctuation=ignore_punctuation)
    if not reference_words:
        return 0.0 if not hypothesis_words else 1.0
    if not hypothesis_words:
        return 1.0  # every reference word deleted; jiwer refuses an empty hypothesis in some versions
    try:
        import jiwer
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ImportError(f"OCR scoring needs jiwer: {EXTRA_HINT}") from exc
    return float(jiwer.wer(" ".join(reference_words), " ".join(hypothesis_words)))
