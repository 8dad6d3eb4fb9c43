"""The answer-contains evaluator: its rules (the scorer) and its contract class."""
