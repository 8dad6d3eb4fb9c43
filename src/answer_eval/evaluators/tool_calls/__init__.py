"""The tool-call metrics: a predicted call against the reference call."""
