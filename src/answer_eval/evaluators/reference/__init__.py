"""The reference metrics: exact match, BLEU and ROUGE against the references."""
