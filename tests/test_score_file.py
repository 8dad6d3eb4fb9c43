"""``score_file``, the answer-contains rules over a JSONL file from Python, beside the contains evaluator."""

import json

from answer_eval import AnswerContainsScorer
from answer_eval.evaluators.contains import SCORE_COLUMNS, score_file


def test_score_file_scores_every_row_and_writes_the_three_columns(tmp_path):
    source = tmp_path / "in.jsonl"
    rows = [
        {"id": 1, "question_answer": "It sold 12,400 units.", "gold": ["12400"]},
        {"id": 2, "question_answer": "Nobody knows.", "gold": ["Paris"]},
        {"id": 3, "question_answer": "Not in the document, sorry (my words).", "gold": "none here"},
    ]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    output = tmp_path / "out.jsonl"
    scorer = AnswerContainsScorer(not_found_label="none here", extra_not_found_phrases=["my words"])
    summary = score_file(source, scorer, prediction_field="question_answer", answers_field="gold", output=output)
    written = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["id"] for row in written] == [1, 2, 3]
    assert [row["correct"] for row in written] == [True, False, True]
    assert all(set(SCORE_COLUMNS) <= set(row) for row in written)
    assert summary.score == 2 / 3
