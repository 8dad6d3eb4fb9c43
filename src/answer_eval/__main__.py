"""``python -m answer_eval``: the same as the ``answer-eval`` command."""

from answer_eval.cli.main import run

run()
