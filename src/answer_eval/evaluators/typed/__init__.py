"""The typed evaluator: the rule of each question type, choices, ROUGE and WER."""
