"""Inputs: reading predictions in every form, acceptable answers, tool calls, answer spans, files of items."""
