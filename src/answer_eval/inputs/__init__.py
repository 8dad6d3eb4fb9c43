"""Inputs: every file format as JSON lines, predictions in every form, labels, tool calls, files of items."""
