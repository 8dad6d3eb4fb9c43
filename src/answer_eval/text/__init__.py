"""Text: folding to one normal form, numbers, number-aware matching, reports of absence, word tokens."""
