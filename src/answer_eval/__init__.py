"""answer_eval: number-aware answer scoring for question answering and RAG, framework-free.

The Haystack components live in ``haystack_integrations.components.evaluators.answer_eval``; this
package is the pure core they adapt: folding, matching, not-found detection, reading pipeline
outputs and verdicts.
"""

from answer_eval.errors import FAILURE_KINDS, FailureKind
from answer_eval.evaluators.contains_rules import AnswerContainsScorer, BatchResult, Verdict
from answer_eval.inputs.reading import ReadOutput, acceptable_answers, check_ground_truths, read_output
from answer_eval.text.folding import fold
from answer_eval.text.matching import contains_answer, contains_folded
from answer_eval.text.not_found import NOT_IN_DOCUMENT, NotFoundDetector, is_not_found

__all__ = [
    "FAILURE_KINDS",
    "NOT_IN_DOCUMENT",
    "AnswerContainsScorer",
    "BatchResult",
    "FailureKind",
    "NotFoundDetector",
    "ReadOutput",
    "Verdict",
    "acceptable_answers",
    "check_ground_truths",
    "contains_answer",
    "contains_folded",
    "fold",
    "is_not_found",
    "read_output",
]

__version__ = "0.1.0"
