"""The file engine: atomic output, the row transforms, the row loop, worker processes, checkpoints, signals."""
