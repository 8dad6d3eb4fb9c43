"""The file engine: streaming JSONL, atomic output, the row loop, worker processes, checkpoints, signals."""
