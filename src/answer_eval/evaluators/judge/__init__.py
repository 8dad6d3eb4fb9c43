"""The judge: the cascade, its lenient rules, reasons, features, calibrated model, trust and escalation."""
