"""The LLM rubric grader of the command line (``answer-eval rubric``)."""
